//! Interval type modifiers: the field qualifier (`interval day`, `interval
//! hour to minute`) and the seconds precision (`interval(2)`, `interval
//! second(1)`), as pg_query gives them (the range mask, then the precision),
//! folded into PostgreSQL's typmod (`range << 16 | precision`).

use super::Analyzer;
use ferrogres_datum::errors::{Result, SqlError};
use pg_query::protobuf::{self as pb, a_const::Val};
use pg_query::NodeEnum;

pub(crate) fn typmod(a: &Analyzer<'_>, tn: &pb::TypeName) -> Result<i32> {
    let ints: Vec<i32> = tn
        .typmods
        .iter()
        .map(|m| match m.node.as_ref() {
            Some(NodeEnum::AConst(pb::AConst { val: Some(Val::Ival(i)), .. })) => Ok(i.ival),
            _ => Err(a.err_at(SqlError::not_supported("this type modifier"), tn.location)),
        })
        .collect::<Result<_>>()?;
    let (range, precision) = match ints.as_slice() {
        [r] => (*r, None),
        [r, p] => (*r, Some(*p)),
        _ => return Err(a.err_at(SqlError::new(b"42601", "invalid INTERVAL type modifier"), tn.location)),
    };
    if let Some(p) = precision {
        if p < 0 {
            return Err(a.err_at(SqlError::new(b"22023", format!("INTERVAL({p}) precision must not be negative")), tn.location));
        }
    }
    Ok(ferrogres_datum::datetime::interval_typmod(range, precision.map(|p| p.min(6))))
}
