#!/usr/bin/env bash
# jkz patterns: mining 10,000 deliberation records from scratch, `inject`
# with 10,000 patterns, and the incremental mining of one record.
#
# Targets: mining 10,000 records from scratch <= 5 s (median of RUNS_BUILD
# builds); `jkz patterns inject` p50 <= 10 ms with 10,000 patterns (the
# whole process, as a pipeline spawns it; with --issue it also ranks by the
# issue's context and logs the injection); incremental mining of one
# record <= 5 ms: `jkz-truncate --record` of an answer holding an
# "Accumulated Patterns" section against the same answer without one (the
# same size), taking turns, median of the pairwise differences; and the same
# with items that wake every quarantine rule (words each rule looks for, so
# each rule's regular expression is compiled and run), the worst case of
# mining one record.
#
# The 10,000 records are generated: each answer holds about 5 KB of prose
# and an "Accumulated Patterns" section of three items: one rule of its own
# (6 to 10 words from a vocabulary of 6,000), one of three rules every
# record repeats, and a rephrasing (upper case, punctuation) of an earlier
# record's rule; every fifth ends with a PASS verdict. 50 pipeline files
# give the issues a title and a failure context.
#
# Usage: bench/patterns.sh [RUNS_INJECT [RUNS_RECORD [RUNS_BUILD]]]   (default 50, 40, 3)
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --quiet --bin jkz --bin jkz-truncate
bin="$PWD/target/release"
work="$(mktemp -d "${TMPDIR:-/tmp}/jkz-bench-patterns.XXXXXX")"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/state"

python3 - "$bin" "$work" "${1:-50}" "${2:-40}" "${3:-3}" <<'PY'
import json, os, random, statistics, subprocess, sys, time
bin, work, runs_inject, runs_record, runs_build = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
state = os.path.join(work, "state")
env = {k: v for k, v in os.environ.items() if not k.startswith(("JKZ_", "CLAUDE"))}
env["JKZ_STATE_DIR"] = state

random.seed(7)
d = os.path.join(state, "deliberations"); os.makedirs(d, exist_ok=True)
os.makedirs(os.path.join(state, "pipeline"), exist_ok=True)
syll = ["ka","lo","mi","ne","ru","ta","vo","zi","pe","sa","do","fu","gi","ha","ju","be","co","we","xi","ya"]
vocab = sorted({"".join(random.choice(syll) for _ in range(4)) for _ in range(6000)})
common = ["run cargo fmt before committing", "check the exit codes of every binary", "never weaken an existing test"]
def rule(i):
    r = random.Random(i)
    return " ".join(r.choice(vocab) for _ in range(r.randint(6, 10))).capitalize()
prose = "The change reads the file once and keeps the head and the tail. " * 40
for i in range(10000):
    role = ["judge", "builder", "qa"][i % 3]
    items = [rule(i), common[i % 3]] + ([rule(i - 7).upper() + "!"] if i > 10 else [])
    resp = prose + "\n## Accumulated Patterns\n\n" + "".join(f"- {t}\n" for t in items) + "\n## Next\n" + prose
    if i % 5 == 0:
        resp += '\n<!-- jkz:verdict-json {"verdict":"PASS"} -->\n'
    ts = f"2025-03-01T{i//3600%24:02d}:{i//60%60:02d}:{i%60:02d}.{i%1000:03d}Z"
    rid = f"20250301T{i//3600%24:02d}{i//60%60:02d}{i%60:02d}.{i%1000:03d}Z-{i%50}-{role}-{1000+i}"
    rec = {"role": role, "timestamp": ts, "status": "ok", "issue": i % 50, "pr": None, "phase": "review",
           "iteration": 1, "model": "m", "endpoint": None, "service": None, "mode": "primary",
           "command": ["wrapper"], "exit_code": 0, "duration_ms": 12, "tokens": None, "verdict": None,
           "response_bytes": len(resp), "response_sha256": "0" * 64, "response_file": None, "response": resp}
    with open(os.path.join(d, rid + ".json"), "w") as fh:
        json.dump(rec, fh)
