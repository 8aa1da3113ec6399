//! AF115 invalid-mount-target: a MOUNT target must be absolute, not `/`, free of `..`, and
//! outside the agent's own directories. (A mode word other than `ro`/`rw` never parses: the
//! syntax stage reports it as AF004.)

use super::Ctx;
use crate::diagnostic::{Code, Diagnostic, Span};
use crate::syntax::Args;
use std::collections::HashMap;

/// The target with `.` and empty components removed, or what is wrong with it (the shape lives
/// in `ir::names`, which also checks targets read from images).
pub use super::names::mount_target as normalise;

pub fn invalid_mount_target(span: Option<Span>, target: &str, what: &str) -> Diagnostic {
    Diagnostic::new(
        Code::InvalidMountTarget,
        span,
        format!("MOUNT target `{target}` {what}"),
    )
    .with_label("where the host path would appear")
    .with_help("mount at an absolute path of its own, such as `/srv/<name>` or `/mnt/<name>`")
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    // The target token of each MOUNT instruction, by the instruction's span: one pass over the
    // AST, not one search per MOUNT (which made many MOUNTs quadratic).
    let targets: HashMap<Span, Span> = cx
        .ast
        .instructions()
        .filter_map(|i| match &i.args {
            Args::Mount { target, .. } => Some((i.span, target.span)),
            _ => None,
        })
        .collect();
    for m in &cx.model.agent.mounts {
        if let Err(what) = normalise(&m.target) {
            let target_span = m.span.and_then(|s| targets.get(&s).copied()).or(m.span);
            out.push(invalid_mount_target(target_span, &m.target, &what));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;

    #[test]
    fn table() {
        super::super::assert_table(
            Code::InvalidMountTarget,
            &[
                ("MOUNT /srv/data ro \"docs\"", &[]),
                ("MOUNT /otters.sock", &[]),
                ("MOUNT /varied rw", &[]),
                ("MOUNT srv/data", &[2]),
                ("MOUNT /", &[2]),
                ("MOUNT /srv/../etc", &[2]),
                ("MOUNT /etc/data/x", &[2]),
                ("MOUNT /var", &[2]),
                ("MOUNT /usr/local/bin/", &[2]),
            ],
        );
    }
}
