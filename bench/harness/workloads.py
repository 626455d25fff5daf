"""Profiles and the workload registry (names are stable: results and CI refer to them)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Optional


@dataclass
class Profile:
    name: str
    workloads: list[str]
    clients: list[int]
    duration: float              # seconds per pgbench point
    shared_buffers_mb: int
    max_connections: int
    scale_in: int                # pgbench scale that fits in shared_buffers (~15 MB per unit)
    scale_out: int               # pgbench scale well beyond shared_buffers (but in RAM)
    hash_rows: int               # hash_idx_test rows (seed 002: 1M)
    par_test_rows: int           # tbl_parallel_test rows (seed 000: 1M)
    par_perf_rows: int           # tbl_perf rows (seed 000: 30M)
    par_workers: list[int]       # max_parallel_workers_per_gather values
    par_reps: int                # timed executions per (query, workers) point
    sampling_rate: float         # pgbench --sampling-rate for the per-transaction log
    max_wal_size: str
    cg_transactions: int = 1000  # transactions per client in the callgrind pass (--instructions callgrind)
    tpch_scale: float = 0.1      # TPC-H scale factor of the tpch workload (--tpch-scale)
    tpch_reps: int = 1           # timed runs per TPC-H query and system; the median is reported (--tpch-reps)
    bulk_rows: int = 1_000_000   # rows of the bulk workload (issue 20: quick 1M, full 10M)


def _ncpu() -> int:
    return os.cpu_count() or 1


PROFILES = {
    # < 2 minutes for both systems: tiny data, 3 s points, two workloads, 1-4 clients
    "smoke": Profile("smoke", ["select-only", "tpcb-sync-off-in"], [1, 2, 4], 3, 32, 50,
                     scale_in=1, scale_out=8, hash_rows=10_000, par_test_rows=20_000, par_perf_rows=20_000,
                     par_workers=[0, 1, 2], par_reps=2, sampling_rate=1.0, max_wal_size="1GB",
                     cg_transactions=300, tpch_scale=0.01, tpch_reps=1, bulk_rows=20_000),
    # < 15 minutes for both systems: every workload, 1-64 clients, 4 s points
    "quick": Profile("quick", ["select-only", "tpcb-sync-on-in", "tpcb-sync-off-in", "tpcb-sync-on-out",
                               "tpcb-sync-off-out", "hash-update", "parallel-scan", "bulk"],
                     [1, 2, 4, 8, 16, 32, 64], 4, 128, 100,
                     scale_in=4, scale_out=30, hash_rows=100_000, par_test_rows=300_000, par_perf_rows=100_000,
                     par_workers=list(range(0, max(2, _ncpu()) + 1)), par_reps=3, sampling_rate=1.0,
                     max_wal_size="2GB", tpch_scale=0.1, tpch_reps=1, bulk_rows=1_000_000),
    # as long as it needs: seed-sized where the machine allows, up to 256 clients, 30 s points
    "full": Profile("full", ["select-only", "tpcb-sync-on-in", "tpcb-sync-off-in", "tpcb-sync-on-out",
                             "tpcb-sync-off-out", "hash-update", "parallel-scan", "tpch", "bulk"],
                    [1, 2, 4, 8, 16, 32, 64, 128, 256], 30, 1024, 300,
                    scale_in=40, scale_out=300, hash_rows=1_000_000, par_test_rows=1_000_000,
                    par_perf_rows=3_000_000, par_workers=list(range(0, max(4, _ncpu()) + 1)), par_reps=5,
                    sampling_rate=0.1, max_wal_size="8GB", cg_transactions=10000, tpch_scale=1, tpch_reps=3,
                    bulk_rows=10_000_000),
}


def base_settings(p: Profile) -> dict:
    """Settings given identically to both servers (as -c name=value)."""
    return {
        "shared_buffers": f"{p.shared_buffers_mb}MB",
        "max_connections": str(p.max_connections),
        "fsync": "on",
        "synchronous_commit": "on",
        "autovacuum": "off",                 # seeds 000 (write tests) and 002 turn it off
        "checkpoint_timeout": "30min",       # seed 000: long checkpoints, fewer fluctuations
        "max_wal_size": p.max_wal_size,
        "max_worker_processes": "8",
        "max_parallel_workers": "8",
    }


@dataclass
class Workload:
    name: str
    seed: str
    kind: str                                  # "pgbench", "parallel", "tpch" or "bulk"
    description: str
    settings: Callable[[Profile], dict]        # overrides of base_settings
    setup: Callable[[Profile], dict]           # {"pgbench_init": scale} and/or {"sql": [...]}
    pgbench_args: Callable[[Profile, str], list[str]] = lambda p, d: []
    script: Optional[Callable[[Profile], str]] = None   # custom pgbench script text
    pre_point_sql: list[str] = field(default_factory=list)
    scale_label: Callable[[Profile], str] = lambda p: ""


TPCB_PRE = ["vacuum pgbench_branches", "vacuum pgbench_tellers", "truncate pgbench_history", "checkpoint"]


def _tpcb(sync: str, where: str) -> Workload:
    scale = (lambda p: p.scale_in) if where == "in" else (lambda p: p.scale_out)
    fits = "fits in" if where == "in" else "does not fit in"
    return Workload(
        name=f"tpcb-sync-{sync}-{where}", seed="000 (write scalability, TPC-B)", kind="pgbench",
        description=f"pgbench tpcb-like, synchronous_commit={sync}, data {fits} shared_buffers, -M prepared",
        settings=lambda p, s=sync: {"synchronous_commit": s},
        setup=lambda p, sc=scale: {"pgbench_init": sc(p)},
        pgbench_args=lambda p, d: ["-b", "tpcb-like", "-M", "prepared"],
        pre_point_sql=TPCB_PRE,
        scale_label=lambda p, sc=scale: f"scale {sc(p)} (~{sc(p) * 15} MB) vs shared_buffers {p.shared_buffers_mb} MB",
    )


HASH_SCRIPT = """\\set id random(1, {rows})
update hash_idx_test set info=md5(random()::text) where id=:id;
"""


def _hash_setup(p: Profile) -> dict:
    return {"sql": [
        "drop table if exists hash_idx_test",
        "create table hash_idx_test(id int primary key, info text)",
        f"insert into hash_idx_test select generate_series(1,{p.hash_rows}), md5(random()::text)",
        "create index idx_1 on hash_idx_test using hash(info)",
        "vacuum analyze hash_idx_test",
    ]}


# Seed 000 uses `perform (fact_val)!;` -- the postfix ! operator was removed in
# PostgreSQL 14, so factorial(fact_val) is used: the same per-row PL/pgSQL cost.
CALC_FACTORIAL = """create or replace function calc_factorial(a integer, fact_val integer)
returns integer as $$
begin
  perform factorial(fact_val);
  return a;
