#!/usr/bin/env bash
# Installs, with apt-get, what ferrogres needs on a fresh Debian machine that has only
# Rust; installs nothing (and runs no apt-get at all) when everything is there.
#
#   scripts/deps.sh build   what `cargo build` needs: a C compiler and libclang
#                           (pg_query builds libpg_query in C; its bindgen loads libclang)
#   scripts/deps.sh test    the above, plus what the tests use: PostgreSQL 15 (the
#                           reference server; psql, pgbench, pg_regress and
#                           pg_isolation_regress from its client package), valgrind and
#                           perf (the benchmark harness), openssl (the TLS tests' certificates), the harness's python packages,
#                           tpchgen-cli (prebuilt, from PyPI) into bench/.cache; the client
#                           suite's drivers (crates/ferrogres/tests/clients.rs): the python
#                           ones of clients/requirements.txt (pip; into clients/.venv on
#                           Debian's own python), node-postgres (npm ci in clients/node),
#                           a JDK and Debian's pgjdbc, Go and Debian's pgx v4, the
#                           crates of clients/rust (tokio-postgres, sqlx); inferno
#                           (cargo install) for the harness's flame graphs
#
# Runs apt-get as root, or through sudo when not root. Called by scripts/run.sh and
# scripts/test.sh (README's two commands) and so by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-test}
case "$what" in build|test) ;; *) echo "usage: scripts/deps.sh build|test" >&2; exit 2;; esac

need=()
command -v cc >/dev/null || need+=(gcc libc6-dev)
# Where bindgen (clang-sys) looks: LIBCLANG_PATH, LLVM's directories, the system's.
have_libclang() {
  local f
  for f in ${LIBCLANG_PATH:+"$LIBCLANG_PATH"/libclang*.so*} /usr/lib/llvm-*/lib/libclang.so \
           /usr/lib/*/libclang.so /usr/lib/*/libclang-*.so /usr/lib/libclang.so; do
    [ -e "$f" ] && return 0
  done
  return 1
}
have_libclang || need+=(libclang-dev)

pip_reqs=""
if [ "$what" = test ]; then
  [ -x /usr/lib/postgresql/15/bin/postgres ] || need+=(postgresql-15)
  { [ -x /usr/lib/postgresql/15/lib/pgxs/src/test/regress/pg_regress ] && command -v pgbench >/dev/null; } \
    || need+=(postgresql-client-15)
  command -v perf >/dev/null || need+=(linux-perf)
  command -v valgrind >/dev/null || need+=(valgrind)
  # tests/tls.rs makes its test CA and server certificate with openssl.
  command -v openssl >/dev/null || need+=(openssl)
  command -v fallocate >/dev/null || need+=(util-linux)
  # The client suite: node-postgres runs on node, pgjdbc on a JDK (the source
  # launcher compiles its one class), pgx in GOPATH mode from Debian's sources.
  command -v node >/dev/null || need+=(nodejs)
  command -v npm >/dev/null || need+=(npm)
  command -v java >/dev/null || need+=(default-jdk-headless)
  [ -e /usr/share/java/postgresql.jar ] || need+=(libpostgresql-jdbc-java)
  command -v go >/dev/null || need+=(golang-go)
  [ -d /usr/share/gocode/src/github.com/jackc/pgx/v4 ] || need+=(golang-github-jackc-pgx-v4-dev)
  if [ "$(command -v python3 || echo /usr/bin/python3)" = /usr/bin/python3 ] && ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
    need+=(python3-venv)
  fi
  if ! command -v python3 >/dev/null; then
    need+=(python3 python3-numpy python3-matplotlib)
  elif ! python3 -c 'import numpy, matplotlib' 2>/dev/null; then
    # Debian's own python takes Debian's packages (pip refuses to touch it, PEP 668);
    # any other python (pyenv, a venv) gets bench/requirements.txt through pip.
    if [ "$(command -v python3)" = /usr/bin/python3 ]; then
      need+=(python3-numpy python3-matplotlib)
    else
      pip_reqs=bench/requirements.txt
    fi
  fi
fi

# The test run starts with cargo clippy (a rustup component; minimal profiles lack it).
if [ "$what" = test ] && ! cargo clippy --version >/dev/null 2>&1; then
  echo "scripts/deps.sh: adding the clippy component" >&2
  rustup component add clippy || exit 1
