//! WAL insertion, reading back and recovery: records crossing pages and segments,
//! damaged tails, checkpoints and clean shutdown, concurrent inserters.
#![cfg(not(loom))]
#![allow(clippy::manual_is_multiple_of)] // MSRV 1.80

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrogres_engine::config::BLCKSZ;
use ferrogres_engine::storage::page::{set_page_lsn, PD_LOWER, PD_UPPER};
use ferrogres_engine::storage::{BufferTag, ForkNumber, Lsn, RelFileLocator};
use ferrogres_engine::wal::layout::{bytepos_to_lsn, lsn_to_bytepos, segment_file_name, WAL_PAGE_SIZE};
use ferrogres_engine::wal::*;

const SEG: u64 = 64 * 1024;

fn opts() -> WalOptions {
    WalOptions {
        fsync: false,
        wal_buffers: 8 * 8192, // 8 pages: inserts wrap the ring all the time
        segment_size: SEG,
        ..WalOptions::default()
    }
}

fn fresh(o: &WalOptions) -> (tempfile::TempDir, Wal) {
    let dir = tempfile::tempdir().unwrap();
    Wal::init(dir.path(), o, CheckpointInfo { next_xid: 3, next_oid: 16384, ..Default::default() }).unwrap();
    let (wal, rs) = Wal::open_with(dir.path(), o.clone()).unwrap();
    assert!(!rs.needed, "a fresh cluster needs no redo");
    (dir, wal)
}

/// Deterministic payload for record `i`: sizes from 0 to ~150 kB (larger than a
/// segment and than the ring), mostly small.
fn payload(i: u64) -> Vec<u8> {
    let len = match i % 50 {
        0 => 150_000 + (i as usize % 7) * 1000,
        1..=5 => 8000 + (i as usize * 37) % 9000,
        _ => (i as usize * 131) % 700,
    };
    let mut v = Vec::with_capacity(len + 8);
    v.extend_from_slice(&i.to_le_bytes());
    v.extend((0..len).map(|j| (j as u64 * 7 + i) as u8));
    v
}

fn insert_n(wal: &Wal, from: u64, n: u64) -> Vec<(Lsn, Lsn)> {
    (from..from + n)
        .map(|i| {
            let mut rb = RecordBuilder::new(RmgrId::Test, 0x10);
            rb.set_xid(i as u32).append_main_data(&payload(i));
            wal.insert_with_start(&rb).unwrap()
        })
        .collect()
}

/// Recovery pass collecting the Test records.
fn recover_all(dir: &Path, o: &WalOptions) -> (Wal, Vec<DecodedRecord>, RecoveryResult) {
    let (wal, rs) = Wal::open_with(dir, o.clone()).unwrap();
    assert!(rs.needed);
    let mut recs = Vec::new();
    let res = wal
        .recover(&mut |r: &DecodedRecord, end: Lsn| {
            assert_eq!(end, r.end);
            if r.rmgr == RmgrId::Test {
                recs.push(r.clone());
            }
            Ok(())
        })
        .unwrap();
    (wal, recs, res)
}

fn check_sequence(recs: &[DecodedRecord], first: u64, lsns: &[(Lsn, Lsn)]) {
    for (k, r) in recs.iter().enumerate() {
        let i = first + k as u64;
        assert_eq!(r.xid, i as u32);
        assert_eq!(r.main_data, payload(i), "record {i} content");
        if let Some(&(s, e)) = lsns.get(k) {
            assert_eq!((r.lsn, r.end), (s, e), "record {i} position");
        }
    }
}

