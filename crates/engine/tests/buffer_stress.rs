//! Buffer-pool stress: 8 threads extend, update and read 3 relations (2000 pages)
//! through a pool of 64 buffers while the background writer and a checkpointer run;
//! every page is self-describing and checked on each read, at the end, and after
//! the pool is dropped and the data re-opened from disk.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;

use ferrogres_engine::buffer::{BufferPool, StrategyKind};
use ferrogres_engine::config::{Settings, BLCKSZ};
use ferrogres_engine::storage::page::{page_is_new, set_page_lsn};
use ferrogres_engine::storage::smgr::Smgr;
use ferrogres_engine::storage::{BufferTag, ForkNumber, Lsn, NoWal, RelFileLocator};

const RELS: usize = 3;
const TOTAL_PAGES: usize = 2000;
const THREADS: usize = 8;
const OPS_PER_THREAD: usize = 15000;
const MAX_PER_REL: usize = TOTAL_PAGES; // sizing of the expected-version table

fn rel(i: usize) -> RelFileLocator {
    RelFileLocator { spc_oid: 1663, db_oid: 7, rel_number: 16384 + i as u32 }
}

fn fill_byte(r: usize, block: u32, version: u32) -> u8 {
    (r as u32 * 31 + block * 7 + version * 13) as u8
}

/// Writes the content of (r, block) at `version`.
fn write_page(page: &mut [u8], r: usize, block: u32, version: u32) {
    set_page_lsn(page, Lsn(version as u64 + 1));
    page[24..28].copy_from_slice(&(r as u32).to_le_bytes());
    page[28..32].copy_from_slice(&block.to_le_bytes());
    page[32..36].copy_from_slice(&version.to_le_bytes());
    page[36..BLCKSZ].fill(fill_byte(r, block, version));
}

