//! `docs/cli.md`, the command-line reference, is generated from the grammar and must be current:
//! a flag or a help text changed without the page fails here. `UPDATE_CLI_REFERENCE=1 cargo test
//! -p otters-cli` rewrites the page; review its diff as any other.
use clap::CommandFactory as _;
use std::fmt::Write as _;
use std::path::Path;

/// Every visible command, depth first, with its full name (`otters image prune`).
fn commands(cmd: &clap::Command, name: &str, out: &mut Vec<(String, clap::Command)>) {
    out.push((name.to_owned(), cmd.clone()));
    let shown = |s: &&clap::Command| !s.is_hide_set() && s.get_name() != "help";
    for sub in cmd.get_subcommands().filter(shown) {
        commands(sub, &format!("{name} {}", sub.get_name()), out);
    }
}

/// The page: an index, then each command's `--help` as the binary prints it (100 columns).
fn reference() -> String {
    let mut root = otters_cli::Cli::command();
    root.build();
    let mut all = Vec::new();
    commands(&root, "otters", &mut all);
    let mut page = String::from(
        "# Command-line reference\n\n\
         Every command's `--help`, generated from the flag definitions (`crates/otters-cli`) by\n\
         `UPDATE_CLI_REFERENCE=1 cargo test -p otters-cli`; a test fails when this page is not current.\n\
         The guide ([guide.md](guide.md)) says how the commands fit together.\n\n",
    );
    for (name, cmd) in &all {
        let about = cmd.get_about().map(ToString::to_string).unwrap_or_default();
        let anchor = name.replace(' ', "-");
        let _ = writeln!(page, "- [`{name}`](#{anchor}): {about}");
    }
    for (name, _) in all {
        // Exactly what `--help` prints: clap picks the long form only where a text has one.
        let args = name.split(' ').chain(["--help"]);
        let shown = otters_cli::Cli::command()
            .term_width(100)
            .max_term_width(100)
            .try_get_matches_from(args);
        let help = shown
            .err()
            .map(|e| e.render().to_string())
            .unwrap_or_default();
        let help: Vec<&str> = help.lines().map(str::trim_end).collect();
        let _ = write!(
            page,
            "\n## {name}\n\n```text\n{}\n```\n",
            help.join("\n").trim_end()
        );
    }
    page
}

#[test]
fn the_cli_reference_is_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/cli.md");
    let want = reference();
    if std::env::var_os("UPDATE_CLI_REFERENCE").is_some() {
        std::fs::write(&path, &want).unwrap();
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/cli.md is not current: run `UPDATE_CLI_REFERENCE=1 cargo test -p otters-cli` and review the diff"
    );
}

#[test]
fn the_reference_has_every_command_and_flag() {
    let page = reference();
    for heading in [
        "## otters build",
        "## otters image prune",
        "## otters key generate",
    ] {
        assert!(page.contains(&format!("{heading}\n")), "{heading} missing");
    }
    // Hidden commands stay out of it, as out of `otters --help`.
    assert!(!page.contains("## otters manpages"));
    for flag in [
        "--sign-keyless",
        "--verify-key",
        "--certificate-oidc-issuer",
        "--max-requests",
    ] {
        assert!(page.contains(flag), "{flag} missing");
    }
}
