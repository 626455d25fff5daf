//! The upward-import check of the SQL layer (issue 19, "Structure"): every
//! top-level module of `crates/sql/src` has a layer in `crates/sql/layers.txt`,
//! and a module may name (`crate::x`, `use crate::{x, y}`) only modules of its
//! own layer or of lower ones. The upward edges that exist today are listed in
//! that file's debt list: the check fails on an upward edge missing from the
//! list, and on a listed edge that no longer exists, so the list stays true and
//! only shrinks.
//!
//! Unit tests at the bottom of a file (`#[cfg(test)] mod ...`) are not scanned:
//! a test may drive a low module through a whole session.
//!
//! The datum layer below all of these is its own crate (`ferrogres-datum`),
//! where cargo itself refuses an upward dependency.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The parsed `layers.txt`.
struct LayerMap {
    /// Layer names, lowest first.
    layers: Vec<String>,
    /// Module -> index into `layers`.
    module_layer: BTreeMap<String, usize>,
    /// Allowed upward edges (from, to).
    debt: BTreeSet<(String, String)>,
}

fn parse_map(text: &str) -> Result<LayerMap, Vec<String>> {
    let mut map = LayerMap { layers: Vec::new(), module_layer: BTreeMap::new(), debt: BTreeSet::new() };
    let mut errors = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("layer ") {
            let Some((name, modules)) = rest.split_once(':') else {
                errors.push(format!("layers.txt:{}: `layer NAME: modules...` expected", n + 1));
                continue;
            };
            let idx = map.layers.len();
            map.layers.push(name.trim().to_string());
            for m in modules.split_whitespace() {
                if map.module_layer.insert(m.to_string(), idx).is_some() {
                    errors.push(format!("layers.txt:{}: module `{m}` has two layers", n + 1));
                }
            }
        } else if let Some(rest) = line.strip_prefix("debt ") {
            let Some((from, to)) = rest.split_once("->") else {
                errors.push(format!("layers.txt:{}: `debt FROM -> TO` expected", n + 1));
                continue;
            };
            if !map.debt.insert((from.trim().to_string(), to.trim().to_string())) {
                errors.push(format!("layers.txt:{}: debt listed twice", n + 1));
            }
        } else {
            errors.push(format!("layers.txt:{}: unknown line `{line}`", n + 1));
        }
    }
    if errors.is_empty() {
        Ok(map)
    } else {
        Err(errors)
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir).expect("read src dir").map(|e| e.expect("dir entry").path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The file's code without comments and without its trailing unit tests.
fn code_of(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut code = String::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        if t == "#[cfg(test)]" && lines.get(i + 1).is_some_and(|next| next.starts_with("mod ")) {
            break;
        }
        if t.starts_with("//") {
            continue;
        }
        // A trailing comment (`code; // text`); `//` inside a string literal
        // cuts a little code away, never adds an edge.
        let cut = line.find(" //").map_or(*line, |i| &line[..i]);
        code.push_str(cut);
        code.push('\n');
    }
    code
}

fn ident_at(s: &str) -> &str {
    let end = s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(s.len());
    &s[..end]
}

/// The top-level modules a piece of code names through `crate::`.
fn named_modules(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        // `ferrogres_crate::` or `some_crate::` are not `crate::`.
        let before = rest[..i].chars().last();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let r = rest.trim_start();
        if let Some(group) = r.strip_prefix('{') {
            // `crate::{a::X, b, c::{Y, Z}}`: the first name of each top-level item.
            let mut depth = 0;
            let mut item_start = true;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && !c.is_whitespace() => {
                        item_start = false;
                        let id = ident_at(&group[j..]);
                        if !id.is_empty() && id != "self" {
                            out.insert(id.to_string());
                        }
                    }
                    _ => {}
                }
            }
        } else {
            let id = ident_at(r);
            if !id.is_empty() {
                out.insert(id.to_string());
            }
        }
    }
    out
}

/// Every (module, module it names) pair of the tree under `src`, with the
/// files that make the edge.
fn edges(src: &Path) -> BTreeMap<(String, String), Vec<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut out: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(src).expect("under src");
        let first = rel.components().next().expect("a component").as_os_str().to_string_lossy().to_string();
        let module = first.strip_suffix(".rs").unwrap_or(&first).to_string();
        if module == "lib" {
            continue;
        }
        let text = fs::read_to_string(&f).expect("read a source file");
        for to in named_modules(&code_of(&text)) {
            if to != module {
                out.entry((module.clone(), to)).or_default().push(rel.display().to_string());
            }
        }
    }
    out
}

fn top_modules(src: &Path) -> BTreeSet<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files
        .iter()
        .map(|f| {
            let first = f.strip_prefix(src).expect("under src").components().next().expect("a component");
            let first = first.as_os_str().to_string_lossy().to_string();
            first.strip_suffix(".rs").unwrap_or(&first).to_string()
        })
        .filter(|m| m != "lib")
        .collect()
}

