//! Calls of built-in functions and operators ([`crate::functions`]): overload
//! resolution as PostgreSQL's func_select_candidate / oper_select_candidate
//! (parse_func.c, parse_oper.c) does it, for the types we have:
//!
//! 1. candidates: the rows of the name whose argument count fits (a `VARIADIC
//!    "any"` row takes one or more extra arguments);
//! 2. an exact match (every argument already of the declared type) wins; for a
//!    binary operator with one `unknown` side, the other side's type is tried
//!    for both;
//! 3. otherwise keep the candidates every argument converts to implicitly
//!    (`unknown` converts to anything); one left: it;
//! 4. keep those with the most exact matches, then those with the most
//!    arguments that are, or convert to, the preferred type of their category
//!    (float8 for numbers, text for strings);
//! 5. `unknown` arguments: the category the candidates declare at that
//!    position, strings if any candidate takes one there (a conflict between
//!    other categories fails); keep the candidates of that category (its
//!    preferred type, if one takes it);
//! 6. if all known arguments are of one type, assume the unknowns are too.
//!
//! No candidate: 42883 `function f(integer) does not exist`; several left:
//! 42725 `function f(unknown) is not unique`, both with PostgreSQL's hints.
//! COLLATE is accepted for the collations that exist (`default`, `C`, `POSIX`),
//! which sort the same here (bytewise).

use super::{node, str_of, Analyzer, Scope};
use ferrogres_datum::errors::{Result, SqlError};
use crate::functions::{FuncId, BUILTINS, OPERATORS};
use crate::plan::*;
use ferrogres_datum::types::{self, CastContext, Type};
use pg_query::protobuf as pb;


/// Whether `from` converts to `to` implicitly (integers to numeric as well:
/// numeric exists here as a literal's type and in candidate lists).
fn can_coerce(from: Type, to: Type) -> bool {
    from == to || from == Type::Unknown || (to == Type::Numeric && from.is_integer()) || types::cast_allowed(from, to, CastContext::Implicit)
}

/// The declared type of each of `n` arguments (`None`: "any").
fn declared(id: usize, n: usize) -> Vec<Option<Type>> {
    let b = &BUILTINS[id];
    (0..n).map(|i| b.args.get(i).copied()).collect()
}

fn fits(id: usize, n: usize) -> bool {
    let b = &BUILTINS[id];
    if b.variadic_any { n > b.args.len() } else { b.args.len() == n }
}

pub(super) enum Resolution {
    Found(usize),
    NotFound,
    NotUnique,
}

/// Chooses among the rows `cands` of BUILTINS for arguments of types `inputs`.
fn select_candidate(cands: &[usize], inputs: &[Type], binary_operator: bool) -> Resolution {
    select_candidate_by(cands, inputs, binary_operator, &declared, &fits)
}

