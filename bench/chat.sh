#!/usr/bin/env bash
# The cross-chat registry's hook, jkz-chat, as a whole process (startup
# included) against /bin/true, in one run, on a registry of 50 live chats
# holding 500 claims (10 each, each with its worktree).
#
#   bench/chat.sh [BIN_DIR]  (RUNS=300)
#
# BIN_DIR: time the jkz-chat and jkz already built there (an older build,
# to compare) instead of building this checkout; the answers are then
# printed, not checked.
#
# Cases, p50 and p90 over RUNS runs each, taking turns:
# - PreToolUse Read: a tool the registry does not guard (answered before
#   the registry is opened);
# - PreToolUse Edit, allowed: a file in no claimed worktree (all 500 claims
#   read and compared);
# - PreToolUse Edit, denied: a file in another live chat's worktree;
# - PreToolUse Bash `jkz state set 7 …` of another chat's issue (denied);
# - PreToolUse Bash that only reads (`cat … | jq .`: answered before the
#   registry is opened);
# - PreToolUse Bash that writes elsewhere (`cargo test > /tmp/…`: every
#   path written is checked against the claimed worktrees);
# - PreToolUse Bash through a variable and a `$(printf …)` (denied);
# - PreToolUse Bash `git clean -fdX` (denied: it would delete state/);
# - PreToolUse Bash `bash ./deploy.sh` (asked: the hook cannot read it);
# - UserPromptSubmit: a heartbeat within 30 s of the last (a read only);
# - SessionStart: a registration (a write transaction, fsync-free in WAL
#   with synchronous=NORMAL).
# Peak RSS of the denied Edit with GNU time (/usr/bin/time).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-300}
out=bench/out
mkdir -p "$out"
bin_dir=${1:-}
if [ -z "$bin_dir" ]; then
  cargo build --release --locked --bin jkz-chat --bin jkz 2>&1 | tail -1
  bin_dir="$PWD/target/release"
  check=1
else
  check=0
fi
hook="$bin_dir/jkz-chat"
jkz="$bin_dir/jkz"
rustc --edition 2021 -O bench/tool_output_runs.rs -o "$out/tool_output_runs"
timer="$PWD/$out/tool_output_runs"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
p="$work/project"
mkdir -p "$p/state" "$p/.git"
echo 'state/' > "$p/.gitignore"
unset CLAUDE_PROJECT_DIR JKZ_STATE_DIR CLAUDE_CODE_SESSION_ID JKZ_TEST_NOW

