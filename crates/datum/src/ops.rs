//! The kinds of the built-in arithmetic and comparison operators. The datum
//! procedures apply them (`numeric::arith`, `array::cmp_holds`); the plan's
//! expressions name them (`ferrogres_sql::plan` re-exports both).

/// `+ - * / %`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

/// `= <> < <= > >=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    /// The operator with its operands swapped: `a < b` is `b > a`.
    pub fn commuted(self) -> CmpOp {
        match self {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::Le => CmpOp::Ge,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::Ge => CmpOp::Le,
            o => o,
        }
    }
}
