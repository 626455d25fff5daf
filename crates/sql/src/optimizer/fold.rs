//! Constant folding (PostgreSQL's `eval_const_expressions`): a call of an
//! immutable function or operator whose arguments are all constants is
//! replaced by its value, bottom-up; AND / OR / NOT / CASE / COALESCE with
//! constant inputs are simplified. Run once per SELECT level after analysis
//! ([`fold_level`]), before the join search estimates the level's
//! conditions, so selectivity sees the folded constant and EXPLAIN prints it.
//!
//! What is folded, and why (PostgreSQL's `provolatile` is the reference):
//! - built-in table functions marked immutable (`functions::Volatility`),
//!   never stable (`now()`, `to_char(timestamptz, ...)`, `concat`) or
//!   volatile (`random()`), never set-returning or unimplemented ones;
//! - the fixed functions of [`Func`] that PostgreSQL marks immutable
//!   ([`func_immutable`]): date/time arithmetic without `timestamptz` (whose
//!   result depends on TimeZone), numeric functions, array functions but
//!   `array_to_string` (stable: it prints its elements);
//! - casts whose result depends on no setting ([`cast_immutable`]): between
//!   numbers, between string types, text to numbers / bool / uuid / json,
//!   date <-> timestamp; not date/time <-> text (DateStyle) nor anything
//!   with timestamptz (TimeZone);
//! - arithmetic, comparisons, `text || text`, LIKE, IS [NOT] NULL,
//!   IS DISTINCT FROM, NULLIF, GREATEST/LEAST over constants.
//!
//! Parameters (`$1`) are not constants: a prepared statement's plan is
//! generic. Subqueries are opaque here (each level is folded on its own).
//!
//! Errors. PostgreSQL raises an error of a folded call at plan time, even
//! when the row that would evaluate it never comes (`SELECT 1/0 FROM
//! empty`), but it simplifies first what it can prove is never evaluated:
//! an arm of CASE behind a constant false condition is dropped unread, as
//! are the inputs of AND after a constant false and of OR after a constant
//! true, and COALESCE's arguments after a non-null constant. Folding here
//! visits in the same order; an error leaves the failing call unfolded and
//! is recorded in [`Folded::error`] (the first one), which the analyzer
//! raises for a statement that is planned to run and ignores for a view or
//! function definition (PostgreSQL does not plan those).
use crate::functions::{Imp, Volatility};
use crate::plan::{Expr, Func};
use ferrogres_datum::datetime::DtFunc;
use ferrogres_datum::errors::SqlError;
use ferrogres_datum::types::{Type, Value};

/// The state of a folding pass: the first error a folded call raised.
#[derive(Default)]
pub struct Folded {
    pub error: Option<SqlError>,
}

impl Folded {
    fn record(&mut self, e: SqlError) {
        if self.error.is_none() {
            self.error = Some(e);
        }
    }
}

/// Whether PostgreSQL marks the fixed function `f` immutable (and it is
/// implemented here, not set-returning).
pub fn func_immutable(f: &Func) -> bool {
    use ferrogres_datum::array::ArrayFunc;
    match f {
        Func::Length | Func::Upper | Func::Lower | Func::Abs | Func::OctetLength | Func::Numeric(_) => true,
        Func::Builtin(id) | Func::Variadic(id) => {
            let b = id.get();
            b.volatility == Volatility::Immutable && matches!(b.imp, Imp::Scalar(_) | Imp::Checked(_))
        }
        Func::DateTime(d) => match d {
            DtFunc::DatePlusInt
            | DtFunc::DateMinusInt
            | DtFunc::DateMinusDate
            | DtFunc::DatePlusInterval
            | DtFunc::DateMinusInterval
            | DtFunc::IntervalPlus
            | DtFunc::IntervalMinus
            | DtFunc::IntervalNeg
            | DtFunc::IntervalMulFloat
            | DtFunc::IntervalDivFloat
            | DtFunc::DatePlusTime
            | DtFunc::TsMinusTs(_) => true,
            DtFunc::TsPlusInterval(t) | DtFunc::TsMinusInterval(t) | DtFunc::DatePart(t) | DtFunc::DateTrunc(t) | DtFunc::Extract(t) => {
                *t != Type::Timestamptz
            }
            // now() & co. are stable; AT TIME ZONE is left to run time.
            _ => false,
        },
        Func::Array(a) => !matches!(a, ArrayFunc::ToString),
        // Session, catalog, sequence, lock, statistics functions: stable or volatile.
        _ => false,
    }
}

