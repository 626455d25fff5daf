//! Unit tests of the buffer pool. Names start with `buffer_` so that
//! `cargo test -p ferrogres-engine buffer` runs them.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use super::*;
use crate::config::{Settings, BLCKSZ};
use crate::error::Error;
use crate::storage::page::{page_lsn, set_page_lsn};
use crate::storage::smgr::Smgr;
use crate::storage::{BufferTag, ForkNumber, Lsn, NoWal, RelFileLocator, WalFlush};

fn rel(n: u32) -> RelFileLocator {
    RelFileLocator { spc_oid: 1663, db_oid: 5, rel_number: n }
}

fn tag(r: u32, b: u32) -> BufferTag {
    BufferTag::new(rel(r), ForkNumber::Main, b)
}

fn settings(nbuffers: usize, partitions: usize) -> Settings {
    Settings { shared_buffers: nbuffers, buffer_mapping_partitions: partitions, ..Settings::default() }
}

fn pool_with(dir: &std::path::Path, nbuffers: usize, wal: Arc<dyn WalFlush>) -> Arc<BufferPool> {
    let smgr = Arc::new(Smgr::with_segment_blocks(dir, false, 16).unwrap());
    BufferPool::new(&settings(nbuffers, 16), smgr, wal)
}

/// Creates relation `r` with `n` blocks, block b filled with `fill(b)` (a valid
/// page: checksummed when written through the pool).
fn make_rel(pool: &BufferPool, r: u32, n: u32, fill: impl Fn(u32) -> u8) {
    pool.smgr().create(rel(r), ForkNumber::Main).unwrap();
    // Two blocks at a time: every returned block stays pinned until dropped.
    for _ in 0..n.div_ceil(2) {
        let k = if pool.nblocks(rel(r), ForkNumber::Main).unwrap() + 1 < n { 2 } else { 1 };
        for b in pool.extend(rel(r), ForkNumber::Main, k, None).unwrap().iter_mut() {
            let v = fill(b.block());
            b[100..BLCKSZ].fill(v);
            b.mark_dirty();
        }
    }
}

#[test]
fn buffer_read_write_through_a_small_pool() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool_with(dir.path(), 8, Arc::new(NoWal));
    make_rel(&pool, 1, 40, |b| b as u8 + 1);
    for round in 0..2 {
        for b in 0..40u32 {
            let buf = pool.read_buffer(tag(1, b), None).unwrap();
            assert_eq!(buf.block(), b);
            let page = buf.lock_shared();
            assert_eq!(page[200], b as u8 + 1, "round {round} block {b}");
        }
    }
    let s = pool.stats();
    assert!(s.evictions >= 40 && s.reads >= 40 && s.writes >= 32, "{s:?}");
    pool.check_invariants().unwrap();
    // Rewrite through the pool and check after a checkpoint and a fresh pool.
    for b in 0..40u32 {
        let buf = pool.read_buffer(tag(1, b), None).unwrap();
        let mut g = buf.lock_exclusive();
        g[300] = 0xEE;
        g.mark_dirty();
    }
    pool.flush_all_dirty().unwrap();
    drop(pool);
    let pool = pool_with(dir.path(), 8, Arc::new(NoWal));
    for b in 0..40u32 {
        let buf = pool.read_buffer(tag(1, b), None).unwrap();
        let g = buf.lock_shared();
        assert_eq!((g[200], g[300]), (b as u8 + 1, 0xEE));
    }
}

#[test]
fn buffer_mapping_partitions_is_a_setting() {
    let dir = tempfile::tempdir().unwrap();
    let smgr = Arc::new(Smgr::new(dir.path(), false).unwrap());
    let pool = BufferPool::new(&settings(64, 512), smgr, Arc::new(NoWal));
    assert_eq!(pool.npartitions(), 512);
    assert_eq!(pool.nbuffers(), 64);
    make_rel(&pool, 2, 100, |_| 1);
    pool.check_invariants().unwrap();
}

