//! json and jsonb functions and operator procedures ([`ferrogres_datum::json`] holds the
//! parser, the tree and the order): `-> ->> #> #>>`, `@> <@ ? ?| ?& || - #-`,
//! to_json[b], json[b]_build_object/array, json_object, jsonb_set,
//! jsonb_insert, jsonb_pretty, json[b]_typeof, json[b]_array_length,
//! json[b]_array_elements[_text], json[b]_object_keys, json[b]_strip_nulls,
//! gen_random_uuid.

use super::{int, text, SetIter};
use ferrogres_datum::errors::{Result, SqlError};
use ferrogres_datum::json::{self, quote, Jv};
use ferrogres_datum::types::{Type, Value};

fn jb(v: &Value) -> Result<Jv> {
    Ok(match v {
        Value::Jsonb(s) => json::tree(s)?,
        _ => Jv::Null,
    })
}

fn js(v: &Value) -> &str {
    match v {
        Value::Json(s) | Value::Jsonb(s) => s,
        _ => "null",
    }
}

fn out(j: &Jv) -> Value {
    Value::Jsonb(j.to_text())
}

fn opt_jsonb(j: Option<&Jv>) -> Value {
    j.map_or(Value::Null, out)
}

fn opt_text(j: Option<&Jv>) -> Value {
    j.and_then(Jv::as_text).map_or(Value::Null, Value::Text)
}

/// A text[] argument's elements (NULL elements as None).
fn text_array(v: &Value) -> Vec<Option<String>> {
    match v {
        Value::Array(a) => a.items.iter().map(|x| if let Value::Text(s) = x { Some(s.clone()) } else { None }).collect(),
        _ => Vec::new(),
    }
}

// --- operators on jsonb

pub fn jsonb_object_field(a: &[Value]) -> Result<Value> {
    Ok(opt_jsonb(jb(&a[0])?.get_key(text(&a[1]))))
}
pub fn jsonb_object_field_text(a: &[Value]) -> Result<Value> {
    Ok(opt_text(jb(&a[0])?.get_key(text(&a[1]))))
}
/// `jsonb -> int`: a top-level scalar is a one-element (raw scalar) array.
fn element(j: &Jv, i: i64) -> Option<&Jv> {
    match j {
        Jv::Arr(_) | Jv::Obj(_) => j.get_index(i),
        s => (i == 0 || i == -1).then_some(s),
    }
}
pub fn jsonb_array_element(a: &[Value]) -> Result<Value> {
    Ok(opt_jsonb(element(&jb(&a[0])?, int(&a[1]))))
}
pub fn jsonb_array_element_text(a: &[Value]) -> Result<Value> {
    Ok(opt_text(element(&jb(&a[0])?, int(&a[1]))))
}
pub fn jsonb_extract_path(a: &[Value]) -> Result<Value> {
    Ok(opt_jsonb(jb(&a[0])?.get_path(&text_array(&a[1]))))
}
pub fn jsonb_extract_path_text(a: &[Value]) -> Result<Value> {
    Ok(opt_text(jb(&a[0])?.get_path(&text_array(&a[1]))))
}
pub fn jsonb_contains(a: &[Value]) -> Result<Value> {
    Ok(Value::Bool(json::contains(&jb(&a[0])?, &jb(&a[1])?, true)))
}
pub fn jsonb_contained(a: &[Value]) -> Result<Value> {
    Ok(Value::Bool(json::contains(&jb(&a[1])?, &jb(&a[0])?, true)))
}
pub fn jsonb_exists(a: &[Value]) -> Result<Value> {
    Ok(Value::Bool(json::exists(&jb(&a[0])?, text(&a[1]))))
}
pub fn jsonb_exists_any(a: &[Value]) -> Result<Value> {
    let j = jb(&a[0])?;
    Ok(Value::Bool(text_array(&a[1]).iter().flatten().any(|k| json::exists(&j, k))))
}
pub fn jsonb_exists_all(a: &[Value]) -> Result<Value> {
    let j = jb(&a[0])?;
    Ok(Value::Bool(text_array(&a[1]).iter().flatten().all(|k| json::exists(&j, k))))
}