fn numeric_family(t: Type) -> bool {
    matches!(t, Type::Int2 | Type::Int4 | Type::Int8 | Type::Oid | Type::Float4 | Type::Float8 | Type::Numeric)
}

fn string_family(t: Type) -> bool {
    matches!(t, Type::Text | Type::Varchar | Type::Bpchar | Type::Name | Type::Char)
}

/// Whether the cast `from -> to` depends on no setting (PostgreSQL: its
/// cast function or I/O functions are immutable).
pub fn cast_immutable(from: Type, to: Type) -> bool {
    if from == to || from == Type::Unknown {
        // A typmod coercion, or the input of a literal (done at parse time in PostgreSQL).
        return true;
    }
    let plain = |t: Type| numeric_family(t) || t == Type::Bool;
    (numeric_family(from) && numeric_family(to))
        || (from == Type::Bool && to == Type::Int4)
        || (from == Type::Int4 && to == Type::Bool)
        || (string_family(from) && string_family(to))
        || (string_family(from) && (plain(to) || matches!(to, Type::Uuid | Type::Json | Type::Jsonb)))
        || ((plain(from) || matches!(from, Type::Uuid | Type::Json | Type::Jsonb)) && string_family(to))
        || matches!((from, to), (Type::Json, Type::Jsonb) | (Type::Jsonb, Type::Json))
        || matches!((from, to), (Type::Date, Type::Timestamp) | (Type::Timestamp, Type::Date) | (Type::Timestamp, Type::Time))
}

fn is_const(e: &Expr) -> bool {
    matches!(e, Expr::Const(..))
}

fn is_null_const(e: &Expr) -> bool {
    matches!(e, Expr::Const(Value::Null, _))
}

/// Memory a folded call may use while it is evaluated.
const FOLD_BUDGET: usize = 64 << 20;
/// The largest value kept as a folded constant (a plan holds it, a cached
/// plan for long, and execution copies it).
const FOLD_MAX_VALUE: usize = 1 << 20;

/// Evaluates `e` (whose inputs are constants) and replaces it by its value;
/// an error leaves it as it is and is recorded. A call that needs more than
/// [`FOLD_BUDGET`] to evaluate, or whose value is over [`FOLD_MAX_VALUE`], is
/// left to run with the statement, under its memory limit
/// (`statement_memory_limit`): planning never holds a large value.
fn evaluate(e: Expr, st: &mut Folded) -> Expr {
    let ty = e.ty();
    let (r, crossed, kept) = crate::memory::with_budget(FOLD_BUDGET, || crate::exec::eval_no_row(&e));
    match r {
        Ok(_) if crossed || kept > FOLD_MAX_VALUE => e,
        Ok(v) => Expr::Const(v, ty),
        Err(err) if crossed || &err.code == b"53200" => e,
        Err(err) => {
            st.record(err);
            e
        }
    }
}

fn fold_box(b: &mut Box<Expr>, st: &mut Folded) {
    let e = std::mem::replace(&mut **b, Expr::Const(Value::Null, Type::Bool));
    **b = fold(e, st);
}

/// Folds `e` in place.
pub fn fold_in_place(e: &mut Expr, st: &mut Folded) {
    let x = std::mem::replace(e, Expr::Const(Value::Null, Type::Bool));
    *e = fold(x, st);
}

