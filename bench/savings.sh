#!/usr/bin/env bash
# What the model sees of each real command output in bench/fixtures/, side by
# side: Claude Code alone, squeez, and jkz; with the signal lines each keeps and
# the latency of each reducer. The rules and the counting: bench/savings.py.
#
#   bench/savings.sh [FIXTURE_DIR...]
#
#   RUNS=5                 runs per fixture and reducer (p50 of them)
#   JKZ_REDUCE_CMD='…'     the jkz reducer: output on stdin, JKZ_EXIT_CODE and
#                          JKZ_COMMAND in its environment ({command} and
#                          {exit_code} in it are replaced by them), the view on
#                          stdout (default: target/release/jkz-truncate
#                          --max-bytes 29000, built when missing), e.g.
#                          'target/release/jkz reduce --command {command} --exit-code {exit_code}'

#   JKZ_BENCH_DIR=DIR      where squeez is installed (default target/bench)
#   SQUEEZ_VERSION=1.48.18 the squeez release compared against
#   CARGO=cargo            the cargo to build and install with
#
# Writes bench/out/savings.json and bench/out/savings.md and prints the tables.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-5}
bench_dir=${JKZ_BENCH_DIR:-target/bench}
squeez_version=${SQUEEZ_VERSION:-1.48.18}
cargo=${CARGO:-cargo}
squeez="$bench_dir/squeez/bin/squeez"

if ! [ -x "$squeez" ] || [ "$("$squeez" --version 2>/dev/null)" != "squeez $squeez_version" ]; then
  "$cargo" install squeez --version "$squeez_version" --locked --force --root "$bench_dir/squeez" 2>&1 | tail -2
fi

if [ -z "${JKZ_REDUCE_CMD:-}" ]; then
  "$cargo" build --release --locked --bin jkz-truncate 2>&1 | tail -1
  JKZ_REDUCE_CMD="${CARGO_TARGET_DIR:-$PWD/target}/release/jkz-truncate --max-bytes 29000"
fi

python3 bench/fixtures/check.py >/dev/null || {
  echo "bench/fixtures does not pass bench/fixtures/check.py; run it for the problems" >&2
  exit 1
}
mkdir -p bench/out
python3 bench/savings.py --squeez "$squeez" --jkz "$JKZ_REDUCE_CMD" --runs "$runs" \
  --json bench/out/savings.json --markdown bench/out/savings.md "$@"
