//! House rules that keep the code base navigable, checked like any other test: module headers,
//! printing only in the CLI, the length of the architecture map and of library files, and the
//! workspace's architecture (which crate may depend on which, no cycle between the top-level
//! modules of a crate, nor between any two of its files).

use crate::support::repo;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The `src/` directory of every crate: the binary's and each library's under `crates/`.
fn crate_sources() -> Vec<(String, PathBuf)> {
    let mut out = vec![("otters".to_owned(), repo().join("src"))];
    let mut crates: Vec<_> = std::fs::read_dir(repo().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    crates.sort();
    for c in crates {
        let name = c.file_name().unwrap().to_string_lossy().into_owned();
        out.push((name, c.join("src")));
    }
    out
}

/// Every `.rs` file under the `src/` of the binary and of each crate, in path order.
pub(crate) fn all_source_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for (_, src) in crate_sources() {
        rust_files(&src, &mut files);
    }
    files
}

/// Every module opens with a `//!` header saying what it takes, returns and must never do
/// (docs/architecture.md), so a reader knows a file before reading it.
#[test]
fn every_module_has_a_header() {
    let files = all_source_files();
    assert!(files.len() > 100, "only {} files found", files.len());
    let missing: Vec<_> = files
        .iter()
        .filter(|f| !std::fs::read_to_string(f).unwrap().starts_with("//!"))
        .collect();
    assert!(
        missing.is_empty(),
        "modules without a //! header: {missing:?}"
    );
}

/// The longest `docs/architecture.md` may be: a map a reader takes in at once. History (what was
/// measured, what it replaced) goes to `docs/history.md`, the dependency table is
/// `docs/dependencies.md`.
const ARCHITECTURE_MAP_LINES: usize = 600;

/// Why a map of `lines` lines is too long, if it is.
fn map_over_budget(lines: usize) -> Option<String> {
    (lines > ARCHITECTURE_MAP_LINES).then(|| {
        format!(
            "docs/architecture.md has {lines} lines, over its budget of {ARCHITECTURE_MAP_LINES}: \
             keep the map (entry points, code map, invariants, checklists) and move history to \
             docs/history.md"
        )
    })
}

/// The architecture page stays a map, one hop from a question to its file.
#[test]
fn the_architecture_map_fits_600_lines() {
    let text = std::fs::read_to_string(repo().join("docs/architecture.md")).unwrap();
    let lines = text.lines().count();
    assert!(lines > 100, "docs/architecture.md has only {lines} lines");
    if let Some(why) = map_over_budget(lines) {
        panic!("{why}");
    }
}

#[test]
fn the_map_budget_refuses_a_longer_page() {
    assert_eq!(map_over_budget(ARCHITECTURE_MAP_LINES), None);
    assert!(map_over_budget(ARCHITECTURE_MAP_LINES + 1)
        .unwrap()
        .contains("601 lines, over its budget of 600"));
}

/// Library code never prints: only the binary's `src/cli/` writes to stdout or stderr.
#[test]
fn only_the_cli_prints() {
    let files = all_source_files();
    let cli = repo().join("src/cli");
    let offenders: Vec<_> = files
        .iter()
        .filter(|f| !f.starts_with(&cli) && !f.ends_with("main.rs"))
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            // Test modules may print; look only above the first `#[cfg(test)]`.
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            ["println!(", "eprintln!(", "print!(", "eprint!(", "dbg!("]
                .iter()
                .any(|m| code.contains(m))
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "printing outside src/cli: {offenders:?}"
    );
}

/// The top-level module a file belongs to (`registry` for `registry/http.rs`), or `None` for
/// the crate root.
fn top_module(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel
        .components()
        .next()?
        .as_os_str()
        .to_string_lossy()
        .into_owned();
    let name = first.strip_suffix(".rs").unwrap_or(&first).to_owned();
    (name != "lib" && name != "main").then_some(name)
}

/// The code of a file above its test module: tests may reach anywhere.
fn non_test_code(text: &str) -> &str {
    text.split("#[cfg(test)]").next().unwrap_or("")
}

/// `crate::NAME` paths of a file, as the set of NAMEs.
fn crate_paths(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // `otters_crate::…` or similar
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        if !name.is_empty() {
            out.insert(name);
        }
    }
    out
}

/// A cycle in `edges`, as the list of modules on it, if there is one.
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == node) {
            return Some(path[at..].to_vec());
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    for node in edges.keys() {
        if let Some(cycle) = visit(node, edges, &mut Vec::new(), &mut done) {
            return Some(cycle);
        }
    }
    None
}

/// Within every crate, the top-level modules depend on each other one way only, so each can be
/// read (and tested) knowing only those below it. Test modules are exempt.
#[test]
fn no_module_cycle_in_any_crate() {
    let mut checked = 0;
    for (name, src) in crate_sources() {
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for file in &files {
            let Some(top) = top_module(&src, file) else {
                continue;
            };
            let text = std::fs::read_to_string(file).unwrap();
            let targets = edges.entry(top.clone()).or_default();
            for used in crate_paths(non_test_code(&text)) {
                if used != top {
                    targets.insert(used);
                }
            }
            checked += 1;
        }
        assert!(
            find_cycle(&edges).is_none(),
            "crate {name}: a cycle between top-level modules: {:?} (edges: {edges:#?})",
            find_cycle(&edges).unwrap()
        );
    }
    assert!(checked > 100, "only {checked} files checked");
}

#[test]
fn the_cycle_finder_finds_cycles() {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    edges.entry("a".into()).or_default().insert("b".into());
    edges.entry("b".into()).or_default().insert("c".into());
    assert_eq!(find_cycle(&edges), None);
    edges.entry("c".into()).or_default().insert("a".into());
    assert_eq!(find_cycle(&edges).map(|c| c.len()), Some(3));
    assert_eq!(
        crate_paths("use crate::oci::x; otters_crate::no; crate::ir"),
        ["ir", "oci"].iter().map(|s| (*s).to_owned()).collect()
    );
}

/// `text` with every string and character literal blanked to spaces (newlines kept), and every
/// comment too unless `keep_comments`: so braces, `;`, `mod` or a path inside them do not count
/// when reading the code. Blanking keeps every byte offset.
fn blank_literals(text: &str, keep_comments: bool) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        let comment = rest.starts_with(b"//") || rest.starts_with(b"/*");
        let end = if rest.starts_with(b"//") {
            rest.iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |e| i + e)
        } else if rest.starts_with(b"/*") {
            let (mut depth, mut j) = (0, i);
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            j
        } else if rest[0] == b'r'
            && (i == 0 || !ident(b[i - 1]) || (b[i - 1] == b'b' && (i == 1 || !ident(b[i - 2]))))
            && rest[1..]
                .iter()
                .position(|&c| c != b'#')
                .is_some_and(|h| rest[1 + h] == b'"')
        {
            // A raw string: r"…", r#"…"#.
            let hashes = rest[1..].iter().take_while(|&&c| c == b'#').count();
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            let body = i + 2 + hashes;
            b[body..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |e| body + e + close.len())
        } else if rest[0] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            j + 1
        } else if rest[0] == b'\'' {
            // A character literal ('x', '\n', '\u{..}'); a lifetime ('a) is left alone.
            let len = if rest.get(1) == Some(&b'\\') {
                rest[2..].iter().position(|&c| c == b'\'').map(|e| e + 3)
            } else {
                let ch = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                (rest.get(1 + ch) == Some(&b'\'')).then_some(ch + 2)
            };
            len.map_or(i + 1, |l| i + l)
        } else {
            i += 1;
            continue;
        };
        if !(comment && keep_comments) {
            blank(&mut out, i, end);
        }
        i = end;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `text` with every `#[cfg(test)]` item (a test module, a test-only helper or import) blanked:
