//! The analyzed, typed form of a statement (a small logical plan) that the
//! executor runs. Built by [`crate::analyze`]; every name is resolved, every
//! expression typed, implicit casts made explicit.
//!
//! A query is the fixed pipeline PostgreSQL's simplest plans have:
//! `source -> Filter -> (Aggregate) -> Project -> Sort -> Limit`, where the source
//! is a sequential scan of one table, one empty row (no FROM), or a row generator,
//! or a tree: joins of sources, subqueries, VALUES, set operations and recursive
//! CTEs (`crate::join`, `crate::subquery`, `crate::setop`). Expressions may
//! hold subqueries (`Expr::SubPlan`) reading enclosing levels (`Expr::OuterColumn`).

use crate::catalog::{Column, Table};
use ferrogres_datum::types::{Type, Value};

// The operator kinds live with the datum procedures that apply them; the plan's
// expressions name them.
pub use ferrogres_datum::ops::{ArithOp, CmpOp};

/// Built-in scalar functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Func {
    Version,
    BackendPid,
    /// txid_current(): the top-level xid with its epoch (assigned if needed).
    TxidCurrent,
    /// txid_current_if_assigned(): the same, NULL if none is assigned yet.
    TxidCurrentIfAssigned,
    /// pg_current_snapshot() and txid_current_snapshot(): the statement's
    /// snapshot as full transaction ids.
    CurrentSnapshot,
    /// An int4's 32 bits as an xid (the right side of `xid = int4`).
    Int4AsXid,
    /// pg_current_xact_id(): txid_current() as xid8.
    CurrentXactId,
    /// pg_current_xact_id_if_assigned(): txid_current_if_assigned() as xid8.
    CurrentXactIdIfAssigned,
    /// pg_xact_status(xid8), txid_status(bigint): 'committed', 'aborted',
    /// 'in progress', or NULL when the status is no longer kept.
    XactStatus,
    Sleep,
    SetConfig,
    CurrentSetting,
    Length,
    Upper,
    Lower,
    Abs,
    /// Date/time functions and operators ([`ferrogres_datum::datetime`]).
    DateTime(ferrogres_datum::datetime::DtFunc),
    /// length(bytea), octet_length(bytea).
    OctetLength,
    /// Advisory locks and other lock functions (`crate::locking`).
    Lock(crate::locking::LockFunc),
    /// Array constructors, subscripts, ANY/ALL, array functions (`ferrogres_datum::array`).
    Array(ferrogres_datum::array::ArrayFunc),
    /// Catalog and session information functions (`crate::pgcatalog`).
    Catalog(crate::pgcatalog::CatFunc),
    /// nextval, currval, setval, lastval ([`crate::sequence`]).
    Seq(crate::sequence::SeqFunc),
    /// round, trunc, ceil, floor, sqrt, mod, div, scale... of numeric ([`ferrogres_datum::numeric`]).
    Numeric(ferrogres_datum::numeric::NumFunc),
    /// A function of the built-in table (`crate::functions::BUILTINS`).
    Builtin(crate::functions::FuncId),
    /// A `VARIADIC "any"` built-in called with `VARIADIC array`: the last
    /// argument's elements are the variadic arguments.
    Variadic(crate::functions::FuncId),
    /// The result of window function `n` of the query level being analyzed;
    /// never in a finished plan: analysis replaces it by a column of the
    /// level's [`crate::window::WindowAgg`] output.
    Window(usize),
    /// WAL positions and statistics functions ([`crate::walstat`]).
    Wal(crate::walstat::WalFunc),
    /// Cumulative statistics functions ([`crate::statviews`]).
    Stat(crate::statviews::StatFunc),
    /// GROUPING(args) number `n` of the query level being analyzed; never in a
    /// finished plan: analysis replaces it by a slot of the grouped row
    /// ([`crate::grouping_sets`]).
    Grouping(usize),
    /// `(record).field`: field `n` of a record value ([`ferrogres_datum::record`]).
    Field(usize),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggKind {
    CountStar,
    Count,
    Sum,
    Min,
    Max,
    /// avg(float4 | float8) -> float8; avg of integers and numeric -> numeric.
    Avg,
    /// array_agg(x): the values (NULLs included) in input order; NULL for no rows.
    ArrayAgg,
    /// string_agg(text, delimiter): the non-null values joined by `delim`.
    StringAgg,
    /// bool_and / every, bool_or.
    BoolAnd,
    BoolOr,
    /// var_samp/variance, var_pop (`sample` false), stddev_samp/stddev,
    /// stddev_pop (`sqrt`): numeric for integers and numeric, float8 for floats.
    Variance { sample: bool, sqrt: bool },
    /// json_agg / jsonb_agg (`jsonb`): the values (NULLs included) as a JSON
    /// array (`crate::agg_order::json_agg`).
    JsonAgg { jsonb: bool },
    /// json_object_agg / jsonb_object_agg: `arg` the keys, `arg2` the values.
    JsonObjectAgg { jsonb: bool },
    /// Ordered-set aggregates `f(fraction) WITHIN GROUP (ORDER BY x)`: `arg` is
    /// x (float8 for percentile_cont), `arg2` the fraction, `order` x's one key
    /// (`crate::agg_order::ordered_set`).
    PercentileCont,
    PercentileDisc,
    /// mode() WITHIN GROUP (ORDER BY x): the most frequent x (the first in
    /// sort order among equally frequent ones).
    Mode,
}