#[test]
fn buffer_concurrent_readers_of_a_missing_page_read_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool_with(dir.path(), 16, Arc::new(NoWal));
    make_rel(&pool, 3, 4, |b| b as u8 + 10);
    pool.flush_all_dirty().unwrap();
    drop(pool);
    for attempt in 0..5 {
        let pool = pool_with(dir.path(), 16, Arc::new(NoWal));
        let barrier = Arc::new(Barrier::new(8));
        std::thread::scope(|s| {
            for _ in 0..8 {
                let (pool, barrier) = (&pool, barrier.clone());
                s.spawn(move || {
                    barrier.wait();
                    let buf = pool.read_buffer(tag(3, attempt % 4), None).unwrap();
                    assert_eq!(buf.lock_shared()[500], (attempt % 4) as u8 + 10);
                });
            }
        });
        let st = pool.stats();
        assert_eq!(st.reads, 1, "exactly one read from disk: {st:?}");
        assert_eq!(st.hits, 7, "{st:?}");
        pool.check_invariants().unwrap();
    }
}

#[test]
fn buffer_clock_sweep_never_evicts_pinned_buffers() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool_with(dir.path(), 4, Arc::new(NoWal));
    make_rel(&pool, 4, 30, |b| b as u8);
    let pinned: Vec<_> = (0..3).map(|b| pool.read_buffer(tag(4, b), None).unwrap()).collect();
    let ids: Vec<usize> = pinned.iter().map(|p| p.buffer_id()).collect();
    for b in 3..30 {
        let buf = pool.read_buffer(tag(4, b), None).unwrap();
        assert!(!ids.contains(&buf.buffer_id()), "a pinned buffer was reused");
        assert_eq!(buf.lock_shared()[4000], b as u8);
    }
    for (b, p) in pinned.iter().enumerate() {
        assert_eq!(p.block(), b as u32);
        assert_eq!(p.lock_shared()[4000], b as u8);
    }
    // With every buffer pinned: PostgreSQL's error, not a hang.
    let fourth = pool.read_buffer(tag(4, 29), None).unwrap();
    let e = pool.read_buffer(tag(4, 10), None).unwrap_err();
    assert_eq!(e.to_string(), "no unpinned buffers available");
    assert_eq!(e.sqlstate().as_str(), "XX000");
    drop(fourth);
    drop(pinned);
    pool.check_invariants().unwrap();
}

#[test]
fn buffer_cleanup_lock_waits_for_other_pins() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool_with(dir.path(), 8, Arc::new(NoWal));
    make_rel(&pool, 5, 1, |_| 7);
    let mine = pool.read_buffer(tag(5, 0), None).unwrap();
    let other = pool.read_buffer(tag(5, 0), None).unwrap();
    assert!(mine.conditional_lock_cleanup().is_none(), "another pin exists");
    let got = AtomicBool::new(false);
    std::thread::scope(|s| {
        let (got, pool) = (&got, &pool);
        let h = s.spawn(move || {
            let g = mine.lock_cleanup().unwrap();
            got.store(true, Ordering::SeqCst);
            assert_eq!(g[1000], 7);
            drop(g);
            drop(mine);
            let _ = pool;
        });
        std::thread::sleep(Duration::from_millis(50));
        assert!(!got.load(Ordering::SeqCst), "cleanup lock taken while another pin exists");
        // A shared lock by the other pinner is possible meanwhile (waiter released
        // the content lock while waiting).
        assert_eq!(other.lock_shared()[1000], 7);
        drop(other);
        h.join().unwrap();
    });
    assert!(got.load(Ordering::SeqCst));
    let only = pool.read_buffer(tag(5, 0), None).unwrap();
    assert!(only.conditional_lock_cleanup().is_some());
    drop(only);
    pool.check_invariants().unwrap();
}

