//! AF115 invalid-mount-target: a MOUNT target must be absolute, not `/`, free of `..`, and
//! outside the agent's own directories. (A mode word other than `ro`/`rw` never parses: the
//! syntax stage reports it as AF004.)

use super::Ctx;
use crate::diagnostic::{Diagnostic, Span};
use crate::syntax::Args;
use std::collections::HashMap;

/// Directories that belong to the agent tree (openotters rejects mounts there too).
const FORBIDDEN: [&str; 5] = [
    "/etc/context",
    "/etc/data",
    "/usr/bin",
    "/usr/local/bin",
    "/var",
];

/// The target with `.` and empty components removed, or what is wrong with it.
pub fn normalise(target: &str) -> Result<String, String> {
    if !target.starts_with('/') {
        return Err("is not an absolute path".to_owned());
    }
    let parts: Vec<&str> = target
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    if parts.contains(&"..") {
        return Err("contains `..`".to_owned());
    }
    if parts.is_empty() {
        return Err("is the root directory".to_owned());
    }
    let norm = format!("/{}", parts.join("/"));
    if let Some(f) = FORBIDDEN
        .iter()
        .find(|f| norm == **f || norm.starts_with(&format!("{f}/")))
    {
        return Err(format!("is inside {f}, which belongs to the agent"));
    }
    Ok(norm)
}

pub fn invalid_mount_target(span: Span, target: &str, what: &str) -> Diagnostic {
    Diagnostic::error("AF115", span, format!("MOUNT target `{target}` {what}"))
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
            let target_span = targets.get(&m.span).copied().unwrap_or(m.span);
            out.push(invalid_mount_target(target_span, &m.target, &what));
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn table() {
        super::super::assert_table(
            "AF115",
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