#[derive(Clone, Debug)]
pub struct Aggregate {
    pub kind: AggKind,
    pub arg: Option<Expr>,
    pub ty: Type,
    /// `FILTER (WHERE ...)`: only rows where it is true are aggregated.
    pub filter: Option<Expr>,
    /// `agg(DISTINCT x)`: each distinct non-null value once.
    pub distinct: bool,
    /// string_agg's delimiter (a constant; NULL joins with nothing); for
    /// json_agg, `Some` when the values are whole rows (`analyze::whole_row`).
    pub delim: Option<String>,
    /// json_object_agg's second argument (the values).
    pub arg2: Option<Expr>,
    /// `agg(x ORDER BY ...)`: the order the rows are fed in (`crate::agg_order`).
    pub order: Vec<crate::agg_order::AggSortKey>,
}

#[derive(Clone, Debug)]
pub enum Expr {
    Const(Value, Type),
    /// A column of the input row.
    Column(usize, Type),
    /// `$n` (0-based here), of the statement's parameter type.
    Param(usize, Type),
    /// The result of aggregate `n` (in an aggregate query's output).
    AggRef(usize, Type),
    Cast { arg: Box<Expr>, from: Type, to: Type, typmod: i32, explicit: bool },
    Arith { op: ArithOp, l: Box<Expr>, r: Box<Expr>, ty: Type },
    Neg(Box<Expr>, Type),
    Compare { op: CmpOp, l: Box<Expr>, r: Box<Expr> },
    Concat(Box<Expr>, Box<Expr>),
    And(Vec<Expr>),
    Or(Vec<Expr>),
    Not(Box<Expr>),
    IsNull { arg: Box<Expr>, negated: bool },
    Func { func: Func, args: Vec<Expr>, ty: Type },
    /// Searched CASE (a simple CASE is analyzed to this form): the result of
    /// the first WHEN that is true, else `default`.
    Case { whens: Vec<(Expr, Expr)>, default: Box<Expr>, ty: Type },
    /// COALESCE: the first non-null argument; later ones are not evaluated.
    Coalesce(Vec<Expr>, Type),
    /// NULLIF(a, b): NULL when `eq` (a = b) is true, else `arg` (a).
    NullIf { arg: Box<Expr>, eq: Box<Expr> },
    /// GREATEST / LEAST: nulls ignored; NULL only if every argument is.
    MinMax { args: Vec<Expr>, greatest: bool, ty: Type },
    /// `l IS [NOT] DISTINCT FROM r` (`negated`: NOT DISTINCT); never NULL.
    Distinct { l: Box<Expr>, r: Box<Expr>, negated: bool },
    /// `arg LIKE pat [ESCAPE esc]` (`ci`: ILIKE); NOT LIKE is Not(Like).
    Like { arg: Box<Expr>, pat: Box<Expr>, escape: Option<Box<Expr>>, ci: bool },
    /// A subquery in an expression (scalar, EXISTS, IN / op ANY / op ALL),
    /// run by [`crate::subquery`].
    SubPlan(Box<crate::subquery::SubPlan>),
    /// A column of the row of an enclosing query level (`levels_up` >= 1) or,
    /// for a LATERAL item, of the FROM items to its left; bound to a constant
    /// before the query that holds it runs ([`crate::subquery::bind_outer`]).
    OuterColumn { levels_up: usize, index: usize, ty: Type },
    /// The result of aggregate `index` of an enclosing query level
    /// (`levels_up` >= 1): an aggregate whose arguments read only that level
    /// (or levels further out) belongs to it, as in PostgreSQL
    /// (`analyze::agg_level`); bound to a constant with the parent's aggregate
    /// results before the subquery runs ([`crate::subquery::bind_outer`]).
    OuterAggRef { levels_up: usize, index: usize, ty: Type },
}