fi

if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "scripts/deps.sh: ${need[*]} missing; run as root or install sudo" >&2; exit 1; }
    sudo=sudo
  fi
  echo "scripts/deps.sh: installing ${need[*]}" >&2
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}"
fi
if [ -n "$pip_reqs" ]; then
  echo "scripts/deps.sh: installing the python packages of $pip_reqs" >&2
  python3 -m pip install -q -r "$pip_reqs"
fi
# The client suite's python drivers, at the versions of clients/requirements.txt:
# into the running python (pyenv, a venv), or into clients/.venv on Debian's own
# python (PEP 668), which the test then prefers.
if [ "$what" = test ]; then
  client_py=python3
  if [ "$(command -v python3)" = /usr/bin/python3 ]; then
    [ -x clients/.venv/bin/python3 ] || python3 -m venv clients/.venv
    client_py=clients/.venv/bin/python3
  fi
  if ! "$client_py" - clients/requirements.txt <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if line:
        name, want = line.split("==")
        if version(name.split("[")[0]) != want:
            sys.exit(1)
PY
  then
    echo "scripts/deps.sh: installing the client suite's python drivers (clients/requirements.txt)" >&2
    "$client_py" -m pip install -q -r clients/requirements.txt
  fi
  # The Rust drivers' program (tokio-postgres, sqlx): its crates, at the versions
  # of clients/rust/Cargo.lock; the test builds it.
  cargo fetch --locked --quiet --manifest-path clients/rust/Cargo.toml
  pg_wanted=$(sed -n 's/.*"pg": "\(.*\)".*/\1/p' clients/node/package.json)
  pg_have=$(node -p "require('./clients/node/node_modules/pg/package.json').version" 2>/dev/null || true)
  if [ "$pg_have" != "$pg_wanted" ]; then
    echo "scripts/deps.sh: installing node-postgres $pg_wanted (npm ci in clients/node)" >&2
    (cd clients/node && npm ci --no-audit --no-fund --loglevel=error)
  fi
fi

# The flame-graph tool of the harness's wait-event profiles (bench/harness/waits.py,
# tested by bench/tests/test_waits.py): inferno's `inferno-flamegraph`, built by cargo
# (a few CPU-minutes, once) into cargo's bin directory when it is not on PATH.
if [ "$what" = test ] && ! command -v inferno-flamegraph >/dev/null; then
  echo "scripts/deps.sh: installing inferno (cargo install --locked inferno@0.12.8)" >&2
  cargo install --locked --quiet inferno@0.12.8
fi

# The TPC-H generator of the tpch workload (bench/harness/tpch.py): the tpchgen-cli
# crate's binary as its authors publish it prebuilt on PyPI, taken out of the wheel into
# the harness's cache (works with any python, PEP 668 or not; `cargo install` of the
# crate would take ~10 CPU-minutes).
if [ "$what" = test ]; then
  tpchgen_version=$(sed -n 's/^tpchgen-cli==//p' bench/requirements.txt)
  tpchgen_root=${FERROGRES_BENCH_CACHE:-bench/.cache}/tpchgen-cli-$tpchgen_version
  if [ ! -x "$tpchgen_root/bin/tpchgen-cli" ]; then
    echo "scripts/deps.sh: installing tpchgen-cli $tpchgen_version into $tpchgen_root" >&2
    wheels=$(mktemp -d)
    python3 -m pip download -q --no-deps --only-binary=:all: -d "$wheels" "tpchgen-cli==$tpchgen_version"
    mkdir -p "$tpchgen_root/bin"
    python3 - "$wheels" "$tpchgen_root/bin/tpchgen-cli" <<'PY'
import glob, os, sys, zipfile
wheel = glob.glob(os.path.join(sys.argv[1], "tpchgen_cli-*.whl"))[0]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith("/scripts/tpchgen-cli"))
    with z.open(name) as src, open(sys.argv[2] + ".part", "wb") as dst:
        dst.write(src.read())
os.chmod(sys.argv[2] + ".part", 0o755)
os.rename(sys.argv[2] + ".part", sys.argv[2])
PY
    rm -rf "$wheels"
  fi
fi
