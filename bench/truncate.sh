#!/usr/bin/env bash
# jkz-truncate against `tail -c CAP`, the floor for keeping a pipe's last
# bytes, on a generated 512 MiB log with protected blocks scattered through
# it; then peak RSS on a 4 GiB stream that is generated on the fly, never
# stored.
#
#   bench/truncate.sh            (takes a few minutes on 2 cores)
#
# Needs python3 and GNU time (/usr/bin/time; `apt-get install time`).
# Every command reads through a pipe (`cat log | …`): `tail -c` on a regular
# file seeks to the end, which is not what a pipe allows.
# Throughput is the best of 3 runs; peak RSS is the jkz process's own.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x /usr/bin/time ]; then
  echo "bench/truncate.sh: needs GNU time at /usr/bin/time (apt-get install time)" >&2
  exit 1
fi

cap=307200 # primary mode's cap
out=bench/out
log="$out/log-512M.txt"
mkdir -p "$out"
if [ ! -f "$log" ] || [ "$(stat -c %s "$log")" -ne $((512 << 20)) ]; then
  echo "generating $log"
  python3 bench/gen_log.py 512M > "$log.tmp"
  mv "$log.tmp" "$log"
fi
cargo build --release --locked --bin jkz-truncate 2>&1 | tail -1
bin="$PWD/target/release/jkz-truncate"
state="$(mktemp -d)"
trap 'rm -rf "$state"' EXIT

# best_of3 NAME COMMAND…: best wall time of 3 runs, and the last run's peak
# RSS of the measured process (its command runs under /usr/bin/time).
best_of3() {
  local name="$1"; shift
  local best="" rss=""
  for _ in 1 2 3; do
    rm -rf "$state/context-offload"
    local t0 t1
    t0=$(date +%s.%N)
    cat "$log" | /usr/bin/time -f "%M" -o "$out/rss.txt" "$@" > /dev/null
    t1=$(date +%s.%N)
    local t; t=$(echo "$t1 - $t0" | bc -l)
    if [ -z "$best" ] || [ "$(echo "$t < $best" | bc -l)" = 1 ]; then best=$t; fi
    rss=$(cat "$out/rss.txt")
  done
  printf '%-34s %6.3f s  %7.0f MiB/s  peak RSS %6d KiB\n' "$name" "$best" \
    "$(echo "512 / $best" | bc -l)" "$rss"
  last_best=$best
}

echo "cap $cap bytes; input $log (512 MiB)"
best_of3 "tail -c $cap" tail -c "$cap"
tail_t=$last_best
best_of3 "jkz-truncate --no-full-output" "$bin" --no-full-output
nofull_t=$last_best
best_of3 "jkz-truncate (full output kept)" "$bin" --state-dir "$state"
full_t=$last_best
ls "$state/context-offload" | grep -q '^full-' || { echo "no full output was saved" >&2; exit 1; }
printf 'throughput ratio vs tail -c: --no-full-output %.2fx (target >= 0.8x), full output kept %.2fx (target >= 0.5x)\n' \
  "$(echo "$tail_t / $nofull_t" | bc -l)" "$(echo "$tail_t / $full_t" | bc -l)"

limit_kib=$(( (3 * cap + (16 << 20)) / 1024 ))
echo "4 GiB stream (generated on the fly):"
python3 bench/gen_log.py 4G | /usr/bin/time -f "%M %e" -o "$out/rss4g.txt" "$bin" --no-full-output > /dev/null
read -r rss4 secs4 < "$out/rss4g.txt"
printf 'jkz-truncate --no-full-output on 4 GiB: %s s, peak RSS %d KiB (limit 3 x cap + 16 MiB = %d KiB)\n' \
  "$secs4" "$rss4" "$limit_kib"
python3 bench/gen_log.py 4G | /usr/bin/time -f "%M %e" -o "$out/rss4g.txt" "$bin" --state-dir "$state" > /dev/null
read -r rss4f secs4f < "$out/rss4g.txt"
rm -rf "$state/context-offload"
printf 'jkz-truncate (full output kept) on 4 GiB: %s s, peak RSS %d KiB\n' "$secs4f" "$rss4f"
