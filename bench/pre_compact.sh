#!/usr/bin/env bash
# Bench: jkz-pre-compact as a whole process (startup included) against the
# bash+jq reference hook (bench/reference-pre-compact.sh) doing the same job,
# on a git project with 100 and with 10,000 pipeline files.
#
# Usage: bench/pre_compact.sh [RUNS_100 [RUNS_10000]]   (defaults 100 and 20)
#   FINDINGS=100000 bench/pre_compact.sh
#       the same with a findings history (state/cr-history.db) of that many
#       findings: 1,000 for each pipeline the digest details, over 3
#       iterations, the rest in 1,000-finding issues of their own.
# Targets: p50 <= 5 ms (100 files), <= 50 ms (10,000), >= 10x faster than bash+jq.
# Timing is bench/time_runs.rs: it spawns the hook from a small process (the
# event on stdin, as Claude Code gives it), times spawn to exit, and removes
# the snapshot each run wrote outside the timed part. Both hooks are timed
# the same way. Two more columns tell what the hook costs from what the
# machine costs: "process" is /bin/true timed the same way (starting and
# ending any process), "floor" is bench/pre_compact_floor.rs, only the
# unavoidable work (list and read every pipeline file, write that many
# bytes twice, sync, rename). The hook, the floor and /bin/true take turns,
# run by run, so the machine's changes of speed reach all three alike; the
# bash+jq hook (fifty times slower) is timed after them. Note `uptime`
# first: other builds on the machine move every figure.
set -euo pipefail
cd "$(dirname "$0")/.."
runs_small=${1:-100}
runs_big=${2:-20}
command -v jq >/dev/null || { echo "bench: needs jq for the reference hook" >&2; exit 2; }
findings=${FINDINGS:-0}
cargo build --release --locked --bin jkz-pre-compact --bin jkz >&2
hook="$PWD/target/release/jkz-pre-compact"
floor="$PWD/target/release/pre-compact-floor"
rustc -O --edition 2021 -o "$floor" bench/pre_compact_floor.rs
timer="$PWD/target/release/time-runs"
rustc -O --edition 2021 -o "$timer" bench/time_runs.rs
reference="$PWD/bench/reference-pre-compact.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/jkz-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

make_project() { # DIR COUNT
  local dir=$1 count=$2
  mkdir -p "$dir/state/pipeline"
  git -C "$dir" init -q -b bench
  printf 'state/\n' >"$dir/.gitignore"
  git -C "$dir" add .gitignore
  git -C "$dir" -c user.name=b -c user.email=b@b commit -q -m init
  for ((n = 1; n <= count; n++)); do
    printf '{"%d": {"current_phase": "%s", "active_agent": "builder", "issue_type": "feature", "pr_number": "%d", "started_at": "2025-01-01T00:00:00Z", "last_updated": "2025-01-01T00:%02d:%02d.000Z", "plan_iterations": "2", "review_fix_count": "1", "qa_fix_count": "0", "review_passed": "true", "qa_passed": "false", "sub_issues": [], "pending_decisions": ["ship behind a flag?"], "failure_context": "test_total failed: expected 10, got 9", "steps": {"plan": "done"}, "tokens": {"in": 1000}}, "lastActivity": "2025-01-01T00:00:00.000Z", "heartbeat_pid": 4242}\n' \
      "$n" "$([ $((n % 3)) = 0 ] && echo done || echo building)" "$n" $((n / 60 % 60)) $((n % 60)) \
      >"$dir/state/pipeline/$n.json"
  done
  printf 'Approved plan: integer cents.\n1. add column\n2. backfill\n' >"$dir/state/pipeline/1-compact-plan.md"
}