for k in range(50):
    with open(os.path.join(state, "pipeline", f"{k}.json"), "w") as fh:
        json.dump({str(k): {"current_phase": "fixing", "title": rule(k * 3),
                            "failure_context": "the build failed: " + rule(k * 11)}}, fh)

def timed(argv, stdin=None):
    t = time.perf_counter()
    subprocess.run(argv, env=env, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t

def clear_store():
    for name in ["memory.db", "memory.db-wal", "memory.db-shm", "patterns-feedback.jsonl"]:
        try: os.remove(os.path.join(state, name))
        except FileNotFoundError: pass

jkz = os.path.join(bin, "jkz")
# 1. From scratch: the first `mine` builds memory.db from every record.
timed([jkz, "deliberations", "list"])  # the index, as any state has one
builds = []
for _ in range(runs_build):
    clear_store()
    builds.append(timed([jkz, "patterns", "mine"]))
out = subprocess.run([jkz, "patterns", "list", "--json"], env=env, capture_output=True, check=True).stdout
n = len(json.loads(out))
print(f"mine 10,000 records from scratch: median {statistics.median(builds):.2f} s "
      f"(min {min(builds):.2f}, max {max(builds):.2f}); {n:,} patterns  (target <= 5 s)")

# 2. inject with 10,000 patterns (scored as of the records' day).
def pct(xs, p):
    xs = sorted(xs); return xs[max(1, -(-len(xs) * p // 100)) - 1]
for label, extra in [("--role judge", []), ("--role judge --issue 7", ["--issue", "7"])]:
    argv = [jkz, "patterns", "inject", "--now", "2025-03-02T00:00:00Z", "--role", "judge", "--budget", "4096"] + extra
    timed(argv)
    ts = [timed(argv) * 1000 for _ in range(runs_inject)]
    print(f"inject {label}, 10,000 patterns: p50 {pct(ts, 50):.2f} ms, p90 {pct(ts, 90):.2f} ms  (target p50 <= 10 ms)")
floor = [timed(["true"]) * 1000 for _ in range(runs_inject)]
print(f"  (spawning `true` the same way: p50 {pct(floor, 50):.2f} ms)")

# 3. One record mined as it is written, against the same answer without patterns.
with_p = prose + "\n## Accumulated Patterns\n\n- Kakakaju xirubeta pefucota gimimine\n- run cargo fmt before committing\n- A new rule for this very record\n\n## Next\n" + prose
without = with_p.replace("Accumulated Patterns", "Accumulated Notions!")
assert len(with_p) == len(without)
woken = prose + "\n## Accumulated Patterns\n\n- curl the health endpoint and pipe it into jq\n- ignore whitespace-only changes in diffs\n- make the tests pass before you push\n- read the api key from the keyring, never a file\n- skip nothing: remove dead code with its tests\n\n## Next\n" + prose
files = {}
for name, text in [("with", with_p), ("without", without), ("woken", woken)]:
    files[name] = os.path.join(work, name + ".txt")
    with open(files[name], "w") as fh: fh.write(text)
rec = [os.path.join(bin, "jkz-truncate"), "--record", "--role", "judge", "--issue", "7"]
def record(name):
    with open(files[name]) as fh: return timed(rec, stdin=fh) * 1000
record("with"); record("without")
diffs, a, b = [], [], []
for _ in range(runs_record):
    x, y = record("with"), record("without")
    a.append(x); b.append(y); diffs.append(x - y)
print(f"record with patterns / without: median {statistics.median(a):.2f} / {statistics.median(b):.2f} ms; "
      f"mining one record (median of pairwise differences): {statistics.median(diffs):.2f} ms  (target <= 5 ms)")
record("woken")
diffs = []
for _ in range(runs_record):
    x, y = record("woken"), record("without")
    diffs.append(x - y)
print(f"  with items that wake every quarantine rule: {statistics.median(diffs):.2f} ms  (target <= 5 ms)")
PY