#[test]
fn buffer_ring_scan_reuses_its_own_buffers() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool_with(dir.path(), 256, Arc::new(NoWal));
    make_rel(&pool, 6, 100, |_| 1); // hot relation
    make_rel(&pool, 7, 400, |_| 2); // big relation, scanned with a ring
    pool.flush_all_dirty().unwrap();
    drop(pool);
    let pool = pool_with(dir.path(), 256, Arc::new(NoWal));
    for b in 0..100 {
        for _ in 0..3 {
            drop(pool.read_buffer(tag(6, b), None).unwrap());
        }
    }
    let ring = pool.strategy(StrategyKind::BulkRead);
    assert_eq!(ring.ring_size(), 32);
    let mut used = std::collections::HashSet::new();
    for b in 0..400 {
        let buf = pool.read_buffer(tag(7, b), Some(&ring)).unwrap();
        assert_eq!(buf.lock_shared()[200], 2);
        used.insert(buf.buffer_id());
    }
    assert!(used.len() <= 40, "ring scan used {} buffers", used.len());
    assert!(ring.ring_buffers().len() <= 32);
    let before = pool.stats();
    for b in 0..100 {
        drop(pool.read_buffer(tag(6, b), None).unwrap());
    }
    let after = pool.stats();
    assert_eq!(after.reads, before.reads, "the hot relation stayed cached");
    assert_eq!(after.hits - before.hits, 100);
    pool.check_invariants().unwrap();
}

/// A WAL that checks, at every flush request, that the page with that LSN is not
/// yet on disk (so the data write comes after the WAL flush), and records it.
struct OrderCheckingWal {
    smgr: Arc<Smgr>,
    flushed: Mutex<Vec<Lsn>>,
    violations: AtomicU64,
}

const LSN_BASE: u64 = 0x1_0000;

impl WalFlush for OrderCheckingWal {
    fn flush_wal(&self, upto: Lsn) -> crate::Result<()> {
        let block = (upto.0 - LSN_BASE) as u32 / 2;
        let mut page = vec![0u8; BLCKSZ];
        self.smgr.read_block(rel(8), ForkNumber::Main, block, &mut page).unwrap();
        if page_lsn(&page) >= upto {
            self.violations.fetch_add(1, Ordering::SeqCst);
        }
        self.flushed.lock().unwrap().push(upto);
        Ok(())
    }
}

#[test]
fn buffer_wal_is_flushed_before_data_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let smgr = Arc::new(Smgr::with_segment_blocks(dir.path(), false, 16).unwrap());
    let wal = Arc::new(OrderCheckingWal { smgr: smgr.clone(), flushed: Mutex::default(), violations: AtomicU64::new(0) });
    let pool = BufferPool::new(&settings(8, 4), smgr.clone(), wal.clone());
    smgr.create(rel(8), ForkNumber::Main).unwrap();
    for _ in 0..30 {
        drop(pool.extend(rel(8), ForkNumber::Main, 1, None).unwrap());
    }
    // Two generations of changes; the second is flushed by eviction or checkpoint.
    for generation in 0..2u64 {
        for b in 0..30u32 {
            let buf = pool.read_buffer(tag(8, b), None).unwrap();
            let mut g = buf.lock_exclusive();
            let lsn = Lsn(LSN_BASE + 2 * b as u64 + generation);
            set_page_lsn(&mut g, lsn);
            g[500] = generation as u8 + 1;
            g.mark_dirty();
        }
    }
    assert!(pool.stats().evictions > 0, "small pool: evictions wrote dirty pages");
    pool.flush_all_dirty().unwrap();
    assert_eq!(wal.violations.load(Ordering::SeqCst), 0, "a page reached disk before its WAL");
    let flushed = wal.flushed.lock().unwrap().clone();
    let mut page = vec![0u8; BLCKSZ];
    for b in 0..30u32 {
        smgr.read_block(rel(8), ForkNumber::Main, b, &mut page).unwrap();
        let lsn = page_lsn(&page);
        assert_eq!(lsn, Lsn(LSN_BASE + 2 * b as u64 + 1));
        assert!(flushed.iter().any(|&f| f >= lsn), "block {b} written without WAL flush >= {lsn}");
        assert!(crate::storage::page::page_verify(&page, b), "checksum set on write");
    }
}

