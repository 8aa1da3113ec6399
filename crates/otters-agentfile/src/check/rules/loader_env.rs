//! AF223 loader-env: an ENV sets a dynamic-loader variable (`LD_PRELOAD`, `LD_LIBRARY_PATH`,
//! `LD_AUDIT`, any other `LD_*`, `DYLD_*`, `GLIBC_TUNABLES`).

use super::names::is_loader_key;
use super::Ctx;
use crate::diagnostic::{Code, Diagnostic, Span};

pub fn loader_env(span: Option<Span>, key: &str) -> Diagnostic {
    Diagnostic::new(
        Code::LoaderEnv,
        span,
        format!("ENV {key} is a dynamic-loader variable"),
    )
    .with_label("the runtime and every BIN would load code as this says")
    .with_help(
        "remove it: ship what the runtime needs inside the runtime or BIN image; a user who wants it can pass `-e` to `otters run`",
    )
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    for e in cx.model.agent.envs.iter().filter(|e| is_loader_key(&e.key)) {
        out.push(loader_env(e.key_span, &e.key));
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;

    #[test]
    fn table() {
        super::super::assert_table(
            Code::LoaderEnv,
            &[
                ("ENV LD_PRELOAD=/etc/data/x.so", &[2]),
                ("ENV LD_LIBRARY_PATH=/etc/data", &[2]),
                ("ENV LD_AUDIT=x", &[2]),
                ("ENV DYLD_INSERT_LIBRARIES=x", &[2]),
                ("ENV GLIBC_TUNABLES=x", &[2]),
                ("ENV OLD_PATH=x", &[]),
                ("ENV LDAP_URL=x", &[]),
            ],
        );
    }
}