/// Checks a page is the content of (r, block) at some version; returns it.
fn check_page(page: &[u8], r: usize, block: u32) -> u32 {
    assert!(!page_is_new(page), "rel {r} block {block}: zero page seen (extension protocol)");
    let rr = u32::from_le_bytes(page[24..28].try_into().unwrap());
    let bb = u32::from_le_bytes(page[28..32].try_into().unwrap());
    let v = u32::from_le_bytes(page[32..36].try_into().unwrap());
    assert_eq!((rr, bb), (r as u32, block), "page holds another page's content");
    let f = fill_byte(r, block, v);
    assert!(page[36..].iter().all(|&b| b == f), "rel {r} block {block} v{v}: torn page");
    v
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn open_pool(dir: &std::path::Path) -> Arc<BufferPool> {
    let settings = Settings {
        shared_buffers: 64,
        buffer_mapping_partitions: 16,
        bgwriter_delay_ms: 2,
        bgwriter_lru_maxpages: 16,
        ..Settings::default()
    };
    // Small segments so that the relations span several segment files.
    let smgr = Arc::new(Smgr::with_segment_blocks(dir, false, 128).unwrap());
    BufferPool::new(&settings, smgr, Arc::new(NoWal))
}

#[test]
fn buffer_stress_pool_much_smaller_than_data() {
    let dir = tempfile::tempdir().unwrap();
    let pool = open_pool(dir.path());
    for r in 0..RELS {
        pool.smgr().create(rel(r), ForkNumber::Main).unwrap();
    }
    // expected[r][block]: version last written (under the exclusive content lock).
    let expected: Vec<Vec<AtomicU32>> =
        (0..RELS).map(|_| (0..MAX_PER_REL).map(|_| AtomicU32::new(0)).collect()).collect();
    let total = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let bgwriter = pool.start_bgwriter();

    std::thread::scope(|s| {
        // A checkpointer.
        let (pool_c, stop_c) = (&pool, &stop);
        let ckpt = s.spawn(move || {
            let mut n = 0;
            while !stop_c.load(Ordering::Relaxed) {
                pool_c.flush_all_dirty().unwrap();
                n += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            n
        });
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (pool, expected, total) = (&pool, &expected, &total);
                s.spawn(move || {
                    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((t as u64 + 1) * 0x1234_5678_9ABC_DEF1));
                    let ring = pool.strategy(StrategyKind::BulkRead);
                    for op in 0..OPS_PER_THREAD {
                        let r = rng.below(RELS);
                        let dice = rng.below(100);
                        let nblocks = pool.nblocks(rel(r), ForkNumber::Main).unwrap() as usize;
                        if (dice < 20 || nblocks == 0) && total.load(Ordering::Relaxed) < TOTAL_PAGES {
                            // Extend by 1..=3 blocks (RelationAddExtraBlocks style).
                            let n = 1 + rng.below(3) as u32;
                            let mut bufs = pool.extend(rel(r), ForkNumber::Main, n, None).unwrap();
                            for b in bufs.iter_mut() {
                                let block = b.block();
                                assert!((block as usize) < MAX_PER_REL);
                                write_page(b, r, block, 1);
                                b.mark_dirty();
                                expected[r][block as usize].store(1, Ordering::Relaxed);
                            }
                            total.fetch_add(n as usize, Ordering::Relaxed);
                        } else if nblocks == 0 {
                            continue;
                        } else if dice < 50 {
                            // Update: bump the version under the exclusive lock.
                            let block = rng.below(nblocks) as u32;
                            let buf = pool.read_buffer(BufferTag::new(rel(r), ForkNumber::Main, block), None).unwrap();
                            let mut g = buf.lock_exclusive();
                            let v = check_page(&g, r, block);
                            assert_eq!(v, expected[r][block as usize].load(Ordering::Relaxed), "lost update");
                            write_page(&mut g, r, block, v + 1);
                            g.mark_dirty();
                            expected[r][block as usize].store(v + 1, Ordering::Relaxed);
                        } else if dice < 55 {
                            // A short ring scan.
                            let start = rng.below(nblocks);
                            for block in start..nblocks.min(start + 40) {
                                let tag = BufferTag::new(rel(r), ForkNumber::Main, block as u32);
                                let buf = pool.read_buffer(tag, Some(&ring)).unwrap();
                                check_page(&buf.lock_shared(), r, block as u32);
                            }
                        } else {
                            // Read: the version seen under the shared lock is the
                            // latest (writers hold the exclusive lock while storing it).
                            let block = rng.below(nblocks) as u32;
                            let buf = pool.read_buffer(BufferTag::new(rel(r), ForkNumber::Main, block), None).unwrap();
                            let g = buf.lock_shared();
                            let v = check_page(&g, r, block);
                            assert_eq!(v, expected[r][block as usize].load(Ordering::Relaxed), "stale read");
                        }
                        if op % 500 == 0 {
                            std::thread::yield_now();
                        }
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        assert!(ckpt.join().unwrap() > 0);
    });
    let totals = bgwriter.stop();
    assert_eq!(totals.errors, 0);

    let stats = pool.stats();
    let total = total.load(Ordering::Relaxed);
    assert!(total >= TOTAL_PAGES, "only {total} pages made");
    assert!(stats.evictions as usize > total, "data far larger than the pool: {stats:?}");
    pool.check_invariants().unwrap();

    let verify = |pool: &BufferPool| {
        let mut pages = 0;
        for (r, exp) in expected.iter().enumerate() {
            let n = pool.nblocks(rel(r), ForkNumber::Main).unwrap();
            for block in 0..n {
                let buf = pool.read_buffer(BufferTag::new(rel(r), ForkNumber::Main, block), None).unwrap();
                let v = check_page(&buf.lock_shared(), r, block);
                assert_eq!(v, exp[block as usize].load(Ordering::Relaxed), "rel {r} block {block}");
                pages += 1;
            }
        }
        pages
    };
    assert_eq!(verify(&pool), total);
    pool.flush_all_dirty().unwrap();
    drop(pool);
    let pool = open_pool(dir.path());
    assert_eq!(verify(&pool), total, "after re-opening from disk");
    pool.check_invariants().unwrap();
    eprintln!("stress: {total} pages, {stats:?}, bgwriter {totals:?}");
}