end;
$$ language plpgsql parallel safe"""


def _par_setup(p: Profile) -> dict:
    return {"sql": [
        "drop table if exists tbl_parallel_test",
        "drop table if exists tbl_perf",
        "create table tbl_parallel_test(c1 int, c2 char(1000))",
        f"insert into tbl_parallel_test values(generate_series(1,{p.par_test_rows}),'aaaaa')",
        "analyze tbl_parallel_test",
        "create table tbl_perf(c1 int, c2 char(1000))",
        f"insert into tbl_perf values(generate_series(1,{p.par_perf_rows}),'aaaaa')",
        "analyze tbl_perf",
        CALC_FACTORIAL,
        "checkpoint",
    ]}


def parallel_queries(p: Profile) -> list[tuple[str, str]]:
    """(label, SQL) for seed 000's queries, constants scaled to the table sizes."""
    n = p.par_perf_rows
    q = [("tbl_parallel_test",
          f"select * from tbl_parallel_test where c1 < {max(1, p.par_test_rows // 100)} and c2 like '%bb%'")]
    for pct in (1, 10, 25):
        q.append((f"tbl_perf {pct}%",
                  f"select c1 from tbl_perf where c1 > calc_factorial({n - n * pct // 100},10) and c2 like '%aa%'"))
    return q


REGISTRY: dict[str, Workload] = {}


def _register(w: Workload) -> None:
    REGISTRY[w.name] = w


_register(Workload(
    name="select-only", seed="001 (pgbench -S, fast-path locks)", kind="pgbench",
    description="pgbench -S (select-only primary-key lookups), -M prepared, data in shared_buffers",
    settings=lambda p: {},
    setup=lambda p: {"pgbench_init": p.scale_in},
    pgbench_args=lambda p, d: ["-S", "-M", "prepared"],
    pre_point_sql=["vacuum pgbench_branches", "vacuum pgbench_tellers", "truncate pgbench_history"],
    scale_label=lambda p: f"scale {p.scale_in} (~{p.scale_in * 15} MB) vs shared_buffers {p.shared_buffers_mb} MB",
))
for _sync in ("on", "off"):
    for _where in ("in", "out"):
        _register(_tpcb(_sync, _where))
_register(Workload(
    name="hash-update", seed="002 (hash index concurrency)", kind="pgbench",
    description="UPDATE of a hash-indexed md5 text column (hash_idx_test, seed's up.sql), -M prepared",
    # seed 002's postgresql.conf (checkpoint_segments has no modern equivalent beyond max_wal_size)
    settings=lambda p: {"synchronous_commit": "on", "commit_delay": "10", "commit_siblings": "5",
                        "wal_level": "minimal", "max_wal_senders": "0"},
    setup=_hash_setup,
    pgbench_args=lambda p, d: ["-M", "prepared", "-f", os.path.join(d, "up.sql")],
    script=lambda p: HASH_SCRIPT.format(rows=p.hash_rows),
    pre_point_sql=["checkpoint"],
    scale_label=lambda p: f"{p.hash_rows} rows (seed: 1000000)",
))
_register(Workload(
    name="parallel-scan", seed="000 (parallel sequential scan)", kind="parallel",
    description="seed 000 queries, latency by max_parallel_workers_per_gather (1 client, -t reps)",
    settings=lambda p: {},
    setup=_par_setup,
    scale_label=lambda p: (f"tbl_parallel_test {p.par_test_rows} rows (seed 1000000), "
                           f"tbl_perf {p.par_perf_rows} rows (seed 30000000)"),
))

_register(Workload(
    name="tpch", seed="M14 (planner and executor; issue 19)", kind="tpch",
    description="TPC-H's 22 queries (validation parameters), serial, one client, each with a client-side timeout",
    settings=lambda p: {"max_parallel_workers_per_gather": "0"},
    setup=lambda p: {},
    scale_label=lambda p: f"scale factor {p.tpch_scale:g}",
))

_register(Workload(
    name="bulk", seed="issue 20 (bulk paths)", kind="bulk",
    description="COPY in, CREATE INDEX, DELETE half, VACUUM, ANALYZE, INSERT ... SELECT of char(1000) rows, one client",
    settings=lambda p: {},  # maintenance_work_mem: both at their default, 64MB
    setup=lambda p: {},
    scale_label=lambda p: f"{p.bulk_rows} rows",
))


def workload_settings(w: Workload, p: Profile) -> dict:
    s = base_settings(p)
    s.update(w.settings(p))
    return s