/// the code a build of the library holds, comments and doc comments included.
fn without_test_items(text: &str) -> String {
    let masked = blank_literals(text, false);
    let m = masked.as_bytes();
    let mut out = text.as_bytes().to_vec();
    let mut from = 0;
    while let Some(at) = masked[from..].find("#[cfg(test)]").map(|a| from + a) {
        let mut i = at + "#[cfg(test)]".len();
        // Further attributes of the same item, then the item: to its `;` or its closing brace.
        let mut depth = 0i32;
        while i < m.len() {
            match m[i] {
                b'{' | b'(' | b'[' => depth += 1,
                b')' | b']' => depth -= 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        i += 1;
                        break;
                    }
                }
                b';' if depth == 0 => {
                    i += 1;
                    break;
                }
                _ => {}
            }
            i += 1;
        }
        for c in &mut out[at..i.min(m.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
        from = i.min(m.len());
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The paths of a `use` tree or path starting at `tail` (the text after `crate::`, `super::`…),
/// each as its segments: `a::{b, c::{self, D}}` gives `a::b`, `a::c`, `a::c::D`. An `as` rename is
/// given as a last segment `as NAME`.
fn path_tree(tail: &str) -> Vec<Vec<String>> {
    let mut segments = Vec::new();
    let mut rest = tail;
    loop {
        rest = rest.trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            let mut out = Vec::new();
            let (mut depth, mut start) = (0, 0);
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' | ',' if depth == 0 => {
                        for sub in path_tree(&group[start..i]) {
                            let mut path = segments.clone();
                            if sub.first().is_some_and(|s| s != "self") {
                                path.extend(sub);
                            } else {
                                path.extend(sub.into_iter().skip(1));
                            }
                            out.push(path);
                        }
                        if c == '}' {
                            return out;
                        }
                        start = i + 1;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            return out;
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '*')
            .collect();
        if name.is_empty() {
            break;
        }
        rest = &rest[name.len()..];
        segments.push(name);
        if let Some(more) = rest.trim_start().strip_prefix("::") {
            rest = more;
        } else {
            if let Some(alias) = rest.trim_start().strip_prefix("as ") {
                let alias: String = alias
                    .trim_start()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                segments.push(format!("as {alias}"));
            }
            break;
        }
    }
    vec![segments]
}

/// One crate's files as the module tree sees them: module path (`["run", "plan"]`) → file, and
/// each file's code without its tests.
struct ModuleTree {
    files: BTreeMap<Vec<String>, PathBuf>,
    code: BTreeMap<PathBuf, String>,
}

/// The module tree of the crate rooted at `src` (its `lib.rs`, else `main.rs`): each `mod NAME;`
/// outside the tests is `NAME.rs` or `NAME/mod.rs` beside a `mod.rs`, `lib.rs` or `main.rs`, and
/// under `FILE/` beside any other `FILE.rs`. Files only a test declares are not in it.
fn module_tree(src: &Path) -> ModuleTree {
    fn walk(tree: &mut ModuleTree, module: Vec<String>, file: PathBuf) {
        let code = without_test_items(&std::fs::read_to_string(&file).unwrap());
        let masked = blank_literals(&code, false);
        let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
        let dir = if ["mod", "lib", "main"].contains(&stem.as_str()) {
            file.parent().unwrap().to_owned()
        } else {
            file.with_extension("")
        };
        tree.files.insert(module.clone(), file.clone());
        tree.code.insert(file, code);
        for line in masked.lines() {
            let Some(decl) = line.trim().split("mod ").nth(1).filter(|_| {
                let head = line.trim().split("mod ").next().unwrap_or("");
                head.is_empty() || head.starts_with("pub")
            }) else {
                continue;
            };
            let Some(name) = decl.trim().strip_suffix(';') else {
                continue;
            };
            let child = [
                dir.join(format!("{name}.rs")),
                dir.join(name).join("mod.rs"),
            ]
            .into_iter()
            .find(|p| p.is_file())
            .unwrap_or_else(|| panic!("mod {name} of {module:?}: no file under {}", dir.display()));
            let mut path = module.clone();
            path.push(name.to_owned());
            walk(tree, path, child);
        }
    }
    let mut tree = ModuleTree {
        files: BTreeMap::new(),
        code: BTreeMap::new(),
    };
    let root = ["lib.rs", "main.rs"]
        .iter()
        .map(|r| src.join(r))
        .find(|p| p.is_file())
        .unwrap();
    walk(&mut tree, Vec::new(), root);
    tree
}

/// An edge of the file graph: the file a path leads to, and the line of the path in its file.
type FileEdges = BTreeMap<PathBuf, BTreeMap<PathBuf, usize>>;

/// The files a module path leads to: its module's, and through re-exports the definer's.
fn targets(
    path: &[String],
    tree: &ModuleTree,
    reexports: &BTreeMap<(Vec<String>, String), Vec<String>>,
    out: &mut BTreeSet<PathBuf>,
    hops: usize,
) {
    let module = (0..=path.len())
        .rev()
        .find(|&k| tree.files.contains_key(&path[..k]))
        .unwrap_or(0);
    out.insert(tree.files[&path[..module]].clone());
    if let Some(next) = path.get(module).filter(|_| hops < 16) {
        if let Some(to) = reexports.get(&(path[..module].to_vec(), next.clone())) {
            let mut further = to.clone();
            further.extend(path[module + 1..].iter().cloned());
            targets(&further, tree, reexports, out, hops + 1);
        }
    }
}

/// The file-level import graph of the crate at `src`, by the rule of
/// `no_import_cycle_between_files_of_any_crate`.
fn file_graph(src: &Path) -> FileEdges {
    let tree = module_tree(src);
    let module_of: BTreeMap<&PathBuf, &Vec<String>> =
        tree.files.iter().map(|(m, f)| (f, m)).collect();
    let absolute = |me: &[String], head: &str, path: &[String]| -> Vec<String> {
        let mut base: Vec<String> = match head {
            "crate" => Vec::new(),
            "self" => me.to_vec(),
            _ => me[..me.len().saturating_sub(1)].to_vec(), // super
        };
        let mut path = path;
        while path.first().is_some_and(|s| s == "super") {
            base.pop();
            path = &path[1..];
        }
        base.extend(path.iter().filter(|s| !s.starts_with("as ")).cloned());
        base
    };
    // (module, exported name) → the absolute path it re-exports, and the `pub use` spans.
    let mut reexports: BTreeMap<(Vec<String>, String), Vec<String>> = BTreeMap::new();
    let mut passages: BTreeMap<&PathBuf, Vec<(usize, usize)>> = BTreeMap::new();
    for (file, code) in &tree.code {
        let me = module_of[file];
        let masked = blank_literals(code, false);
        let mut from = 0;
        while let Some(at) = masked[from..].find("pub").map(|a| from + a) {
            from = at + 3;
            let after = masked[from..].trim_start();
            let after = if after.starts_with('(') {
                after.split_once(')').map_or("", |(_, r)| r.trim_start())
            } else {
                after
            };
            let Some(tree_text) = after.strip_prefix("use ") else {
                continue;
            };
            let start = masked.len() - tree_text.len();
            let end = start + tree_text.find(';').unwrap_or(tree_text.len());
            passages.entry(file).or_default().push((at, end));
            for path in path_tree(&code[start..end]) {
                let Some((head, rest)) = path.split_first() else {
                    continue;
                };
                let (head, rest) = match head.as_str() {
                    "crate" | "self" | "super" => (head.as_str(), rest),
                    _ => ("self", &path[..]), // a submodule, named bare
                };
                let name = match rest.last() {
                    Some(last) if last.starts_with("as ") => last[3..].to_owned(),
                    Some(last) => last.clone(),
                    None => continue,
                };
                reexports.insert((me.clone(), name), absolute(me, head, rest));
            }
        }
    }
    let mut edges = FileEdges::new();
    for (file, code) in &tree.code {
        let me = module_of[file];
        let spans = passages.get(file).cloned().unwrap_or_default();
        let into = edges.entry(file.clone()).or_default();
        let code = &blank_literals(code, true);
        for head in ["crate::", "super::", "self::"] {
            for (at, _) in code.match_indices(head) {
                let before = code[..at].chars().next_back();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
                    || spans.iter().any(|&(a, b)| (a..b).contains(&at))
                {
                    continue; // `otters_crate::…`, `super::super::…`, or a re-export
                }
                let line = code[..at].matches('\n').count() + 1;
                for path in path_tree(&code[at + head.len()..]) {
                    let full = absolute(me, head.trim_end_matches(':'), &path);
                    let mut found = BTreeSet::new();
                    targets(&full, &tree, &reexports, &mut found, 0);
                    for target in found.into_iter().filter(|t| t != file) {
                        into.entry(target).or_insert(line);
                    }
                }
            }
        }
    }
    edges
}

/// Every circle of `edges`: its files (each strongly connected set of two or more), with the
/// edges between them as `file:line → file`, one line each.
fn circles(edges: &FileEdges, root: &Path) -> Vec<String> {
    use std::fmt::Write as _;
    let reach = |from: &PathBuf| -> BTreeSet<PathBuf> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(f) = todo.pop() {
            for next in edges.get(&f).into_iter().flat_map(|e| e.keys()) {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&PathBuf, BTreeSet<PathBuf>> =
        edges.keys().map(|f| (f, reach(f))).collect();
    let name = |f: &Path| f.strip_prefix(root).unwrap_or(f).display().to_string();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for (file, from_here) in &reached {
        if done.contains(*file) || !from_here.contains(*file) {
            continue;
        }
        let ring: BTreeSet<&PathBuf> = from_here
            .iter()
            .filter(|g| reached.get(g).is_some_and(|r| r.contains(*file)))
            .collect();
        let mut text = format!(
            "circle of {} files: {}",
            ring.len(),
            ring.iter().map(|f| name(f)).collect::<Vec<_>>().join(", ")
        );
        for f in &ring {
            for (to, line) in edges.get(*f).into_iter().flatten() {
                if ring.contains(to) {
                    write!(text, "\n    {}:{line} → {}", name(f), name(to)).unwrap();
                }
            }
            done.insert((*f).clone());
        }
        out.push(text);
    }
    out
}

/// No circle at any depth (issue 33): inside every crate, the files import each other one way
/// only, so each can be read (and tested) knowing only the files below it. Each circle is
/// reported with its files and the lines that close it.
///
/// The rule (`file_graph`): the files are the crate's module tree, from `lib.rs` or `main.rs`
/// through each `mod NAME;` outside the tests (`a::b` is `a/b.rs` or `a/b/mod.rs`). Each path a
/// file spells from `crate::`, `super::` or `self::`, use groups expanded, is an edge to the file
/// of the path's longest module prefix — in code, doc links and comments alike (a doc link is
/// resolved by rustdoc and read as a dependency), not in string literals or `#[cfg(test)]` items.
/// If the next name is re-exported there (`pub use`), the path is also an edge, following the
/// re-export, to the file that defines the item: so two files cannot hide a circle behind their
/// `mod.rs`. A `pub use` line itself is a passage, not an edge of its `mod.rs` (else every child
/// reaching a facade's item through `super::` would circle with it). Not read: a module naming
/// its own submodules bare (`mod x; … x::f()`), which is the module tree, not an import.
#[test]
fn no_import_cycle_between_files_of_any_crate() {
    let mut found = Vec::new();
    let mut files = 0;
    for (name, src) in crate_sources() {
        let edges = file_graph(&src);
        files += edges.len();
        for circle in circles(&edges, &src) {
            found.push(format!("crate {name}: {circle}"));
        }
    }
    assert!(files > 200, "only {files} files in the module trees");
    assert!(
        found.is_empty(),
        "import circles between files (make one side stop naming the other: move the shared item \
         below both, or reword a doc link):\n{}",
        found.join("\n")
    );
}

/// The file graph finds a circle however it is spelled: a `super::` group, a re-export through
/// a facade `mod.rs`, a doc link; and none in a tree that points one way (test items left out).
#[test]
fn the_file_graph_finds_planted_circles() {
    let dir = std::env::temp_dir().join(format!("otters-tidy-files-{}", std::process::id()));
    let write = |rel: &str, text: &str| {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    let _ = std::fs::remove_dir_all(&dir);
    write(
        "lib.rs",
        "//! root\nmod a;\npub mod b;\n#[cfg(test)]\nmod t;\n",
    );
    write("t.rs", "use crate::a::x::Deep;\n");
    write(
        "a/mod.rs",
        "//! a\npub(crate) mod x;\nmod y;\npub use y::Thing;\n",
    );
    write(
        "a/x.rs",
        "//! x\nuse super::{y::{self, Other}, Thing as T};\nlet s = \"crate::b::no\"; // '{'\n",
    );
    write(
        "a/y.rs",
        "//! y\npub struct Thing;\n#[cfg(test)]\nuse crate::b::Z;\n",
    );
    write("b.rs", "//! uses [`crate::a::Thing`]\npub struct Z;\n");
    let one_way = file_graph(&dir);
    let rel = |f: &str| dir.join(f);
    assert_eq!(
        one_way[&rel("a/x.rs")].keys().collect::<Vec<_>>(),
        [&rel("a/mod.rs"), &rel("a/y.rs")]
    );
    assert_eq!(
        one_way[&rel("b.rs")].keys().collect::<Vec<_>>(),
        [&rel("a/mod.rs"), &rel("a/y.rs")]
    );
    assert!(!one_way.contains_key(&rel("t.rs")), "{one_way:?}");
    assert_eq!(circles(&one_way, &dir), Vec::<String>::new());
    // y.rs now names b outside its tests: b → (through the facade a) y → b.
    write(
        "a/y.rs",
        "//! y\npub struct Thing;\n/// See [`crate::b::Z`].\nfn f() {}\n",
    );
    let planted = circles(&file_graph(&dir), &dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        planted,
        ["circle of 2 files: a/y.rs, b.rs\n    a/y.rs:3 → b.rs\n    b.rs:1 → a/y.rs"]
    );
}

/// The first path segment of every `PREFIX…` path in `code`, for each prefix: `super::build::x`
/// gives `build`, `super::{fail, images::human_size}` gives `fail` and `images`.
fn sibling_paths(code: &str, prefixes: &[&str]) -> BTreeSet<String> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = BTreeSet::new();
    for prefix in prefixes {
        let mut rest = code;
        while let Some(at) = rest.find(prefix) {
            let before = rest[..at].chars().next_back();
            rest = &rest[at + prefix.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue; // `self::super::…` or `other_crate::…`
            }
            if let Some(group) = rest.strip_prefix('{') {
                // A `use` group: its items up to the matching brace.
                let mut depth = 1;
                let end = group
                    .char_indices()
                    .find(|&(_, c)| {
                        depth += match c {
                            '{' => 1,
                            '}' => -1,
                            _ => 0,
                        };
                        depth == 0
                    })
                    .map_or(group.len(), |(i, _)| i);
                let mut item_depth = 0;
                let mut start = 0;
                for (i, c) in group[..end].char_indices() {
                    match c {
                        '{' => item_depth += 1,
                        '}' => item_depth -= 1,
                        ',' if item_depth == 0 => {
                            out.insert(ident(&group[start..i]));
                            start = i + 1;
                        }
                        _ => {}
                    }
                }
                out.insert(ident(&group[start..end]));
            } else {
                out.insert(ident(rest));
            }
        }
    }
    out.remove("");
    out
}

/// The command files of the CLI share code only through its shared modules (`common`,
/// `progress`) or the library crates: none uses a sibling command's module, through `super::` or
/// `crate::cli::`, so a command can be read, moved or deleted alone (issue 19). Nor do any two
/// CLI modules, shared ones included, use each other in a circle.
#[test]
fn cli_commands_do_not_use_each_other() {
    let offenders = cli_sibling_imports(&repo().join("src/cli"));
    assert!(
        offenders.is_empty(),
        "CLI files using a sibling command's module (move the shared code into src/cli/common.rs or a library crate): {offenders:#?}"
    );
}

/// The CLI modules `file` uses (sibling files of src/cli), above its tests.
fn cli_uses(file: &Path, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let text = std::fs::read_to_string(file).unwrap();
    sibling_paths(non_test_code(&text), &["super::", "crate::cli::"])
        .into_iter()
        .filter(|m| modules.contains(m))
        .collect()
}

/// `(file, sibling command modules it uses)` for every CLI file that uses one, and a circle
/// among the CLI's modules as one more entry (`"circle"`, the modules on it).
fn cli_sibling_imports(cli: &Path) -> Vec<(String, Vec<String>)> {
    // Shared modules, not commands: presentation (`common`, `progress`, `errors`), the signers
    // `build` and `sign` share (`attest`), and the values of shared flag groups (`flags`).
    const SHARED: [&str; 5] = ["common", "progress", "errors", "attest", "flags"];
    let mut files = Vec::new();
    rust_files(cli, &mut files);
    let name = |f: &Path| f.file_stem().unwrap().to_string_lossy().into_owned();
    let modules: BTreeSet<String> = files
        .iter()
        .map(|f| name(f))
        .filter(|n| n != "mod")
        .collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut offenders = Vec::new();
    for file in files.iter().filter(|f| name(f) != "mod") {
        let me = name(file);
        let used: BTreeSet<String> = cli_uses(file, &modules)
            .into_iter()
            .filter(|m| *m != me)
            .collect();
        let commands: Vec<String> = used
            .iter()
            .filter(|m| !SHARED.contains(&m.as_str()))
            .cloned()
            .collect();
        if !commands.is_empty() {
            offenders.push((me.clone(), commands));
        }
        edges.insert(me, used);
    }
    if let Some(circle) = find_cycle(&edges) {
        offenders.push(("circle".to_owned(), circle));
    }
    offenders
}

#[test]
fn the_sibling_check_sees_super_and_group_imports() {
    let code = "use super::{fail, images::{human_size, x}, CliResult};\n\
                let c = super::pushpull::client(true);\n\
                use crate::cli::build::print_diagnostics;\n\
                otters_x::super::no; self::super::no;";
    assert_eq!(
        sibling_paths(code, &["super::", "crate::cli::"]),
        ["CliResult", "build", "fail", "images", "pushpull"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect()
    );
    // A circle through shared modules is found as well.
    let dir = std::env::temp_dir().join(format!("otters-tidy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("common.rs"), "use super::progress::x;").unwrap();
    std::fs::write(dir.join("progress.rs"), "use super::common::y;").unwrap();
    std::fs::write(dir.join("push.rs"), "use super::{common::z, pull};").unwrap();
    std::fs::write(dir.join("pull.rs"), "use super::common::z;").unwrap();
    let found = cli_sibling_imports(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        found,
        [
            ("push".to_owned(), vec!["pull".to_owned()]),
            (
                "circle".to_owned(),
                vec!["common".to_owned(), "progress".to_owned()]
            ),
        ]
    );
}

/// The otters crates each of ours may use, from its Cargo.toml. Dependencies point one way: core
/// ← agentfile, core ← spec ← oci, spec ← supply, {agentfile, oci, supply} ← pipeline ← run ← the
/// binary.
#[test]
fn crates_depend_one_way() {
    let allowed: [(&str, &[&str]); 12] = [
        ("otters-core", &[]),
        ("otters-spec", &["otters-core"]),
        ("otters-agentfile", &["otters-core"]),
        ("otters-oci", &["otters-core", "otters-spec"]),
        // The organisation policy (issue 35): below the pipeline, so lint and build hold it; no
        // registry, no store, no network.
        (
            "otters-policy",
            &["otters-core", "otters-agentfile", "otters-spec"],
        ),
        (
            "otters-pipeline",
            &[
                "otters-core",
                "otters-agentfile",
                "otters-spec",
                "otters-oci",
                "otters-supply",
                "otters-policy",
            ],
        ),
        // The run and deploy stack, on top of the pipeline (issue 33).
        (
            "otters-run",
            &[
                "otters-core",
                "otters-agentfile",
                "otters-oci",
                "otters-supply",
                "otters-pipeline",
                "otters-policy",
            ],
        ),
        // `otters diff` (issue 34): two agents read as `run` reads them, or built from a directory;
        // their bundles and SBOMs read (never verified) with the supply chain's readers.
        (
            "otters-diff",
            &[
                "otters-core",
                "otters-agentfile",
                "otters-spec",
                "otters-oci",
                "otters-pipeline",
                "otters-supply",
            ],
        ),
        // The language server reads the lock and confines sources through its Project seam,
        // which the binary implements with the pipeline (issue 19): no pipeline, no network.
        ("otters-lsp", &["otters-core", "otters-agentfile"]),
        ("otters-supply", &["otters-core", "otters-spec"]),
        // The published JSON Schemas, generated from the types that read and write each format
        // (issue 38): above every crate whose types it describes, below only the binary.
        (
            "otters-schema",
            &[
                "otters-agentfile",
                "otters-oci",
                "otters-pipeline",
                "otters-run",
            ],
        ),
        // The command line's grammar: default values and the types flags become, nothing more.
        (
            "otters-cli",
            &[
                "otters-agentfile",
                "otters-spec",
                "otters-core",
                "otters-pipeline",
                "otters-run",
                "otters-supply",
                "otters-policy",
            ],
        ),
    ];
    // A new crate is placed in the graph here before anything may depend on it.
    for entry in std::fs::read_dir(repo().join("crates")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            allowed.iter().any(|(k, _)| *k == name),
            "crates/{name} is not in the dependency rule of this test: add it with what it may use"
        );
    }
    for (krate, may) in allowed {
        let manifest =
            std::fs::read_to_string(repo().join("crates").join(krate).join("Cargo.toml")).unwrap();
        let deps = manifest
            .split("[dependencies]")
            .nth(1)
            .and_then(|s| s.split("\n[").next())
            .unwrap_or("");
        for line in deps.lines() {
            let dep = line.split([' ', '=']).next().unwrap_or("");
            if dep.starts_with("otters") {
                assert!(
                    may.contains(&dep),
                    "{krate} depends on {dep}, which it may not (see docs/architecture.md)"
                );
            }
        }
    }
}

/// The front end builds without anything async, networked or terminal-bound, so a language server
/// or a WebAssembly playground can use it; so does the language server. Asked of cargo itself,
/// through `cargo tree`.
#[test]
fn the_front_end_pulls_in_no_async_network_or_terminal_crate() {
    for krate in ["otters-core", "otters-agentfile", "otters-lsp"] {
        assert_links_none_of(
            krate,
            &["tokio", "reqwest", "rustls", "hyper", "indicatif", "clap"],
        );
    }
}

/// The crates `cargo tree -e normal -p KRATE` lists (what KRATE links, dev-dependencies left out).
fn normal_dependencies(krate: &str) -> String {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "-e",
            "normal",
            "--prefix",
            "none",
            "-p",
            krate,
        ])
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        tree.contains(krate),
        "cargo tree printed no {krate}: {tree}"
    );
    tree
}

/// Fails naming the first of `banned` that `krate` links.
fn assert_links_none_of(krate: &str, banned: &[&str]) {
    let tree = normal_dependencies(krate);
    for banned in banned {
        let hit = tree.lines().find(|l| l.split(' ').next() == Some(*banned));
        assert!(hit.is_none(), "{krate} depends on {banned}: {hit:?}");
    }
}

/// The network stack a crate of plain values or documents must not link.
const NETWORK_STACK: &[&str] = &["tokio", "reqwest", "hyper", "rustls"];

/// The spec values and the supply-chain documents link no network stack (issue 19 item 2): a
/// verifier, a WebAssembly tool or the language server can use them without an HTTP client.
#[test]
fn spec_values_and_supply_link_no_network_stack() {
    for krate in ["otters-spec", "otters-supply"] {
        assert_links_none_of(krate, NETWORK_STACK);
    }
}

/// The language server reads lock pins without the HTTP stack (issue 19 item 2).
#[test]
fn the_language_server_links_no_network_stack() {
    assert_links_none_of("otters-lsp", NETWORK_STACK);
}

/// The finder of `cargo tree` hits matches whole crate names, so it can fail.
#[test]
fn the_tree_check_sees_the_network_stack() {
    let tree = normal_dependencies("otters-oci");
    assert!(
        tree.lines().any(|l| l.split(' ').next() == Some("reqwest")),
        "otters-oci links reqwest, but the check did not see it: {tree}"
    );
}

/// The `Deserialize` structs in `code` that read a manifest or an index: named `…Doc`, or with a
/// `config`, `layers` or `manifests` field of descriptors. Each such struct outside otters-spec is
/// a second manifest model beside `otters_spec::descriptor::ManifestDoc`.
fn manifest_structs(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[derive(") {
        rest = &rest[at..];
        let derive = rest.split(']').next().unwrap_or("");
        let Some(start) = rest.find("struct ") else {
            break;
        };
        let after = &rest[start + "struct ".len()..];
        let name: String = after
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let body = after
            .split_once('{')
            .map_or("", |(_, b)| b.split('}').next().unwrap_or(""));
        let reads_manifest = body.lines().any(|l| {
            let l = l
                .trim()
                .trim_start_matches("pub ")
                .trim_start_matches("pub(crate) ");
            ["config:", "layers:", "manifests:"]
                .iter()
                .any(|f| l.starts_with(f))
                && l.contains("Descriptor")
        });
        if derive.contains("Deserialize") && (name.ends_with("Doc") || reads_manifest) {
            found.push(name);
        }
        rest = &rest["#[derive(".len()..];
    }
    found
}

/// One manifest and index model (issue 19 item 3): `otters_spec::descriptor::ManifestDoc` is the
/// only struct that deserialises a manifest or an index; every other reader parses through it.
#[test]
fn manifests_are_read_only_through_the_spec_model() {
    let spec = repo().join("crates/otters-spec");
    let mut stray = Vec::new();
    for file in all_source_files() {
        if file.starts_with(&spec) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for name in manifest_structs(non_test_code(&text)) {
            stray.push(format!("{}: struct {name}", file.display()));
        }
    }
    assert!(
        stray.is_empty(),
        "a second manifest model; parse with otters_spec::descriptor::ManifestDoc instead:\n{}",
        stray.join("\n")
    );
}

#[test]
fn the_manifest_struct_finder_finds_them() {
    let code = "#[derive(serde::Deserialize)]\nstruct IndexFile {\n    #[serde(default)]\n    manifests: Vec<Descriptor>,\n}\n\
        #[derive(Deserialize, Default)]\npub(crate) struct Doc { layers: Vec<otters_oci::Descriptor> }\n\
        #[derive(Deserialize)]\nstruct Layers {\n    pub layers: Vec<Descriptor>,\n}\n\
        #[derive(Deserialize)]\nstruct Other {\n    name: String,\n}\n\
        #[derive(Debug)]\nstruct PlanDoc {\n    layers: Vec<Descriptor>,\n}\n";
    assert_eq!(manifest_structs(code), ["IndexFile", "Doc", "Layers"]);
}

/// Library error texts speak of values; the CLI adds the flag that fixes them as a `help:` line
/// (`src/cli/errors/hints.rs`), since a language server or another front end has no such flags.
/// The texts an error may still quote a flag in: a whole other command the user runs, each with
/// why it reads right from any front end.
const FLAGS_ALLOWED_IN_LIBRARY_ERRORS: [(&str, &str); 11] = [
    (
        "log -1 --format=%ct",
        "git's own flag, in the git command that shows (or gives) the time: epoch.rs, git_epoch.rs",
    ),
    (
        "`otters export {} --as runnable --push`",
        "another command, run first, that makes the export kube needs: kube/agent.rs",
    ),
    (
        "`otters export {} --as {what} --push`",
        "another command, run first, that makes the export (runnable or tree) kube needs: kube/agent.rs",
    ),
    (
        "`otters export REF --as runnable --push`",
        "another command, run first, that makes the export kube needs: kube/agent.rs",
    ),
    (
        "`otters export --push`",
        "the command whose output names an image by digest: kube/mod.rs",
    ),
    (
        "`otters build --allow-unpinned`",
        "the build not to run again, before signing: run/plan/model.rs",
    ),
    (
        "`otters pull --referrers {}`",
        "another command, run first, that brings an image's signatures into the store: trust.rs",
    ),
    (
        "`otters sign {r} --key KEY`",
        "another command, run first, that signs the image with a key: trust.rs",
    ),
    (
        "`otters sign {r} --keyless`",
        "another command, run first, that signs the image keyless: trust.rs",
    ),
    (
        "`otters key generate --out PREFIX`",
        "another command, run first, that makes a P-256 key: otters-supply keys.rs",
    ),
    (
        "zstd without `--long`",
        "zstd's own flag, in how to recompress a layer otters refuses: decompress.rs",
    ),
];

/// Each `#[error(…)]` attribute of `text`, from `#[error(` to the `)]` that ends its line.
fn error_attributes(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("#[error(") {
        let tail = &rest[at..];
        let end = tail.find(")]\n").map_or(tail.len(), |e| e + 2);
        out.push(&tail[..end]);
        rest = &tail[end..];
    }
    out
}

/// The flags (`--name`) an error attribute names outside the allowed quoted commands.
fn flags_named(attribute: &str) -> Vec<String> {
    let mut text = attribute.to_owned();
    for (allowed, _) in FLAGS_ALLOWED_IN_LIBRARY_ERRORS {
        text = text.replace(allowed, "");
    }
    text.match_indices("--")
        .filter_map(|(i, _)| {
            let name: String = text[i + 2..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
                .collect();
            name.starts_with(|c: char| c.is_ascii_lowercase())
                .then(|| format!("--{name}"))
        })
        .collect()
}

/// No library error names a CLI flag (issue 19 item 5): the language server and library users
/// get these texts, and have no flags; the CLI adds them (see `FLAGS_ALLOWED_IN_LIBRARY_ERRORS`
/// for the quoted commands an error may still hold).
#[test]
fn library_errors_name_no_cli_flag() {
    let mut offenders = Vec::new();
    for (name, src) in crate_sources() {
        if name == "otters" {
            continue;
        }
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            for attribute in error_attributes(&text) {
                let flags = flags_named(attribute);
                if !flags.is_empty() {
                    offenders.push(format!("{}: {flags:?} in {attribute}", f.display()));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "library errors that name a CLI flag (say the value; add the flag as a help line in \
         src/cli/errors/hints.rs):\n{}",
        offenders.join("\n")
    );
}

/// Files that build the command line of another program, whose flags are that program's, not
/// ours: each with the program.
const ARGV_OF_OTHER_PROGRAMS: [(&str, &str); 4] = [
    (
        "plan/docker.rs",
        "docker's or podman's `run`, as the plan prints and execs it",
    ),
    ("plan/mod.rs", "the agent runtime's, started by the run"),
    (
        "egress/launch.rs",
        "docker's or podman's `network` and `run`, for a run confined to its EGRESS",
    ),
    (
        "build/git_epoch.rs",
        "git's, asked for the last commit's time",
    ),
];

/// Each string literal of `code` (outside comments) that names a flag, with the byte offset of
/// its opening quote.
fn literals_naming_flags(code: &str) -> Vec<(usize, &str)> {
    let masked = blank_literals(code, true);
    let (c, m) = (code.as_bytes(), masked.as_bytes());
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        // A literal is a run that the masking blanked, starting at a quote (or `r"`, `r#"`).
        if c[i] != m[i] && (c[i] == b'"' || c[i] == b'r') {
            let mut end = i;
            while end < c.len() && (c[end] != m[end] || c[end] == b' ' || c[end] == b'\n') {
                end += 1;
            }
            let text = code[i..end].trim_end();
            if text.contains('"') && !flags_named(text).is_empty() {
                out.push((i, text));
            }
            i = end.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

/// Whether the literal at `at` is a flag passed as a value (`"--secret"`, `"--key KEY"`: the
/// whole literal is one flag, with at most a value word) or the text of a string error (its
/// statement makes an `Err`, maps an error or builds one from text, or its function returns
/// `Result<_, String>`).
fn flag_as_error_text(code: &str, at: usize, literal: &str) -> bool {
    let inner = literal
        .trim_start_matches(['r', '#'])
        .trim_matches(['"', '#']);
    let words: Vec<&str> = inner.split(' ').collect();
    let one_flag = inner.starts_with("--") && words.len() <= 2 && !inner.contains([',', '`']);
    let masked = blank_literals(&code[..at], false);
    let statement = &masked[masked.rfind([';', '}']).map_or(0, |s| s + 1)..];
    // The signature of the function the literal is in: one whose errors are `String`s.
    let signature = masked
        .rfind("fn ")
        .map_or("", |f| masked[f..].split('{').next().unwrap_or(""));
    one_flag
        || signature.contains(", String>")
        || ["Err(", "map_err(", "ok_or", "Error::", "Error {"]
            .iter()
            .any(|e| statement.contains(e))
}

/// No library text that reaches a user as an error names a CLI flag (issue 33 item 2), beyond
/// the `#[error]` attributes `library_errors_name_no_cli_flag` reads: a string error
/// (`Err(format!("… --flag …"))`), or a flag handed along as a value (`what: "--secret"`) for an
/// error to print. The binary's hint layer says which flag fixes a value. Command lines of other
/// programs are exempt (`ARGV_OF_OTHER_PROGRAMS`).
#[test]
fn library_string_errors_and_values_name_no_cli_flag() {
    let mut offenders = Vec::new();
    for (name, src) in crate_sources().into_iter().filter(|(n, _)| n != "otters") {
        for (file, code) in module_tree(&src).code {
            let rel = file
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if ARGV_OF_OTHER_PROGRAMS.iter().any(|(f, _)| *f == rel) {
                continue;
            }
            for (at, literal) in literals_naming_flags(&code) {
                if flag_as_error_text(&code, at, literal) {
                    let line = code[..at].matches('\n').count() + 1;
                    offenders.push(format!("{name}/src/{rel}:{line}: {literal}"));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "library texts that name a CLI flag as an error or a value (say the value; add the flag \
         in src/cli/errors/hints.rs):\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_flag_value_finder_finds_values_and_string_errors() {
    let code = "let what = \"--secret\";\n\
                let e = x.map_err(|e| format!(\"bad {e}: pass --name\"))?;\n\
                let argv = [\"run\", \"--rm\"]; // \"--not-code\"\n\
                Diagnostic::new(c, s, \"--offline, but the lock has no pin\");\n\
                fn f() -> Result<(), String> {\n    let bad = |e| {\n        let w = 1;\n        format!(\"--regexp {e} is bad\")\n    };\n}\n";
    let found: Vec<(&str, bool)> = literals_naming_flags(code)
        .into_iter()
        .map(|(at, l)| (l, flag_as_error_text(code, at, l)))
        .collect();
    assert_eq!(
        found,
        [
            ("\"--secret\"", true),
            ("\"bad {e}: pass --name\"", true),
            ("\"--rm\"", true),
            ("\"--offline, but the lock has no pin\"", false),
            ("\"--regexp {e} is bad\"", true),
        ]
    );
}

#[test]
fn the_library_error_flag_finder_finds_flags() {
    let text = "enum E {\n    #[error(\"--namespace {0:?} is bad; pass --name, see `otters export --push`\")]\n    A(String),\n    #[error(\"{} and {}\", a.b(), c)]\n    B,\n}\n";
    let found = error_attributes(text);
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(flags_named(found[0]), ["--namespace", "--name"]);
    assert!(flags_named(found[1]).is_empty());
    assert!(flags_named("#[error(\"`git -C {} log -1 --format=%ct` says\")]").is_empty());
}

/// The most lines of code a library file may hold: past it a file does several jobs, and is split
/// along the seams it already has (issue 33).
const LIBRARY_FILE_LINES_OF_CODE: usize = 600;

/// The lines of code of a Rust file's `text`: its lines that are not blank and not a comment
/// (`//`, `//!`, `///`, after indentation), once every `#[cfg(test)]` item (a test module, a
/// test-only helper or import) is blanked by `without_test_items`. Code a library build does not
/// hold is not counted; a line inside a block comment or a string literal is.
fn lines_of_code(text: &str) -> usize {
    without_test_items(text)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .count()
}

/// Whether `file` (under a crate's `src/`) holds only tests: `tests.rs`, `*_tests.rs`, or
/// anything under a `tests/` directory.
fn only_tests(src: &Path, file: &Path) -> bool {
    let rel = file.strip_prefix(src).unwrap_or(file);
    let name = rel.file_name().unwrap_or_default().to_string_lossy();
    name == "tests.rs"
        || name.ends_with("_tests.rs")
        || rel
            .parent()
            .is_some_and(|d| d.components().any(|c| c.as_os_str() == "tests"))
}

/// The library files of `crates/*/src/` over [`LIBRARY_FILE_LINES_OF_CODE`], each with its count.
fn oversize_library_files() -> Vec<(PathBuf, usize)> {
    let mut out = Vec::new();
    for (name, src) in crate_sources() {
        if name == "otters" {
            continue; // the binary's src/: `the_binary_is_dispatch_and_printing`
        }
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for f in files.into_iter().filter(|f| !only_tests(&src, f)) {
            let n = lines_of_code(&std::fs::read_to_string(&f).unwrap());
            if n > LIBRARY_FILE_LINES_OF_CODE {
                out.push((f, n));
            }
        }
    }
    out
}

/// No library file over 600 lines of code (issue 33): one that long does several jobs. The count
/// is `lines_of_code`'s: not blank, not a `//` comment, not in a `#[cfg(test)]` item; files that
/// are only tests (`tests.rs`, `*_tests.rs`, under `tests/`) are not counted at all.
#[test]
fn no_library_file_over_600_lines_of_code() {
    let over = oversize_library_files();
    assert!(
        over.is_empty(),
        "library files over {LIBRARY_FILE_LINES_OF_CODE} lines of code (not blank, not a comment, \
         not a test):\n{}",
        over.iter()
            .map(|(f, n)| format!(
                "    {}: {n} lines of code; split it along its seams",
                f.strip_prefix(repo()).unwrap_or(f).display()
            ))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The lines of code of the library files under `src` (as `lines_of_code` counts them; test-only
/// files not counted).
fn crate_lines_of_code(src: &Path) -> usize {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files
        .into_iter()
        .filter(|f| !only_tests(src, f))
        .map(|f| lines_of_code(&std::fs::read_to_string(&f).unwrap()))
        .sum()
}

/// No crate over 10,000 lines of code (issue 33): past that a crate holds several layers, as
/// `otters-pipeline` did before the run and deploy stack became `otters-run`.
#[test]
fn no_crate_over_10000_lines_of_code() {
    let over: Vec<String> = crate_sources()
        .into_iter()
        .map(|(name, src)| (crate_lines_of_code(&src), name))
        .filter(|(n, _)| *n > 10_000)
        .map(|(n, name)| format!("    {name}: {n} lines of code; cut it along its layers"))
        .collect();
    assert!(
        over.is_empty(),
        "crates over 10,000 lines of code:\n{}",
        over.join("\n")
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("lib.rs"), "fn f() {}\n".repeat(10_001)).unwrap();
    std::fs::write(dir.path().join("tests.rs"), "fn t() {}\n".repeat(50)).unwrap();
    assert_eq!(
        crate_lines_of_code(dir.path()),
        10_001,
        "a planted crate is counted"
    );
}

/// The counter skips blanks, comments and test items, and counts the rest, block comments and
/// strings included; test-only files are told apart from library files.
#[test]
fn the_line_counter_counts_code_only() {
    let text = "//! header\n\
                \n\
                use a::b;\n\
                /// doc\n\
                pub fn f() {\n\
                \x20   // note\n\
                \x20   let s = \"#[cfg(test)]\";\n\
                }\n\
                #[cfg(test)]\n\
                use c::d;\n\
                /* block */\n\
                \n\
                #[cfg(test)]\n\
                mod tests {\n\
                \x20   #[test]\n\
                \x20   fn t() { let _ = '}'; }\n\
                }\n\
                fn g() {}\n";
    // `use a::b;`, `pub fn f() {`, `let s = …;`, `}`, `/* block */`, `fn g() {}`.
    assert_eq!(lines_of_code(text), 6);
    let long = "fn f() {}\n".repeat(LIBRARY_FILE_LINES_OF_CODE + 1);
    assert_eq!(lines_of_code(&long), LIBRARY_FILE_LINES_OF_CODE + 1);
    let src = Path::new("/c/src");
    for test_file in [
        "tests.rs",
        "a/tests.rs",
        "b_tests.rs",
        "tests/x.rs",
        "a/tests/y/z.rs",
    ] {
        assert!(only_tests(src, &src.join(test_file)), "{test_file}");
    }
    for library in ["lib.rs", "a/mod.rs", "tests_of.rs", "contests.rs", "a/b.rs"] {
        assert!(!only_tests(src, &src.join(library)), "{library}");
    }
}

/// What the binary may hold beyond dispatch and printing, each with its reason: the places it
/// touches files, the process table or the environment of its own accord.
const BINARY_EDGES: [(&str, &str, &str); 6] = [
    (
        "cli/blob.rs",
        "std::fs",
        "reads the file `otters blob put` names",
    ),
    (
        "cli/meta.rs",
        "std::fs",
        "writes the man pages and completions asked for",
    ),
    (
        "cli/lsp.rs",
        "process::Command",
        "the language server's builds run this binary",
    ),
    (
        "cli/common.rs",
        "RegistryClient",
        "a registry client from the flags, made once",
    ),
    (
        "cli/common.rs",
        "Store::open",
        "the store `--home`/`OTTERS_HOME` names, opened once",
    ),
    (
        "cli/mod.rs",
        "env::var",
        "`OTTERS_*` settings read at start",
    ),
];

/// The binary's rules (issue 33), as violations of `src`: it holds `main.rs`, `cli/` (one file per
/// command: parse, call the library, print) and `view/` (what a result means to a user); no
/// flag definitions (they are `crates/otters-cli`'s); no network, async runtime, thread or
/// `unsafe` of its own; views take values and return text (no files, processes, store or
/// registry); the edges of `cli/` are `BINARY_EDGES`; no file over 350 lines of code.
fn binary_violations(src: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(src).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if !["main.rs", "cli", "view"].contains(&name.as_str()) {
            out.push(format!(
                "src/{name}: the binary holds main.rs, cli/ and view/ only"
            ));
        }
    }
    let mut files = Vec::new();
    rust_files(src, &mut files);
    for f in files {
        let rel = f.strip_prefix(src).unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&f).unwrap();
        let code = without_test_items(&text);
        let mut say = |why: String| out.push(format!("src/{rel}: {why}"));
        for flags in [
            "clap::Args",
            "clap::ValueEnum",
            "derive(Parser",
            "Subcommand)",
        ] {
            if code.contains(flags) {
                say(format!(
                    "defines flags ({flags}): they belong in crates/otters-cli"
                ));
            }
        }
        for logic in ["std::net", "tokio", "reqwest", "unsafe ", "thread::spawn"] {
            if code.contains(logic) {
                say(format!(
                    "uses {logic}: logic of that kind is a library crate's"
                ));
            }
        }
        let edges = [
            "std::fs",
            "process::Command",
            "RegistryClient",
            "Store::open",
            "env::var",
        ];
        for edge in edges {
            let allowed = BINARY_EDGES
                .iter()
                .any(|(file, what, _)| *file == rel && *what == edge)
                || (rel.starts_with("cli/") && edge == "env::var");
            if code.contains(edge) && !allowed {
                say(format!(
                    "uses {edge}: views take values and return text, commands reach files, \
                     processes, the store and registries through the library"
                ));
            }
        }
        let n = lines_of_code(&text);
        if n > 350 {
            say(format!(
                "{n} lines of code, over 350: split it along its seams"
            ));
        }
    }
    out
}

/// The binary is dispatch and printing (issues 19 and 33): the grammar (every clap derive, the
/// `--help` text) is `crates/otters-cli`, the logic the library crates', the binary what a user
/// sees. Held by content, not by a line budget: see `binary_violations`.
#[test]
fn the_binary_is_dispatch_and_printing() {
    let violations = binary_violations(&repo().join("src"));
    assert!(
        violations.is_empty(),
        "the binary holds more than dispatch and printing:\n{}",
        violations.join("\n")
    );
}

/// Each rule of the binary fails on a planted breach, and a clean tree passes.
#[test]
fn the_binary_rules_catch_planted_logic() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("cli")).unwrap();
    std::fs::create_dir_all(src.join("view")).unwrap();
    std::fs::write(src.join("main.rs"), "mod cli;\nmod view;\n").unwrap();
    std::fs::write(
        src.join("cli/run.rs"),
        "pub fn run() { let _ = std::env::var(\"X\"); }\n",
    )
    .unwrap();
    std::fs::write(
        src.join("view/ok.rs"),
        "pub fn show(n: u32) -> String { n.to_string() }\n",
    )
    .unwrap();
    assert_eq!(binary_violations(src), Vec::<String>::new());
    std::fs::write(src.join("engine.rs"), "pub fn f() {}\n").unwrap();
    std::fs::write(
        src.join("view/bad.rs"),
        "pub fn show() -> String { std::fs::read_to_string(\"x\").unwrap() }\n",
    )
    .unwrap();
    std::fs::write(src.join("cli/net.rs"), "use std::net::TcpStream;\n").unwrap();
    std::fs::write(
        src.join("cli/flags.rs"),
        "#[derive(clap::Args)]\npub struct A;\n",
    )
    .unwrap();
    std::fs::write(src.join("cli/long.rs"), "fn f() {}\n".repeat(351)).unwrap();
    let mut found = binary_violations(src);
    found.sort();
    let short: Vec<&str> = found.iter().map(|v| v.split(':').next().unwrap()).collect();
    assert_eq!(
        short,
        [
            "src/cli/flags.rs",
            "src/cli/long.rs",
            "src/cli/net.rs",
            "src/engine.rs",
            "src/view/bad.rs"
        ],
        "{found:#?}"
    );
}

/// The grammar crate reads nothing and prints nothing: a flag's meaning is the library's, its
/// effect the binary's.
#[test]
fn the_grammar_holds_no_logic() {
    let mut files = Vec::new();
    rust_files(&repo().join("crates/otters-cli/src"), &mut files);
    assert!(!files.is_empty());
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let code = non_test_code(&text);
        for banned in [
            "std::fs",
            "std::env",
            "std::io",
            "std::process",
            "print!",
            "println!",
            "eprint",
        ] {
            assert!(
                !code.contains(banned),
                "{} uses {banned}: the grammar crate holds flags only",
                f.display()
            );
        }
    }
}
