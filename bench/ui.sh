#!/usr/bin/env bash
# Times `jkz ui`'s /api/pipelines over a state directory with 10,000
# pipeline files and 10,000 deliberation records, after warm-up, and reports
# the server's peak RSS (/usr/bin/time -v) after also serving /api/now, an
# issue's timeline and the page.
#
# Targets: /api/pipelines <= 100 ms after warm-up; peak RSS <= 64 MiB.
#
# Usage: bench/ui.sh [JKZ_BINARY]   (default: this tree's release build)
set -euo pipefail
cd "$(dirname "$0")/.."

[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install -y time)" >&2; exit 1; }
command -v curl >/dev/null || { echo "needs curl" >&2; exit 1; }
if [ $# -eq 0 ]; then
    cargo build --release --quiet --bin jkz
    set -- "$PWD/target/release/jkz"
fi
jkz="$1"

base="$( [ -d /dev/shm ] && echo /dev/shm || echo "${TMPDIR:-/tmp}" )"
work="$(mktemp -d "$base/jkz-bench-ui.XXXXXX")"
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
state="$work/state"

python3 - "$state" <<'PY'
import hashlib, json, os, sys
state = sys.argv[1]
pipe = os.path.join(state, "pipeline"); os.makedirs(pipe)
deli = os.path.join(state, "deliberations"); os.makedirs(deli)
phases = ["planning", "building", "review", "qa", "done"]
for n in range(1, 10001):
    data = {str(n): {"current_phase": phases[n % 5], "active_agent": "builder", "issue_type": "feature",
                     "pr_number": str(n), "review_passed": "true", "qa_passed": ["true", "false"][n % 2],
                     "plan_iterations": "2", "pending_decisions": ["keep the API"],
                     "failure_context": "test_x failed" if n % 7 == 0 else "",
                     "last_updated": "2025-01-01T00:00:00Z"},
            "lastActivity": "2025-01-01T00:00:00Z", "heartbeat_pid": 1}
    with open(os.path.join(pipe, f"{n}.json"), "w") as f:
        json.dump(data, f)
index = []
for i in range(10000):
    issue = i % 10000 + 1
    rid = f"20250101T{i // 3600 % 24:02}{i // 60 % 60:02}{i % 60:02}.{i % 1000:03}Z-{issue}-judge-{1000 + i}"
    resp = f"verdict for {issue}, iteration {i}\n" * 20
    rec = {"role": "judge", "timestamp": "2025-01-01T00:00:00.000Z", "status": "ok", "issue": issue, "pr": issue,
           "phase": "review", "iteration": 1, "model": "m", "endpoint": None, "service": None, "mode": None,
           "command": ["m"], "exit_code": 0, "duration_ms": 10, "tokens": None, "verdict": "PASS",
           "response_bytes": len(resp), "response_sha256": hashlib.sha256(resp.encode()).hexdigest(),
           "response_file": None, "response": resp}
    with open(os.path.join(deli, rid + ".json"), "w") as f:
        json.dump(rec, f)
    index.append(json.dumps({"id": rid, "timestamp": rec["timestamp"], "issue": issue, "role": "judge",
                             "phase": "review", "iteration": 1, "status": "ok", "verdict": "PASS",
                             "bytes": len(resp), "response_file": None}))
with open(os.path.join(deli, "index.jsonl"), "w") as f:
    f.write("\n".join(index) + "\n")
PY

/usr/bin/time -v -o "$work/time.txt" "$jkz" ui --state-dir "$state" > "$work/out.txt" 2>"$work/err.txt" &
server=$!
for _ in $(seq 100); do grep -q "^jkz ui: " "$work/out.txt" 2>/dev/null && break; sleep 0.1; done
url="$(sed -n 's/^jkz ui: //p' "$work/out.txt")"
origin="${url%%/\?*}"; origin="${origin%/}"
token="${url##*token=}"
# Every route needs the token; a script sends it as a bearer token.
auth=(-H "Authorization: Bearer $token")
get() { curl -s "${auth[@]}" -o /dev/null -w '%{http_code} %{time_total}\n' "$origin$1"; }

for _ in 1 2 3; do get /api/pipelines >/dev/null; done
for _ in $(seq 20); do get /api/pipelines; done > "$work/times.txt"
awk '$1 != 200 { bad = 1 } { print $2 * 1000 }' "$work/times.txt" | sort -n > "$work/ms.txt"
grep -qv '^200 ' "$work/times.txt" && { echo "a request failed:" >&2; cat "$work/times.txt" >&2; exit 1; }
echo "/api/pipelines, 10,000 pipelines (20 requests after 3 warm-up):"
echo "  median $(sed -n 10p "$work/ms.txt") ms, max $(tail -1 "$work/ms.txt") ms"
echo "other endpoints (status, seconds):"
echo "  /api/issues/4242 $(get /api/issues/4242)"
echo "  /api/now         $(get /api/now)"
echo "  /                $(get /)"
curl -s "${auth[@]}" "$origin/api/pipelines" | python3 -c 'import json,sys; v=json.load(sys.stdin); print("  count", v["count"])'
pid="$(pgrep -P "$server" -x jkz)"
ticks() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }
t0="$(ticks)"; sleep 5; t1="$(ticks)"
echo "idle polling: $(( (t1 - t0) * 100 / $(getconf CLK_TCK) / 5 )) % of one core (5 s, nothing changing)"
kill -TERM "$pid"
wait "$server" 2>/dev/null || true
server=""
echo "peak RSS: $(awk -F': ' '/Maximum resident/ {printf "%.1f MiB", $2/1024}' "$work/time.txt")"
