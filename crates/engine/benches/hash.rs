//! Hash index probes and inserts outside SERIALIZABLE: what READ COMMITTED
//! pays for the SSI hooks (a scan's `Option` of a serializable transaction,
//! tested once per scan; an insert's, tested once per insert). Probes of an
//! index of 100 000 entries (one match each) and inserts into one, all in
//! shared buffers. Compare with the same bench built before the hooks.
//!
//! Run: `cargo bench -p ferrogres-engine --bench hash`. On a noisy machine
//! without a PMU, count instructions instead: `HASH_BENCH_OPS=probe:20000`
//! (or `insert:20000`, or `probe:0` for the setup alone) runs that many
//! operations once, no Criterion, for `valgrind --tool=callgrind`; the
//! difference of two counts divided by the operations is the cost of one.

use criterion::{criterion_group, Criterion, Throughput};
use ferrogres_engine::config::Settings;
use ferrogres_engine::engine::{Engine, DEFAULT_TABLESPACE_OID, POSTGRES_DATABASE_OID};
use ferrogres_engine::hash::HashIndex;
use ferrogres_engine::heap::tuple::Tid;
use ferrogres_engine::storage::RelFileLocator;
use std::hint::black_box;

const N: u32 = 100_000;

fn code(i: u32) -> u32 {
    i.wrapping_mul(0x9e37_79b9).rotate_left(7)
}

fn tid(i: u32) -> Tid {
    Tid::new(i / 200, (i % 200 + 1) as u16)
}

const REL: RelFileLocator = RelFileLocator { spc_oid: DEFAULT_TABLESPACE_OID, db_oid: POSTGRES_DATABASE_OID, rel_number: 16700 };

/// An engine with an index of `n` entries (code(i), tid(i)).
fn setup(n: u32) -> (tempfile::TempDir, std::sync::Arc<Engine>, HashIndex) {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Settings::default();
    s.set("shared_buffers", "4096").unwrap();
    let (engine, _) = Engine::open(dir.path(), s).unwrap();
    let ix = HashIndex::new(&engine, REL);
    ix.create(&engine, 75, n as f64).unwrap();
    for i in 0..n {
        ix.insert(&engine, code(i), tid(i)).unwrap();
    }
    (dir, engine, ix)
}

/// `HASH_BENCH_OPS=probe:K` or `insert:K`: K operations, once.
fn fixed(spec: &str) {
    let (what, k) = spec.split_once(':').expect("probe:K or insert:K");
    let k: u32 = k.parse().unwrap();
    let (_dir, engine, ix) = setup(20_000);
    match what {
        "probe" => {
            for i in 0..k {
                for t in ix.scan(&engine, code((i * 7919) % 20_000)) {
                    black_box(t.unwrap());
                }
            }
        }
        "insert" => {
            for i in 0..k {
                ix.insert(&engine, code(20_000 + i), tid(i % 20_000)).unwrap();
            }
        }
        other => panic!("unknown operation {other}"),
    }
}

fn bench(c: &mut Criterion) {
    let (_dir, engine, ix) = setup(N);
    let rel = REL;
    let mut g = c.benchmark_group("hash_read_committed");
    g.throughput(Throughput::Elements(1));
    let mut i = 0u32;
    g.bench_function("probe", |b| {
        b.iter(|| {
            i = (i + 7919) % N;
            let mut n = 0;
            for t in ix.scan(&engine, code(i)) {
                black_box(t.unwrap());
                n += 1;
            }
            black_box(n)
        })
    });
    // A second index, so that inserts grow it from empty (with its splits).
    let ix2 = HashIndex::new(&engine, RelFileLocator { rel_number: 16701, ..rel });
    ix2.create(&engine, 75, 0.0).unwrap();
    let mut j = 0u32;
    g.bench_function("insert", |b| {
        b.iter(|| {
            j = j.wrapping_add(1);
            ix2.insert(&engine, code(j), tid(j % N)).unwrap();
        })
    });
    g.finish();
}

criterion_group!(benches, bench);

fn main() {
    if let Ok(spec) = std::env::var("HASH_BENCH_OPS") {
        fixed(&spec);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
