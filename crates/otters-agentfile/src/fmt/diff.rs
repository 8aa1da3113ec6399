//! A line diff (Myers' O(ND) algorithm) and its unified rendering, to show what formatting
//! changes (`otters fmt --check`, `--diff`).
//!
//! The common head and tail are skipped first, so the usual diff of a formatting change costs
//! little. Past [`MAX_EDITS`] differences the rest of the middle is shown as one replaced block:
//! still a correct diff, only not the shortest, and never quadratic on a hostile file.

use std::fmt::Write as _;

/// How many edits Myers' search tries before giving up on the shortest script.
const MAX_EDITS: usize = 1000;
/// Unchanged lines shown around each change.
const CONTEXT: usize = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Equal,
    Delete,
    Insert,
}

/// The unified diff from `old` to `new`, with `name` in both headers (`--- name\t(original)`,
/// `+++ name\t(formatted)`); empty when the texts are equal. Line breaks are part of the
/// compared lines, so a CRLF line differs from its LF twin; a last line without a break is
/// followed by `\ No newline at end of file`.
pub fn unified(name: &str, old: &str, new: &str) -> String {
    if old == new {
        return String::new();
    }
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let ops = script(&a, &b);
    let mut out = format!("--- {name}\t(original)\n+++ {name}\t(formatted)\n");
    // Changes closer than 2 * CONTEXT unchanged lines share a hunk.
    let mut i = 0;
    while let Some(c) = (i..ops.len()).find(|&j| ops[j] != Op::Equal) {
        let start = c.saturating_sub(CONTEXT).max(i);
        let mut last = c;
        let mut j = c + 1;
        while j < ops.len() {
            if ops[j] != Op::Equal {
                last = j;
                j += 1;
                continue;
            }
            let run_end = (j..ops.len())
                .find(|&t| ops[t] != Op::Equal)
                .unwrap_or(ops.len());
            if run_end == ops.len() || run_end - j > 2 * CONTEXT {
                break;
            }
            j = run_end;
        }
        let end = (last + 1 + CONTEXT).min(ops.len());
        hunk(&mut out, &ops, start, end, &a, &b);
        i = end;
    }
    out
}

/// Appends the hunk covering `ops[start..end]`.
fn hunk(out: &mut String, ops: &[Op], start: usize, end: usize, a: &[&str], b: &[&str]) {
    // Line numbers (0-based) of both sides at `start`.
    let (mut ai, mut bi) = (0, 0);
    for o in &ops[..start] {
        match o {
            Op::Equal => {
                ai += 1;
                bi += 1;
            }
            Op::Delete => ai += 1,
            Op::Insert => bi += 1,
        }
    }
    let count = |which: Op| {
        ops[start..end]
            .iter()
            .filter(|o| **o == Op::Equal || **o == which)
            .count()
    };
    let (an, bn) = (count(Op::Delete), count(Op::Insert));
    // A range of no lines names the line before it, as diff(1) does.
    let first = |at: usize, n: usize| if n == 0 { at } else { at + 1 };
    let _ = writeln!(out, "@@ -{},{an} +{},{bn} @@", first(ai, an), first(bi, bn));
    for o in &ops[start..end] {
        let (sign, line) = match o {
            Op::Equal => {
                ai += 1;
                bi += 1;
                (' ', a[ai - 1])
            }
            Op::Delete => {
                ai += 1;
                ('-', a[ai - 1])
            }
            Op::Insert => {
                bi += 1;
                ('+', b[bi - 1])
            }
        };
        out.push(sign);
        out.push_str(line);
        if !line.ends_with('\n') {
            out.push_str("\n\\ No newline at end of file\n");
        }
    }
}

/// One changed block of a line diff: the lines `old` of the old text (0-based, end exclusive)
/// become the lines `new` of the new text. Lines keep their breaks (`split_inclusive('\n')`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineChange {
    pub old: std::ops::Range<usize>,
    pub new: std::ops::Range<usize>,
}

