//! EXPLAIN's machine-readable formats: `FORMAT JSON`, `YAML` and `XML`.
//!
//! The plan tree ([`crate::explain::Node`]) is built once, for every format.
//! Its text form names a node by one line ("Index Scan Backward using t_pkey on
//! t") and lists details as "Key: value" lines; PostgreSQL's structured formats
//! give the same facts as properties ("Node Type", "Scan Direction", "Index
//! Name", "Relation Name", "Alias", ...). This module turns a node into those
//! properties, in PostgreSQL 15's order, and prints them as JSON or YAML with
//! PostgreSQL's layout (two-space indents, string lists inline in JSON), so a
//! client that reads `EXPLAIN (FORMAT JSON)` (sqlx, pgAdmin, explain
//! visualizers) finds the keys where PostgreSQL puts them.
//!
//! What a structured format says beyond the text: "Parallel Aware" and "Async
//! Capable" (always false: no parallel or async nodes yet), "Parent
//! Relationship" (Outer/Inner, Member under Append, Subquery under a Subquery
//! Scan, InitPlan/SubPlan with its "Subplan Name"), "Inner Unique" on joins
//! (false: the executor does not use uniqueness), "Planned Partitions" on hash
//! aggregation and "Subplans Removed" on Append (0: neither exists here).

use crate::explain::{Node, Options};

/// An EXPLAIN output format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    #[default]
    Text,
    Json,
    Yaml,
    Xml,
}

/// A property's value.
#[derive(Debug)]
enum V {
    Str(String),
    /// A number or a Boolean, printed as is.
    Raw(String),
    List(Vec<String>),
    Plans(Vec<Props>),
    /// One nested object ("Plan").
    Object(Props),
    /// An empty group ("Triggers").
    Empty,
}

type Props = Vec<(String, V)>;

fn s(v: impl Into<String>) -> V {
    V::Str(v.into())
}

fn raw(v: impl ToString) -> V {
    V::Raw(v.to_string())
}

/// The whole document of one EXPLAIN: the plan, the query id (VERBOSE), then the summary lines
/// (`summary`: planning time, and with ANALYZE the triggers and execution time).
pub fn document(root: &Node, o: &Options, format: Format, query_id: Option<i64>, planning_ms: f64, exec_ms: f64) -> String {
    let plan = node_props(root, o, None);
    let mut top: Props = vec![("Plan".into(), V::Object(plan))];
    if let Some(id) = query_id {
        top.push(("Query Identifier".into(), raw(id)));
    }
    if o.summary {
        top.push(("Planning Time".into(), raw(format!("{planning_ms:.3}"))));
    }
    if o.analyze {
        top.push(("Triggers".into(), V::Empty));
    }
    if o.summary && o.analyze {
        top.push(("Execution Time".into(), raw(format!("{exec_ms:.3}"))));
    }
    let mut out = String::new();
    match format {
        Format::Json => {
            out.push_str("[\n  ");
            json_object(&top, 2, &mut out);
            out.push_str("\n]");
        }
        Format::Yaml => yaml_entries(&top, 0, true, &mut out),
        Format::Xml => {
            out.push_str("<explain xmlns=\"http://www.postgresql.org/2009/explain\">\n  <Query>\n");
            xml_entries(&top, 4, &mut out);
            out.push_str("  </Query>\n</explain>");
        }
        Format::Text => unreachable!("the text format is rendered line by line"),
    }
    out
}

// ----- a node's properties ------------------------------------------------------------------

/// The parts of a node's text name, as properties: the node type, those
/// PostgreSQL puts before "Parent Relationship" (strategy, operation), and
/// those after "Async Capable" (scan target, join type, set command).
struct Head {
    node_type: String,
    before: Props,
    after: Props,
}