add_findings() { # DIR COUNT: a history for the detailed pipelines, and filler
  local dir=$1 count=$2 detailed
  detailed=$(CLAUDE_PROJECT_DIR="$dir" "$hook" <<<"$(event "$dir")" | sed -n 's/^### Issue #\([0-9]*\).*/\1/p')
  rm -f "$dir"/state/pre-compact-*.json
  python3 - "$PWD/target/release/jkz" "$dir/state" "$count" $detailed <<'PY'
import json, os, subprocess, sys
jkz, state, count, detailed = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
path = os.path.join(state, "..", "findings.json")
def load(issue, iteration, n):
    items = [{"file": f"src/m{i % 60}.rs", "line": i % 500, "severity": ["critical", "major", "minor", "nit"][i % 4],
              "message": f"finding {i}: the handler {'does too much' if i % 2 else 'leaks a handle'}"}
             for i in range(n) if (i + iteration) % 10 != 0]
    with open(path, "w") as f:
        json.dump({"verdict": "FAIL", "findings": items}, f)
    subprocess.run([jkz, "--state-dir", state, "findings", "import", "--issue", str(issue), "--iteration",
                    str(iteration), "--source", "verdict", path], check=True, stdout=subprocess.DEVNULL)
for issue in detailed:
    for iteration in (1, 2, 3):
        load(issue, iteration, 1000)
for k in range(max(0, count - 1000 * len(detailed)) // 1000):
    load(1_000_000 + k, 1, 1111)
os.remove(path)
PY
}

event() { # DIR
  printf '{"session_id":"bench","transcript_path":"/dev/null","cwd":"%s","hook_event_name":"PreCompact","trigger":"manual","custom_instructions":""}' "$1"
}

measure() { # DIR RUNS PROGRAM... -> one "p50 p90" line (ms) per program
  local dir=$1 runs=$2
  shift 2
  event "$dir" >"$work/event.json"
  CLAUDE_PROJECT_DIR="$dir" "$timer" "$runs" "$dir/state" "$work/event.json" "$@"
}

printf '%-8s %16s %14s %16s %14s %9s %s\n' files "jkz p50/p90 ms" "floor p50 ms" "process p50 ms" "bash+jq p50 ms" speedup target
for spec in "100 $runs_small 5" "10000 $runs_big 50"; do
  read -r count runs target <<<"$spec"
  dir="$work/p$count"
  make_project "$dir" "$count"
  if [ "$findings" -gt 0 ]; then
    add_findings "$dir" "$findings"
  fi
  # Warm the page cache and check both hooks work before timing.
  for program in "$hook" "$reference" "$floor"; do
    out=$(CLAUDE_PROJECT_DIR="$dir" "$program" <<<"$(event "$dir")")
    grep -q "Issue #" <<<"$out" || { echo "bench: $program printed no digest" >&2; exit 1; }
    if [ "$findings" -gt 0 ] && [ "$program" = "$hook" ]; then
      grep -q "Review findings still to fix" <<<"$out" || { echo "bench: $program printed no findings" >&2; exit 1; }
    fi
  done
  rm -f "$dir"/state/pre-compact-*.json
  # The project's files were just written: their writeback to disk would
  # otherwise still be going on while the first program is timed (and
  # every snapshot's sync would wait behind it).
  sync
  { read -r ours ours90; read -r bottom _; read -r process _; } < <(measure "$dir" "$runs" "$hook" "$floor" /bin/true)
  ref_runs=$((runs < 10 ? runs : 10))
  read -r theirs _ <<<"$(measure "$dir" "$ref_runs" "$reference")"
  speedup=$(awk -v a="$ours" -v b="$theirs" 'BEGIN {printf "%.1fx", b / a}')
  verdict=$(awk -v a="$ours" -v b="$theirs" -v t="$target" 'BEGIN {print (a <= t && b / a >= 10) ? "met" : "MISSED"}')
  printf '%-8s %16s %14s %16s %14s %9s p50<=%sms,>=10x: %s\n' "$count" "$ours/$ours90" "$bottom" "$process" "$theirs" "$speedup" "$target" "$verdict"
done
