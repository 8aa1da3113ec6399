//! Front-end throughput: parse + lower (+ checks, through `check::analyze`) on a generated
//! multi-megabyte Agentfile and on a typical conformance file. `cargo bench --bench frontend`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use otters::diagnostic::SourceFile;
use std::collections::BTreeMap;
use std::fmt::Write as _;

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
             LABEL label.{i}=\"value {i}\"\nCAPABILITY cap_{i}\n\n"
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
    g.bench_function("parse+lower 4MiB", |b| {
        let file = SourceFile::new("big", big.clone());
        b.iter(|| {
            let ast = otters::syntax::parse(&file);
            otters::ir::lower(&ast, &file, &BTreeMap::new())
        });
    });
    g.bench_function("analyze 4MiB", |b| {
        let file = SourceFile::new("big", big.clone());
        let opts = otters::check::Options::default();
        b.iter(|| otters::check::analyze(&file, &opts));
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
        let opts = otters::check::Options::default();
        b.iter(|| otters::check::analyze(&file, &opts));
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
