//! The wait-event sampler hibernates while no backend is busy and wakes when
//! one becomes busy (pgstat README, "The wait-event sampler"): a real engine,
//! its sampler thread, and a backend slot going idle and active.
#![cfg(not(loom))]

mod common;

use common::settings;
use ferrogres_engine::engine::Engine;
use ferrogres_engine::pgstat::activity::{BackendInfo, BackendState, Report};
use std::time::{Duration, Instant};

fn wait_for(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn sampler_hibernates_when_idle_and_wakes_on_activity() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings();
    s.set("pg_wait_sampling.period", "10").unwrap();
    let (engine, _) = Engine::open(dir.path(), s).unwrap();
    let b = engine.backend(4242).unwrap();
    let pid = 4242;
    engine.activity.start(b.id(), BackendInfo { pid, backend_type: "client backend", ..Default::default() }, BackendState::Idle);
    let slot = engine.activity.slot(b.id()).unwrap();
    let sampler = &engine.sampler;
    let on_cpu = || sampler.history().iter().filter(|x| x.pid == pid && x.event.is_none()).count();

    for round in 1..=3u64 {
        // Idle (aux threads only): the sampler ticks for HIBERNATE_AFTER, then sleeps.
        wait_for("hibernation", Duration::from_secs(20), || sampler.hibernations() >= round && engine.activity.latch().is_hibernating());
        let ticks = sampler.ticks();
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(sampler.ticks(), ticks, "round {round}: a hibernating sampler does not tick");
        assert!(engine.activity.latch().is_hibernating());

        // Busy: woken at once, and sampling at its period again.
        let before = on_cpu();
        slot.report(Report { state: Some(BackendState::Active), query: Some("select 1"), xact_start: None });
        assert!(!engine.activity.latch().is_hibernating(), "the backend that became busy cleared the flag");
        wait_for("samples of the busy backend", Duration::from_secs(20), || on_cpu() >= before + 5);
        assert!(sampler.ticks() >= ticks + 5);
        assert_eq!(sampler.hibernations(), round, "no hibernation while a backend is busy");
        slot.report(Report { state: Some(BackendState::Idle), query: None, xact_start: None });
    }

    // Many quick idle/busy transitions while the sampler is awake: no wake-ups
    // (the flag is clear), no hibernation.
    let h = sampler.hibernations();
    for _ in 0..10_000 {
        slot.report(Report { state: Some(BackendState::Active), query: None, xact_start: None });
        slot.report(Report { state: Some(BackendState::Idle), query: None, xact_start: None });
    }
    assert!(sampler.hibernations() <= h + 1);
    drop(b);
}
