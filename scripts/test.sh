#!/usr/bin/env bash
# The project's whole test run: what README.md names and .ci/run calls. Installs what
# is missing first (scripts/deps.sh test: apt-get as root, or through sudo).
#   0. cargo clippy --workspace --all-targets, warnings as errors;
#   1. unit and integration tests of every crate (real threads, real files, crash tests
#      that kill child processes: FERROGRES_CRASH_KILLS, default 100; the protocol
#      fuzzer, crates/ferrogres/tests/protocol_fuzz.rs, about 1.5 minutes:
#      FERROGRES_FUZZ_CASES / FERROGRES_FUZZ_SECONDS / FERROGRES_FUZZ_SEED);
#   2. loom model checks of the lock-free parts, with bounded preemptions;
#   3. the benchmark harness's own tests (curve fitting), and its smoke run against a
#      real PostgreSQL 15 (`bench/run smoke` compares both systems by hand).
# Ends with one line "N passed, N failed" summed over all stages.
set -uo pipefail
cd "$(dirname "$0")/.."
# What a fresh machine lacks (libclang, PostgreSQL 15, valgrind, perf, python packages).
scripts/deps.sh test || exit 1
# Tools deps.sh installed with `cargo install` (inferno's flame graphs) live in cargo's
# bin directory, which a non-login shell may not have on PATH.
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0

echo "== cargo clippy (workspace, all targets, warnings are errors)"
cargo clippy --workspace --all-targets -- -D warnings 2>&1 | tee -a "$log"
clippy=${PIPESTATUS[0]}
if [ "$clippy" -ne 0 ]; then
  status=1
  echo "test result: FAILED. 0 passed; 1 failed (cargo clippy)" | tee -a "$log"
fi

echo "== cargo test (workspace)"
cargo test --workspace --no-fail-fast 2>&1 | tee -a "$log" || status=1

echo "== loom model checks (LOOM_MAX_PREEMPTIONS=${LOOM_MAX_PREEMPTIONS:=2})"
RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=$LOOM_MAX_PREEMPTIONS \
  cargo test -p ferrogres-engine --release --lib --target-dir target/loom -- loom 2>&1 | tee -a "$log" || status=1

echo "== benchmark harness tests"
python3 -m unittest discover -s bench/tests -v 2>&1 | tee -a "$log" || status=1

passed=$(grep -oE '^test result: [A-Za-z]+\. [0-9]+ passed' "$log" | awk '{s+=$4} END {print s+0}')
failed=$(grep -oE '^test result: [A-Za-z]+\. [0-9]+ passed; [0-9]+ failed' "$log" | awk '{s+=$6} END {print s+0}')
py_ran=$(grep -oE '^Ran [0-9]+ tests?' "$log" | awk '{s+=$2} END {print s+0}')
py_bad=$(grep -oE '^FAILED \((failures|errors)=[0-9]+(, (failures|errors)=[0-9]+)?' "$log" | grep -oE '[0-9]+' | awk '{s+=$1} END {print s+0}')
echo "$((passed + py_ran - py_bad)) passed, $((failed + py_bad)) failed"
# A stage that failed without a failing test (a build error) still fails the run.
if [ $status -ne 0 ] && [ $((failed + py_bad)) -eq 0 ]; then
  echo "a stage failed before its tests ran (see the errors above)"
fi
exit $status