/// `||`: objects merge (right wins), arrays concatenate, a scalar or object
/// joins an array as an element.
pub fn jsonb_concat(a: &[Value]) -> Result<Value> {
    let as_array = |j: Jv| match j {
        Jv::Arr(v) => v,
        j => vec![j],
    };
    Ok(out(&match (jb(&a[0])?, jb(&a[1])?) {
        (Jv::Obj(mut x), Jv::Obj(y)) => {
            x.extend(y);
            Jv::Obj(json::normalize_pairs(x))
        }
        (x, y) => {
            let mut v = as_array(x);
            v.extend(as_array(y));
            Jv::Arr(v)
        }
    }))
}

fn scalar_err(what: &str) -> SqlError {
    SqlError::new(b"22023", format!("cannot {what}"))
}

pub fn jsonb_delete_key(a: &[Value]) -> Result<Value> {
    let k = text(&a[1]);
    Ok(out(&match jb(&a[0])? {
        Jv::Obj(p) => Jv::Obj(p.into_iter().filter(|(pk, _)| pk != k).collect()),
        Jv::Arr(v) => Jv::Arr(v.into_iter().filter(|e| !matches!(e, Jv::Str(s) if s == k)).collect()),
        _ => return Err(scalar_err("delete from scalar")),
    }))
}

pub fn jsonb_delete_keys(a: &[Value]) -> Result<Value> {
    let keys: Vec<String> = text_array(&a[1]).into_iter().flatten().collect();
    Ok(out(&match jb(&a[0])? {
        Jv::Obj(p) => Jv::Obj(p.into_iter().filter(|(pk, _)| !keys.contains(pk)).collect()),
        Jv::Arr(v) => Jv::Arr(v.into_iter().filter(|e| !matches!(e, Jv::Str(s) if keys.contains(s))).collect()),
        _ => return Err(scalar_err("delete from scalar")),
    }))
}

pub fn jsonb_delete_index(a: &[Value]) -> Result<Value> {
    let i = int(&a[1]);
    Ok(out(&match jb(&a[0])? {
        Jv::Arr(mut v) => {
            let n = v.len() as i64;
            let i = if i < 0 { n + i } else { i };
            if i >= 0 && i < n {
                v.remove(i as usize);
            }
            Jv::Arr(v)
        }
        Jv::Obj(_) => return Err(scalar_err("delete from object using integer index")),
        _ => return Err(scalar_err("delete from scalar")),
    }))
}

fn path_index(step: &str, n: usize) -> Option<usize> {
    let i: i64 = step.trim().parse().ok()?;
    let i = if i < 0 { n as i64 + i } else { i };
    (i >= 0 && i < n as i64).then_some(i as usize)
}

fn delete_path(j: &mut Jv, path: &[String]) {
    let Some((first, rest)) = path.split_first() else { return };
    match j {
        Jv::Obj(p) => {
            if rest.is_empty() {
                p.retain(|(k, _)| k != first);
            } else if let Some((_, v)) = p.iter_mut().find(|(k, _)| k == first) {
                delete_path(v, rest);
            }
        }
        Jv::Arr(v) => {
            if let Some(i) = path_index(first, v.len()) {
                if rest.is_empty() {
                    v.remove(i);
                } else {
                    delete_path(&mut v[i], rest);
                }
            }
        }
        _ => {}
    }
}

fn path_steps(v: &Value) -> Result<Vec<String>> {
    text_array(v)
        .into_iter()
        .enumerate()
        .map(|(i, s)| s.ok_or_else(|| SqlError::new(b"22004", format!("path element at position {} is null", i + 1))))
        .collect::<Result<Vec<_>>>()
}

pub fn jsonb_delete_path(a: &[Value]) -> Result<Value> {
    let mut j = jb(&a[0])?;
    if !matches!(j, Jv::Arr(_) | Jv::Obj(_)) {
        return Err(scalar_err("delete path in scalar"));
    }
    let path = path_steps(&a[1])?;
    delete_path(&mut j, &path);
    Ok(out(&j))
}