#[test]
fn buffer_corrupt_page_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool_with(dir.path(), 8, Arc::new(NoWal));
    make_rel(&pool, 9, 3, |_| 0x5A);
    pool.flush_all_dirty().unwrap();
    drop(pool);
    // Flip one byte of block 1 (segment 0, 16-block segments).
    let path = dir.path().join("base/5/9");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[BLCKSZ + 4242] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
    let pool = pool_with(dir.path(), 8, Arc::new(NoWal));
    assert!(pool.read_buffer(tag(9, 0), None).is_ok());
    let e = pool.read_buffer(tag(9, 1), None).unwrap_err();
    assert!(matches!(e, Error::Corrupt { .. }), "{e}");
    assert!(e.to_string().contains("invalid page in block 1 of relation base/5/9"), "{e}");
    assert_eq!(e.sqlstate().as_str(), "XX001");
    // The failed read leaves no half-valid buffer behind; retrying fails again.
    assert!(pool.read_buffer(tag(9, 1), None).is_err());
    assert!(pool.read_buffer(tag(9, 2), None).is_ok());
    pool.check_invariants().unwrap();
}

#[test]
fn buffer_concurrent_extension_gives_distinct_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool_with(dir.path(), 32, Arc::new(NoWal));
    pool.smgr().create(rel(10), ForkNumber::Main).unwrap();
    let blocks = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for t in 0..4u8 {
            let (pool, blocks) = (&pool, &blocks);
            s.spawn(move || {
                for i in 0..25 {
                    let n = if i % 5 == 0 { 3 } else { 1 };
                    let mut bufs = pool.extend(rel(10), ForkNumber::Main, n, None).unwrap();
                    for b in bufs.iter_mut() {
                        assert!(crate::storage::page::page_is_new(b), "new page is zeroed");
                        b[100] = t + 1;
                        b.mark_dirty();
                        blocks.lock().unwrap().push((b.block(), t + 1));
                    }
                }
            });
        }
    });
    let mut blocks = blocks.into_inner().unwrap();
    blocks.sort();
    let expected = 4 * (20 + 5 * 3);
    assert_eq!(blocks.len(), expected);
    for (i, (b, _)) in blocks.iter().enumerate() {
        assert_eq!(*b, i as u32, "blocks are distinct and contiguous");
    }
    assert_eq!(pool.nblocks(rel(10), ForkNumber::Main).unwrap(), expected as u32);
    for (b, t) in blocks {
        assert_eq!(pool.read_buffer(tag(10, b), None).unwrap().lock_shared()[100], t);
    }
    assert_eq!(pool.stats().extends, expected as u64);
    pool.check_invariants().unwrap();
}

#[test]
fn buffer_read_zero_and_lock_does_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool_with(dir.path(), 8, Arc::new(NoWal));
    pool.smgr().create(rel(11), ForkNumber::Main).unwrap();
    // Redo of a full-page image for a block past the end of the file.
    let mut b = pool.read_buffer_zero(tag(11, 5), None).unwrap();
    assert!(b.iter().all(|&x| x == 0));
    b[0..8].copy_from_slice(&77u64.to_le_bytes());
    b[1000] = 1;
    b.mark_dirty();
    let pin = b.unlock();
    assert!(pin.is_dirty());
    drop(pin);
    assert_eq!(pool.stats().reads, 0);
    pool.flush_all_dirty().unwrap();
    assert_eq!(pool.nblocks(rel(11), ForkNumber::Main).unwrap(), 6);
    drop(pool);
    let pool = pool_with(dir.path(), 8, Arc::new(NoWal));
    assert_eq!(pool.read_buffer(tag(11, 5), None).unwrap().lock_shared()[1000], 1);
    assert!(crate::storage::page::page_is_new(&pool.read_buffer(tag(11, 2), None).unwrap().lock_shared()));
}