/// The changed blocks from `old` to `new`, in order (the same script [`unified`] renders): what
/// the language server's range formatting edits, one block at a time.
pub fn line_changes(old: &str, new: &str) -> Vec<LineChange> {
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let mut out: Vec<LineChange> = Vec::new();
    let (mut ai, mut bi, mut open) = (0, 0, false);
    for op in script(&a, &b) {
        if op == Op::Equal {
            open = false;
        } else if !open {
            out.push(LineChange {
                old: ai..ai,
                new: bi..bi,
            });
            open = true;
        }
        match op {
            Op::Equal => {
                ai += 1;
                bi += 1;
            }
            Op::Delete => ai += 1,
            Op::Insert => bi += 1,
        }
        if let Some(c) = out.last_mut().filter(|_| open) {
            c.old.end = ai;
            c.new.end = bi;
        }
    }
    out
}

/// The edit script from `a` to `b`: equal head, the middle's shortest script, equal tail.
fn script(a: &[&str], b: &[&str]) -> Vec<Op> {
    let head = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (am, bm) = (&a[head..a.len() - tail], &b[head..b.len() - tail]);
    let mut ops = vec![Op::Equal; head];
    ops.extend(middle(am, bm));
    ops.extend(std::iter::repeat_n(Op::Equal, tail));
    ops
}

/// Myers' greedy search, keeping each round's furthest points to trace the path back.
// Rationale: diagonals are signed, and every index is bounded by 2 * MAX_EDITS + 3; the names
// (a, b, n, m, d, k, v, x, y) are those of Myers' paper.
#[allow(
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::many_single_char_names
)]
fn middle(a: &[&str], b: &[&str]) -> Vec<Op> {
    let (n, m) = (a.len(), b.len());
    let replace_all = || {
        let mut ops = vec![Op::Delete; n];
        ops.extend(std::iter::repeat_n(Op::Insert, m));
        ops
    };
    if n == 0 || m == 0 {
        return replace_all();
    }
    let max = (n + m).min(MAX_EDITS);
    let offset = max + 1;
    // v[k + offset]: the furthest x on diagonal k = x - y.
    let mut v = vec![0usize; 2 * max + 3];
    let idx = |k: isize| (k + offset as isize) as usize;
    // trace[d]: v on diagonals -d-1..=d+1 before round d (all the traceback reads of it).
    let mut trace: Vec<Vec<usize>> = Vec::new();
    let mut found = None;
    'search: for d in 0..=max {
        trace.push(v[offset - d - 1..=offset + d + 1].to_vec());
        let d = d as isize;
        let mut k = -d;
        while k <= d {
            let mut x = if k == -d || (k != d && v[idx(k - 1)] < v[idx(k + 1)]) {
                v[idx(k + 1)]
            } else {
                v[idx(k - 1)] + 1
            };
            let mut y = (x as isize - k) as usize;
            while x < n && y < m && a[x] == b[y] {
                x += 1;
                y += 1;
            }
            v[idx(k)] = x;
            if x >= n && y >= m {
                found = Some(d as usize);
                break 'search;
            }
            k += 2;
        }
    }
    let Some(d_end) = found else {
        return replace_all();
    };
    // Trace back from (n, m) through each round's snapshot.
    let mut ops = Vec::with_capacity(n + m);
    let (mut x, mut y) = (n as isize, m as isize);
    for d in (1..=d_end).rev() {
        let snap = &trace[d];
        let d = d as isize;
        // The snapshot starts at diagonal -d-1.
        let at = |k: isize| snap[(k + d + 1) as usize];
        let k = x - y;
        let prev_k = if k == -d || (k != d && at(k - 1) < at(k + 1)) {
            k + 1
        } else {
            k - 1
        };
        let prev_x = at(prev_k) as isize;
        let prev_y = prev_x - prev_k;
        while x > prev_x && y > prev_y {
            ops.push(Op::Equal);
            x -= 1;
            y -= 1;
        }
        ops.push(if x == prev_x { Op::Insert } else { Op::Delete });
        x = prev_x;
        y = prev_y;
    }
    while x > 0 && y > 0 {
        ops.push(Op::Equal);
        x -= 1;
        y -= 1;
    }
    ops.reverse();
    ops
}
