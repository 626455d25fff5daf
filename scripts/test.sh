#!/usr/bin/env bash
# The project's whole test run: what README.md names and .ci/run calls.
#   1. unit and integration tests of every crate (real threads, real files, crash tests
#      that kill child processes);
#   2. loom model checks of the lock-free parts, with bounded preemptions;
#   3. the benchmark harness's own tests (curve fitting), then its smoke run against
#      PostgreSQL 15 alone (it is kept short; `bench/run smoke` compares both systems).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo test (workspace)"
cargo test --workspace --no-fail-fast

echo "== loom model checks (LOOM_MAX_PREEMPTIONS=${LOOM_MAX_PREEMPTIONS:=2})"
RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=$LOOM_MAX_PREEMPTIONS \
  cargo test -p ferrogres-engine --release --lib --target-dir target/loom -- loom

if [ -d bench/tests ]; then
  echo "== benchmark harness tests"
  python3 -m unittest discover -s bench/tests -v
fi