fn head(name: &str) -> Head {
    let mut h = Head { node_type: name.to_string(), before: Vec::new(), after: Vec::new() };
    let set = |h: &mut Head, t: &str| h.node_type = t.to_string();
    // Index scans: "Index [Only ]Scan[ Backward] using IDX on REL".
    for kind in ["Index Only Scan", "Index Scan"] {
        if let Some(rest) = name.strip_prefix(kind) {
            let (dir, rest) = match rest.strip_prefix(" Backward") {
                Some(r) => ("Backward", r),
                None => ("Forward", rest),
            };
            if let Some(rest) = rest.strip_prefix(" using ") {
                if let Some((ix, rel)) = split_word(rest).and_then(|(ix, r)| r.strip_prefix("on ").map(|r| (ix, r))) {
                    set(&mut h, kind);
                    h.after.push(("Scan Direction".into(), s(dir)));
                    h.after.push(("Index Name".into(), s(unquote(ix))));
                    relation(rel, &mut h.after);
                    return h;
                }
            }
        }
    }
    for kind in ["Seq Scan", "Bitmap Heap Scan", "Sample Scan", "Tid Scan"] {
        if let Some(rel) = name.strip_prefix(kind).and_then(|r| r.strip_prefix(" on ")) {
            set(&mut h, kind);
            relation(rel, &mut h.after);
            return h;
        }
    }
    if let Some(f) = name.strip_prefix("Function Scan on ") {
        set(&mut h, "Function Scan");
        let (qualified, alias) = split_word(f).map_or((f, None), |(q, a)| (q, Some(a)));
        let (schema, func) = split_qualified(qualified);
        h.after.push(("Function Name".into(), s(unquote(func))));
        if let Some(sch) = schema {
            h.after.push(("Schema".into(), s(unquote(sch))));
        }
        h.after.push(("Alias".into(), s(unquote(alias.unwrap_or(func)))));
        return h;
    }
    for (kind, cte) in [("Values Scan", false), ("Subquery Scan", false), ("CTE Scan", true), ("WorkTable Scan", true)] {
        if let Some(rest) = name.strip_prefix(kind).and_then(|r| r.strip_prefix(" on ")) {
            set(&mut h, kind);
            let (n, alias) = split_word(rest).map_or((rest, rest), |(n, a)| (n, a));
            if cte {
                h.after.push(("CTE Name".into(), s(unquote(n))));
            }
            h.after.push(("Alias".into(), s(unquote(alias))));
            return h;
        }
    }
    for op in ["Insert", "Update", "Delete", "Merge"] {
        if let Some(rel) = name.strip_prefix(op).and_then(|r| r.strip_prefix(" on ")) {
            set(&mut h, "ModifyTable");
            h.before.push(("Operation".into(), s(op)));
            relation(rel, &mut h.after);
            return h;
        }
    }
    for method in ["Hash", "Merge", "Nested Loop"] {
        let Some(rest) = name.strip_prefix(method) else { continue };
        let kind = if rest.is_empty() && method == "Nested Loop" {
            Some("Inner")
        } else {
            rest.strip_prefix(' ').and_then(|r| r.strip_suffix("Join")).map(|k| k.trim()).map(|k| if k.is_empty() { "Inner" } else { k })
        };
        if let Some(kind) = kind {
            set(&mut h, if method == "Nested Loop" { method.to_string() } else { format!("{method} Join") }.as_str());
            h.after.push(("Join Type".into(), s(kind)));
            return h;
        }
    }
    let agg = match name {
        "Aggregate" => Some("Plain"),
        "HashAggregate" => Some("Hashed"),
        "GroupAggregate" => Some("Sorted"),
        "MixedAggregate" => Some("Mixed"),
        _ => None,
    };
    if let Some(strategy) = agg {
        set(&mut h, "Aggregate");
        h.before.push(("Strategy".into(), s(strategy)));
        h.before.push(("Partial Mode".into(), s("Simple")));
        return h;
    }
    for (prefix, strategy) in [("HashSetOp ", "Hashed"), ("SetOp ", "Sorted")] {
        if let Some(cmd) = name.strip_prefix(prefix) {
            set(&mut h, "SetOp");
            h.before.push(("Strategy".into(), s(strategy)));
            h.after.push(("Command".into(), s(cmd)));
            return h;
        }
    }
    h
}