impl Expr {
    pub fn ty(&self) -> Type {
        match self {
            Expr::Const(_, t) | Expr::Column(_, t) | Expr::Param(_, t) | Expr::AggRef(_, t) => *t,
            Expr::Cast { to, .. } => *to,
            Expr::Arith { ty, .. } | Expr::Neg(_, ty) | Expr::Func { ty, .. } => *ty,
            Expr::Compare { .. } | Expr::And(_) | Expr::Or(_) | Expr::Not(_) | Expr::IsNull { .. } => Type::Bool,
            Expr::Concat(..) => Type::Text,
            Expr::Case { ty, .. } | Expr::Coalesce(_, ty) | Expr::MinMax { ty, .. } => *ty,
            Expr::NullIf { arg, .. } => arg.ty(),
            Expr::Distinct { .. } | Expr::Like { .. } => Type::Bool,
            Expr::SubPlan(sp) => sp.ty,
            Expr::OuterColumn { ty, .. } | Expr::OuterAggRef { ty, .. } => *ty,
        }
    }
}

/// One output column.
#[derive(Clone, Debug)]
pub struct Target {
    pub name: String,
    pub expr: Expr,
    /// varchar(n) typmod of a column reference, else -1.
    pub typmod: i32,
    /// The table OID and attribute number of a plain column reference (RowDescription).
    pub origin: Option<(u32, i16)>,
}

#[derive(Clone, Debug)]
pub struct SortKey {
    /// Index into the projected row (targets, then hidden sort columns).
    pub column: usize,
    pub desc: bool,
    pub nulls_first: bool,
}

#[derive(Clone, Debug)]
pub enum Source {
    /// No FROM: one empty row.
    OneRow,
    Table(Table),
    /// A system view computed when the query runs (`crate::sysviews`), by OID.
    Virtual(u32),
    /// `SELECT generate_series(a, b)`: one int column.
    Series(Expr, Expr, Type),
    /// A set-returning function in FROM (crate::srf).
    Function(crate::srf::SeriesScan),
    /// Two FROM items joined ([`crate::join`]): the row is the left row, then the right one.
    Join(Box<crate::join::Join>),
    /// A subquery in FROM (also a CTE reference): its output rows.
    Subquery(Box<Query>),
    /// `VALUES (...), (...)`: each row's expressions.
    Values(Vec<Vec<Expr>>),
    /// UNION / INTERSECT / EXCEPT of two queries ([`crate::setop`]).
    SetOp(Box<crate::setop::SetOp>),
    /// WITH RECURSIVE: the fixed point of a recursive CTE ([`crate::setop`]).
    Recursive(Box<crate::setop::Recursive>),
    /// The working table of the recursive CTE `id` (its rows of the last iteration).
    WorkTable(u64),
    /// Window functions over the rows of a query of the same level
    /// ([`crate::window`]): each row is the window results, then the input row.
    WindowAgg(Box<crate::window::WindowAgg>),
}

#[derive(Clone, Debug)]
pub struct Query {
    pub source: Source,
    pub filter: Option<Expr>,
    /// Non-empty: an aggregate query (one output row, or one per group with `grouping`).
    pub aggregates: Vec<Aggregate>,
    pub targets: Vec<Target>,
    /// Extra sort expressions computed after the targets and dropped after sorting.
    pub hidden: Vec<Expr>,
    pub order: Vec<SortKey>,
    pub limit: Option<Expr>,
    pub offset: Option<Expr>,
    /// GROUP BY / HAVING, or aggregates with FILTER, DISTINCT or avg
    /// ([`crate::grouping`]); `None`: the plain Aggregate above.
    pub grouping: Option<Box<crate::grouping::Grouping>>,
    /// SELECT DISTINCT [ON]: the projected columns (targets, then hidden) whose
    /// values identify a row; the first row of each set in ORDER BY order is kept.
    pub distinct: Option<Vec<usize>>,
    /// The index paths of `source` (a table) under `filter`, kept once found.
    pub paths: crate::index::PathCache,
    /// Whether this level has InitPlans (`subquery::init_plans`), kept once found.
    pub init_plans: KeptFlag,
}