/// The constant-folded form of `e`.
pub fn fold(e: Expr, st: &mut Folded) -> Expr {
    if let Err(err) = ferrogres_datum::stack_depth::check() {
        st.record(err);
        return e;
    }
    match e {
        Expr::Const(..)
        | Expr::Column(..)
        | Expr::Param(..)
        | Expr::AggRef(..)
        | Expr::SubPlan(_)
        | Expr::OuterColumn { .. }
        | Expr::OuterAggRef { .. } => e,
        Expr::Cast { mut arg, from, to, typmod, explicit } => {
            fold_box(&mut arg, st);
            let foldable = is_const(&arg) && cast_immutable(from, to);
            let e = Expr::Cast { arg, from, to, typmod, explicit };
            if foldable { evaluate(e, st) } else { e }
        }
        Expr::Arith { op, mut l, mut r, ty } => {
            fold_box(&mut l, st);
            fold_box(&mut r, st);
            if is_null_const(&l) || is_null_const(&r) {
                return Expr::Const(Value::Null, ty);
            }
            let c = is_const(&l) && is_const(&r);
            let e = Expr::Arith { op, l, r, ty };
            if c { evaluate(e, st) } else { e }
        }
        Expr::Neg(mut a, ty) => {
            fold_box(&mut a, st);
            let c = is_const(&a);
            let e = Expr::Neg(a, ty);
            if c { evaluate(e, st) } else { e }
        }
        Expr::Compare { op, mut l, mut r } => {
            fold_box(&mut l, st);
            fold_box(&mut r, st);
            if is_null_const(&l) || is_null_const(&r) {
                return Expr::Const(Value::Null, Type::Bool);
            }
            let c = is_const(&l) && is_const(&r);
            let e = Expr::Compare { op, l, r };
            if c { evaluate(e, st) } else { e }
        }
        Expr::Concat(mut l, mut r) => {
            fold_box(&mut l, st);
            fold_box(&mut r, st);
            // text || text is immutable; with another type it prints the
            // value (PostgreSQL's anytextcat: stable).
            let c = is_const(&l) && is_const(&r) && string_family(l.ty()) && string_family(r.ty());
            let e = Expr::Concat(l, r);
            if c { evaluate(e, st) } else { e }
        }
        Expr::And(args) => fold_bool(args, true, st),
        Expr::Or(args) => fold_bool(args, false, st),
        Expr::Not(mut a) => {
            fold_box(&mut a, st);
            match *a {
                Expr::Const(Value::Bool(b), _) => Expr::Const(Value::Bool(!b), Type::Bool),
                Expr::Const(Value::Null, _) => Expr::Const(Value::Null, Type::Bool),
                // NOT NOT x is x (both NULL for a NULL x).
                Expr::Not(inner) => *inner,
                other => Expr::Not(Box::new(other)),
            }
        }
        Expr::IsNull { mut arg, negated } => {
            fold_box(&mut arg, st);
            match &*arg {
                Expr::Const(v, _) => Expr::Const(Value::Bool(v.is_null() != negated), Type::Bool),
                _ => Expr::IsNull { arg, negated },
            }
        }
        Expr::Func { func, args, ty } => {
            let args: Vec<Expr> = args.into_iter().map(|a| fold(a, st)).collect();
            if !func_immutable(&func) {
                return Expr::Func { func, args, ty };
            }
            let strict = matches!(func, Func::Builtin(id) if id.get().strict);
            if strict && args.iter().any(is_null_const) {
                return Expr::Const(Value::Null, ty);
            }
            let c = args.iter().all(is_const);
            let e = Expr::Func { func, args, ty };
            if c { evaluate(e, st) } else { e }
        }
        Expr::Case { whens, default, ty } => {
            let mut kept: Vec<(Expr, Expr)> = Vec::new();
            let mut default = Some(default);
            for (cond, result) in whens {
                match fold(cond, st) {
                    // Never true: the arm is dropped unread.
                    Expr::Const(Value::Bool(false) | Value::Null, _) => {}
                    // Always true (when reached): the rest is never evaluated.
                    Expr::Const(Value::Bool(true), _) => {
                        let r = fold(result, st);
                        if kept.is_empty() {
                            return r;
                        }
                        default = Some(Box::new(r));
                        return Expr::Case { whens: kept, default: default.expect("set"), ty };
                    }
                    cond => {
                        let r = fold(result, st);
                        kept.push((cond, r));
                    }
                }
            }
            let d = fold(*default.take().expect("set"), st);
            if kept.is_empty() {
                return d;
            }
            Expr::Case { whens: kept, default: Box::new(d), ty }
        }
        Expr::Coalesce(args, ty) => {
            let mut kept = Vec::new();
            for a in args {
                match fold(a, st) {
                    Expr::Const(Value::Null, _) => {}
                    c @ Expr::Const(..) => {
                        // A non-null constant: the arguments after it are never read.
                        kept.push(c);
                        break;
                    }
                    other => kept.push(other),
                }
            }
            match kept.len() {
                0 => Expr::Const(Value::Null, ty),
                1 => kept.pop().expect("one"),
                _ if is_const(&kept[0]) => kept.swap_remove(0),
                _ => Expr::Coalesce(kept, ty),
            }
        }
        Expr::NullIf { mut arg, mut eq } => {
            fold_box(&mut arg, st);
            fold_box(&mut eq, st);
            let c = is_const(&arg) && is_const(&eq);
            let e = Expr::NullIf { arg, eq };
            if c { evaluate(e, st) } else { e }
        }
        Expr::MinMax { args, greatest, ty } => {
            let args: Vec<Expr> = args.into_iter().map(|a| fold(a, st)).collect();
            let c = args.iter().all(is_const);
            let e = Expr::MinMax { args, greatest, ty };
            if c { evaluate(e, st) } else { e }
        }
        Expr::Distinct { mut l, mut r, negated } => {
            fold_box(&mut l, st);
            fold_box(&mut r, st);
            let c = is_const(&l) && is_const(&r);
            let e = Expr::Distinct { l, r, negated };
            if c { evaluate(e, st) } else { e }
        }
        Expr::Like { mut arg, mut pat, mut escape, ci } => {
            fold_box(&mut arg, st);
            fold_box(&mut pat, st);
            if let Some(esc) = escape.as_mut() {
                fold_box(esc, st);
            }
            let c = is_const(&arg) && is_const(&pat) && escape.as_deref().is_none_or(is_const);
            let e = Expr::Like { arg, pat, escape, ci };
            if c { evaluate(e, st) } else { e }
        }
    }
}

