#!/usr/bin/env bash
# Runs PostgreSQL 15's regression tests (crates/ferrogres/tests/pg15/regress) against a
# fresh ferrogres, after test_setup, and prints how far each test's output is from
# PostgreSQL's expected file (lines in the diff; 0 = identical).
#
#   scripts/pg_regress.sh [TEST ...]      (default: the eight tests issue 4 names)
#
# Uses target/release/ferrogres if it exists (FERROGRES=path to choose another).
set -euo pipefail
cd "$(dirname "$0")/.."
REGRESS=${PG15_TESTS:-crates/ferrogres/tests/pg15}/regress
PG_REGRESS=/usr/lib/postgresql/15/lib/pgxs/src/test/regress/pg_regress
BIN=${FERROGRES:-target/release/ferrogres}
[ -x "$BIN" ] || BIN=target/debug/ferrogres
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(boolean char varchar text int2 int4 int8 delete)

work=$(mktemp -d)
# Started by root, the server runs as another account (README), which must read
# test_setup's data files under $work.
chmod 755 "$work"
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$BIN" -D "$work/data" -p "$port" -k "$work" >"$work/server.log" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q "ready to accept connections" "$work/server.log" && break; sleep 0.1; done

mkdir -p "$work/out"
# pg_regress needs the input dir's files to be writable/copyable: run from a copy.
cp -r "$REGRESS" "$work/regress"
"$PG_REGRESS" --use-existing --host=127.0.0.1 --port="$port" --user=postgres \
  --bindir=/usr/lib/postgresql/15/bin --inputdir="$work/regress" --outputdir="$work/out" \
  --dbname=postgres test_setup "${tests[@]}" >"$work/run.log" 2>&1 || true

for t in "${tests[@]}"; do
  exp="$work/regress/expected/$t.out"
  res="$work/out/results/$t.out"
  if [ ! -f "$res" ]; then
    printf '%-10s no output\n' "$t"
  else
    printf '%-10s %s\n' "$t" "$(diff "$exp" "$res" | grep -c '^[<>]' || true)"
  fi
done
if [ -n "${KEEP:-}" ]; then cp -r "$work/out" "$KEEP"; echo "results kept in $KEEP"; fi