/// "REL" or "schema.REL" or "REL alias" as Relation Name, Schema and Alias.
fn relation(rel: &str, out: &mut Props) {
    let (qualified, alias) = split_word(rel).map_or((rel, None), |(q, a)| (q, Some(a)));
    let (schema, name) = split_qualified(qualified);
    out.push(("Relation Name".into(), s(unquote(name))));
    if let Some(sch) = schema {
        out.push(("Schema".into(), s(unquote(sch))));
    }
    out.push(("Alias".into(), s(unquote(alias.unwrap_or(name)))));
}

/// The first word of `t` (a double-quoted identifier is one word) and the rest
/// after one space, or None when `t` is one word.
fn split_word(t: &str) -> Option<(&str, &str)> {
    let mut quoted = false;
    for (i, c) in t.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ' ' if !quoted => return Some((&t[..i], &t[i + 1..])),
            _ => {}
        }
    }
    None
}

/// `schema.name` split at its first unquoted dot.
fn split_qualified(t: &str) -> (Option<&str>, &str) {
    let mut quoted = false;
    for (i, c) in t.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '.' if !quoted => return (Some(&t[..i]), &t[i + 1..]),
            _ => {}
        }
    }
    (None, t)
}

fn unquote(t: &str) -> String {
    match t.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        Some(inner) => inner.replace("\"\"", "\""),
        None => t.to_string(),
    }
}

/// A comma-separated list of expressions split at its top-level commas (not
/// inside parentheses, brackets or quotes).
fn split_list(t: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut depth, mut single, mut double, mut start) = (0i32, false, false, 0);
    let b = t.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'\'' if !double => single = !single,
            b'"' if !single => double = !double,
            b'(' | b'[' if !single && !double => depth += 1,
            b')' | b']' if !single && !double => depth -= 1,
            b',' if !single && !double && depth == 0 && b.get(i + 1) == Some(&b' ') => {
                out.push(t[start..i].to_string());
                start = i + 2;
            }
            _ => {}
        }
    }
    out.push(t[start..].to_string());
    out
}

/// "25kB" as 25.
fn kb(t: &str) -> Option<u64> {
    t.trim().strip_suffix("kB").and_then(|n| n.parse().ok())
}

/// A detail line as properties.
fn detail(line: &str, out: &mut Props) {
    let Some((key, value)) = line.split_once(": ") else {
        out.push((line.to_string(), s("")));
        return;
    };
    match key {
        "Sort Key" | "Group Key" | "Presorted Key" | "Hash Key" => out.push((key.into(), V::List(split_list(value)))),
        "Sort Method" => {
            // "quicksort  Memory: 25kB" / "external merge  Disk: 10kB"
            let (method, space) = value.split_once("  ").unwrap_or((value, ""));
            out.push(("Sort Method".into(), s(method)));
            if let Some((kind, amount)) = space.split_once(": ") {
                if let Some(n) = kb(amount) {
                    out.push(("Sort Space Used".into(), raw(n)));
                    out.push(("Sort Space Type".into(), s(kind)));
                }
            }
        }
        "Buckets" => {
            // "1024 (originally 1024)  Batches: 4 (originally 1)  Memory Usage: 48kB"
            let mut parts = value.split("  ");
            let count = |p: &str| -> (String, String) {
                let p = p.trim();
                match p.split_once(" (originally ") {
                    Some((now, orig)) => (now.to_string(), orig.trim_end_matches(')').to_string()),
                    None => (p.to_string(), p.to_string()),
                }
            };
            let (buckets, orig_buckets) = count(parts.next().unwrap_or(""));
            out.push(("Hash Buckets".into(), raw(buckets)));
            out.push(("Original Hash Buckets".into(), raw(orig_buckets)));
            for p in parts {
                if let Some(b) = p.strip_prefix("Batches: ") {
                    let (batches, orig) = count(b);
                    out.push(("Hash Batches".into(), raw(batches)));
                    out.push(("Original Hash Batches".into(), raw(orig)));
                } else if let Some(m) = p.strip_prefix("Memory Usage: ").and_then(kb) {
                    out.push(("Peak Memory Usage".into(), raw(m)));
                }
            }
        }
        k if k.starts_with("Rows Removed by ") || k.starts_with("Heap Fetches") => out.push((key.into(), raw(value))),
        _ => out.push((key.into(), s(value))),
    }
}