/// jsonb_set / jsonb_insert: replace (or insert before/after) at `path`,
/// creating the last key of an object when `create`.
fn set_path(j: &mut Jv, path: &[String], newval: &Jv, create: bool, insert: Option<bool>) -> Result<()> {
    ferrogres_datum::stack_depth::check()?;
    let Some((first, rest)) = path.split_first() else { return Ok(()) };
    match j {
        Jv::Obj(p) => {
            if let Some(pos) = p.iter().position(|(k, _)| k == first) {
                if rest.is_empty() {
                    if insert.is_some() {
                        return Err(SqlError::new(b"22023", "cannot replace existing key").with_hint("Try using the function jsonb_set to replace key value."));
                    }
                    p[pos].1 = newval.clone();
                } else {
                    set_path(&mut p[pos].1, rest, newval, create, insert)?;
                }
            } else if rest.is_empty() && (create || insert.is_some()) {
                p.push((first.clone(), newval.clone()));
                let v = std::mem::take(p);
                *p = json::normalize_pairs(v);
            }
        }
        Jv::Arr(v) => {
            let n = v.len() as i64;
            let i: i64 = first.trim().parse().map_err(|_| {
                SqlError::new(b"22P02", format!("path element at position {} is not an integer: \"{first}\"", 1))
            })?;
            if rest.is_empty() {
                let idx = if i < 0 { n + i } else { i };
                match insert {
                    Some(after) => {
                        let pos = if idx < 0 { 0 } else if idx >= n { n } else { idx + after as i64 };
                        v.insert(pos as usize, newval.clone());
                    }
                    None => {
                        if idx >= 0 && idx < n {
                            v[idx as usize] = newval.clone();
                        } else if create {
                            if idx < 0 { v.insert(0, newval.clone()) } else { v.push(newval.clone()) }
                        }
                    }
                }
            } else {
                let idx = if i < 0 { n + i } else { i };
                if idx >= 0 && idx < n {
                    set_path(&mut v[idx as usize], rest, newval, create, insert)?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

pub fn jsonb_set(a: &[Value]) -> Result<Value> {
    let mut j = jb(&a[0])?;
    if !matches!(j, Jv::Arr(_) | Jv::Obj(_)) {
        return Err(scalar_err("set path in scalar"));
    }
    let create = a.get(3).is_none_or(|v| matches!(v, Value::Bool(true)));
    set_path(&mut j, &path_steps(&a[1])?, &jb(&a[2])?, create, None)?;
    Ok(out(&j))
}

pub fn jsonb_insert(a: &[Value]) -> Result<Value> {
    let mut j = jb(&a[0])?;
    if !matches!(j, Jv::Arr(_) | Jv::Obj(_)) {
        return Err(scalar_err("set path in scalar"));
    }
    let after = a.get(3).is_some_and(|v| matches!(v, Value::Bool(true)));
    set_path(&mut j, &path_steps(&a[1])?, &jb(&a[2])?, false, Some(after))?;
    Ok(out(&j))
}

// --- operators on json (the member's text as written)

pub fn json_object_field(a: &[Value]) -> Result<Value> {
    Ok(json::json_get_key(js(&a[0]), text(&a[1])).map_or(Value::Null, |s| Value::Json(s.to_string())))
}
pub fn json_object_field_text(a: &[Value]) -> Result<Value> {
    Ok(json::json_get_key(js(&a[0]), text(&a[1])).and_then(json::json_member_text).map_or(Value::Null, Value::Text))
}
pub fn json_array_element(a: &[Value]) -> Result<Value> {
    Ok(json::json_get_index(js(&a[0]), int(&a[1])).map_or(Value::Null, |s| Value::Json(s.to_string())))
}
pub fn json_array_element_text(a: &[Value]) -> Result<Value> {
    Ok(json::json_get_index(js(&a[0]), int(&a[1])).and_then(json::json_member_text).map_or(Value::Null, Value::Text))
}
pub fn json_extract_path(a: &[Value]) -> Result<Value> {
    Ok(json::json_get_path(js(&a[0]), &text_array(&a[1])).map_or(Value::Null, |s| Value::Json(s.to_string())))
}
pub fn json_extract_path_text(a: &[Value]) -> Result<Value> {
    Ok(json::json_get_path(js(&a[0]), &text_array(&a[1])).and_then(json::json_member_text).map_or(Value::Null, Value::Text))
}

// --- conversions of SQL values

/// A SQL value as a jsonb tree (to_jsonb).
pub fn value_to_jv(v: &Value) -> Result<Jv> {
    Ok(match v {
        Value::Null => Jv::Null,
        Value::Bool(b) => Jv::Bool(*b),
        Value::Jsonb(s) => json::tree(s)?,
        Value::Json(s) => json::parse(s)?,
        Value::Array(a) => Jv::Arr(a.items.iter().map(value_to_jv).collect::<Result<_>>()?),
        Value::Int2(_) | Value::Int4(_) | Value::Int8(_) | Value::Oid(_) | Value::Numeric(_) => {
            Jv::Num(ferrogres_datum::numeric::Numeric::parse(&ferrogres_datum::types::output(v).unwrap_or_default())?)
        }
        Value::Float8(_) | Value::Float4(_) => {
            let t = ferrogres_datum::types::output(v).unwrap_or_default();
            match ferrogres_datum::numeric::Numeric::parse(&t) {
                Ok(n) if n.is_finite() => Jv::Num(n),
                _ => Jv::Str(t),
            }
        }
        v => Jv::Str(scalar_text(v)),
    })
}

/// The text of a non-JSON scalar as JSON shows it (date/times in ISO 8601 with `T`).
fn scalar_text(v: &Value) -> String {
    let t = ferrogres_datum::types::output(v).unwrap_or_default();
    match v {
        Value::Timestamp(_) | Value::Timestamptz(_) => {
            let t = t.replacen(' ', "T", 1);
            match v {
                // +00 -> +00:00 as PostgreSQL's XSD format writes the offset.
                Value::Timestamptz(_) => {
                    let bytes = t.as_bytes();
                    let n = bytes.len();
                    if n >= 3 && (bytes[n - 3] == b'+' || bytes[n - 3] == b'-') { format!("{t}:00") } else { t }
                }
                _ => t,
            }
        }
        _ => t,
    }
}

/// A SQL value as json text (to_json; array_to_json's layout, no spaces).
pub fn value_to_json_text(v: &Value, out: &mut String) -> Result<()> {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Json(s) | Value::Jsonb(s) => out.push_str(s),
        Value::Array(a) => {
            out.push('[');
            for (i, e) in a.items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                value_to_json_text(e, out)?;
            }
            out.push(']');
        }
        Value::Int2(_) | Value::Int4(_) | Value::Int8(_) | Value::Oid(_) | Value::Numeric(_) => out.push_str(&ferrogres_datum::types::output(v).unwrap_or_default()),
        Value::Float8(_) | Value::Float4(_) => {
            let t = ferrogres_datum::types::output(v).unwrap_or_default();
            if t.bytes().any(|b| b.is_ascii_digit()) { out.push_str(&t) } else { quote(out, &t) }
        }
        v => quote(out, &scalar_text(v)),
    }
    Ok(())
}

fn one_arg<'a>(name: &str, a: &'a [Value]) -> Result<&'a Value> {
    match a {
        [v] => Ok(v),
        _ => Err(SqlError::new(b"42883", format!("function {name} with {} arguments does not exist", a.len()))),
    }
}

pub fn to_json(a: &[Value]) -> Result<Value> {
    let v = one_arg("to_json", a)?;
    if v.is_null() {
        return Ok(Value::Null);
    }
    let mut s = String::new();
    value_to_json_text(v, &mut s)?;
    Ok(Value::Json(s))
}

pub fn to_jsonb(a: &[Value]) -> Result<Value> {
    let v = one_arg("to_jsonb", a)?;
    if v.is_null() {
        return Ok(Value::Null);
    }
    Ok(out(&value_to_jv(v)?))
}

fn even_args(a: &[Value]) -> Result<()> {
    if !a.len().is_multiple_of(2) {
        return Err(SqlError::new(b"22023", "argument list must have even number of elements")
            .with_hint("The arguments of json_build_object() must consist of alternating keys and values."));
    }
    Ok(())
}

pub(crate) fn key_text(v: &Value, pos: usize) -> Result<String> {
    match v {
        Value::Null => Err(SqlError::new(b"22004", format!("argument {pos} cannot be null")).with_hint("Object keys should be text.")),
        Value::Json(_) | Value::Jsonb(_) | Value::Array(_) => {
            Err(SqlError::new(b"22023", "key value must be scalar, not array, composite, or json"))
        }
        v => Ok(scalar_text(v)),
    }
}

pub fn json_build_object(a: &[Value]) -> Result<Value> {
    even_args(a)?;
    let mut s = String::from("{");
    for (i, pair) in a.chunks(2).enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        quote(&mut s, &key_text(&pair[0], i * 2 + 1)?);
        s.push_str(" : ");
        value_to_json_text(&pair[1], &mut s)?;
    }
    s.push('}');
    Ok(Value::Json(s))
}