#[test]
fn buffer_drop_relation_and_truncate() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool_with(dir.path(), 16, Arc::new(NoWal));
    make_rel(&pool, 12, 10, |_| 3);
    make_rel(&pool, 13, 4, |_| 4);
    pool.truncate(rel(12), ForkNumber::Main, 6).unwrap();
    assert_eq!(pool.nblocks(rel(12), ForkNumber::Main).unwrap(), 6);
    assert!(pool.read_buffer(tag(12, 7), None).is_err(), "block past the new end");
    pool.drop_relation_buffers(rel(12));
    pool.smgr().unlink(rel(12), None).unwrap();
    pool.flush_all_dirty().unwrap();
    assert!(!dir.path().join("base/5/12").exists());
    assert_eq!(pool.read_buffer(tag(13, 3), None).unwrap().lock_shared()[200], 4);
    pool.check_invariants().unwrap();
}

#[test]
fn buffer_bgwriter_cleans_ahead_of_the_clock() {
    let dir = tempfile::tempdir().unwrap();
    let smgr = Arc::new(Smgr::with_segment_blocks(dir.path(), false, 16).unwrap());
    let s = Settings { bgwriter_delay_ms: 5, bgwriter_lru_maxpages: 100, ..settings(32, 4) };
    let pool = BufferPool::new(&s, smgr, Arc::new(NoWal));
    make_rel(&pool, 14, 20, |_| 9);
    // As if the clock hand had passed: usage counts 0, so the bgwriter may write.
    pool.age_usage_counts_for_tests();
    let bg = pool.start_bgwriter();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while pool.stats().writes < 20 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(pool.stats().writes, 20, "every dirty page written by the bgwriter");
    for b in 0..20 {
        assert!(!pool.read_buffer(tag(14, b), None).unwrap().is_dirty());
    }
    let totals = bg.stop();
    assert!(totals.rounds > 0);
    assert!(totals.buffers_clean > 0, "{totals:?}");
    assert_eq!(totals.errors, 0);
    pool.check_invariants().unwrap();
}

#[test]
fn buffer_bgwriter_hibernates_when_idle_and_an_allocation_wakes_it() {
    let dir = tempfile::tempdir().unwrap();
    let smgr = Arc::new(Smgr::with_segment_blocks(dir.path(), false, 16).unwrap());
    // 64 buffers, 10 ms rounds: an idle lap takes 64 rounds at the minimum scan.
    let s = Settings { bgwriter_delay_ms: 10, bgwriter_lru_maxpages: 100, ..settings(64, 4) };
    let pool = BufferPool::new(&s, smgr, Arc::new(NoWal));
    make_rel(&pool, 15, 8, |_| 3);
    let bg = pool.start_bgwriter();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !pool.bgwriter_hibernating() {
        assert!(std::time::Instant::now() < deadline, "never hibernated after {} rounds", bg.rounds());
        std::thread::sleep(Duration::from_millis(5));
    }
    // Hibernating: no rounds for a while (a hibernation lasts 50 rounds' delay).
    let r0 = bg.rounds();
    std::thread::sleep(Duration::from_millis(150));
    assert!(bg.rounds() <= r0 + 1, "rounds while hibernating: {} -> {}", r0, bg.rounds());
    assert!(pool.bgwriter_hibernating());
    // An allocation (a page not in the pool) wakes it at once.
    let r1 = bg.rounds();
    pool.flush_all_dirty().unwrap();
    pool.drop_relation_buffers(tag(15, 0).rel);
    drop(pool.read_buffer(tag(15, 0), None).unwrap());
    let deadline = std::time::Instant::now() + Duration::from_millis(400);
    while bg.rounds() == r1 {
        assert!(std::time::Instant::now() < deadline, "an allocation did not wake the hibernating writer");
        std::thread::sleep(Duration::from_millis(2));
    }
    let totals = bg.stop();
    assert!(totals.hibernations >= 1, "{totals:?}");
    // It looked at the pool a lap at a time, not every buffer every round.
    assert!(totals.scanned < totals.rounds * 64, "{totals:?}");
    assert_eq!(totals.errors, 0);
    pool.check_invariants().unwrap();
}
