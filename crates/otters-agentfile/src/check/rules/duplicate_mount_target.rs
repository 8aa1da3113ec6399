//! AF116 duplicate-mount-target: one target, one MOUNT.

use super::invalid_mount_target::normalise;
use super::Ctx;
use crate::diagnostic::{Code, Diagnostic, Span};
use std::collections::BTreeMap;

pub fn duplicate_mount_target(span: Option<Span>, first: Option<Span>, target: &str) -> Diagnostic {
    Diagnostic::new(
        Code::DuplicateMountTarget,
        span,
        format!("MOUNT target `{target}` is declared twice"),
    )
    .with_label("second declaration")
    .with_secondary(first, "first declared here")
    .with_help("keep one MOUNT per target")
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    let mut seen: BTreeMap<String, Option<Span>> = BTreeMap::new();
    for m in &cx.model.agent.mounts {
        let Ok(norm) = normalise(&m.target) else {
            continue;
        };
        match seen.get(&norm) {
            Some(first) => out.push(duplicate_mount_target(m.span, *first, &norm)),
            None => {
                seen.insert(norm, m.span);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;

    #[test]
    fn table() {
        super::super::assert_table(
            Code::DuplicateMountTarget,
            &[
                ("MOUNT /srv/a\nMOUNT /srv/b", &[]),
                ("MOUNT /srv/a ro\nMOUNT /srv/a/ rw", &[3]),
                ("MOUNT /srv/a\nMOUNT /srv/./a\nMOUNT /srv/a", &[3, 4]),
            ],
        );
    }
}
