#!/usr/bin/env bash
# README's run command: builds the release server (installing what the build needs on
# a fresh machine, scripts/deps.sh) and runs it with the given flags, e.g.
#
#   scripts/run.sh -D data            (relative paths are taken from where you are)
#
# Started as root, the server runs as the data directory's owner, or `nobody`.
set -euo pipefail
here=$PWD
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/deps.sh" build
(cd "$root" && cargo build --release -p ferrogres)
cd "$here"
exec "$root/target/release/ferrogres" "$@"
