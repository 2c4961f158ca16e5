#!/usr/bin/env bash
# The event log's costs, side by side where there is a "before":
#
#   bench/events.sh            (RUNS=300; BASE=<rev> the version to compare with)
#
# 1. `jkz state set` (one phase change: a locked read-modify-write of the
#    pipeline file, plus, with the log, one event appended) against the
#    same command of BASE (default: the version just before the event log),
#    RUNS runs each, taking turns; on the disk under /tmp and on tmpfs
#    (/dev/shm), where the sync calls cost little and the append shows.
# 2. `jkz events --issue N` over 1,000,000 events about 10,000 issues over
#    100 days (bench/gen_events.py), from the index: p50 and p90 of RUNS.
# 3. `jkz events rebuild` of those 1,000,000 events (gzip-compressed
#    segments): wall and CPU time, peak RSS (GNU time).
# 4. `jkz metrics` over the same log (10,000 issues): metrics.db derived
#    anew (removed first), and up to date; wall time and peak RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-300}
out=bench/out
mkdir -p "$out"
cargo build --release --locked --bin jkz 2>&1 | tail -1
jkz="$PWD/target/release/jkz"
base_rev=${BASE:-$(git log --format=%H --diff-filter=A -1 -- shared/events.rs)^}
base="$out/jkz-$(git rev-parse --short "$base_rev")"
if [ ! -x "$base" ]; then
  tree="$(mktemp -d)"
  git worktree add --detach "$tree" "$base_rev" > /dev/null
  CARGO_TARGET_DIR="$PWD/target/bench-base" cargo build --release --locked --bin jkz \
    --manifest-path "$tree/Cargo.toml" 2>&1 | tail -1
  cp target/bench-base/release/jkz "$base"
  git worktree remove --force "$tree"
fi
rustc --edition 2021 -O bench/events_runs.rs -o "$out/events_runs"
work="$(mktemp -d)"
shm="$(mktemp -d /dev/shm/jkz-bench.XXXXXX)"
trap 'rm -rf "$work" "$shm"' EXIT
unset CLAUDE_PROJECT_DIR JKZ_STATE_DIR CLAUDE_CODE_SESSION_ID CLAUDE_SESSION_ID

echo "== jkz state set, with the event log (this version) and without ($(git rev-parse --short "$base_rev")), $runs runs each (p50 p90, ms)"
for where in "$work/set" "$shm/set"; do
  mkdir -p "$where"
  mapfile -t lines < <("$out/events_runs" "$runs" "$where" "$jkz" "$base")
  printf '%-8s with the log    %s\n' "$( [ "$where" = "$shm/set" ] && echo tmpfs || echo disk)" "${lines[0]}"
  printf '%-8s without         %s\n' "" "${lines[1]}"
  n=$(cat "$where"/0/events/*.jsonl | wc -l)
  [ "$n" -ge "$runs" ] || { echo "only $n events logged" >&2; exit 1; }
done

echo "== 1,000,000 events"
state="$work/big/state"
mkdir -p "$state"
python3 bench/gen_events.py 1000000 10000 100 "$state/events" | tee "$work/gen.txt"
issue=$(sed -n 's/.*; issue \([0-9]*\) has.*/\1/p' "$work/gen.txt")
t() { /usr/bin/time -f '%e s wall, %U+%S s cpu, %M KB peak' "$@"; }
echo "-- the first read: closes 100 days of segments (gzip) and builds the index"
t "$jkz" --state-dir "$state" events --issue "$issue" > /dev/null
echo "-- jkz events --issue $issue, from the index ($runs runs, p50 p90, ms)"
python3 - "$runs" "$jkz" "$state" "$issue" <<'PY'
import subprocess, sys, time
runs, jkz, state, issue = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
ms = []
for _ in range(runs):
    t = time.perf_counter()
    subprocess.run([jkz, "--state-dir", state, "events", "--issue", issue], stdout=subprocess.DEVNULL, check=True)
    ms.append((time.perf_counter() - t) * 1000)
ms.sort()
rank = lambda p: ms[max(1, -(-runs * p // 100)) - 1]
print("%.2f %.2f" % (rank(50), rank(90)))
PY
echo "-- jkz events rebuild (1,000,000 events)"
t "$jkz" --state-dir "$state" events rebuild
echo "-- jkz metrics, 10,000 issues: derived anew, then up to date"
rm -f "$state/metrics.db"
t "$jkz" --state-dir "$state" metrics > /dev/null
for _ in 1 2 3; do t "$jkz" --state-dir "$state" metrics > /dev/null; done
du -sh "$state/events" "$state/events/index.db" "$state/metrics.db"