/// A node's properties; `relationship`: its place under its parent (None for
/// the root), with the subplan's name for InitPlans and SubPlans.
fn node_props(n: &Node, o: &Options, relationship: Option<(&str, Option<&str>)>) -> Props {
    let h = head(&n.name);
    let mut p: Props = vec![("Node Type".into(), s(h.node_type.clone()))];
    p.extend(h.before);
    if let Some((rel, sub)) = relationship {
        p.push(("Parent Relationship".into(), s(rel)));
        if let Some(name) = sub {
            p.push(("Subplan Name".into(), s(name)));
        }
    }
    p.push(("Parallel Aware".into(), raw(false)));
    p.push(("Async Capable".into(), raw(false)));
    p.extend(h.after);
    if o.costs {
        p.push(("Startup Cost".into(), raw(format!("{:.2}", n.startup))));
        p.push(("Total Cost".into(), raw(format!("{:.2}", n.total.max(n.startup)))));
        p.push(("Plan Rows".into(), raw(n.rows.round().max(0.0) as u64)));
        p.push(("Plan Width".into(), raw(n.width)));
    }
    if o.analyze {
        match n.actual.filter(|_| n.executed) {
            Some(c) => {
                let loops = c.loops.max(1) as f64;
                if o.timing {
                    p.push(("Actual Startup Time".into(), raw(format!("{:.3}", c.first_ms / loops))));
                    p.push(("Actual Total Time".into(), raw(format!("{:.3}", c.total_ms.max(c.first_ms) / loops))));
                }
                p.push(("Actual Rows".into(), raw((c.rows as f64 / loops).round() as u64)));
                p.push(("Actual Loops".into(), raw(c.loops)));
            }
            None if n.executed => {}
            None => {
                if o.timing {
                    p.push(("Actual Startup Time".into(), raw("0.000")));
                    p.push(("Actual Total Time".into(), raw("0.000")));
                }
                p.push(("Actual Rows".into(), raw(0)));
                p.push(("Actual Loops".into(), raw(0)));
            }
        }
    }
    if o.verbose && !n.output.is_empty() {
        p.push(("Output".into(), V::List(n.output.clone())));
    }
    if h.node_type.ends_with("Join") || h.node_type == "Nested Loop" {
        p.push(("Inner Unique".into(), raw(false)));
    }
    for d in &n.details {
        detail(d, &mut p);
        if d.starts_with("Index Cond:") && o.analyze && n.executed {
            p.push(("Rows Removed by Index Recheck".into(), raw(0)));
        }
        if d.starts_with("Filter:") && o.analyze {
            if let Some(r) = n.removed.filter(|_| n.executed) {
                p.push(("Rows Removed by Filter".into(), raw(r)));
            }
        }
    }
    match p.iter().find_map(|(k, v)| if k == "Strategy" { Some(v) } else { None }) {
        // A cost-model figure: PostgreSQL omits it with COSTS OFF.
        Some(V::Str(st)) if st == "Hashed" && h.node_type == "Aggregate" && o.costs => p.push(("Planned Partitions".into(), raw(0))),
        _ => {}
    }
    if h.node_type == "Append" {
        p.push(("Subplans Removed".into(), raw(0)));
    }
    let mut plans = Vec::new();
    let sub = |label: &str| if label.starts_with("InitPlan") { "InitPlan" } else { "SubPlan" };
    for (label, sp) in n.subplans.iter().filter(|(l, _)| sub(l) == "InitPlan") {
        plans.push(node_props(sp, o, Some(("InitPlan", Some(label)))));
    }
    for (i, c) in n.children.iter().enumerate() {
        let rel = match h.node_type.as_str() {
            "Append" | "Merge Append" => "Member",
            "Subquery Scan" => "Subquery",
            _ if i == 0 => "Outer",
            _ => "Inner",
        };
        plans.push(node_props(c, o, Some((rel, None))));
    }
    for (label, sp) in n.subplans.iter().filter(|(l, _)| sub(l) == "SubPlan") {
        plans.push(node_props(sp, o, Some(("SubPlan", Some(label)))));
    }
    if !plans.is_empty() {
        p.push(("Plans".into(), V::Plans(plans)));
    }
    p
}

