//! The plan cache for simple-query statements.
//!
//! A simple-query statement whose text (query string and place in it) was seen
//! before reuses the plan analyzed
//! for it, as a prepared statement does, instead of being analyzed again. A plan
//! is reused only while everything its analysis read is unchanged:
//!
//! - the catalog: the plan records a [`PlanVersion`]: the catalog cache's
//!   generation of each relation its analysis looked up, of name resolution
//!   and of everything else ([`crate::catcache::PlanDeps`]), and the session's
//!   own DDL count. A message for relation A (a committed ALTER/DROP/...)
//!   invalidates only the plans that read A. The session re-checks *after*
//!   taking the plan's relation locks, which reads the invalidation queue
//!   again, so a DDL that committed while we waited for its lock is noticed
//!   (DDL sends its messages before its commit releases its locks);
//! - the settings: the session's own settings generation
//!   ([`crate::session::SessionEnv::settings_gen`]; search_path, TimeZone and
//!   DateStyle change what analysis produces). A SET in one session never
//!   touches another session's plans;
//! - the clock: analysis that folds a value which depends on when it runs (the
//!   date/time literals `'now'`, `'today'`, ...) calls [`mark_uncacheable`], and
//!   such a plan is not kept.
//!
//! Only DML and queries over one relation (whose relation lock `lock_plan` can
//! take again) are kept; utility statements are always analyzed afresh.

use crate::plan::{Source, Statement};
use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

/// Statements whose plans a session keeps.
pub const PLAN_CACHE_SIZE: usize = 128;

// The mark lives in the datum layer's per-thread date/time context, where the
// date/time input that reads the clock sets it
// (`ferrogres_datum::datetime::mark_clock_read`).

/// Analysis folded something that depends on when it ran: the plan it is
/// building must not be reused.
pub fn mark_uncacheable() {
    ferrogres_datum::datetime::mark_clock_read();
}

/// Clears the mark before an analysis; [`take_uncacheable`] reads it after.
pub fn begin_analysis() {
    ferrogres_datum::datetime::take_clock_read();
}

pub fn take_uncacheable() -> bool {
    ferrogres_datum::datetime::take_clock_read()
}

/// Whether a plan of this kind may be kept: DML and queries whose relation
/// locks `locking::lock_plan` re-takes before each run.
pub fn cacheable(plan: &Statement) -> bool {
    match plan {
        Statement::Query(q) => match q.source {
            Source::OneRow | Source::Series(..) | Source::Function(_) => true,
            Source::Table(_) => crate::locking::plan_lock_mode(plan).is_some(),
            _ => false,
        },
        Statement::Insert { .. } | Statement::Update { .. } | Statement::Delete { .. } => {
            crate::locking::plan_lock_mode(plan).is_some()
        }
        _ => false,
    }
}

/// What a plan was analyzed under: it is valid while the catalog cache's
/// generations it recorded and the session's DDL count are unchanged.
#[derive(Clone, Debug)]
pub struct PlanVersion {
    pub deps: Arc<crate::catcache::PlanDeps>,
    pub ddl: u64,
    /// The privileges the plan needs, checked before each run ([`crate::acl`]).
    pub perms: Arc<Vec<crate::acl::PermReq>>,
}

/// A statement's query id and normalized text, kept with its plan
/// ([`crate::queryid`]; None while compute_query_id is off).
pub type Ident = Option<Arc<crate::queryid::QueryIdent>>;

pub struct CachedPlan {
    pub plan: Arc<Statement>,
    pub ident: Ident,
    pub version: PlanVersion,
    /// The session's settings generation when analyzed.
    pub settings: u64,
    stamp: u64,
}

/// A session's cached plans, keyed by query string and the statement's place in
/// it (the statements of one string share its text), least recently used
/// evicted first.
#[derive(Default)]
pub struct PlanCache {
    plans: HashMap<(Arc<str>, usize), CachedPlan>,
    clock: u64,
}

impl PlanCache {
    /// The plan for `sql` if it was analyzed under the current settings
    /// generation; the caller checks its [`PlanVersion`].
    pub fn get(&mut self, key: &(Arc<str>, usize), settings: u64) -> Option<(Arc<Statement>, PlanVersion, Ident)> {
        self.clock += 1;
        match self.plans.get_mut(key) {
            Some(c) if c.settings == settings => {
                c.stamp = self.clock;
                Some((c.plan.clone(), c.version.clone(), c.ident.clone()))
            }
            Some(_) => {
                self.plans.remove(key);
                None
            }
            None => None,
        }
    }

    pub fn remove(&mut self, key: &(Arc<str>, usize)) {
        self.plans.remove(key);
    }

    pub fn insert(&mut self, key: (Arc<str>, usize), plan: Arc<Statement>, ident: Ident, version: PlanVersion, settings: u64) {
        if self.plans.len() >= PLAN_CACHE_SIZE {
            if let Some(oldest) = self.plans.iter().min_by_key(|(_, c)| c.stamp).map(|(k, _)| k.clone()) {
                self.plans.remove(&oldest);
            }
        }
        self.clock += 1;
        self.plans.insert(key, CachedPlan { plan, ident, version, settings, stamp: self.clock });
    }

    pub fn len(&self) -> usize {
        self.plans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.plans.is_empty()
    }
}