ev() { # EVENT SESSION [EXTRA-JSON]
  printf '{"session_id":"%s","transcript_path":"/dev/null","cwd":"%s","hook_event_name":"%s"%s}\n' \
    "$2" "$p" "$1" "${3:+,$3}"
}
for c in $(seq -w 0 49); do
  ev SessionStart "chat-$c" '"source":"startup"' | "$hook"
  for k in $(seq 0 9); do
    issue=$((10#$c * 10 + k + 1))
    mkdir -p "$p/wt/$issue"
    "$jkz" --state-dir "$p/state" claim "$issue" --worktree "$p/wt/$issue" --session "chat-$c" > /dev/null
  done
done
"$jkz" --state-dir "$p/state" chats --json | python3 -c '
import json, sys
c = json.load(sys.stdin)
n = sum(len(x["claims"]) for x in c)
live = sum(x["state"] == "live" for x in c)
assert (len(c), live, n) == (50, 50, 500), (len(c), live, n)
print("registry: %d live chats, %d claims" % (live, n))'

ev PreToolUse chat-00 '"tool_name":"Read","tool_input":{"file_path":"'"$p"'/wt/15/a.rs"}' > "$work/read.json"
ev PreToolUse chat-00 '"tool_name":"Edit","tool_input":{"file_path":"'"$p"'/src/a.rs","old_string":"a","new_string":"b"}' > "$work/edit-ok.json"
ev PreToolUse chat-00 '"tool_name":"Edit","tool_input":{"file_path":"'"$p"'/wt/15/a.rs","old_string":"a","new_string":"b"}' > "$work/edit-deny.json"
ev PreToolUse chat-00 '"tool_name":"Bash","tool_input":{"command":"jkz state set 17 current_phase done"}' > "$work/bash-deny.json"
ev PreToolUse chat-00 '"tool_name":"Bash","tool_input":{"command":"cat state/pipeline/7.json | jq ."}' > "$work/bash-read.json"
ev PreToolUse chat-00 '"tool_name":"Bash","tool_input":{"command":"cargo test > /tmp/jkz-bench.log 2>&1"}' > "$work/bash-ok.json"
ev PreToolUse chat-00 '"tool_name":"Bash","tool_input":{"command":"f=state/pipeline/17.json; echo x > $(printf %s \"$f\")"}' > "$work/bash-var.json"
ev PreToolUse chat-00 '"tool_name":"Bash","tool_input":{"command":"git clean -fdX"}' > "$work/bash-clean.json"
ev PreToolUse chat-00 '"tool_name":"Bash","tool_input":{"command":"bash ./deploy.sh"}' > "$work/bash-ask.json"
ev UserPromptSubmit chat-00 '"prompt":"go"' > "$work/prompt.json"
ev SessionStart chat-00 '"source":"resume"' > "$work/start.json"

# The answers are right before they are timed.
answer() { "$hook" < "$1" | grep -o '"permissionDecision":"[a-z]*"' || echo pass; }
if [ "$check" = 1 ]; then
  [ -z "$("$hook" < "$work/read.json")" ] || { echo "Read answered" >&2; exit 1; }
  [ -z "$("$hook" < "$work/edit-ok.json")" ] || { echo "allowed Edit answered" >&2; exit 1; }
  [ -z "$("$hook" < "$work/bash-read.json")" ] || { echo "reading Bash answered" >&2; exit 1; }
  [ -z "$("$hook" < "$work/bash-ok.json")" ] || { echo "allowed Bash answered" >&2; exit 1; }
  for f in edit-deny bash-deny bash-var bash-clean; do
    "$hook" < "$work/$f.json" | grep -q '"deny"' || { echo "$f not denied" >&2; exit 1; }
  done
  "$hook" < "$work/bash-ask.json" | grep -q '"ask"' || { echo "bash-ask not asked" >&2; exit 1; }
else
  for f in bash-var bash-clean bash-ask; do echo "$f: $(answer "$work/$f.json")"; done
fi

echo "== jkz-chat, 50 live chats, 500 claims, $runs runs each (p50 p90, ms)"
# CLEAN_DIR is a scratch directory: nothing to reset between runs.
mapfile -t lines < <("$timer" "$runs" "$work/scratch" \
  "$work/read.json" "$hook" :: \
  "$work/edit-ok.json" "$hook" :: \
  "$work/edit-deny.json" "$hook" :: \
  "$work/bash-deny.json" "$hook" :: \
  "$work/bash-read.json" "$hook" :: \
  "$work/bash-ok.json" "$hook" :: \
  "$work/bash-var.json" "$hook" :: \
  "$work/bash-clean.json" "$hook" :: \
  "$work/bash-ask.json" "$hook" :: \
  "$work/prompt.json" "$hook" :: \
  "$work/start.json" "$hook" :: \
  - /bin/true)
names=("PreToolUse Read (not guarded)" "PreToolUse Edit, allowed" "PreToolUse Edit, denied" \
  "PreToolUse Bash state set, denied" "PreToolUse Bash, reads only" \
  "PreToolUse Bash, writes elsewhere" "PreToolUse Bash \$f and \$(printf), denied" \
  "PreToolUse Bash git clean -fdX, denied" "PreToolUse Bash script, asked" "UserPromptSubmit (heartbeat)" "SessionStart (register)" "/bin/true")
for i in "${!names[@]}"; do
  printf '%-36s %s\n' "${names[$i]}" "${lines[$i]}"
done
if [ -x /usr/bin/time ]; then
  rss=$( { /usr/bin/time -v "$hook" < "$work/edit-deny.json" > /dev/null; } 2>&1 | awk -F: '/Maximum resident/ {print $2}')
  echo "peak RSS, denied Edit: ${rss// /} KB"
fi
