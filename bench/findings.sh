#!/usr/bin/env bash
# `jkz findings`: importing 10,000 findings, and listing one issue's
# findings with 100,000 stored. Whole processes (startup included), timed
# from a small Python driver, medians and p90 over RUNS runs.
#
#   bench/findings.sh [RUNS]      (default 20)
#
# Cases:
# - import: a CodeRabbit review-comments export of 10,000 comments (GitHub
#   API shape, ~1 KB bodies with badges, <details> and suggestion fences),
#   into an empty history (a fresh state directory per run, untimed) and
#   as a re-import of the same iteration into a history holding it.
#   Target: <= 1 s.
# - list: `jkz findings --issue N` (text, and --json) with 100,000
#   findings stored: 100 issues of 1,000 findings over 3 iterations of
#   three sources each, the queried issue one of them; and, the worst case,
#   one issue holding 10,000 findings. Target: p50 <= 20 ms.
# For the PreCompact hook with findings present: FINDINGS=100000
# bench/pre_compact.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
cargo build --release --locked --quiet --bin jkz
jkz="$PWD/target/release/jkz"
work="$(mktemp -d "${TMPDIR:-/tmp}/jkz-bench-findings.XXXXXX")"
trap 'rm -rf "$work"' EXIT
unset CLAUDE_PROJECT_DIR JKZ_STATE_DIR

python3 - "$jkz" "$work" "$runs" <<'PY'
import json, os, shutil, statistics, subprocess, sys, time
jkz, work, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
env = {k: v for k, v in os.environ.items() if not k.startswith(("JKZ_", "CLAUDE"))}

def comment(i):
    body = ("_⚠️ Potential issue_ | _🟠 Major_\n\n"
            f"**Check the result of `call_{i}` before using it ({i % 97} callers).**\n\n"
            f"`call_{i}` returns `None` when the cache is cold; line {i % 400} unwraps it.\n\n"
            "<details>\n<summary>🐛 Proposed fix</summary>\n\n```diff\n-let v = call().unwrap();\n+let v = call()?;\n```\n</details>\n\n"
            "<!-- suggestion_start -->\n\n<details>\n<summary>📝 Committable suggestion</summary>\n\n"
            "> ‼️ **IMPORTANT**\n> Carefully review the code before committing.\n\n"
            "```suggestion\n    let v = call()?;\n```\n\n</details>\n\n<!-- suggestion_end -->\n\n"
            "<!-- This is an auto-generated comment by CodeRabbit -->")
    return {"id": 100000 + i, "pull_request_review_id": 9, "path": f"src/mod{i % 250}/file{i % 40}.rs",
            "line": 10 + i % 900, "original_line": 10 + i % 900, "commit_id": "a1f3c9e",
            "user": {"login": "coderabbitai[bot]", "type": "Bot"}, "body": body,
            "created_at": "2025-06-02T10:15:00Z"}

export = os.path.join(work, "coderabbit-10000.json")
with open(export, "w") as f:
    json.dump([comment(i) for i in range(10000)], f)
print(f"export: 10,000 comments, {os.path.getsize(export) / 1e6:.1f} MB")

def run(args, state, check=True):
    t = time.perf_counter()
    r = subprocess.run([jkz, "--state-dir", state] + args, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    took = time.perf_counter() - t
    if check and r.returncode != 0:
        sys.exit(f"{args}: exit {r.returncode}: {r.stderr.decode()}")
    return took

def stats(ms):
    ms = sorted(ms)
    p90 = ms[max(0, -(-len(ms) * 9 // 10) - 1)]
    return statistics.median(ms), p90

imp = ["findings", "import", "--issue", "7", "--iteration", "1", "--source", "coderabbit", export]
fresh, again = [], []
for n in range(runs):
    state = os.path.join(work, f"s{n}")
    os.mkdir(state)
    fresh.append(run(imp, state) * 1000)
    again.append(run(imp, state) * 1000)
    shutil.rmtree(state)
for name, ms in [("import 10,000 (empty history)", fresh), ("re-import the same iteration", again)]:
    p50, p90 = stats(ms)
    print(f"{name:<34} p50 {p50:7.1f} ms  p90 {p90:7.1f} ms  target <= 1000 ms: {'met' if p50 <= 1000 else 'MISSED'}")

# 100,000 stored: 100 issues x 1,000 findings, 3 iterations x 3 sources.
state = os.path.join(work, "big")
os.mkdir(state)
def verdict(issue, iteration, source_salt, count):
    items = [{"file": f"src/m{(i * 7 + source_salt) % 60}.rs", "line": i % 500,
              "message": f"finding {i} of issue {issue}: the handler {'does too much' if i % 2 else 'leaks a handle'}",
              "severity": ["critical", "major", "minor", "nit"][i % 4]}
             for i in range(count) if (i + iteration) % 10 != 0]
    return json.dumps({"verdict": "FAIL", "findings": items})
t = time.perf_counter()
for issue in range(1, 101):
    for iteration in (1, 2, 3):
        for role in ("reviewer", "qa", "security"):
            path = os.path.join(work, "v.json")
            with open(path, "w") as f:
                f.write(verdict(issue, iteration, 0, 1000))
            run(["findings", "import", "--issue", str(issue), "--iteration", str(iteration),
                 "--source", "verdict", "--role", role, path], state)
import sqlite3
db = sqlite3.connect(os.path.join(state, "cr-history.db"))
(findings,), (sightings,), (in50,) = (db.execute(q).fetchone() for q in (
    "SELECT count(*) FROM findings", "SELECT count(*) FROM sightings",
    "SELECT count(*) FROM findings WHERE issue = '50'"))
db.close()
print(f"stored: 100 issues, {findings:,} findings ({in50:,} in issue 50), {sightings:,} sightings, "
      f"{os.path.getsize(os.path.join(state, 'cr-history.db')) / 1e6:.0f} MB, built in {time.perf_counter() - t:.0f} s")
# The worst case: one more issue holding 10,000.
run(imp[:2] + ["--issue", "999"] + imp[4:], state)
cases = [("list issue 50 (1,000 findings)", ["findings", "--issue", "50"]),
         ("list issue 50 --json", ["findings", "--issue", "50", "--json"]),
         ("list issue 50 --status open", ["findings", "--issue", "50", "--status", "open"]),
         ("list issue 999 (10,000 findings)", ["findings", "--issue", "999"]),
         ("list issue 50 --iteration 2", ["findings", "--issue", "50", "--iteration", "2"])]
times = {name: [] for name, _ in cases}
for _ in range(max(runs, 30)):
    for name, args in cases:  # taking turns
        times[name].append(run(args, state) * 1000)
for name, _ in cases:
    p50, p90 = stats(times[name])
    target = f"target p50 <= 20 ms: {'met' if p50 <= 20 else 'MISSED'}" if "999" not in name and "--iteration" not in name else "(no target)"
    print(f"{name:<34} p50 {p50:7.1f} ms  p90 {p90:7.1f} ms  {target}")
def true_ms():
    t = time.perf_counter()
    subprocess.run(["/bin/true"])
    return (time.perf_counter() - t) * 1000
print(f"{'/bin/true (any process)':<34} p50 {statistics.median(true_ms() for _ in range(30)):7.1f} ms")
PY