/// A property of a plan node computed on its first execution and kept, so that
/// a cached plan does not walk its expressions again at each execution (as
/// [`crate::index::PathCache`]). A clone starts empty: whoever clones a node
/// may change the copy. A flag left stale by a change made in place costs
/// speed, not answers, where it is used (`subquery::init_plans`: an
/// uncorrelated subquery without its InitPlan cell runs at each evaluation).
#[derive(Default)]
pub struct KeptFlag(std::sync::OnceLock<bool>);

impl Clone for KeptFlag {
    fn clone(&self) -> KeptFlag {
        KeptFlag::default()
    }
}

impl std::fmt::Debug for KeptFlag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeptFlag")
    }
}

impl KeptFlag {
    /// The flag, computed by `f` on the first call.
    pub fn get(&self, f: impl FnOnce() -> bool) -> bool {
        *self.0.get_or_init(f)
    }
}

impl Query {
    /// `targets` computed over every row of `source`: no filter, grouping,
    /// order or limit.
    pub fn project(source: Source, targets: Vec<Target>) -> Query {
        Query {
            source,
            filter: None,
            aggregates: vec![],
            targets,
            hidden: vec![],
            order: vec![],
            limit: None,
            offset: None,
            grouping: None,
            distinct: None,
            paths: Default::default(),
            init_plans: Default::default(),
        }
    }
}

#[derive(Clone, Debug)]
pub enum TxnCmd {
    /// BEGIN, or START TRANSACTION (`start`: its tag).
    Begin { isolation: Option<ferrogres_engine::txn::IsolationLevel>, modes: TxnModes, start: bool },
    Commit,
    Rollback,
    Savepoint(String),
    Release(String),
    RollbackTo(String),
    SetIsolation(ferrogres_engine::txn::IsolationLevel),
    /// `SET TRANSACTION [ISOLATION LEVEL ...] READ ONLY | READ WRITE | [NOT] DEFERRABLE`
    /// (the isolation level, if given, goes through `SetIsolation` first).
    SetModes(Option<ferrogres_engine::txn::IsolationLevel>, TxnModes),
}

/// CREATE TABLE ... AS / SELECT ... INTO: the table to create with the
/// columns of `query`'s output, filled from it unless `with_data` is false.
#[derive(Clone, Debug)]
pub struct CreateTableAs {
    pub namespace: u32,
    pub name: String,
    /// One per output column of `query`, of its type (unknown made text).
    pub columns: Vec<Column>,
    pub if_not_exists: bool,
    /// `WITH NO DATA`: false, the table is created empty and the query not run.
    pub with_data: bool,
    /// How it was written (the command PostgreSQL names, the tag of WITH NO DATA).
    pub form: CtasForm,
    /// Always a [`Statement::Query`] (so lock and permission walks see it).
    pub query: Box<Statement>,
    /// AS EXECUTE through the extended protocol: the EXECUTE's arguments,
    /// evaluated when the statement runs, are `query`'s parameters (empty:
    /// the statement's own parameters are).
    pub args: Vec<Expr>,
}

/// The spellings of [`CreateTableAs`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CtasForm {
    /// CREATE TABLE ... AS query.
    Query,
    /// SELECT ... INTO: a read-only transaction's error names SELECT INTO.
    SelectInto,
    /// CREATE TABLE ... AS EXECUTE: WITH NO DATA's tag is `SELECT 0`.
    Execute,
}

/// A transaction's access mode and deferrability as BEGIN / SET TRANSACTION give
/// them (`None`: not given).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxnModes {
    pub read_only: Option<bool>,
    pub deferrable: Option<bool>,
}

