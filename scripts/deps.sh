#!/usr/bin/env bash
# Installs, with apt-get, what ferrogres needs on a fresh Debian machine that has only
# Rust; installs nothing (and runs no apt-get at all) when everything is there.
#
#   scripts/deps.sh build   what `cargo build` needs: a C compiler and libclang
#                           (pg_query builds libpg_query in C; its bindgen loads libclang)
#   scripts/deps.sh test    the above, plus what the tests use: PostgreSQL 15 (the
#                           reference server; psql, pgbench, pg_regress and
#                           pg_isolation_regress from its client package), valgrind and
#                           perf (the benchmark harness), the harness's python packages
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
  command -v fallocate >/dev/null || need+=(util-linux)
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
