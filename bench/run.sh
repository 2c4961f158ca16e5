#!/usr/bin/env bash
# `jkz run -- cat FILE` against `cat FILE | jkz-truncate`, side by side, and
# `jkz deliberations list` over 10,000 records.
#
# Targets: at 1 KB, jkz run's overhead <= 2 ms (median of the pairwise
# differences); at 512 MiB, throughput >= 0.8x the pipe's (median of the
# pairwise time ratios); the list <= 100 ms (median). Both commands run
# under `sh -c`, so the launcher costs the same; they take turns (A B A B
# …) so a drift in the machine's speed reaches both alike. Both keep the
# full answer: jkz-truncate its full output, jkz run its deliberation
# record; context-offload/ is emptied between runs (untimed).
#
# Usage: bench/run.sh [RUNS_1KB] [RUNS_512MIB]   (default 40 and 5)
#   JKZ_RUN_BASE=/dir/of/an/older/release/build bench/run.sh
#       also runs that build's jkz run and jkz-truncate in the same turns
#       and reports its overhead and throughput beside the new build's
#       (before/after, side by side).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --quiet --bin jkz --bin jkz-truncate
bin="$PWD/target/release"
work="$(mktemp -d "${TMPDIR:-/tmp}/jkz-bench-run.XXXXXX")"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/state"
head -c 1000 /dev/urandom | base64 -w 100 | head -c 1024 > "$work/1k.txt"
python3 bench/gen_log.py 536870912 > "$work/512m.txt" 2>/dev/null \
    || yes 'a line of a long answer, 0123456789 abcdefghijklmnopqrstuvwxyz' | head -c 536870912 > "$work/512m.txt"

python3 - "$bin" "$work" "${1:-40}" "${2:-5}" "${JKZ_RUN_BASE:-}" <<'PY'
import json, os, shutil, statistics, subprocess, sys, time
bin, work, runs_small, runs_big, base = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
state = os.path.join(work, "state")
env = {k: v for k, v in os.environ.items() if not k.startswith(("JKZ_", "CLAUDE"))}
env["JKZ_STATE_DIR"] = state

def timed(cmd):
    t = time.perf_counter()
    subprocess.run(["sh", "-c", cmd], env=env, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t

def clean():
    shutil.rmtree(os.path.join(state, "context-offload"), ignore_errors=True)

def pair(name, size_file, runs):
    f = os.path.join(work, size_file)
    def cmds(b):
        return (f"'{b}/jkz' run --role judge -- cat '{f}'",
                f"cat '{f}' | '{b}/jkz-truncate' --role judge")
    run, pipe = cmds(bin)
    a, b, c, d = [], [], [], []
    timed(run); timed(pipe); clean()
    for _ in range(runs):
        a.append(timed(run)); clean()
        b.append(timed(pipe)); clean()
        if base:
            c.append(timed(cmds(base)[0])); clean()
            d.append(timed(cmds(base)[1])); clean()
    med = statistics.median
    diffs = [x - y for x, y in zip(a, b)]
    ratios = [y / x for x, y in zip(a, b)]
    print(f"{name}: jkz run median {med(a)*1000:.2f} ms, pipe median {med(b)*1000:.2f} ms")
    if base:
        print(f"  base build: jkz run median {med(c)*1000:.2f} ms, pipe median {med(d)*1000:.2f} ms; "
              f"overhead {med([z - y for z, y in zip(c, d)])*1000:.2f} ms, "
              f"throughput {med([y / z for z, y in zip(c, d)]):.2f}x")
    return med(diffs), med(ratios)

d, _ = pair("1 KB", "1k.txt", runs_small)
print(f"  overhead (median of pairwise differences): {d*1000:.2f} ms  (target <= 2 ms)")
_, r = pair("512 MiB", "512m.txt", runs_big)
size = os.path.getsize(os.path.join(work, "512m.txt"))
print(f"  throughput jkz run / pipe (median of pairwise ratios): {r:.2f}x  (target >= 0.8x)")

# 10,000 records, written as jkz writes them (the index is then built by
# the first list, as after an upgrade or a lost index).
d = os.path.join(state, "deliberations")
os.makedirs(d, exist_ok=True)
for i in range(10000):
    rid = f"20250301T{i//3600%24:02d}{i//60%60:02d}{i%60:02d}.{i%1000:03d}Z-{i%50}-judge-{1000+i}"
    rec = {"role": ["judge", "builder", "qa"][i % 3], "timestamp": "2025-03-01T00:00:00.000Z",
           "status": "ok", "issue": i % 50, "pr": None, "phase": "review", "iteration": i % 4 + 1,
           "model": "m", "endpoint": None, "service": None, "mode": "primary", "command": ["cat"],
           "exit_code": 0, "duration_ms": 12, "tokens": None, "verdict": "PASS",
           "response_bytes": 4000, "response_sha256": "0" * 64, "response_file": None,
           "response": "r" * 4000}
    with open(os.path.join(d, rid + ".json"), "w") as fh:
        json.dump(rec, fh)
lst = f"'{bin}/jkz' deliberations list"
t0 = timed(lst)
print(f"deliberations list, 10,000 records, first (index built): {t0*1000:.1f} ms")
times = [timed(lst) for _ in range(20)]
print(f"deliberations list, 10,000 records: median {statistics.median(times)*1000:.1f} ms, "
      f"max {max(times)*1000:.1f} ms  (target <= 100 ms)")
t_true = statistics.median([timed("true") for _ in range(20)])
print(f"  (sh -c true alone: {t_true*1000:.1f} ms)")
PY