pub fn jsonb_build_object(a: &[Value]) -> Result<Value> {
    if !a.len().is_multiple_of(2) {
        return Err(SqlError::new(b"22023", "argument list must have even number of elements")
            .with_hint("The arguments of jsonb_build_object() must consist of alternating keys and values."));
    }
    let mut pairs = Vec::new();
    for (i, pair) in a.chunks(2).enumerate() {
        pairs.push((key_text(&pair[0], i * 2 + 1)?, value_to_jv(&pair[1])?));
    }
    Ok(out(&Jv::Obj(json::normalize_pairs(pairs))))
}

pub fn json_build_array(a: &[Value]) -> Result<Value> {
    let mut s = String::from("[");
    for (i, v) in a.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        value_to_json_text(v, &mut s)?;
    }
    s.push(']');
    Ok(Value::Json(s))
}

pub fn jsonb_build_array(a: &[Value]) -> Result<Value> {
    Ok(out(&Jv::Arr(a.iter().map(value_to_jv).collect::<Result<_>>()?)))
}

/// json_object(text[]) and json_object(keys text[], values text[]).
pub fn json_object(a: &[Value]) -> Result<Value> {
    let (keys, vals): (Vec<Option<String>>, Vec<Option<String>>) = if a.len() == 1 {
        let all = text_array(&a[0]);
        if !all.len().is_multiple_of(2) {
            return Err(SqlError::new(b"2202E", "array must have even number of elements"));
        }
        all.chunks(2).map(|c| (c[0].clone(), c[1].clone())).unzip()
    } else {
        let (k, v) = (text_array(&a[0]), text_array(&a[1]));
        if k.len() != v.len() {
            return Err(SqlError::new(b"2202E", "mismatched array dimensions"));
        }
        (k, v)
    };
    let mut s = String::from("{");
    for (i, (k, v)) in keys.iter().zip(&vals).enumerate() {
        let Some(k) = k else { return Err(SqlError::new(b"22004", "null value not allowed for object key")) };
        if i > 0 {
            s.push_str(", ");
        }
        quote(&mut s, k);
        s.push_str(" : ");
        match v {
            Some(v) => quote(&mut s, v),
            None => s.push_str("null"),
        }
    }
    s.push('}');
    Ok(Value::Json(s))
}