#[test]
fn records_cross_pages_and_segments_and_survive_reopen() {
    let o = opts();
    let (dir, wal) = fresh(&o);
    let lsns = insert_n(&wal, 0, 400);
    let end = lsns.last().unwrap().1;
    wal.flush(end).unwrap();
    assert!(wal.flushed_upto() >= end);
    let st = wal.stats();
    assert!(st.buffer_full_waits > 0, "the ring should have wrapped");
    assert!(end.0 > 10 * SEG, "should span many segments");
    drop(wal); // crash: no shutdown checkpoint

    let (wal, recs, res) = recover_all(dir.path(), &o);
    assert_eq!(recs.len(), 400, "end reason: {}", res.end_reason);
    check_sequence(&recs, 0, &lsns);
    assert_eq!(Lsn(res.end.0), Lsn((end.0 + 7) & !7));

    // Insertion continues right after the last record; both generations read back.
    let more = insert_n(&wal, 400, 120);
    assert_eq!(lsn_to_bytepos(more[0].0), lsn_to_bytepos(res.end));
    wal.flush(more.last().unwrap().1).unwrap();
    drop(wal);
    let (_wal, recs, _) = recover_all(dir.path(), &o);
    assert_eq!(recs.len(), 520);
    check_sequence(&recs, 0, &[lsns, more].concat());
}

/// File offset of the k-th byte of the record starting at `start`.
fn flip_record_byte(dir: &Path, start: Lsn, k: u64, mask: u8) {
    let lsn = bytepos_to_lsn(lsn_to_bytepos(start).unwrap() + k).0;
    let path = dir.join("pg_wal").join(segment_file_name(1, lsn / SEG, SEG));
    let f = OpenOptions::new().read(true).write(true).open(path).unwrap();
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, lsn % SEG).unwrap();
    b[0] ^= mask;
    f.write_all_at(&b, lsn % SEG).unwrap();
}