// ----- printers -----------------------------------------------------------------------------

fn json_string(t: &str, out: &mut String) {
    out.push('"');
    for c in t.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `{`, the entries at `indent + 2`, `}` at `indent` (the opening brace where
/// the caller stands).
fn json_object(p: &Props, indent: usize, out: &mut String) {
    out.push_str("{\n");
    for (i, (k, v)) in p.iter().enumerate() {
        if i > 0 {
            out.push_str(",\n");
        }
        out.push_str(&" ".repeat(indent + 2));
        json_string(k, out);
        out.push_str(": ");
        json_value(v, indent + 2, out);
    }
    out.push('\n');
    out.push_str(&" ".repeat(indent));
    out.push('}');
}

fn json_value(v: &V, indent: usize, out: &mut String) {
    match v {
        V::Str(t) => json_string(t, out),
        V::Raw(t) => out.push_str(t),
        V::List(items) => {
            out.push('[');
            for (i, t) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                json_string(t, out);
            }
            out.push(']');
        }
        V::Object(o) => json_object(o, indent, out),
        V::Plans(objs) => {
            out.push_str("[\n");
            for (i, o) in objs.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                out.push_str(&" ".repeat(indent + 2));
                json_object(o, indent + 2, out);
            }
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            out.push(']');
        }
        V::Empty => {
            out.push_str("[\n");
            out.push_str(&" ".repeat(indent));
            out.push(']');
        }
    }
}

/// YAML entries at `indent`; `item`: the first entry opens a list item ("- "
/// two columns to the left of `indent`).
fn yaml_entries(p: &Props, indent: usize, item: bool, out: &mut String) {
    for (i, (k, v)) in p.iter().enumerate() {
        if i > 0 || !out.is_empty() {
            out.push('\n');
        }
        if i == 0 && item {
            out.push_str(&" ".repeat(indent));
            out.push_str("- ");
        } else {
            out.push_str(&" ".repeat(indent + if item { 2 } else { 0 }));
        }
        let at = indent + if item { 2 } else { 0 };
        out.push_str(k);
        out.push(':');
        match v {
            V::Str(t) => {
                out.push(' ');
                json_string(t, out);
            }
            V::Raw(t) => {
                out.push(' ');
                out.push_str(t);
            }
            V::List(items) => {
                out.push(' ');
                for t in items {
                    out.push('\n');
                    out.push_str(&" ".repeat(at + 2));
                    out.push_str("- ");
                    json_string(t, out);
                }
            }
            V::Object(o) => {
                out.push(' ');
                yaml_entries(o, at + 2, false, out);
            }
            V::Plans(objs) => {
                out.push(' ');
                for o in objs {
                    yaml_entries(o, at + 2, true, out);
                }
            }
            V::Empty => out.push(' '),
        }
    }
}

fn xml_text(t: &str, out: &mut String) {
    for c in t.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
}

