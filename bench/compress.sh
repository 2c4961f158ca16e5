#!/usr/bin/env bash
# Times jkz-compress and jkz-compress --restore on a generated 256 MiB
# document against sha256sum of the same file (the floor: every offloaded
# byte must be hashed), and reports the ratios and peak RSS.
#
# Targets: compress and restore each at least 0.5x the speed of sha256sum;
# peak RSS under 2x the largest single section + 32 MiB.
#
# Usage: bench/compress.sh [WORKDIR]   (default: a temp dir under /dev/shm
# when it exists, so the disk's fsync speed does not hide the CPU cost;
# pass a directory on disk to include it)
set -euo pipefail
cd "$(dirname "$0")/.."

[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install -y time)" >&2; exit 1; }
cargo build --release --quiet --bin jkz-compress
bin="$PWD/target/release/jkz-compress"

base="${1:-$( [ -d /dev/shm ] && echo /dev/shm || echo "${TMPDIR:-/tmp}" )}"
work="$(mktemp -d "$base/jkz-bench-compress.XXXXXX")"
trap 'rm -rf "$work"' EXIT
doc="$work/doc.md"

# 256 MiB: 64 sections of 4 MiB, each with subsections, code fences and a
# protected block; the largest single section (a level-1 heading with
# everything below it) is 4 MiB.
python3 - "$doc" <<'PY'
import sys
target = 256 << 20
sections = 64
per = target // sections
with open(sys.argv[1], "w", encoding="utf-8") as f:
    for s in range(sections):
        # Every section differs, so each is its own offload file.
        line = f"section {s}: a line of pasted output, with é and 漢字 and digits 0123456789\n"
        part = line * 60
        head = f"# Section {s}\n<!-- jkz:verdict-json {{\"verdict\":\"PASS\"}} -->\n"
        chunk, size, sub = [head], len(head.encode()), 0
        while size < per:
            block = f"## Part {sub}\n```text\n# not a heading\n```\n" + part
            chunk.append(block); size += len(block.encode()); sub += 1
        f.write("".join(chunk))
PY
size=$(stat -c %s "$doc")
largest=$((size / 64))
echo "document: $size bytes ($((size >> 20)) MiB), largest section ~$((largest >> 20)) MiB"

measure() { # label, command... -> prints seconds and max RSS KiB
    local label=$1; shift
    /usr/bin/time -f "%e %M" -o "$work/time" "$@" >"$work/out.$label"
    read -r secs rss <"$work/time"
    echo "$label $secs $rss"
}

cat "$doc" >/dev/null # warm the page cache for every contender
read -r _ t_sha _ < <(measure sha sha256sum "$doc")
read -r _ t_c rss_c < <(measure compress "$bin" --state-dir "$work/state" "$doc")
read -r _ t_r rss_r < <(measure restore "$bin" --state-dir "$work/state" --restore "$work/out.compress")
cmp -s "$work/out.restore" "$doc" || { echo "FAIL: restore(compress(x)) != x" >&2; exit 1; }
"$bin" --state-dir "$work/state" "$work/out.compress" | cmp -s - "$work/out.compress" \
    || { echo "FAIL: compress is not idempotent" >&2; exit 1; }

limit_kib=$(( (2 * largest + (32 << 20)) / 1024 ))
report() { # label, seconds, rss
    awk -v l="$1" -v t="$2" -v s="$t_sha" -v r="$3" -v lim="$limit_kib" 'BEGIN {
        ratio = (t > 0) ? s / t : 999;
        printf "%-9s %6.2fs  speed %.2fx sha256sum (target >= 0.5: %s)  peak RSS %d KiB (target < %d KiB: %s)\n",
            l, t, ratio, (ratio >= 0.5 ? "ok" : "MISSED"), r, lim, (r < lim ? "ok" : "MISSED") }'
}
echo "compressed: $(stat -c %s "$work/out.compress") bytes, $(ls "$work/state/context-offload" | wc -l) offload files"
printf "%-9s %6.2fs\n" sha256sum "$t_sha"
report compress "$t_c" "$rss_c"
report restore "$t_r" "$rss_r"
# coreutils sha256sum may not use the CPU's SHA extensions while jkz (sha2)
# does: show the hardware-accelerated floor too, for an honest comparison.
if command -v openssl >/dev/null; then
    read -r _ t_ssl _ < <(measure openssl openssl dgst -sha256 "$doc")
    awk -v a="$t_ssl" -v c="$t_c" -v r="$t_r" 'BEGIN {
        printf "openssl   %6.2fs  (compress %.2fx, restore %.2fx its speed)\n", a, (c>0?a/c:999), (r>0?a/r:999) }'
fi
