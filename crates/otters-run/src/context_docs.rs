//! The generated context files of spec §g.3: `AGENT.md`, `WORKSPACE.md` and `MOUNTS.md`.
//!
//! Takes: the agent model after overrides, its id, the effective ENVs and mounts, and where the
//! tree lives (host root or container). Returns: markdown text. Must never: do I/O, or include a
//! credential or a mount's host path in the container layout (the model sees in-container paths).

use super::env::Layout;
use super::mounts::UserMount;
use super::overrides::EffectiveEnv;
use otters_agentfile::ir::Agent;
use std::fmt::Write as _;

/// Everything the three documents are written from.
pub struct DocInputs<'a> {
    pub agent: &'a Agent,
    pub id: &'a str,
    pub envs: &'a [EffectiveEnv],
    pub mounts: &'a [UserMount],
    pub layout: Layout<'a>,
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// `etc/context/AGENT.md`.
pub fn agent_md(i: &DocInputs<'_>) -> String {
    let a = i.agent;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# {}\n",
        a.name_str().filter(|n| !n.is_empty()).unwrap_or("agent")
    );
    if let Some(d) = a.labels.get("description") {
        let _ = writeln!(s, "{}\n", d.value);
    }
    let _ = writeln!(
        s,
        "## Identity\n\nYour agent id is `{}`. Use it whenever a tool asks for your own agent reference.\n",
        i.id
    );
    s.push_str("## Binaries\n\n");
    if a.bins.is_empty() {
        s.push_str(
            "You have no binaries. Do not pretend to run commands or claim results from tools you do not have.\n\n",
        );
    } else {
        s.push_str(
            "Only the binaries below exist. There is no shell and no implicit Unix tool (no `ls`, `cat`, `curl` …) unless it is listed here.\n\n",
        );
        for b in &a.bins {
            let _ = writeln!(
                s,
                "- **{}** — {}",
                b.name,
                b.description.as_deref().unwrap_or("-")
            );
            if let Some(u) = &b.usage {
                for line in u.lines() {
                    let _ = writeln!(s, "  {line}");
                }
            }
        }
        s.push_str(concat!(
            "\n### How to call a binary\n\n",
            "Send a JSON object with `args` (an array of strings), `stdin` (a string), or both; at least one is required.\n\n",
            "Correct: `{\"args\": [\"--city\", \"Paris\"]}`\n\n",
            "Incorrect: `{\"args\": \"--city Paris\"}` (`args` must be a real array, not a string).\n\n",
            "If the task needs a binary you do not have, say so plainly instead of improvising.\n\n",
        ));
    }
    if !a.adds.is_empty() {
        s.push_str("## Data Files\n\n| File | Description |\n|---|---|\n");
        for add in &a.adds {
            let _ = writeln!(
                s,
                "| {} | {} |",
                cell(&add.name),
                cell(add.description.as_deref().unwrap_or("-"))
            );
        }
        s.push('\n');
    }
    if !i.envs.is_empty() {
        s.push_str("## Environment\n\n| Key | Value | Description |\n|---|---|---|\n");
        for e in i.envs {
            let _ = writeln!(
                s,
                "| {} | {} | {} |",
                cell(&e.key),
                cell(&e.value),
                cell(e.description.as_deref().unwrap_or("-"))
            );
        }
        s.push('\n');
    }
    let mut seen = std::collections::BTreeSet::new();
    let caps: Vec<&str> = a
        .capabilities
        .iter()
        .map(|c| c.value.as_str())
        .filter(|c| seen.insert(*c))
        .collect();
    if !caps.is_empty() {
        s.push_str("## Capabilities\n\nExactly these runtime tools are callable:\n\n");
        for c in &caps {
            let _ = writeln!(s, "- **`{c}`** — -");
        }
        s.push_str("\nIf the task needs a capability you do not have, say so plainly.\n\n");
        if caps.contains(&"note_save") {
            s.push_str(concat!(
                "## Memory\n\nSave a note when you learn something worth keeping across conversations; ",
                "pin the few notes that must always be in view; list notes before saving to avoid duplicates.\n\n"
            ));
        }
    }
    s.push_str(concat!(
        "## Filesystem\n\n| Path | Access |\n|---|---|\n",
        "| workspace/ | read-write (your working directory) |\n",
        "| tmp/ | read-write (scratch, not kept) |\n",
        "| var/lib/ | read-write (state kept between runs) |\n"
    ));
    s
}

