#!/usr/bin/env bash
# Times `jkz gc --dry-run` with 1 GiB of recent pre-compact snapshots to scan
# for references and 200 idle offload files (half of them named by a
# snapshot), and reports wall time and peak RSS from /usr/bin/time -v.
#
# Target: memory independent of what the snapshots weigh (one scan buffer
# plus the names); one pass over the bytes.
#
# Usage: bench/gc.sh [JKZ_BINARY...]   (default: this tree's release build;
# pass several to compare them side by side on the same state)
set -euo pipefail
cd "$(dirname "$0")/.."

[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install -y time)" >&2; exit 1; }
if [ $# -eq 0 ]; then
    cargo build --release --quiet --bin jkz
    set -- "$PWD/target/release/jkz"
fi

base="$( [ -d /dev/shm ] && echo /dev/shm || echo "${TMPDIR:-/tmp}" )"
work="$(mktemp -d "$base/jkz-bench-gc.XXXXXX")"
trap 'rm -rf "$work"' EXIT
state="$work/state"

python3 - "$state" <<'PY'
import hashlib, os, sys, time
state = sys.argv[1]
offload = os.path.join(state, "context-offload")
os.makedirs(offload)
old = time.time() - 8 * 24 * 3600
names = []
for i in range(200):
    name = hashlib.sha256(str(i).encode()).hexdigest() + ".md"
    path = os.path.join(offload, name)
    with open(path, "w") as f:
        f.write(f"section {i}\n")
    os.utime(path, (old, old))
    names.append(name)
# 64 snapshots of 16 MiB: JSON-ish filler, with the even-numbered names
# spread through them (some past the first 4 MiB of their file).
filler = ('{"k": "a line of pipeline state, with digits 0123456789 and text"}, ' * 16).encode()
for s in range(64):
    with open(os.path.join(state, f"pre-compact-20250101T0000{s:02d}.000Z-1.json"), "wb") as f:
        written = 0
        while written < 16 << 20:
            f.write(filler)
            written += len(filler)
            if written % (3 << 20) < len(filler):
                n = names[(2 * (s * 7 + written // (3 << 20))) % 200]
                f.write(f'"context-offload/{n}", '.encode())
PY
du -sh "$state" | sed 's/^/state: /'
for bin in "$@"; do
    echo "== $bin"
    /usr/bin/time -v "$bin" --state-dir "$state" gc --dry-run 2>"$work/time" | tail -1
    grep -E "Elapsed \(wall|Maximum resident" "$work/time"
done
