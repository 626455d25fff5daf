#![doc = include_str!("README.md")]

pub mod cost;
pub mod estimate;
pub mod fold;
pub mod joinsearch;
pub mod orclauses;
pub mod projection;
pub mod selectivity;

/// The planner's settings, read once per analysed statement from the
/// session's settings (plain values: no thread-local, no global). A SET
/// already makes cached plans stale, so a plan never outlives the values it
/// was made with.
#[derive(Clone, Debug)]
pub struct PlannerSettings {
    pub seq_page_cost: f64,
    pub random_page_cost: f64,
    pub cpu_tuple_cost: f64,
    pub cpu_index_tuple_cost: f64,
    pub cpu_operator_cost: f64,
    /// In 8 kB pages.
    pub effective_cache_size: f64,
    /// In kB.
    pub work_mem: f64,
    /// A hash table holds up to `work_mem` times this.
    pub hash_mem_multiplier: f64,
    pub enable_seqscan: bool,
    pub enable_indexscan: bool,
    pub enable_hashjoin: bool,
    pub enable_nestloop: bool,
    pub enable_mergejoin: bool,
    pub enable_hashagg: bool,
    pub enable_sort: bool,
    pub join_collapse_limit: usize,
    pub from_collapse_limit: usize,
    pub geqo: bool,
    pub geqo_threshold: usize,
}

impl Default for PlannerSettings {
    /// PostgreSQL 15's defaults.
    fn default() -> PlannerSettings {
        PlannerSettings {
            seq_page_cost: 1.0,
            random_page_cost: 4.0,
            cpu_tuple_cost: 0.01,
            cpu_index_tuple_cost: 0.005,
            cpu_operator_cost: 0.0025,
            effective_cache_size: 524_288.0,
            work_mem: 4096.0,
            hash_mem_multiplier: 2.0,
            enable_seqscan: true,
            enable_indexscan: true,
            enable_hashjoin: true,
            enable_nestloop: true,
            enable_mergejoin: true,
            enable_hashagg: true,
            enable_sort: true,
            join_collapse_limit: 8,
            from_collapse_limit: 8,
            geqo: true,
            geqo_threshold: 12,
        }
    }
}

/// A memory or block setting's canonical text (`4MB`, `524288`, `4GB`,
/// `64kB`) in units of `unit_bytes`.
fn parse_size(v: &str, unit_bytes: f64) -> Option<f64> {
    let v = v.trim();
    let split = v.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(v.len());
    let n: f64 = v[..split].parse().ok()?;
    let mult = match v[split..].trim() {
        "" => return Some(n),
        "B" => 1.0,
        "kB" => 1024.0,
        "MB" => 1024.0 * 1024.0,
        "GB" => 1024.0 * 1024.0 * 1024.0,
        "TB" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    Some(n * mult / unit_bytes)
}

impl PlannerSettings {
    /// The settings as `get` (a session's settings) reports them; a setting
    /// it does not know keeps PostgreSQL's default.
    pub fn from_settings(get: &dyn Fn(&str) -> Option<String>) -> PlannerSettings {
        let d = PlannerSettings::default();
        let f = |n: &str, dv: f64| get(n).and_then(|v| v.trim().parse().ok()).unwrap_or(dv);
        let b = |n: &str, dv: bool| get(n).map_or(dv, |v| matches!(v.trim(), "on" | "true" | "yes" | "1"));
        let u = |n: &str, dv: usize| get(n).and_then(|v| v.trim().parse().ok()).unwrap_or(dv);
        PlannerSettings {
            seq_page_cost: f("seq_page_cost", d.seq_page_cost),
            random_page_cost: f("random_page_cost", d.random_page_cost),
            cpu_tuple_cost: f("cpu_tuple_cost", d.cpu_tuple_cost),
            cpu_index_tuple_cost: f("cpu_index_tuple_cost", d.cpu_index_tuple_cost),
            cpu_operator_cost: f("cpu_operator_cost", d.cpu_operator_cost),
            effective_cache_size: get("effective_cache_size").and_then(|v| parse_size(&v, 8192.0)).unwrap_or(d.effective_cache_size),
            work_mem: get("work_mem").and_then(|v| parse_size(&v, 1024.0)).unwrap_or(d.work_mem),
            hash_mem_multiplier: f("hash_mem_multiplier", d.hash_mem_multiplier),
            enable_seqscan: b("enable_seqscan", true),
            enable_indexscan: b("enable_indexscan", true),
            enable_hashjoin: b("enable_hashjoin", true),
            enable_nestloop: b("enable_nestloop", true),
            enable_mergejoin: b("enable_mergejoin", true),
            enable_hashagg: b("enable_hashagg", true),
            enable_sort: b("enable_sort", true),
            join_collapse_limit: u("join_collapse_limit", d.join_collapse_limit),
            from_collapse_limit: u("from_collapse_limit", d.from_collapse_limit),
            geqo: b("geqo", true),
            geqo_threshold: u("geqo_threshold", d.geqo_threshold),
        }
    }

    /// From an executor environment's settings.
    pub fn from_env(env: &dyn crate::exec::Env) -> PlannerSettings {
        PlannerSettings::from_settings(&|n| env.get_setting(n).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_units_and_booleans() {
        let s = PlannerSettings::from_settings(&|n| match n {
            "work_mem" => Some("64MB".into()),
            "effective_cache_size" => Some("4GB".into()),
            "enable_hashjoin" => Some("off".into()),
            "join_collapse_limit" => Some("1".into()),
            _ => None,
        });
        assert_eq!(s.work_mem, 65536.0);
        assert_eq!(s.effective_cache_size, 524_288.0);
        assert!(!s.enable_hashjoin && s.enable_nestloop);
        assert_eq!(s.join_collapse_limit, 1);
        assert_eq!(s.geqo_threshold, 12);
    }
}

/// What the optimizer chose for one join ([`crate::join::Join::plan`]).
#[derive(Clone, Debug, Default)]
pub struct JoinPlan {
    pub method: JoinMethod,
    /// Estimated rows and total cost, when the join search planned it.
    pub rows: Option<f64>,
    pub cost: Option<f64>,
    /// The columns of the join's row read above it (`None`: all), as
    /// [`projection`] found them: what EXPLAIN's and the cost model's
    /// `width` of the join counts (PostgreSQL's join rel `reltarget`).
    pub out: Option<Vec<bool>>,
    /// For a semi-join, the estimated fraction of its outer (left) rows
    /// that have a match (PostgreSQL's eqjoinsel_semi,
    /// [`estimate::semi_join_estimates`]); an anti-join keeps the others.
    /// `None`: not estimated (no hash key over columns).
    pub semi_frac: Option<f64>,
    /// For a left, right or full join, the selectivity of its hash keys
    /// over the cross product of its inputs (eqjoinsel per key pair,
    /// multiplied; [`estimate::semi_join_estimates`]): EXPLAIN's rows are
    /// the matched pairs, at least the rows of each preserved side.
    pub outer_sel: Option<f64>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum JoinMethod {
    /// Not planned by the join search: a hash join when the join has hash
    /// keys, else a nested loop (the executor's choice before the search).
    #[default]
    Auto,
    Hash,
    /// A nested loop even with equality keys (they stay in the condition).
    NestLoop,
    /// A nested loop whose inner side, a table, is probed through its
    /// index `index` with each outer row's key values ([`crate::nestloop`]).
    ParamIndex { index: usize },
}