/// `etc/context/WORKSPACE.md`.
pub fn workspace_md(i: &DocInputs<'_>) -> String {
    let a = i.agent;
    let (root, p) = match i.layout {
        Layout::Host(root) => (root.display().to_string(), format!("{}/", root.display())),
        Layout::Container => ("/".to_owned(), "/".to_owned()),
    };
    let mut s = String::from("# Your workspace\n\n");
    match i.layout {
        Layout::Host(_) => {
            let _ = writeln!(
                s,
                "You run directly on a host, without a chroot: every path below is a real host path under `{root}`.\n"
            );
        }
        Layout::Container => s.push_str(
            "You run in an isolated container. The paths below are in-container paths, laid out from `/`.\n\n",
        ),
    }
    s.push_str("## Layout\n\n");
    let _ = writeln!(
        s,
        "- `{p}etc/Agentfile` — the Agentfile you were built from"
    );
    let _ = writeln!(s, "- `{p}etc/agent.yaml` — your resolved configuration");
    let _ = writeln!(s, "- `{p}etc/context/` — your context files:");
    let mut ctx = vec![("AGENT", None), ("WORKSPACE", None)];
    if !i.mounts.is_empty() {
        ctx.push(("MOUNTS", None));
    }
    ctx.extend(
        a.contexts
            .iter()
            .map(|c| (c.name.as_str(), c.description.as_deref())),
    );
    for (n, d) in ctx {
        let _ = writeln!(
            s,
            "  - `{n}.md`{}",
            d.map(|d| format!(" — {d}")).unwrap_or_default()
        );
    }
    let _ = writeln!(s, "- `{p}etc/data/` — data files:");
    if a.adds.is_empty() && a.bins.is_empty() {
        s.push_str("  - (none)\n");
    }
    for add in &a.adds {
        let _ = writeln!(
            s,
            "  - `{}`{}",
            add.name,
            add.description
                .as_deref()
                .map(|d| format!(" — {d}"))
                .unwrap_or_default()
        );
    }
    for b in &a.bins {
        let _ = writeln!(
            s,
            "  - `bins/{}/USAGE.md` — usage of `{}` (when its image ships one)",
            b.name, b.name
        );
    }
    let (bin_dir, runtime) = match i.layout {
        Layout::Host(_) => (format!("{p}usr/bin/"), format!("{p}usr/local/bin/runtime")),
        Layout::Container => ("/opt/bins/".to_owned(), "/opt/runtime/runtime".to_owned()),
    };
    let _ = writeln!(s, "- `{bin_dir}` — your binaries, the only `$PATH` entry:");
    if a.bins.is_empty() {
        s.push_str("  - (none)\n");
    }
    for b in &a.bins {
        let _ = writeln!(s, "  - `{}`", b.name);
    }
    let _ = writeln!(s, "- `{runtime}` — the runtime that is running you");
    let _ = writeln!(
        s,
        "- `{p}workspace/` — your working directory (read-write, kept between runs)"
    );
    let _ = writeln!(s, "- `{p}home/` — your home directory (read-write)");
    let _ = writeln!(
        s,
        "- `{p}tmp/` — scratch space (read-write, emptied on every start)"
    );
    let _ = writeln!(s, "- `{p}var/lib/` — state (read-write, kept between runs)");
    s.push_str(concat!(
        "\n## Working directory rules\n\n",
        "- Relative paths resolve in `workspace/`.\n",
        "- Treat `etc/` and `usr/` as read-only.\n",
        "- The paths listed in MOUNTS.md are the only host paths you may explore; do not probe other host paths.\n"
    ));
    s
}

/// `etc/context/MOUNTS.md`, only when there are mounts.
pub fn mounts_md(mounts: &[UserMount]) -> Option<String> {
    if mounts.is_empty() {
        return None;
    }
    let mut s = String::from(concat!(
        "# Host-mounted paths\n\n",
        "These paths come from the machine you run on. Change them only when the task asks you to; ",
        "read-only ones cannot be written.\n\n"
    ));
    for m in mounts {
        let _ = writeln!(
            s,
            "- `{}`{}{}",
            m.target,
            if m.read_only { " *(ro)*" } else { "" },
            m.description
                .as_deref()
                .map(|d| format!(" — {d}"))
                .unwrap_or_default()
        );
    }
    Some(s)
}