/// XML elements at `indent`, one per property, keys with hyphens for spaces.
fn xml_entries(p: &Props, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    for (k, v) in p {
        let tag = k.replace(' ', "-");
        match v {
            V::Str(t) | V::Raw(t) => {
                out.push_str(&format!("{pad}<{tag}>"));
                xml_text(t, out);
                out.push_str(&format!("</{tag}>\n"));
            }
            V::List(items) => {
                out.push_str(&format!("{pad}<{tag}>\n"));
                for t in items {
                    out.push_str(&format!("{pad}  <Item>"));
                    xml_text(t, out);
                    out.push_str("</Item>\n");
                }
                out.push_str(&format!("{pad}</{tag}>\n"));
            }
            V::Object(o) => {
                out.push_str(&format!("{pad}<{tag}>\n"));
                xml_entries(o, indent + 2, out);
                out.push_str(&format!("{pad}</{tag}>\n"));
            }
            V::Plans(objs) => {
                out.push_str(&format!("{pad}<{tag}>\n"));
                for o in objs {
                    out.push_str(&format!("{pad}  <Plan>\n"));
                    xml_entries(o, indent + 4, out);
                    out.push_str(&format!("{pad}  </Plan>\n"));
                }
                out.push_str(&format!("{pad}</{tag}>\n"));
            }
            V::Empty => out.push_str(&format!("{pad}<{tag}>\n{pad}</{tag}>\n")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props_of(name: &str) -> Vec<(String, String)> {
        let h = head(name);
        let mut v = vec![("Node Type".to_string(), h.node_type)];
        for (k, p) in h.before.into_iter().chain(h.after) {
            if let V::Str(t) = p {
                v.push((k, t));
            }
        }
        v
    }

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn names_become_postgresql_properties() {
        assert_eq!(
            props_of("Index Scan Backward using t_pkey on public.t"),
            pairs(&[("Node Type", "Index Scan"), ("Scan Direction", "Backward"), ("Index Name", "t_pkey"), ("Relation Name", "t"), ("Schema", "public"), ("Alias", "t")])
        );
        assert_eq!(props_of("Seq Scan on t x"), pairs(&[("Node Type", "Seq Scan"), ("Relation Name", "t"), ("Alias", "x")]));
        assert_eq!(props_of("Hash Anti Join"), pairs(&[("Node Type", "Hash Join"), ("Join Type", "Anti")]));
        assert_eq!(props_of("Nested Loop"), pairs(&[("Node Type", "Nested Loop"), ("Join Type", "Inner")]));
        assert_eq!(props_of("Nested Loop Left Join"), pairs(&[("Node Type", "Nested Loop"), ("Join Type", "Left")]));
        assert_eq!(props_of("HashAggregate"), pairs(&[("Node Type", "Aggregate"), ("Strategy", "Hashed"), ("Partial Mode", "Simple")]));
        assert_eq!(props_of("HashSetOp Intersect All"), pairs(&[("Node Type", "SetOp"), ("Strategy", "Hashed"), ("Command", "Intersect All")]));
        assert_eq!(props_of("Insert on u"), pairs(&[("Node Type", "ModifyTable"), ("Operation", "Insert"), ("Relation Name", "u"), ("Alias", "u")]));
        assert_eq!(props_of("Values Scan on \"*VALUES*\""), pairs(&[("Node Type", "Values Scan"), ("Alias", "*VALUES*")]));
        assert_eq!(
            props_of("Function Scan on pg_catalog.generate_series g"),
            pairs(&[("Node Type", "Function Scan"), ("Function Name", "generate_series"), ("Schema", "pg_catalog"), ("Alias", "g")])
        );
        assert_eq!(props_of("Hash"), pairs(&[("Node Type", "Hash")]));
    }

    #[test]
    fn lists_split_at_top_level_commas_only() {
        assert_eq!(split_list("a, f(b, c), 'x, y', \"q, r\" DESC"), vec!["a", "f(b, c)", "'x, y'", "\"q, r\" DESC"]);
    }

    #[test]
    fn sort_and_hash_lines_become_numbers() {
        let mut p = Vec::new();
        detail("Sort Method: external merge  Disk: 1024kB", &mut p);
        detail("Buckets: 4096 (originally 1024)  Batches: 8 (originally 1)  Memory Usage: 90kB", &mut p);
        let flat: Vec<String> = p
            .iter()
            .map(|(k, v)| match v {
                V::Str(t) => format!("{k}={t:?}"),
                V::Raw(t) => format!("{k}={t}"),
                _ => k.clone(),
            })
            .collect();
        assert_eq!(
            flat,
            [
                "Sort Method=\"external merge\"",
                "Sort Space Used=1024",
                "Sort Space Type=\"Disk\"",
                "Hash Buckets=4096",
                "Original Hash Buckets=1024",
                "Hash Batches=8",
                "Original Hash Batches=1",
                "Peak Memory Usage=90"
            ]
        );
    }
}