/// Runs the check over the tree `src` against the map text: Ok, or one line
/// per problem.
fn check(src: &Path, map_text: &str) -> Result<(), Vec<String>> {
    let map = parse_map(map_text)?;
    let mut errors = Vec::new();
    for m in top_modules(src) {
        if !map.module_layer.contains_key(&m) {
            errors.push(format!("module `{m}` has no layer in layers.txt"));
        }
    }
    for m in map.module_layer.keys() {
        if !src.join(format!("{m}.rs")).exists() && !src.join(m).is_dir() {
            errors.push(format!("layers.txt names module `{m}`, which does not exist"));
        }
    }
    let edges = edges(src);
    let mut upward = BTreeSet::new();
    for ((from, to), files) in &edges {
        let (Some(&lf), Some(&lt)) = (map.module_layer.get(from), map.module_layer.get(to)) else {
            continue; // reported above (or a name that is not a module, e.g. a macro path)
        };
        if lt > lf {
            upward.insert((from.clone(), to.clone()));
            if !map.debt.contains(&(from.clone(), to.clone())) {
                errors.push(format!(
                    "upward import: {from} ({}) -> {to} ({}) in {}; not in the debt list: `debt {from} -> {to}`",
                    map.layers[lf],
                    map.layers[lt],
                    files.join(", ")
                ));
            }
        }
    }
    for (from, to) in &map.debt {
        if !upward.contains(&(from.clone(), to.clone())) {
            errors.push(format!("debt {from} -> {to} is listed but no longer an upward edge: remove it from layers.txt"));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn real_map() -> String {
    fs::read_to_string(manifest_dir().join("layers.txt")).expect("crates/sql/layers.txt")
}

/// A copy of `crates/sql/src` to plant problems in.
fn src_copy() -> tempfile::TempDir {
    fn copy(from: &Path, to: &Path) {
        fs::create_dir_all(to).expect("mkdir");
        for e in fs::read_dir(from).expect("read dir") {
            let p = e.expect("entry").path();
            let target = to.join(p.file_name().expect("name"));
            if p.is_dir() {
                copy(&p, &target);
            } else {
                fs::copy(&p, &target).expect("copy");
            }
        }
    }
    let dir = tempfile::tempdir().expect("tempdir");
    copy(&manifest_dir().join("src"), dir.path());
    dir
}

#[test]
fn layer_map_matches_the_source() {
    if let Err(errors) = check(&manifest_dir().join("src"), &real_map()) {
        panic!("crates/sql/layers.txt and crates/sql/src disagree:\n{}", errors.join("\n"));
    }
}

#[test]
fn planted_upward_use_fails() {
    let dir = src_copy();
    // catalog (the lowest layer but one) importing the traffic cop's session.
    let f = dir.path().join("catalog.rs");
    let text = fs::read_to_string(&f).expect("catalog.rs");
    fs::write(&f, format!("use crate::session::Session;\n{text}")).expect("write");
    let errors = check(dir.path(), &real_map()).expect_err("an upward use must fail the check");
    assert!(
        errors.iter().any(|e| e.starts_with("upward import: catalog (catalog) -> session (tcop) in catalog.rs")),
        "{errors:?}"
    );
    assert_eq!(errors.len(), 1, "only the planted edge: {errors:?}");
}

#[test]
fn planted_grouped_upward_use_fails() {
    let dir = src_copy();
    let f = dir.path().join("catalog.rs");
    let text = fs::read_to_string(&f).expect("catalog.rs");
    fs::write(&f, format!("use crate::{{\n    rowio::RelStorage,\n    explain::{{self}},\n}};\n{text}")).expect("write");
    let errors = check(dir.path(), &real_map()).expect_err("a grouped upward use must fail the check");
    assert!(errors.iter().any(|e| e.starts_with("upward import: catalog (catalog) -> explain (tcop)")), "{errors:?}");
}

#[test]
fn vanished_debt_edge_fails() {
    // A debt entry for an upward edge that does not exist (catalog does not name
    // explain) must fail, so the list only shrinks.
    let map = format!("{}\ndebt catalog -> explain\n", real_map());
    let errors = check(&manifest_dir().join("src"), &map).expect_err("a stale debt entry must fail the check");
    assert_eq!(
        errors,
        vec!["debt catalog -> explain is listed but no longer an upward edge: remove it from layers.txt".to_string()]
    );
}

#[test]
fn module_without_layer_fails() {
    let dir = src_copy();
    fs::write(dir.path().join("brand_new.rs"), "pub fn f() {}\n").expect("write");
    let errors = check(dir.path(), &real_map()).expect_err("an unmapped module must fail the check");
    assert_eq!(errors, vec!["module `brand_new` has no layer in layers.txt".to_string()]);
}

#[test]
fn comments_and_unit_tests_are_not_edges() {
    let code = code_of(
        "//! see crate::session\nuse crate::catalog::Table; // crate::explain\nfn f() {}\n#[cfg(test)]\nmod tests {\n    use crate::session::Session;\n}\n",
    );
    assert_eq!(named_modules(&code), BTreeSet::from(["catalog".to_string()]));
    assert_eq!(
        named_modules("use crate::{a::X, b, c::{Y, Z}};\nlet v = crate::d::f(ferrogres_crate::e);"),
        BTreeSet::from(["a", "b", "c", "d"].map(String::from))
    );
}
