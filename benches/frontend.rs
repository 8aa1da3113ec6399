//! Front-end throughput: parse + lower (+ checks, through `check::analyze`) on a generated
//! multi-megabyte Agentfile and on a typical conformance file. `cargo bench --bench frontend`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use otters_agentfile::diagnostic::SourceFile;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Capability names from the built-in catalogue, so the file is clean (real files have few findings).
const CAPS: [&str; 4] = ["note_save", "note_list", "agent_list", "context_show"];

/// About `target` bytes of varied, valid Agentfile text.
pub fn generated(target: usize) -> String {
    let mut s = String::from("# syntax=openotters/agentfile:1\nFROM scratch\nRUNTIME ghcr.io/openotters/runtime:1\nMODEL anthropic/claude\nNAME big\nARG V=1\n");
    let mut i = 0usize;
    while s.len() < target {
        let _ = write!(
            s,
            "CONTEXT C{i} \"context {i}\" <<EOF\nLine one of context {i}, with ${{NOT_EXPANDED}} text.\n  indented line\nEOF\n\
             CONFIG key-{i}=\"{i}\" \"config {i}\"\nCONFIG num-{i}={i}\nENV VAR_{i}=value-${{V}} \"env {i}\"\n\
             BIN tool{i} ghcr.io/openotters/tools/t{i}:1 \"tool {i}\" <<U\nusage of tool {i}\nU\n\
             LABEL label.{i}=\"value {i}\"\n\n"
        );
        if let Some(cap) = CAPS.get(i) {
            let _ = writeln!(s, "CAPABILITY {cap}");
        }
        i += 1;
    }
    s
}

/// About `target` bytes shaped like the shipped openotters agents: most of the text is heredoc
/// prose (contexts and tool usage), with a few CONFIG, LABEL and BIN lines between.
pub fn realistic(target: usize) -> String {
    let mut s = String::from(
        "FROM scratch\nRUNTIME ghcr.io/openotters/runtime:1\nMODEL anthropic/claude\nNAME big\n",
    );
    let mut i = 0usize;
    while s.len() < target {
        let _ = write!(s, "LABEL note.{i}=\"block {i}\"\nCONTEXT C{i} \"Scenarios {i}\" <<EOF\n## Section {i}\n\n");
        for j in 0..20 {
            let _ = writeln!(s, "- \"shape {j} the user brings\"        -> tool --flag {j} <arg> | jq '.items[] | {{name, size}}'");
        }
        let _ = write!(
            s,
            "EOF\nCONFIG key-{i}={i} \"config {i}\"\nBIN tool{i} ghcr.io/openotters/tools/t{i}:1 \"tool {i}\" <<U\n\
             Args as one string. Use --flag for the common case; pipe through sh\nfor counts.\nU\n\n"
        );
        i += 1;
    }
    s
}

fn bench(c: &mut Criterion) {
    let big = generated(4 << 20);
    let mut g = c.benchmark_group("frontend");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(big.len() as u64));
    g.bench_function("parse 4MiB", |b| {
        let file = SourceFile::new("big", big.clone());
        b.iter(|| otters_agentfile::syntax::parse(&file));
    });
    g.bench_function("parse+lower 4MiB", |b| {
        let file = SourceFile::new("big", big.clone());
        b.iter(|| {
            let ast = otters_agentfile::syntax::parse(&file);
            otters_agentfile::ir::from_ast(&ast, &file, &BTreeMap::new())
        });
    });
    g.bench_function("analyze 4MiB", |b| {
        let file = SourceFile::new("big", big.clone());
        let opts = otters_agentfile::check::Options::default();
        b.iter(|| otters_agentfile::check::analyze(&file, &opts));
    });
    let real = realistic(4 << 20);
    g.throughput(Throughput::Bytes(real.len() as u64));
    g.bench_function("analyze 4MiB realistic", |b| {
        let file = SourceFile::new("real", real.clone());
        let opts = otters_agentfile::check::Options::default();
        b.iter(|| otters_agentfile::check::analyze(&file, &opts));
    });
    g.finish();

    let typical = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/conformance/openotters/agents/kubectl/Agentfile"
    ))
    .unwrap_or_else(|_| generated(16 << 10));
    let mut g = c.benchmark_group("typical");
    g.throughput(Throughput::Bytes(typical.len() as u64));
    g.bench_function("analyze kubectl", |b| {
        let file = SourceFile::new("Agentfile", typical.clone());
        let opts = otters_agentfile::check::Options::default();
        b.iter(|| otters_agentfile::check::analyze(&file, &opts));
    });
    g.finish();

    // Human rendering: each finding must cost what it prints, wherever it is in the file. miette's
    // own string source scanned from the file's start for every finding (quadratic overall).
    let mut g = c.benchmark_group("human");
    g.sample_size(10);
    for (name, at_end) in [
        ("200 findings at the start of 4 MiB", false),
        ("200 findings at the end of 4 MiB", true),
    ] {
        let filler = generated(4 << 20);
        let mut unused = String::new();
        for i in 0..200 {
            let _ = writeln!(unused, "ARG unused{i}=1");
        }
        let text = if at_end {
            format!("{filler}{unused}")
        } else {
            format!(
                "FROM scratch\n{unused}{}",
                filler.trim_start_matches("# syntax=openotters/agentfile:1\nFROM scratch\n")
            )
        };
        let file = SourceFile::new("big", text);
        let diags: Vec<_> =
            otters_agentfile::check::analyze(&file, &otters_agentfile::check::Options::default())
                .diagnostics
                .into_iter()
                .filter(|d| d.code == otters_agentfile::diagnostic::Code::UnusedArg)
                .collect();
        assert!(diags.len() >= 200);
        let reports = vec![(file, diags)];
        g.bench_function(name, |b| {
            b.iter(|| {
                otters_agentfile::diagnostic::render::human(
                    &reports,
                    otters_agentfile::diagnostic::codes::RULES,
                    otters_agentfile::diagnostic::render::ColorChoice::Never,
                )
            });
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
