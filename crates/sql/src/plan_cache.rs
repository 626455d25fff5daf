//! The plan cache for simple-query statements.
//!
//! A simple-query statement whose text (query string and place in it) was seen
//! before reuses the plan analyzed
//! for it, as a prepared statement does, instead of being analyzed again. A plan
//! is reused only while everything its analysis read is unchanged:
//!
//! - the catalog: the plan records [`crate::session`]'s catalog version (global
//!   committed-DDL counter, session's own DDL count) and the session re-checks it
//!   *after* taking the plan's relation locks, so a DDL that committed while we
//!   waited for its lock is noticed (DDL bumps the counter before its commit
//!   releases its locks, and again after);
//! - the settings: every change of a setting in any session bumps
//!   [`settings_epoch`] (search_path, TimeZone and DateStyle change what
//!   analysis produces);
//! - the clock: analysis that folds a value which depends on when it runs (the
//!   date/time literals `'now'`, `'today'`, ...) calls [`mark_uncacheable`], and
//!   such a plan is not kept.
//!
//! Only DML and queries over one relation (whose relation lock `lock_plan` can
//! take again) are kept; utility statements are always analyzed afresh.

use crate::plan::{Source, Statement};
use std::cell::Cell;
use rustc_hash::FxHashMap as HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Statements whose plans a session keeps.
pub const PLAN_CACHE_SIZE: usize = 128;

static SETTINGS_EPOCH: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static UNCACHEABLE: Cell<bool> = const { Cell::new(false) };
}

/// The number of setting changes made by all sessions so far.
pub fn settings_epoch() -> u64 {
    SETTINGS_EPOCH.load(Ordering::Acquire)
}

/// A setting changed: plans analyzed before are not reused.
pub fn bump_settings_epoch() {
    SETTINGS_EPOCH.fetch_add(1, Ordering::AcqRel);
}

/// Analysis folded something that depends on when it ran: the plan it is
/// building must not be reused.
pub fn mark_uncacheable() {
    UNCACHEABLE.with(|c| c.set(true));
}

/// Clears the mark before an analysis; [`take_uncacheable`] reads it after.
pub fn begin_analysis() {
    UNCACHEABLE.with(|c| c.set(false));
}

pub fn take_uncacheable() -> bool {
    UNCACHEABLE.with(|c| c.replace(false))
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

pub struct CachedPlan {
    pub plan: Arc<Statement>,
    /// The session's catalog version when analyzed.
    pub version: (u64, u64),
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
    /// The plan for `sql` if it is still valid for this catalog version and
    /// the current settings.
    pub fn get(&mut self, key: &(Arc<str>, usize), version: (u64, u64)) -> Option<(Arc<Statement>, (u64, u64))> {
        self.clock += 1;
        let settings = settings_epoch();
        match self.plans.get_mut(key) {
            Some(c) if c.version == version && c.settings == settings => {
                c.stamp = self.clock;
                Some((c.plan.clone(), c.version))
            }
            Some(_) => {
                self.plans.remove(key);
                None
            }
            None => None,
        }
    }

    pub fn insert(&mut self, key: (Arc<str>, usize), plan: Arc<Statement>, version: (u64, u64), settings: u64) {
        if self.plans.len() >= PLAN_CACHE_SIZE {
            if let Some(oldest) = self.plans.iter().min_by_key(|(_, c)| c.stamp).map(|(k, _)| k.clone()) {
                self.plans.remove(&oldest);
            }
        }
        self.clock += 1;
        self.plans.insert(key, CachedPlan { plan, version, settings, stamp: self.clock });
    }

    pub fn len(&self) -> usize {
        self.plans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.plans.is_empty()
    }
}