/// PostgreSQL's resolution among candidates described by `declared` (each
/// argument's type, `None`: any) and `fits` (takes that many arguments); also
/// used for SQL functions ([`super::sqlfunc`]).
pub(super) fn select_candidate_by(
    cands: &[usize],
    inputs: &[Type],
    binary_operator: bool,
    declared: &dyn Fn(usize, usize) -> Vec<Option<Type>>,
    fits: &dyn Fn(usize, usize) -> bool,
) -> Resolution {
    let n = inputs.len();
    let cands: Vec<usize> = cands.iter().copied().filter(|&c| fits(c, n)).collect();
    let exact = |c: usize, want: &[Type]| declared(c, n).iter().zip(want).all(|(d, t)| d.map_or(*t != Type::Unknown, |d| d == *t));
    let exacts: Vec<usize> = cands.iter().copied().filter(|&c| exact(c, inputs)).collect();
    if exacts.len() == 1 {
        return Resolution::Found(exacts[0]);
    }
    if binary_operator && n == 2 {
        let known = match (inputs[0], inputs[1]) {
            (Type::Unknown, t) | (t, Type::Unknown) if t != Type::Unknown => Some(t),
            _ => None,
        };
        if let Some(t) = known {
            if let Some(&c) = cands.iter().find(|&&c| exact(c, &[t, t])) {
                return Resolution::Found(c);
            }
        }
    }
    let mut live: Vec<usize> =
        cands.iter().copied().filter(|&c| declared(c, n).iter().zip(inputs).all(|(d, t)| d.is_none_or(|d| can_coerce(*t, d)))).collect();
    match live.len() {
        0 => return Resolution::NotFound,
        1 => return Resolution::Found(live[0]),
        _ => {}
    }
    // Most exact matches, then most preferred types where a conversion is needed.
    let keep_max = |live: &mut Vec<usize>, score: &dyn Fn(usize) -> usize| {
        let best = live.iter().map(|&c| score(c)).max().unwrap_or(0);
        live.retain(|&c| score(c) == best);
    };
    keep_max(&mut live, &|c| declared(c, n).iter().zip(inputs).filter(|(d, t)| **t != Type::Unknown && d.is_none_or(|d| d == **t)).count());
    if live.len() == 1 {
        return Resolution::Found(live[0]);
    }
    keep_max(&mut live, &|c| {
        declared(c, n)
            .iter()
            .zip(inputs)
            .filter(|(d, t)| {
                **t != Type::Unknown
                    && d.is_none_or(|d| d == **t || (d.category().1 && d.category().0 == t.category().0))
            })
            .count()
    });
    if live.len() == 1 {
        return Resolution::Found(live[0]);
    }
    if !inputs.contains(&Type::Unknown) {
        return Resolution::NotUnique;
    }
    // Unknown arguments: the category the candidates want there.
    for (i, t) in inputs.iter().enumerate() {
        if *t != Type::Unknown {
            continue;
        }
        let mut slot: Option<(char, bool)> = None;
        let mut conflict = false;
        for &c in &live {
            let (cat, pref) = declared(c, n)[i].map_or(('P', false), Type::category);
            slot = Some(match slot {
                None => (cat, pref),
                Some((sc, sp)) if sc == cat => (sc, sp || pref),
                Some(_) if cat == 'S' => (cat, pref),
                Some((sc, sp)) if sc == 'S' => (sc, sp),
                Some(s) => {
                    conflict = true;
                    s
                }
            });
        }
        if conflict {
            continue;
        }
        if let Some((sc, sp)) = slot {
            let filtered: Vec<usize> = live
                .iter()
                .copied()
                .filter(|&c| {
                    let (cat, pref) = declared(c, n)[i].map_or(('P', false), Type::category);
                    cat == sc && (!sp || pref)
                })
                .collect();
            if !filtered.is_empty() {
                live = filtered;
            }
        }
    }
    if live.len() == 1 {
        return Resolution::Found(live[0]);
    }
    // All known inputs of one type: assume the unknowns are of it too.
    let known: Vec<Type> = inputs.iter().copied().filter(|t| *t != Type::Unknown).collect();
    if let Some(&k) = known.first() {
        if known.iter().all(|t| *t == k) {
            let assumed: Vec<Type> = inputs.iter().map(|t| if *t == Type::Unknown { k } else { *t }).collect();
            let fit: Vec<usize> = live
                .iter()
                .copied()
                .filter(|&c| declared(c, n).iter().zip(&assumed).all(|(d, t)| d.is_none_or(|d| can_coerce(*t, d))))
                .collect();
            if fit.len() == 1 {
                return Resolution::Found(fit[0]);
            }
        }
    }
    Resolution::NotUnique
}

fn type_list(inputs: &[Type]) -> String {
    inputs.iter().map(|t| t.sql_name()).collect::<Vec<_>>().join(", ")
}