fn copy_dir(from: &Path, to: &Path) {
    for d in ["global", "pg_wal"] {
        std::fs::create_dir_all(to.join(d)).unwrap();
        for e in std::fs::read_dir(from.join(d)).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), to.join(d).join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn damage_at_any_offset_ends_redo_at_the_previous_record() {
    let o = opts();
    let (dir, wal) = fresh(&o);
    let lsns = insert_n(&wal, 0, 60);
    wal.flush(lsns.last().unwrap().1).unwrap();
    drop(wal);
    // (record index, byte offset within it): header fields, CRC, payload, bytes on a
    // continuation page of a record crossing pages (records 50.. are large).
    let cases: &[(usize, u64)] = &[
        (10, 0),
        (10, 3),
        (11, 9),
        (12, 17),
        (13, 21),
        (14, 30),
        (2, 8),
        (50, 100_000),
        (51, 8500),
        (52, 24),
        (59, 5),
    ];
    for &(k, off) in cases {
        let len = lsn_to_bytepos(lsns[k].1).unwrap() - lsn_to_bytepos(lsns[k].0).unwrap();
        if off >= len {
            continue;
        }
        let d2 = tempfile::tempdir().unwrap();
        copy_dir(dir.path(), d2.path());
        flip_record_byte(d2.path(), lsns[k].0, off, 0x20);
        let (wal, recs, res) = recover_all(d2.path(), &o);
        assert_eq!(recs.len(), k, "damage in record {k} at +{off}: {}", res.end_reason);
        check_sequence(&recs, 0, &lsns[..k]);
        // The next insert overwrites the damaged record; the log reads through it.
        let (s, e) = {
            let mut rb = RecordBuilder::new(RmgrId::Test, 0);
            rb.set_xid(1_000_000).append_main_data(b"after the damage");
            wal.insert_with_start(&rb).unwrap()
        };
        assert_eq!(s, lsns[k].0);
        wal.flush(e).unwrap();
        drop(wal);
        let (_w, recs, _) = recover_all(d2.path(), &o);
        assert_eq!(recs.len(), k + 1);
        assert_eq!(recs[k].main_data, b"after the damage");
    }
}

#[test]
fn zeroed_page_and_missing_segment_end_the_wal() {
    let o = opts();
    let (dir, wal) = fresh(&o);
    let lsns = insert_n(&wal, 0, 200);
    wal.flush(lsns.last().unwrap().1).unwrap();
    drop(wal);

    // Zero the WAL page holding the start of record 120.
    let d2 = tempfile::tempdir().unwrap();
    copy_dir(dir.path(), d2.path());
    let s = lsns[120].0 .0;
    let page = s - s % WAL_PAGE_SIZE;
    let path = d2.path().join("pg_wal").join(segment_file_name(1, page / SEG, SEG));
    let f = OpenOptions::new().write(true).open(&path).unwrap();
    f.write_all_at(&[0u8; 8192], page % SEG).unwrap();
    let (_w, recs, _) = recover_all(d2.path(), &o);
    // Records wholly before that page survive; the one continuing into it, if any, not.
    let expect = lsns.iter().take_while(|(_, e)| e.0 <= page).count();
    assert_eq!(recs.len(), expect);
    assert!((100..=120).contains(&expect));

    // Remove the segment holding record 150's start: the WAL ends before it.
    let d3 = tempfile::tempdir().unwrap();
    copy_dir(dir.path(), d3.path());
    let seg = lsns[150].0 .0 / SEG;
    std::fs::remove_file(d3.path().join("pg_wal").join(segment_file_name(1, seg, SEG))).unwrap();
    let (_w, recs, _) = recover_all(d3.path(), &o);
    let expect = lsns.iter().take_while(|(_, e)| e.0 <= seg * SEG).count();
    assert_eq!(recs.len(), expect);
    check_sequence(&recs, 0, &lsns);
}

fn std_page(lsn: Lsn, fill: u8) -> Vec<u8> {
    let mut p = vec![fill; BLCKSZ];
    set_page_lsn(&mut p, lsn);
    p[PD_LOWER..PD_LOWER + 2].copy_from_slice(&64u16.to_le_bytes());
    p[PD_UPPER..PD_UPPER + 2].copy_from_slice(&4096u16.to_le_bytes());
    p[64..4096].fill(0);
    p
}

#[test]
fn checkpoint_full_page_images_and_clean_shutdown() {
    let o = opts();
    let (dir, wal) = fresh(&o);
    let tag = BufferTag::new(RelFileLocator { spc_oid: 1663, db_oid: 1, rel_number: 16384 }, ForkNumber::Main, 7);
    insert_n(&wal, 0, 30);

    let redo = wal.begin_checkpoint().unwrap();
    assert_eq!(wal.redo_ptr(), redo);
    // A page last changed before the redo pointer gets an image; one changed after not.
    let old = std_page(Lsn(redo.0 - 8), 0xAB);
    let mut rb = RecordBuilder::new(RmgrId::Heap, 0x10);
    rb.register_buffer(0, tag, &old, regbuf::STANDARD).register_block_data(0, b"tuple");
    let (h1, h1_end) = wal.insert_with_start(&rb).unwrap();
    let newer = std_page(h1_end, 0xCD);
    let mut rb = RecordBuilder::new(RmgrId::Heap, 0x20);
    rb.register_buffer(0, tag, &newer, regbuf::STANDARD).register_block_data(0, b"tuple2");
    let (h2, _) = wal.insert_with_start(&rb).unwrap();
    assert_eq!(wal.stats().fpi, 1);
    // (The buffer manager would write dirty pages and sync files here.)
    let info = CheckpointInfo { next_xid: 500, next_oid: 20000, oldest_xid: 3, ..Default::default() };
    let ck = wal.finish_checkpoint(redo, info).unwrap();
    let cf = wal.control_file();
    assert_eq!((cf.checkpoint, cf.redo, cf.state, cf.info), (ck, redo, DbState::InProduction, info));
    // Segments before the redo pointer's segment are gone.
    let first_seg = redo.0 / SEG;
    for e in std::fs::read_dir(dir.path().join("pg_wal")).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        let (_, seg) = layout::parse_segment_file_name(&name, SEG).unwrap();
        assert!(seg >= first_seg, "segment {name} should have been removed");
    }
    let after = insert_n(&wal, 30, 5);
    wal.flush(after.last().unwrap().1).unwrap();
    drop(wal);

    // Crash recovery starts at the redo pointer: both heap records, the checkpoint,
    // then the later records.
    let (wal, rs) = Wal::open_with(dir.path(), o.clone()).unwrap();
    assert!(rs.needed);
    assert_eq!((rs.checkpoint, rs.redo, rs.checkpoint_record.info), (ck, redo, info));
    // Before recovery ends, insertion is refused; flushing (WAL before data, for
    // pages redo writes out) is a no-op: that WAL is on disk already.
    assert!(wal.insert(&RecordBuilder::new(RmgrId::Test, 0)).is_err());
    wal.flush(ck).unwrap();
    let mut seen = Vec::new();
    wal.recover(&mut |r: &DecodedRecord, _| {
        seen.push((r.rmgr, r.lsn));
        if r.lsn == h1 {
            let b = r.block(0).unwrap();
            assert_eq!(b.tag, tag);
            assert_eq!(b.data, b"tuple");
            let img = restore_full_page_image(b).unwrap();
            assert_eq!(&img[..], &old[..]);
            assert_eq!(b.image.as_ref().unwrap().hole_length, 4096 - 64);
        }
        if r.lsn == h2 {
            assert!(r.block(0).unwrap().image.is_none());
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(seen[0], (RmgrId::Heap, h1));
    assert_eq!(seen[1], (RmgrId::Heap, h2));
    assert_eq!(seen[2], (RmgrId::Xlog, ck));
    assert_eq!(seen.len(), 3 + 5);

    // Clean shutdown: the next start needs no redo, and insertion continues.
    let sd = wal.shutdown(info).unwrap();
    assert!(wal.insert(&RecordBuilder::new(RmgrId::Test, 0)).is_err());
    drop(wal);
    let (wal, rs) = Wal::open_with(dir.path(), o.clone()).unwrap();
    assert!(!rs.needed);
    assert_eq!((rs.checkpoint, rs.redo), (sd, sd));
    let (s, e) = wal.insert_with_start(&RecordBuilder::new(RmgrId::Test, 0)).unwrap();
    assert!(s > sd);
    wal.flush(e).unwrap();
    assert_eq!(wal.recover(&mut |_, _| panic!("no redo")).unwrap().records, 0);
}

#[test]
fn control_file_damage_is_detected() {
    let o = opts();
    let (dir, wal) = fresh(&o);
    drop(wal);
    let p = dir.path().join("global/pg_control");
    let mut b = std::fs::read(&p).unwrap();
    b[40] ^= 1;
    std::fs::write(&p, &b).unwrap();
    match Wal::open_with(dir.path(), o) {
        Err(e) => assert_eq!(e.sqlstate().as_str(), "XX001", "{e}"),
        Ok(_) => panic!("damaged control file accepted"),
    }
}

#[test]
fn concurrent_inserters_each_record_found_exactly_once() {
    let o = WalOptions { wal_buffers: 16 * 8192, ..opts() };
    let (dir, wal) = fresh(&o);
    let wal = Arc::new(wal);
    const THREADS: u32 = 8;
    const PER: u32 = 1500;
    let hs: Vec<_> = (0..THREADS)
        .map(|t| {
            let wal = wal.clone();
            std::thread::spawn(move || {
                let mut last = Lsn(0);
                for i in 0..PER {
                    let mut body = Vec::new();
                    body.extend_from_slice(&t.to_le_bytes());
                    body.extend_from_slice(&i.to_le_bytes());
                    let len = if i % 97 == 0 { 20_000 } else { (i as usize * 13 + t as usize * 5) % 300 };
                    body.extend((0..len).map(|j| (j as u32 ^ t ^ i) as u8));
                    let mut rb = RecordBuilder::new(RmgrId::Test, 0);
                    rb.set_xid(t).append_main_data(&body);
                    let end = wal.insert(&rb).unwrap();
                    assert!(end > last);
                    last = end;
                    if i % 4 == 0 {
                        wal.flush(end).unwrap();
                        assert!(wal.flushed_upto() >= end);
                    }
                }
                wal.flush(last).unwrap();
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    drop(Arc::try_unwrap(wal).ok().unwrap());
    let (_w, recs, _) = recover_all(dir.path(), &o);
    let mut seen: HashMap<(u32, u32), usize> = HashMap::new();
    let mut next_per_thread = [0u32; THREADS as usize];
    let mut prev_lsn = Lsn(0);
    for r in &recs {
        assert!(r.lsn > prev_lsn);
        prev_lsn = r.lsn;
        let t = u32::from_le_bytes(r.main_data[0..4].try_into().unwrap());
        let i = u32::from_le_bytes(r.main_data[4..8].try_into().unwrap());
        assert_eq!(r.xid, t);
        for (j, &b) in r.main_data[8..].iter().enumerate() {
            assert_eq!(b, (j as u32 ^ t ^ i) as u8, "record ({t},{i}) damaged");
        }
        // Per thread, records appear in program order.
        assert_eq!(next_per_thread[t as usize], i);
        next_per_thread[t as usize] += 1;
        *seen.entry((t, i)).or_default() += 1;
    }
    assert_eq!(seen.len(), (THREADS * PER) as usize);
    assert!(seen.values().all(|&c| c == 1));
}

#[test]
fn pages_initialized_ahead_by_the_wal_writer_carry_records_intact() {
    // Ring of 8 pages. After a flush, every slot but the one holding the current
    // (partly written) page can be prepared for the pages that follow it.
    let o = opts();
    let (dir, wal) = fresh(&o);
    let first = insert_n(&wal, 0, 3);
    wal.flush(first.last().unwrap().1).unwrap();
    assert_eq!(wal.preinit_buffers(), 7, "all slots but the current page's");
    assert_eq!(wal.preinit_buffers(), 0, "nothing more until WAL is written");
    // Records written into the prepared pages (and beyond, wrapping the ring) read
    // back after a crash, while another thread keeps preparing pages.
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let wal = Arc::new(wal);
    let stop = Arc::new(AtomicBool::new(false));
    let prepared = Arc::new(AtomicUsize::new(0));
    let helper = {
        let (wal, stop, prepared) = (wal.clone(), stop.clone(), prepared.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                prepared.fetch_add(wal.preinit_buffers(), Ordering::Relaxed);
                std::thread::yield_now();
            }
        })
    };
    let mut lsns = first;
    let mut next = 3;
    // At least 40 rounds, and on until the helper has prepared pages while records
    // were being inserted.
    while next < 403 || prepared.load(Ordering::Relaxed) == 0 {
        assert!(next < 1_000_000, "the helper never prepared a page");
        let more = insert_n(&wal, next, 10);
        wal.flush(more.last().unwrap().1).unwrap();
        lsns.extend(more);
        next += 10;
    }
    stop.store(true, Ordering::Relaxed);
    helper.join().unwrap();
    drop(Arc::try_unwrap(wal).ok().unwrap());
    let (_w, recs, _) = recover_all(dir.path(), &o);
    assert_eq!(recs.len() as u64, next);
    check_sequence(&recs, 0, &lsns);
}

#[test]
fn async_commit_is_flushed_by_the_wal_writer() {
    let o = WalOptions { synchronous_commit: false, wal_writer_delay: Duration::from_millis(20), ..opts() };
    let (_dir, wal) = fresh(&o);
    let wal = Arc::new(wal);
    let mut writer = start_wal_writer(wal.clone(), |e| panic!("wal writer: {e}"));
    let end = wal.insert(RecordBuilder::new(RmgrId::Xact, 0).append_main_data(b"commit")).unwrap();
    wal.commit(end, false).unwrap();
    let t0 = Instant::now();
    while wal.flushed_upto() < end {
        assert!(t0.elapsed() < Duration::from_secs(5), "WAL writer did not flush");
        std::thread::sleep(Duration::from_millis(5));
    }
    writer.stop();
}

#[test]
fn idle_wal_writer_hibernates_and_an_async_commit_wakes_it() {
    // 2 ms rounds: 50 idle rounds (100 ms) and it hibernates for 25 rounds at a time.
    let o = WalOptions { synchronous_commit: false, wal_writer_delay: Duration::from_millis(2), ..opts() };
    let (_dir, wal) = fresh(&o);
    let wal = Arc::new(wal);
    let mut writer = start_wal_writer(wal.clone(), |e| panic!("wal writer: {e}"));
    let t0 = Instant::now();
    while !wal.walwriter_hibernating() {
        assert!(t0.elapsed() < Duration::from_secs(10), "WAL writer never hibernated");
        std::thread::sleep(Duration::from_millis(2));
    }
    // An asynchronous commit wakes it (hibernation would otherwise last 50 ms) and
    // it flushes the commit.
    let end = wal.insert(RecordBuilder::new(RmgrId::Xact, 0).append_main_data(b"commit")).unwrap();
    wal.commit(end, false).unwrap();
    assert!(!wal.walwriter_hibernating(), "the commit cleared the flag");
    let t1 = Instant::now();
    while wal.flushed_upto() < end {
        assert!(t1.elapsed() < Duration::from_secs(5), "WAL writer did not flush");
        std::thread::sleep(Duration::from_millis(1));
    }
    writer.stop();
}

#[test]
fn checkpoint_trigger_by_wal_volume_and_time() {
    let o = WalOptions { max_wal_size: 200_000, checkpoint_timeout: Duration::from_secs(3600), ..opts() };
    let (_dir, wal) = fresh(&o);
    let now = Instant::now();
    assert!(!wal.checkpoint_needed(now));
    assert!(!wal.checkpoint_needed(now + Duration::from_secs(7200)), "idle: no timed checkpoint");
    insert_n(&wal, 6, 3);
    assert!(wal.checkpoint_needed(now + Duration::from_secs(7200)), "timed checkpoint");
    assert!(!wal.checkpoint_needed(now));
    insert_n(&wal, 0, 60);
    assert!(wal.checkpoint_needed(now), "max_wal_size reached");
    let redo = wal.begin_checkpoint().unwrap();
    wal.finish_checkpoint(redo, CheckpointInfo::default()).unwrap();
    assert!(!wal.checkpoint_needed(Instant::now()));
}

#[test]
fn group_flush_covers_several_commits_per_fsync() {
    let o = WalOptions { fsync: true, wal_buffers: 1 << 20, ..opts() };
    let (_dir, wal) = fresh(&o);
    let wal = Arc::new(wal);
    let hs: Vec<_> = (0..8)
        .map(|_| {
            let wal = wal.clone();
            std::thread::spawn(move || {
                for _ in 0..40 {
                    let end = wal.insert(RecordBuilder::new(RmgrId::Xact, 0).append_main_data(&[1; 40])).unwrap();
                    wal.flush(end).unwrap();
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    let s = wal.stats();
    assert_eq!(s.records, 320);
    assert!(s.fsyncs > 0 && s.fsyncs <= s.flush_requests);
    // Not asserting a ratio (machine-dependent); the benchmark reports it.
    eprintln!("flush requests {} fsyncs {} joins {}", s.flush_requests, s.fsyncs, s.group_joins);
}

/// Inserters changing pages while checkpoints start and finish: for every checkpoint
/// with redo pointer R and every page, the first record at or after R that changes the
/// page carries its full image (the redo-pointer recheck under the insertion slot).
#[test]
fn first_change_after_each_redo_pointer_has_a_full_page_image() {
    let o = WalOptions { segment_size: 16 << 20, wal_buffers: 1 << 20, ..opts() };
    let (dir, wal) = fresh(&o);
    let wal = Arc::new(wal);
    let start = wal.insert_position();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    const THREADS: u32 = 4;
    let hs: Vec<_> = (0..THREADS)
        .map(|t| {
            let (wal, done) = (wal.clone(), done.clone());
            std::thread::spawn(move || {
                let tag = BufferTag::new(RelFileLocator { spc_oid: 1663, db_oid: 1, rel_number: 100 + t }, ForkNumber::Main, t);
                let mut page = std_page(Lsn(0), t as u8 + 1);
                let mut i = 0u32;
                while i < 1500 || done.load(std::sync::atomic::Ordering::Relaxed) < 20 {
                    i += 1;
                    if i % 20 == 0 {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    let mut rb = RecordBuilder::new(RmgrId::Heap, 0);
                    rb.register_buffer(0, tag, &page, regbuf::STANDARD)
                        .register_block_data(0, &i.to_le_bytes());
                    let end = wal.insert(&rb).unwrap();
                    // As the heap would, with the page still locked: page LSN = end.
                    set_page_lsn(&mut page, end);
                }
                i
            })
        })
        .collect();
    let ck = {
        let (wal, stop, done) = (wal.clone(), stop.clone(), done.clone());
        std::thread::spawn(move || {
            let mut redos = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let redo = wal.begin_checkpoint().unwrap();
                std::thread::yield_now();
                wal.finish_checkpoint(redo, CheckpointInfo::default()).unwrap();
                redos.push(redo);
                done.store(redos.len(), std::sync::atomic::Ordering::Relaxed);
            }
            redos
        })
    };
    let inserted: u32 = hs.into_iter().map(|h| h.join().unwrap()).sum();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let all_redos = ck.join().unwrap();
    wal.flush(wal.insert_position()).unwrap();
    // Checkpoints removed the segments before the last redo pointer's: read from the
    // first redo pointer whose segment is still there.
    let oldest = std::fs::read_dir(dir.path().join("pg_wal"))
        .unwrap()
        .filter_map(|e| layout::parse_segment_file_name(e.unwrap().file_name().to_str().unwrap(), o.segment_size))
        .map(|(_, seg)| seg)
        .min()
        .unwrap();
    let from = *all_redos.iter().find(|r| r.0 / o.segment_size >= oldest).unwrap();
    let from = if from.0 / o.segment_size == start.0 / o.segment_size { start.min(from) } else { from };
    let checkpoints = all_redos.iter().filter(|&&r| r >= from).count();
    let mut rd = WalReader::new(&dir.path().join("pg_wal"), o.segment_size, from, None);
    // (lsn, page, has image) of each heap record; redo pointers of checkpoints.
    let mut heap: Vec<(Lsn, u32, bool)> = Vec::new();
    let mut redos = Vec::new();
    let mut some_image = None;
    while let Some(r) = rd.next_record().unwrap() {
        match r.rmgr {
            RmgrId::Xlog => redos.push(CheckpointRecord::decode(&r.main_data).unwrap().redo),
            RmgrId::Heap => {
                let b = &r.blocks[0];
                heap.push((r.lsn, b.tag.block, b.image.is_some()));
                if b.image.is_some() && some_image.is_none() {
                    some_image = Some(b.clone());
                }
            }
            _ => {}
        }
    }
    assert_eq!(redos, all_redos[all_redos.len() - checkpoints..].to_vec());
    assert!(checkpoints >= 1 && all_redos.len() >= 20, "only {} checkpoints ran", all_redos.len());
    if from == start {
        assert_eq!(heap.len(), inserted as usize);
    }
    let mut checked = 0;
    for &redo in &redos {
        for t in 0..THREADS {
            if let Some(&(lsn, _, image)) = heap.iter().find(|&&(lsn, b, _)| lsn >= redo && b == t) {
                assert!(image, "first change of page {t} after redo {redo} at {lsn} has no image");
                checked += 1;
            }
        }
    }
    eprintln!(
        "{} checkpoints, {checkpoints} in the WAL read, {checked} first changes checked, {inserted} records",
        all_redos.len()
    );
    assert!(checked > 0);
    // And images restore to a page carrying this thread's fill byte.
    let img = some_image.unwrap();
    let page = restore_full_page_image(&img).unwrap();
    assert_eq!(page[8000], img.tag.block as u8 + 1);
}

#[test]
fn commit_delay_applies_only_with_enough_siblings() {
    let o = WalOptions { fsync: true, commit_delay_us: 2000, commit_siblings: 5, ..opts() };
    let (_dir, wal) = fresh(&o);
    let siblings = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let s2 = siblings.clone();
    wal.set_active_backends_fn(Arc::new(move || s2.load(std::sync::atomic::Ordering::Relaxed)));
    let commit = |wal: &Wal| {
        let end = wal.insert(RecordBuilder::new(RmgrId::Xact, 0).append_main_data(b"c")).unwrap();
        let t = Instant::now();
        wal.commit(end, true).unwrap();
        assert!(wal.flushed_upto() >= end);
        t.elapsed()
    };
    commit(&wal);
    assert_eq!(wal.stats().commit_delays, 0);
    siblings.store(5, std::sync::atomic::Ordering::Relaxed);
    let took = commit(&wal);
    assert_eq!(wal.stats().commit_delays, 1);
    assert!(took >= Duration::from_micros(2000));
    // fsync=off: no point in delaying.
    let o = WalOptions { fsync: false, ..o };
    let (_dir2, wal2) = fresh(&o);
    wal2.set_active_backends_fn(Arc::new(|| 100));
    commit(&wal2);
    assert_eq!(wal2.stats().commit_delays, 0);
    assert_eq!(wal2.stats().fsyncs, 0);
}

/// pg_switch_wal under concurrent inserters (a ring smaller than a segment, so
/// initializing the switched segment's rest writes old pages out): every record
/// is read back after a crash-like reopen, each XLOG_SWITCH is followed by a
/// record at the next segment's first page, and with archive_mode every
/// complete segment has its `.ready` file.
#[test]
fn segment_switches_among_concurrent_inserters_replay() {
    let o = WalOptions { archive_mode: true, ..opts() };
    let (dir, wal) = fresh(&o);
    let wal = Arc::new(wal);
    let per = 300u64;
    let hs: Vec<_> = (0..3u64)
        .map(|t| {
            let wal = wal.clone();
            std::thread::spawn(move || {
                for i in 0..per {
                    let n = t * per + i;
                    let mut rb = RecordBuilder::new(RmgrId::Test, 0x10);
                    rb.set_xid(n as u32).append_main_data(&payload(n % 40 + 6));
                    wal.insert(&rb).unwrap();
                }
            })
        })
        .collect();
    let switcher = {
        let wal = wal.clone();
        std::thread::spawn(move || {
            for _ in 0..40 {
                wal.switch_segment().unwrap();
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    for h in hs {
        h.join().unwrap();
    }
    switcher.join().unwrap();
    // Nothing is inserted at a segment's start twice: a second switch right
    // after one writes nothing.
    let at = wal.switch_segment().unwrap();
    assert_eq!(wal.switch_segment().unwrap(), wal.insert_position(), "a switch at a segment start wrote a record");
    assert!(at <= wal.insert_position());
    let end = wal.insert_position();
    wal.flush(end).unwrap();
    let flushed = wal.flushed_upto();
    drop(wal);
    for seg in 0..flushed.0 / SEG {
        let name = segment_file_name(1, seg, SEG);
        assert!(dir.path().join("pg_wal/archive_status").join(format!("{name}.ready")).exists(), "{name} has no .ready");
    }
    let (wal, rs) = Wal::open_with(dir.path(), o.clone()).unwrap();
    assert!(rs.needed);
    let (mut tests, mut switches, mut after_switch) = (0u64, 0u64, false);
    wal.recover(&mut |rec, _| {
        if after_switch {
            assert_eq!(rec.lsn.0 % SEG, 24, "the record after a switch at {} is not at a segment start", rec.lsn);
            after_switch = false;
        }
        if rec.rmgr == RmgrId::Xlog && rec.info == XLOG_SWITCH {
            switches += 1;
            after_switch = true;
        } else if rec.rmgr == RmgrId::Test {
            tests += 1;
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(tests, 3 * per, "records lost around segment switches");
    // At most one per call (41), at least the last one (inserts came before it).
    assert!((1..=41).contains(&switches), "{switches} switch records");
}