/// Folds the conditions of the joins of a level's FROM tree (a FROM
/// subquery is its own level, folded when it was analyzed).
pub fn fold_source(src: &mut crate::plan::Source, st: &mut Folded) {
    let crate::plan::Source::Join(j) = src else { return };
    for e in j.cond.iter_mut().chain(j.left_filter.iter_mut()).chain(j.right_filter.iter_mut()) {
        fold_in_place(e, st);
    }
    if let Some((l, r)) = j.hash.as_mut() {
        for e in l.iter_mut().chain(r.iter_mut()) {
            fold_in_place(e, st);
        }
    }
    fold_source(&mut j.left, st);
    fold_source(&mut j.right, st);
}

/// AND (`and`) or OR of `args`, flattened and simplified in order: the
/// dominating constant (false for AND, true for OR) ends it, the other
/// constant is dropped, a NULL constant is kept once.
fn fold_bool(args: Vec<Expr>, and: bool, st: &mut Folded) -> Expr {
    let mut out = Vec::with_capacity(args.len());
    let mut saw_null = false;
    let mut todo: std::collections::VecDeque<Expr> = args.into();
    while let Some(a) = todo.pop_front() {
        match fold(a, st) {
            Expr::And(inner) if and => out.extend(inner),
            Expr::Or(inner) if !and => out.extend(inner),
            Expr::Const(Value::Bool(b), _) if b != and => return Expr::Const(Value::Bool(b), Type::Bool),
            Expr::Const(Value::Bool(_), _) => {}
            Expr::Const(Value::Null, _) => saw_null = true,
            other => out.push(other),
        }
    }
    if saw_null {
        out.push(Expr::Const(Value::Null, Type::Bool));
    }
    match out.len() {
        0 => Expr::Const(Value::Bool(and), Type::Bool),
        1 => out.pop().expect("one"),
        _ if and => Expr::And(out),
        _ => Expr::Or(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{ArithOp, CmpOp};

    fn k(v: i32) -> Expr {
        Expr::Const(Value::Int4(v), Type::Int4)
    }
    fn b(v: bool) -> Expr {
        Expr::Const(Value::Bool(v), Type::Bool)
    }
    fn col(i: usize) -> Expr {
        Expr::Column(i, Type::Int4)
    }
    fn eq(l: Expr, r: Expr) -> Expr {
        Expr::Compare { op: CmpOp::Eq, l: Box::new(l), r: Box::new(r) }
    }
    fn div(l: Expr, r: Expr) -> Expr {
        Expr::Arith { op: ArithOp::Div, l: Box::new(l), r: Box::new(r), ty: Type::Int4 }
    }
    fn run(e: Expr) -> (Expr, Option<SqlError>) {
        let mut st = Folded::default();
        let e = fold(e, &mut st);
        (e, st.error)
    }

    #[test]
    fn arithmetic_and_comparison_fold() {
        let (e, err) = run(eq(col(0), Expr::Arith { op: ArithOp::Add, l: Box::new(k(1)), r: Box::new(k(2)), ty: Type::Int4 }));
        assert!(err.is_none());
        let Expr::Compare { r, .. } = e else { panic!("{e:?}") };
        assert!(matches!(*r, Expr::Const(Value::Int4(3), Type::Int4)));
    }

    #[test]
    fn and_or_not_simplify() {
        let (e, _) = run(Expr::And(vec![eq(col(0), k(1)), b(true)]));
        assert!(matches!(e, Expr::Compare { .. }), "{e:?}");
        let (e, _) = run(Expr::Or(vec![eq(col(0), k(1)), b(false)]));
        assert!(matches!(e, Expr::Compare { .. }), "{e:?}");
        let (e, _) = run(Expr::Not(Box::new(b(true))));
        assert!(matches!(e, Expr::Const(Value::Bool(false), _)));
        let (e, _) = run(Expr::And(vec![eq(col(0), k(1)), Expr::Const(Value::Null, Type::Bool)]));
        assert!(matches!(&e, Expr::And(v) if v.len() == 2), "{e:?}");
    }

    #[test]
    fn errors_only_where_evaluation_is_possible() {
        // false AND 1/0 = 1: the division is never reached.
        let (e, err) = run(Expr::And(vec![b(false), eq(div(k(1), k(0)), k(1))]));
        assert!(err.is_none());
        assert!(matches!(e, Expr::Const(Value::Bool(false), _)));
        // 1/0 = 1 AND false: reached first, as in PostgreSQL.
        let (_, err) = run(Expr::And(vec![eq(div(k(1), k(0)), k(1)), b(false)]));
        assert_eq!(err.expect("22012").code, *b"22012");
        // CASE WHEN false THEN 1/0 END
        let case = Expr::Case { whens: vec![(b(false), div(k(1), k(0)))], default: Box::new(Expr::Const(Value::Null, Type::Int4)), ty: Type::Int4 };
        let (e, err) = run(case);
        assert!(err.is_none());
        assert!(matches!(e, Expr::Const(Value::Null, _)));
        // COALESCE(1, 1/0)
        let (e, err) = run(Expr::Coalesce(vec![k(1), div(k(1), k(0))], Type::Int4));
        assert!(err.is_none());
        assert!(matches!(e, Expr::Const(Value::Int4(1), _)));
        // The failing call stays in the tree, unfolded.
        let (e, err) = run(div(k(1), k(0)));
        assert!(err.is_some());
        assert!(matches!(e, Expr::Arith { .. }));
    }

    #[test]
    fn casts_that_read_settings_stay() {
        assert!(cast_immutable(Type::Int4, Type::Int8));
        assert!(cast_immutable(Type::Date, Type::Timestamp));
        assert!(!cast_immutable(Type::Date, Type::Timestamptz));
        assert!(!cast_immutable(Type::Text, Type::Date));
        assert!(!cast_immutable(Type::Timestamp, Type::Text));
    }
}
