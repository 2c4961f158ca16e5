#!/usr/bin/env bash
# jkz-post-tool-use as a whole process, startup included, against `tail -c`
# of the same file, in one run; then `jkz stats` over a 100,000-line ledger.
#
#   bench/tool_output.sh            (RUNS=200 for the small cases, REPS=5 for 100 MB)
#
# Cases:
# - 31 KB: a Bash output the client persisted (persistedOutputPath), the
#   hook reads the file, truncates it to the default cap (20,000 bytes),
#   saves the full output under state/ and appends a ledger line; against
#   `tail -c 20000 FILE`. p50 and p90 over RUNS runs, taking turns.
# - 100 MB: the same with a 100 MB file, REPS runs; against `tail -c 20000
#   FILE` (which seeks to the end: it reads 20 KB, not 100 MB) and against
#   `cat FILE | tail -c 20000` (which reads it all, as the hook must to find
#   the protected blocks in the middle). Also the hook without a state
#   directory (no copy kept). Throughput = 100 MB / p50.
# - jkz stats and jkz stats --json over a ledger of 100,000 lines.
# Peak RSS with GNU time (/usr/bin/time).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-200}
reps=${REPS:-5}
out=bench/out
mkdir -p "$out"
cargo build --release --locked --bin jkz-post-tool-use --bin jkz 2>&1 | tail -1
hook="$PWD/target/release/jkz-post-tool-use"
jkz="$PWD/target/release/jkz"
rustc --edition 2021 -O bench/tool_output_runs.rs -o "$out/tool_output_runs"
timer="$PWD/$out/tool_output_runs"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/project/state" "$work/bare"
# The client keeps persisted outputs beside the session's transcript; the
# hook reads only from there.
results="$work/home/.claude/projects/p/s/tool-results"
mkdir -p "$results"

# A test run of N bytes with a verdict block in the middle.
gen() {
  python3 - "$1" <<'PY'
import sys
n = int(sys.argv[1]); out = ["running tests\n"]; size = len(out[0]); i = 0
while size < n // 2:
    l = "test module_%07d::case ... ok\n" % i; out.append(l); size += len(l); i += 1
v = '<!-- jkz:verdict-json {"verdict":"FAIL"} -->\n'; out.append(v); size += len(v)
end = "\nfailures:\n---- x stdout ----\ntest result: FAILED. 1 failed\n"
while size + len(end) < n:
    l = "test module_%07d::case ... ok\n" % i; out.append(l); size += len(l); i += 1
out.append(end); sys.stdout.write("".join(out))
PY
}
event() { # FILE PROJECT
  python3 - "$1" "$2" <<'PY'
import json, sys, os
path, project = sys.argv[1], sys.argv[2]
transcript = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(path))), "s.jsonl")
print(json.dumps({"session_id": "s", "transcript_path": transcript, "cwd": project,
  "hook_event_name": "PostToolUse",
  "tool_name": "Bash", "tool_input": {"command": "cargo test"},
  "tool_response": {"stdout": open(path).read(30000), "stderr": "", "interrupted": False,
  "isImage": False, "noOutputExpected": False, "persistedOutputPath": path,
  "persistedOutputSize": os.path.getsize(path)}, "tool_use_id": "t", "duration_ms": 1}))
PY
}
gen 31000 > "$results/31k.txt"
gen 100000000 > "$results/100m.txt"
event "$results/31k.txt" "$work/project" > "$work/31k.json"
event "$results/100m.txt" "$work/project" > "$work/100m.json"
event "$results/100m.txt" "$work/bare" > "$work/100m-bare.json"
export JKZ_STATE_DIR=
unset CLAUDE_PROJECT_DIR JKZ_STATE_DIR
# The answer is right before it is timed.
"$hook" < "$work/31k.json" | grep -q 'jkz-truncate' || { echo "no answer for 31 KB" >&2; exit 1; }

echo "== 31 KB persisted output, $runs runs each (p50 p90, ms)"
read -r h50 h90 t50 t90 tr50 tr90 < <("$timer" "$runs" "$work/project/state" \
  "$work/31k.json" "$hook" :: - tail -c 20000 "$results/31k.txt" :: - /bin/true | tr '\n' ' '; echo)
echo "jkz-post-tool-use   $h50 $h90"
echo "tail -c 20000 FILE  $t50 $t90"
echo "/bin/true           $tr50 $tr90"

echo "== 100 MB persisted output, $reps runs each (p50 p90, ms; MB/s at p50)"
cat > "$work/cat-tail.sh" <<SH
#!/bin/sh
cat "$results/100m.txt" | tail -c 20000
SH
chmod +x "$work/cat-tail.sh"
read -r a50 a90 b50 b90 c50 c90 d50 d90 < <("$timer" "$reps" "$work/project/state" \
  "$work/100m.json" "$hook" :: "$work/100m-bare.json" "$hook" \
  :: - tail -c 20000 "$results/100m.txt" :: - "$work/cat-tail.sh" | tr '\n' ' '; echo)
mbps() { python3 -c "print('%.0f' % (100 / ($1 / 1000)))"; }
echo "jkz-post-tool-use (full output kept)  $a50 $a90  $(mbps "$a50") MB/s"
echo "jkz-post-tool-use (no state dir)      $b50 $b90  $(mbps "$b50") MB/s"
echo "tail -c 20000 FILE (seeks)            $c50 $c90  $(mbps "$c50") MB/s"
echo "cat FILE | tail -c 20000              $d50 $d90  $(mbps "$d50") MB/s"
python3 -c "print('ratio vs cat|tail -c: full output kept %.2fx, no state dir %.2fx' % ($d50/$a50, $d50/$b50))"
/usr/bin/time -f "peak RSS, 100 MB: %M KiB" "$hook" < "$work/100m.json" > /dev/null
/usr/bin/time -f "peak RSS, 100 MB, no state dir: %M KiB" "$hook" < "$work/100m-bare.json" > /dev/null

echo "== jkz stats over 100,000 ledger lines, 20 runs each (p50 p90, ms)"
mkdir -p "$work/ledger"
python3 - "$work/ledger" <<'PY'
import json, sys
d = sys.argv[1]
tools = ["Bash", "Read", "Grep", "mcp__ci__logs"]
with open(d + "/tool-output.1.jsonl", "w") as a, open(d + "/tool-output.jsonl", "w") as b:
    for i in range(100000):
        line = json.dumps({"ts": "2025-03-01T12:00:00.123Z", "tool": tools[i % 4],
            "call": "cargo test --locked -p jkz -- --test-threads 2 %d" % i, "full": 400000 + i,
            "client": 2248, "jkz": 19987, "blocks": 1, "ms": 4}, separators=(",", ":"))
        (a if i < 50000 else b).write(line + "\n")
PY
ls -l "$work/ledger" | awk 'NR>1 {print $5, $9}'
read -r s50 s90 j50 j90 < <("$timer" 20 "$work/unused" - "$jkz" stats --state-dir "$work/ledger" \
  :: - "$jkz" stats --json --state-dir "$work/ledger" | tr '\n' ' '; echo)
echo "jkz stats         $s50 $s90"
echo "jkz stats --json  $j50 $j90"
"$jkz" stats --state-dir "$work/ledger"