pub fn jsonb_pretty(a: &[Value]) -> Result<Value> {
    Ok(Value::Text(jb(&a[0])?.pretty()))
}

pub fn jsonb_typeof(a: &[Value]) -> Result<Value> {
    Ok(Value::Text(jb(&a[0])?.type_name().into()))
}

pub fn json_typeof(a: &[Value]) -> Result<Value> {
    Ok(Value::Text(json::json_typeof(js(&a[0])).into()))
}

pub fn jsonb_array_length(a: &[Value]) -> Result<Value> {
    match jb(&a[0])? {
        Jv::Arr(v) => Ok(Value::Int4(v.len() as i32)),
        Jv::Obj(_) => Err(scalar_err("get array length of a non-array")),
        _ => Err(scalar_err("get array length of a scalar")),
    }
}

pub fn json_array_length(a: &[Value]) -> Result<Value> {
    match json::json_kind(js(&a[0])) {
        b'[' => Ok(Value::Int4(json::json_members(js(&a[0])).map_or(0, |m| m.len()) as i32)),
        b'{' => Err(scalar_err("get array length of a non-array")),
        _ => Err(scalar_err("get array length of a scalar")),
    }
}

fn strip(j: Jv) -> Jv {
    match j {
        Jv::Obj(p) => Jv::Obj(p.into_iter().filter(|(_, v)| !matches!(v, Jv::Null)).map(|(k, v)| (k, strip(v))).collect()),
        Jv::Arr(v) => Jv::Arr(v.into_iter().map(strip).collect()),
        j => j,
    }
}