#[derive(Clone, Debug)]
pub enum Statement {
    Query(Query),
    Insert { table: Table, rows: Vec<Vec<Expr>>, returning: Vec<Target> },
    Delete { table: Table, filter: Option<Expr>, returning: Vec<Target>, paths: crate::index::PathCache },
    /// `sets`: (column index, new value over the old row).
    Update { table: Table, sets: Vec<(usize, Expr)>, filter: Option<Expr>, returning: Vec<Target>, paths: crate::index::PathCache },
    CreateTable { namespace: u32, name: String, columns: Vec<Column>, if_not_exists: bool },
    /// CREATE TABLE ... AS, SELECT ... INTO (`analyze::create_as`).
    CreateTableAs(Box<CreateTableAs>),
    DropTables { tables: Vec<(Option<String>, String)>, missing_ok: bool },
    Transaction(TxnCmd),
    /// SET [LOCAL] name = value; RESET name (`value` None). `local`: SET LOCAL,
    /// undone at the end of the transaction.
    Set { name: String, value: Option<String>, local: bool },
    /// `SELECT ... FOR UPDATE | NO KEY UPDATE | SHARE | KEY SHARE [NOWAIT | SKIP
    /// LOCKED]`: the query's rows are locked as they are returned (`crate::locking`).
    LockingQuery {
        query: Query,
        strength: ferrogres_engine::heap::page::RowLockMode,
        wait: ferrogres_engine::heap::heapam::WaitPolicy,
    },
    /// `LOCK [TABLE] name [, ...] [IN mode MODE] [NOWAIT]` (names resolved and
    /// locked when it runs, as PostgreSQL does for utility statements).
    Lock { targets: Vec<crate::locking::LockTarget>, mode: ferrogres_engine::lmgr::lock::LockMode, nowait: bool },
    Show(String),
    Empty,
    /// CHECKPOINT: the engine's checkpoint, run at once.
    Checkpoint,
    /// ALTER SYSTEM (crate::alter_system): postgresql.auto.conf rewritten.
    AlterSystem(crate::alter_system::AlterSystem),
    /// INSERT ... SELECT (crate::insert_select).
    InsertSelect(Box<crate::insert_select::InsertSelect>),
    /// COPY FROM / TO (crate::copy).
    Copy(Box<crate::copy::CopyStmt>),
    /// Index DDL, constraints, TRUNCATE, VACUUM, ANALYZE ([`crate::index`]).
    Index(crate::index::IndexCmd),
    /// Sequences, CREATE TABLE with SERIAL/expression defaults/CHECK ([`crate::constraints`]).
    Ddl(Box<crate::constraints::DdlCmd>),
    /// A statement with data-modifying CTEs ([`crate::cte_dml`]).
    WithDml(Box<crate::cte_dml::WithDml>),
    /// EXPLAIN [ANALYZE] of a query or DML statement ([`crate::explain`]).
    Explain(Box<crate::explain::Explain>),
    /// INSERT ... ON CONFLICT (crate::upsert).
    Upsert(Box<crate::upsert::Upsert>),
    /// UPDATE ... FROM, DELETE ... USING (crate::dml_join).
    JoinedDml(Box<crate::dml_join::JoinedDml>),
    /// MERGE (crate::merge).
    Merge(Box<crate::merge::Merge>),
    /// CREATE / DROP / ALTER DATABASE ([`crate::database`]).
    Database(crate::database::DbCmd),
    /// CREATE / ALTER / DROP ROLE, GRANT / REVOKE role ([`crate::roles`]).
    Role(crate::roles::RoleCmd),
    /// DISCARD, RESET ALL, CLOSE ([`crate::utility`]).
    Utility(crate::utility::SessionCmd),
    /// GRANT / REVOKE on objects ([`crate::grant`]).
    Grant(Box<crate::grant::GrantCmd>),
    /// ALTER ... OWNER TO ([`crate::grant`]).
    Owner(Box<crate::grant::OwnerCmd>),
}

impl Statement {
    /// The output columns, if the statement returns rows.
    pub fn targets(&self) -> Option<Vec<Target>> {
        self.targets_cow().map(std::borrow::Cow::into_owned)
    }

    /// [`Statement::targets`] without copying the stored ones (describing a
    /// portal runs once per execution).
    pub fn targets_cow(&self) -> Option<std::borrow::Cow<'_, [Target]>> {
        use std::borrow::Cow;
        match self {
            Statement::Query(q) | Statement::LockingQuery { query: q, .. } => Some(Cow::Borrowed(&q.targets)),
            Statement::Insert { returning, .. } | Statement::Delete { returning, .. } | Statement::Update { returning, .. }
                if !returning.is_empty() =>
            {
                Some(Cow::Borrowed(returning))
            }
            Statement::InsertSelect(i) if !i.returning.is_empty() => Some(Cow::Borrowed(&i.returning)),
            Statement::Explain(e) => Some(Cow::Owned(vec![crate::explain::target(e)])),
            Statement::WithDml(w) => w.main.targets_cow(),
            Statement::Upsert(u) if !u.returning.is_empty() => Some(Cow::Borrowed(&u.returning)),
            Statement::JoinedDml(d) if !d.returning.is_empty() => Some(Cow::Borrowed(&d.returning)),
            Statement::Show(name) => Some(Cow::Owned(vec![Target {
                name: name.clone(),
                expr: Expr::Const(Value::Null, Type::Text),
                typmod: -1,
                origin: None,
            }])),
            _ => None,
        }
    }
}
