#!/usr/bin/env bash
# jkz-compress on a real disk: a generated 256 MiB document of 3,500
# sections (one offload file each), with the state directory on the file
# system of WORKDIR (default /tmp; check it is a disk with `df /tmp`).
#
# Four times, measured side by side in one run, REPS interleaved rounds
# (default 3), median and best reported:
#   first   jkz-compress into an empty state directory (every file is new)
#   second  the same again (every offload file already exists)
#   dd      `dd conv=fsync` of the same 256 MiB into WORKDIR: the disk's floor
#           for writing and syncing those bytes
#   sha     `sha256sum` of the input: the floor for reading and hashing it
# Targets: first <= 2x dd, second <= 1.5x sha; peak RSS as before.
# Then restore of the output, checked byte for byte against the input.
#
#   bench/compress.sh [WORKDIR]
#   BASE_BIN=/path/to/other/jkz-compress bench/compress.sh   (adds that
#       build's first and second run to every round, for before/after)
#   REPS=5 bench/compress.sh
#
# Needs python3 and GNU time (/usr/bin/time; `apt-get install time`).
# Before every timed command the disk is synced, so no command pays for the
# previous one's writes. Every first run writes into a new state directory
# and nothing is deleted until the end: ext4 skips inodes deleted within the
# last minutes when it allocates new ones, scanning past each, so files
# deleted just before a run (a removed state directory, or the temp files
# the old build creates and deletes on every run) would make every file
# creation slow for whatever runs next. For the same reason BASE_BIN's runs
# come after all of this build's rounds.
set -euo pipefail
cd "$(dirname "$0")/.."

[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install -y time)" >&2; exit 1; }
reps=${REPS:-3}
cargo build --release --locked --quiet --bin jkz-compress
bin="$PWD/target/release/jkz-compress"
base_bin="${BASE_BIN:-}"

base="${1:-/tmp}"
work="$(mktemp -d "$base/jkz-bench-compress.XXXXXX")"
trap 'rm -rf "$work"' EXIT
doc="$work/doc.md"
df -hT "$work" | tail -1 | awk '{ printf "work dir on %s (%s)\n", $1, $2 }'

# 256 MiB: 3,500 sections of ~77 KB. Each has a heading, a protected block,
# subsections with a code fence, and differs from every other, so each is
# offloaded into a file of its own.
python3 - "$doc" <<'PY'
import sys
target, sections = 256 << 20, 3500
per = target // sections
with open(sys.argv[1], "w", encoding="utf-8") as f:
    for s in range(sections):
        line = f"section {s}: a line of pasted output, with é and 漢字 and digits 0123456789\n"
        part = line * 40
        head = f"# Section {s}\n<!-- jkz:verdict-json {{\"verdict\":\"PASS\"}} -->\n"
        chunk, size, sub = [head], len(head.encode()), 0
        while size < per:
            block = f"## Part {sub}\n```text\n# not a heading\n```\n" + part
            chunk.append(block); size += len(block.encode()); sub += 1
        f.write("".join(chunk))
PY
size=$(stat -c %s "$doc")
echo "document: $size bytes ($((size >> 20)) MiB), 3500 sections"

declare -A times rss
# timed NAME CMD...: syncs, then runs CMD with stdout to $work/out.NAME;
# appends the wall time to times[NAME], keeps the peak RSS (KiB).
timed() {
    local name=$1; shift
    sync
    /usr/bin/time -f "%e %M" -o "$work/time" "$@" >"$work/out.$name"
    local secs kib
    read -r secs kib <"$work/time"
    times[$name]="${times[$name]:-} $secs"
    rss[$name]=$kib
}

names=(sha dd first second)
[ -n "$base_bin" ] && names+=(base_first base_second)
cat "$doc" >/dev/null # warm the page cache for every contender
for round in $(seq "$reps"); do
    timed sha sha256sum "$doc"
    timed dd dd if="$doc" of="$work/dd.$round" bs=1M conv=fsync status=none
    timed first "$bin" --state-dir "$work/state.$round" "$doc"
    timed second "$bin" --state-dir "$work/state.$round" "$doc"
    cmp -s "$work/out.first" "$work/out.second" || { echo "FAIL: runs disagree" >&2; exit 1; }
    echo "round $round done" >&2
done
if [ -n "$base_bin" ]; then
    for round in $(seq "$reps"); do
        timed base_first "$base_bin" --state-dir "$work/base.$round" "$doc"
        timed base_second "$base_bin" --state-dir "$work/base.$round" "$doc"
        echo "base round $round done" >&2
    done
fi
ln -s "state.1" "$work/state"

files=$(find "$work/state/context-offload" -name '*.md' | wc -l)
echo "compressed: $(stat -c %s "$work/out.first") bytes, $files offload files"
"$bin" --state-dir "$work/state" --restore "$work/out.first" | cmp -s - "$doc" \
    || { echo "FAIL: restore(compress(x)) != x" >&2; exit 1; }
"$bin" --state-dir "$work/state" "$work/out.first" | cmp -s - "$work/out.first" \
    || { echo "FAIL: compress is not idempotent" >&2; exit 1; }

stat_of() { # NAME -> "median best"
    tr ' ' '\n' <<<"${times[$1]}" | grep . | sort -g | awk '
        { v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; print m, v[1] }'
}
read -r sha_m sha_b < <(stat_of sha)
read -r dd_m dd_b < <(stat_of dd)
printf "%-26s %8s %8s %10s %14s\n" "" median best "peak RSS" "ratio (median)"
for n in "${names[@]}"; do
    read -r m b < <(stat_of "$n")
    case $n in
        first|base_first) ratio=$(awk -v a="$m" -v f="$dd_m" 'BEGIN { printf "%.2fx dd", a / f }') ;;
        second|base_second) ratio=$(awk -v a="$m" -v f="$sha_m" 'BEGIN { printf "%.2fx sha256sum", a / f }') ;;
        *) ratio="" ;;
    esac
    printf "%-26s %7.2fs %7.2fs %7d KiB  %s\n" "$n" "$m" "$b" "${rss[$n]}" "$ratio"
done
read -r f_m _ < <(stat_of first)
read -r s_m _ < <(stat_of second)
awk -v f="$f_m" -v d="$dd_m" -v s="$s_m" -v h="$sha_m" 'BEGIN {
    printf "targets: first <= 2x dd: %.2fx %s; second <= 1.5x sha256sum: %.2fx %s\n",
        f / d, (f <= 2 * d ? "met" : "MISSED"), s / h, (s <= 1.5 * h ? "met" : "MISSED") }'