pub fn jsonb_strip_nulls(a: &[Value]) -> Result<Value> {
    Ok(out(&strip(jb(&a[0])?)))
}

pub fn gen_random_uuid(_: &[Value]) -> Result<Value> {
    Ok(Value::Uuid(ferrogres_datum::uuid::random_v4()?))
}

// --- set-returning

pub fn jsonb_array_elements(a: &[Value]) -> Result<SetIter> {
    match jb(&a[0])? {
        Jv::Arr(v) => Ok(Box::new(v.into_iter().map(|e| Ok(out(&e))))),
        Jv::Obj(_) => Err(SqlError::new(b"22023", "cannot extract elements from an object")),
        _ => Err(SqlError::new(b"22023", "cannot extract elements from a scalar")),
    }
}

pub fn jsonb_array_elements_text(a: &[Value]) -> Result<SetIter> {
    match jb(&a[0])? {
        Jv::Arr(v) => Ok(Box::new(v.into_iter().map(|e| Ok(e.as_text().map_or(Value::Null, Value::Text))))),
        Jv::Obj(_) => Err(SqlError::new(b"22023", "cannot extract elements from an object")),
        _ => Err(SqlError::new(b"22023", "cannot extract elements from a scalar")),
    }
}

pub fn jsonb_object_keys(a: &[Value]) -> Result<SetIter> {
    match jb(&a[0])? {
        Jv::Obj(p) => Ok(Box::new(p.into_iter().map(|(k, _)| Ok(Value::Text(k))))),
        j => Err(SqlError::new(b"22023", format!("cannot call jsonb_object_keys on {}", if matches!(j, Jv::Arr(_)) { "an array" } else { "a scalar" }))),
    }
}

pub fn json_array_elements(a: &[Value]) -> Result<SetIter> {
    let s = js(&a[0]);
    match json::json_kind(s) {
        b'[' => {
            let items: Vec<Result<Value>> = json::json_members(s).unwrap_or_default().into_iter().map(|(_, v)| Ok(Value::Json(v.to_string()))).collect();
            Ok(Box::new(items.into_iter()))
        }
        b'{' => Err(SqlError::new(b"22023", "cannot call json_array_elements on a non-array")),
        _ => Err(SqlError::new(b"22023", "cannot call json_array_elements on a scalar")),
    }
}

pub fn json_array_elements_text(a: &[Value]) -> Result<SetIter> {
    let s = js(&a[0]);
    match json::json_kind(s) {
        b'[' => {
            let items: Vec<Result<Value>> = json::json_members(s)
                .unwrap_or_default()
                .into_iter()
                .map(|(_, v)| Ok(json::json_member_text(v).map_or(Value::Null, Value::Text)))
                .collect();
            Ok(Box::new(items.into_iter()))
        }
        b'{' => Err(SqlError::new(b"22023", "cannot call json_array_elements_text on a non-array")),
        _ => Err(SqlError::new(b"22023", "cannot call json_array_elements_text on a scalar")),
    }
}

pub fn json_object_keys(a: &[Value]) -> Result<SetIter> {
    let s = js(&a[0]);
    match json::json_kind(s) {
        b'{' => {
            let items: Vec<Result<Value>> =
                json::json_members(s).unwrap_or_default().into_iter().filter_map(|(k, _)| k.map(|k| Ok(Value::Text(json::unquote(k))))).collect();
            Ok(Box::new(items.into_iter()))
        }
        b'[' => Err(SqlError::new(b"22023", "cannot call json_object_keys on an array")),
        _ => Err(SqlError::new(b"22023", "cannot call json_object_keys on a scalar")),
    }
}

/// The types of this module's rows.
pub const J: Type = Type::Json;
pub const JB: Type = Type::Jsonb;
pub const TA: Type = Type::Array(&Type::Text);
