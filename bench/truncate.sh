#!/usr/bin/env bash
# jkz-truncate against `tail -c CAP`, the floor for keeping a pipe's last
# bytes, on a generated 512 MiB log with protected blocks scattered through
# it; then peak RSS on a 4 GiB stream that is generated on the fly, never
# stored.
#
#   bench/truncate.sh            (takes a few minutes on 2 cores)
#   REPS=5 bench/truncate.sh     (more rounds)
#   JKZ_TRUNCATE_BIN=/path/to/jkz-truncate bench/truncate.sh   (another build)
#   JKZ_TRUNCATE_BASE=/path/to/old/jkz-truncate bench/truncate.sh
#       (also runs that build, interleaved, and reports new/base ratios)
#
# Needs python3 and GNU time (/usr/bin/time; `apt-get install time`).
# Every command reads through a pipe (`cat log | …`): `tail -c` on a regular
# file seeks to the end, which is not what a pipe allows.
# Every measured command runs REPS times (default 3; `REPS=5 bench/truncate.sh`),
# interleaved (one of each per round) so that load from elsewhere hits them
# alike; the best and the median wall time are reported, and the ratios of
# both. Peak RSS is the jkz process's own (last round). Two floor rows come
# from bench/pipe_floor.rs: a program that only reads the pipe, and one that
# also writes the copy to a file as the full output does.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x /usr/bin/time ]; then
  echo "bench/truncate.sh: needs GNU time at /usr/bin/time (apt-get install time)" >&2
  exit 1
fi

reps=${REPS:-3}
cap=307200 # primary mode's cap
out=bench/out
log="$out/log-512M.txt"
mkdir -p "$out"
if [ ! -f "$log" ] || [ "$(stat -c %s "$log")" -ne $((512 << 20)) ]; then
  echo "generating $log"
  python3 bench/gen_log.py 512M > "$log.tmp"
  mv "$log.tmp" "$log"
fi
if [ -n "${JKZ_TRUNCATE_BIN:-}" ]; then
  bin="$JKZ_TRUNCATE_BIN"
else
  cargo build --release --locked --bin jkz-truncate 2>&1 | tail -1
  bin="$PWD/target/release/jkz-truncate"
fi
rustc --edition 2021 -C opt-level=3 bench/pipe_floor.rs -o "$out/pipe_floor"
floor="$PWD/$out/pipe_floor"
state="$(mktemp -d)"
trap 'rm -rf "$state"' EXIT

names=(tail nofull full floor_read floor_copy)
declare -A label=(
  [tail]="tail -c $cap"
  [nofull]="jkz-truncate --no-full-output"
  [full]="jkz-truncate (full output kept)"
  [floor_read]="floor: read the pipe only"
  [floor_copy]="floor: read + write the copy"
  [base_nofull]="base build --no-full-output"
  [base_full]="base build (full output kept)"
)
base="${JKZ_TRUNCATE_BASE:-}"
if [ -n "$base" ]; then
  names+=(base_nofull base_full)
fi
declare -A times rss

# run NAME: one timed run of the command NAME names, reading the log
# through a pipe; appends its wall time to times[NAME].
run() {
  local name="$1" t0 t1
  rm -rf "$state/context-offload" "$state/copy"
  local cmd
  case "$name" in
    tail) cmd=(tail -c "$cap") ;;
    nofull) cmd=("$bin" --no-full-output) ;;
    full) cmd=("$bin" --state-dir "$state") ;;
    floor_read) cmd=("$floor" read) ;;
    floor_copy) cmd=("$floor" copy "$state/copy") ;;
    base_nofull) cmd=("$base" --no-full-output) ;;
    base_full) cmd=("$base" --state-dir "$state") ;;
  esac
  t0=$(date +%s.%N)
  cat "$log" | /usr/bin/time -f "%M" -o "$out/rss.txt" "${cmd[@]}" > /dev/null
  t1=$(date +%s.%N)
  if [ "$name" = full ] || [ "$name" = base_full ]; then
    ls "$state/context-offload" | grep -q '^full-' || { echo "no full output was saved" >&2; exit 1; }
  fi
  times[$name]+="$(echo "$t1 - $t0" | bc -l) "
  rss[$name]=$(cat "$out/rss.txt")
}

echo "cap $cap bytes; input $log (512 MiB); $reps interleaved rounds; load: $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$reps"); do
  for name in "${names[@]}"; do run "$name"; done
done

declare -A best median
for name in "${names[@]}"; do
  sorted=$(echo "${times[$name]}" | tr ' ' '\n' | grep . | sort -g)
  best[$name]=$(echo "$sorted" | head -1)
  median[$name]=$(echo "$sorted" | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}')
  printf '%-34s best %6.3f s (%5.0f MiB/s)  median %6.3f s  peak RSS %6d KiB\n' "${label[$name]}" \
    "${best[$name]}" "$(echo "512 / ${best[$name]}" | bc -l)" "${median[$name]}" "${rss[$name]}"
done
ratio() { echo "$1 / $2" | bc -l; }
printf 'ratio vs tail -c, best (median): --no-full-output %.2fx (%.2fx), target >= 0.8x; full output kept %.2fx (%.2fx), target >= 0.5x\n' \
  "$(ratio "${best[tail]}" "${best[nofull]}")" "$(ratio "${median[tail]}" "${median[nofull]}")" \
  "$(ratio "${best[tail]}" "${best[full]}")" "$(ratio "${median[tail]}" "${median[full]}")"
printf 'floors vs tail -c, best (median): read only %.2fx (%.2fx); read + write the copy %.2fx (%.2fx)\n' \
  "$(ratio "${best[tail]}" "${best[floor_read]}")" "$(ratio "${median[tail]}" "${median[floor_read]}")" \
  "$(ratio "${best[tail]}" "${best[floor_copy]}")" "$(ratio "${median[tail]}" "${median[floor_copy]}")"

if [ -n "$base" ]; then
  printf 'this build vs base, best (median): --no-full-output %.2fx (%.2fx); full output kept %.2fx (%.2fx) (time ratio, < 1.10 is within 10 %%)\n' \
    "$(ratio "${best[nofull]}" "${best[base_nofull]}")" "$(ratio "${median[nofull]}" "${median[base_nofull]}")" \
    "$(ratio "${best[full]}" "${best[base_full]}")" "$(ratio "${median[full]}" "${median[base_full]}")"
fi

# One line of 300,000 jkz comments (4 MB), every comment a block spanning
# the line: held once, whatever the number of comments.
python3 -c "print('<!-- jkz:x -->' * 300000)" > "$out/comment-dense.txt"
/usr/bin/time -f "%M %e" -o "$out/rss-dense.txt" "$bin" --no-full-output --max-bytes 2000000 \
  < "$out/comment-dense.txt" > /dev/null
read -r rssd secsd < "$out/rss-dense.txt"
printf 'comment-dense 4 MB line, --max-bytes 2000000: %s s, peak RSS %d KiB (limit 3 x cap + 16 MiB = %d KiB)\n' \
  "$secsd" "$rssd" $(( (3 * 2000000 + (16 << 20)) / 1024 ))

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