impl Analyzer<'_> {
    /// A call of a function of [`BUILTINS`]; `None` when no built-in has that name.
    pub(super) fn builtin_call(&mut self, name: &str, args: &mut Vec<Expr>, locs: &[i32], f: &pb::FuncCall, scope: &Scope) -> Result<Option<Expr>> {
        let cands: Vec<usize> = (0..BUILTINS.len()).filter(|&i| BUILTINS[i].name == name).collect();
        if cands.is_empty() {
            if crate::functions::NOT_YET.contains(&name) {
                return Err(self.err_at(SqlError::not_supported(format!("function {name}")), f.location));
            }
            return Ok(None);
        }
        if f.func_variadic {
            return self.variadic_call(name, std::mem::take(args), locs, f.location).map(Some);
        }
        let inputs: Vec<Type> = args.iter().map(|a| a.ty()).collect();
        let id = match select_candidate(&cands, &inputs, false) {
            Resolution::Found(id) => id,
            Resolution::NotFound => {
                return Err(self.err_at(
                    SqlError::new(b"42883", format!("function {name}({}) does not exist", type_list(&inputs)))
                        .with_hint("No function matches the given name and argument types. You might need to add explicit type casts."),
                    f.location,
                ))
            }
            Resolution::NotUnique => {
                return Err(self.err_at(
                    SqlError::new(b"42725", format!("function {name}({}) is not unique", type_list(&inputs)))
                        .with_hint("Could not choose a best candidate function. You might need to add explicit type casts."),
                    f.location,
                ))
            }
        };
        if BUILTINS[id].returns_set() {
            if let Some(place) = scope.no_srf {
                return Err(self.err_at(SqlError::new(b"0A000", format!("set-returning functions are not allowed in {place}")), f.location));
            }
            if args.iter().any(crate::project_set::contains_srf) {
                return Err(self.err_at(SqlError::not_supported("nested set-returning functions"), f.location));
            }
        }
        let args = self.coerce_args(id, std::mem::take(args), locs, f.location)?;
        Ok(Some(Expr::Func { func: Func::Builtin(FuncId(id as u16)), args, ty: BUILTINS[id].ret }))
    }

    /// Converts each argument to the declared type of row `id` (an unknown
    /// literal given to "any" becomes text); a row not implemented is 0A000.
    fn coerce_args(&mut self, id: usize, args: Vec<Expr>, locs: &[i32], loc: i32) -> Result<Vec<Expr>> {
        if let crate::functions::Imp::Missing(what) = BUILTINS[id].imp {
            return Err(self.err_at(SqlError::not_supported(what), loc));
        }
        let decl = declared(id, args.len());
        let mut out = Vec::with_capacity(args.len());
        for ((a, d), l) in args.into_iter().zip(decl).zip(locs.iter().copied().chain(std::iter::repeat(loc))) {
            let t = a.ty();
            let want = match d {
                None if t == Type::Unknown => Type::Text,
                None => t,
                Some(d) => d,
            };
            // varchar and text are one representation.
            out.push(if t == want || (t == Type::Varchar && want == Type::Text) { a } else { self.coerce(a, want, CastContext::Implicit, l)? });
        }
        Ok(out)
    }

    /// An operator of [`OPERATORS`] (`l` is `None` for a prefix operator).
    pub(super) fn builtin_operator(&mut self, op: &str, l: Option<Expr>, r: Expr, loc: i32, locs: (i32, i32)) -> Result<Expr> {
        let nargs = if l.is_some() { 2 } else { 1 };
        let cands: Vec<usize> = (0..BUILTINS.len())
            .filter(|&i| OPERATORS.iter().chain(crate::functions::JSONB_OPERATORS).chain(ferrogres_datum::pg_lsn::OPERATORS).any(|(o, p)| *o == op && *p == BUILTINS[i].name) && BUILTINS[i].args.len() == nargs)
            .collect();
        let mut args: Vec<Expr> = l.into_iter().chain(std::iter::once(r)).collect();
        let inputs: Vec<Type> = args.iter().map(|a| a.ty()).collect();
        let sig = match inputs.as_slice() {
            [l, r] => format!("{} {op} {}", l.sql_name(), r.sql_name()),
            [r] => format!("{op} {}", r.sql_name()),
            _ => op.to_string(),
        };
        let id = match select_candidate(&cands, &inputs, nargs == 2) {
            Resolution::Found(id) => id,
            Resolution::NotFound => {
                return Err(self.err_at(
                    SqlError::new(b"42883", format!("operator does not exist: {sig}"))
                        .with_hint("No operator matches the given name and argument types. You might need to add explicit type casts."),
                    loc,
                ))
            }
            Resolution::NotUnique => {
                return Err(self.err_at(
                    SqlError::new(b"42725", format!("operator is not unique: {sig}"))
                        .with_hint("Could not choose a best candidate operator. You might need to add explicit type casts."),
                    loc,
                ))
            }
        };
        let arg_locs = if nargs == 2 { vec![locs.0, locs.1] } else { vec![locs.1] };
        args = self.coerce_args(id, args, &arg_locs, loc)?;
        Ok(Expr::Func { func: Func::Builtin(FuncId(id as u16)), args, ty: BUILTINS[id].ret })
    }

    /// `expr COLLATE name`: the collations that exist (`default`, `C`, `POSIX`,
    /// optionally `pg_catalog.`-qualified) on a string; they all compare bytewise here.
    pub(super) fn collate_clause(&mut self, c: &pb::CollateClause, scope: &mut Scope) -> Result<Expr> {
        let names: Vec<&str> = c.collname.iter().filter_map(str_of).collect();
        let Some(arg) = node(&c.arg) else { return Err(SqlError::internal("COLLATE without argument")) };
        let e = self.expr(arg, scope)?;
        let name = match names.as_slice() {
            ["pg_catalog", n] | [n] => *n,
            _ => "",
        };
        if !matches!(name, "default" | "C" | "POSIX" | "ucs_basic") {
            return Err(self.err_at(
                SqlError::new(b"42704", format!("collation \"{}\" for encoding \"UTF8\" does not exist", names.join("."))),
                c.location,
            ));
        }
        let e = if e.ty() == Type::Unknown { self.coerce(e, Type::Text, CastContext::Implicit, c.location)? } else { e };
        if !e.ty().is_string() {
            return Err(self.err_at(
                SqlError::new(b"42804", format!("collations are not supported by type {}", e.ty().sql_name())),
                c.location,
            ));
        }
        Ok(e)
    }

    /// A one-row `INSERT ... VALUES` whose row calls a set-returning function
    /// runs as `INSERT ... SELECT` of that row (as PostgreSQL plans it).
    pub(super) fn insert_values_srf(
        &mut self,
        table: crate::catalog::Table,
        mut rows: Vec<Vec<Expr>>,
        s: &pb::InsertStmt,
    ) -> Result<Statement> {
        if rows.len() != 1 {
            return Err(SqlError::new(b"0A000", "set-returning functions are not allowed in VALUES"));
        }
        let row = rows.pop().unwrap_or_default();
        let targets: Vec<Target> =
            row.iter().map(|e| Target { name: "?column?".into(), expr: e.clone(), typmod: -1, origin: None }).collect();
        let query = Query::project(Source::OneRow, targets);
        let row = row.iter().enumerate().map(|(i, e)| Expr::Column(i, e.ty())).collect();
        let returning = self.returning(s.returning_clause.as_ref(), &table)?;
        Ok(Statement::InsertSelect(Box::new(crate::insert_select::InsertSelect { table, query, row, returning })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pick(name: &str, inputs: &[Type]) -> Option<&'static [Type]> {
        let cands: Vec<usize> = (0..BUILTINS.len()).filter(|&i| BUILTINS[i].name == name).collect();
        match select_candidate(&cands, inputs, false) {
            Resolution::Found(i) => Some(BUILTINS[i].args),
            _ => None,
        }
    }

    #[test]
    fn resolution_as_postgres() {
        // round(int) is round(float8): float8 is the preferred numeric type.
        assert_eq!(pick("round", &[Type::Int4]), Some(&[Type::Float8][..]));
        // round(1.5) is round(numeric) (an exact match).
        assert_eq!(pick("round", &[Type::Numeric]), Some(&[Type::Numeric][..]));
        assert_eq!(pick("abs", &[Type::Unknown]), Some(&[Type::Float8][..]));
        assert_eq!(pick("abs", &[Type::Int2]), Some(&[Type::Int2][..]));
        assert_eq!(pick("substr", &[Type::Unknown, Type::Int4]), Some(&[Type::Text, Type::Int4][..]));
        assert_eq!(pick("length", &[Type::Int4]), None);
        assert_eq!(pick("concat", &[]), None);
        assert!(pick("concat", &[Type::Int4, Type::Unknown]).is_some());
    }
}
