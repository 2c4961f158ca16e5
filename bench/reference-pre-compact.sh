#!/usr/bin/env bash
# A representative PreCompact hook in bash + jq, doing the job jkz-pre-compact
# does: snapshot the event, every pipeline file (raw and normalized) and the
# git state to state/pre-compact-<ts>-<pid>.json, then print the
# decision-critical items for the summarizer. Used by bench/pre_compact.sh as
# the baseline; written the efficient way (one jq over all files, not one per
# file).
set -uo pipefail
root="${CLAUDE_PROJECT_DIR:-$PWD}"
state="$root/state"
event=$(head -c 4194304)
[ -d "$state" ] || exit 0
ts=$(date -u +%Y%m%dT%H%M%S.%3NZ)
branch=$(timeout 2 git -C "$root" rev-parse --abbrev-ref HEAD 2>/dev/null || true)
head=$(timeout 2 git -C "$root" rev-parse HEAD 2>/dev/null || true)
dirty=$(timeout 2 git -C "$root" status --porcelain 2>/dev/null || true)
shopt -s nullglob
files=("$state"/pipeline/[0-9]*.json)
snap="$state/pre-compact-$ts-$$.json"
tmp=$(mktemp "$state/.pre-compact.XXXXXX")
jq -n --arg ts "$ts" --arg branch "$branch" --arg head "$head" --arg dirty "$dirty" \
  --arg event "$event" '
  def s: if type == "string" and . != "" then . elif type == "number" or type == "boolean" then tostring else null end;
  def cnt: if type == "string" and test("^\\s*[0-9]+\\s*$") then (gsub("\\s"; "") | tonumber)
           elif type == "number" and . >= 0 and floor == . then . else null end;
  def flag: if . == "true" or . == true then true elif . == "false" or . == false then false else null end;
  def norm($n): (.[$n] // {}) as $d | ($d.review_passed | flag) as $r | ($d.qa_passed | flag) as $q | {
    issue: $n, current_phase: (($d.current_phase | s) // "unknown"), active_agent: ($d.active_agent | s),
    issue_type: (($d.issue_type | s) // "feature"), pr_number: ($d.pr_number | cnt),
    started_at: $d.started_at, last_updated: (($d.last_updated | s) // (.lastActivity | s)),
    verdict: (if $r == false or $q == false then "FAIL" elif $r and $q then "PASS" else null end),
    review_passed: $r, qa_passed: $q, plan_iterations: ($d.plan_iterations | cnt),
    review_fix_count: ($d.review_fix_count | cnt), qa_fix_count: ($d.qa_fix_count | cnt),
    pending_decisions: ($d.pending_decisions // []), failure_context: ($d.failure_context | s) };
  [inputs | (input_filename | split("/") | last) as $f | select($f | test("^[0-9]+\\.json$"))
    | ($f | rtrimstr(".json")) as $n | {issue: $n, file: $f, raw: ., normalized: norm($n)}] as $p
  | {jkz_snapshot: 1, created_at: $ts, event: ($event | fromjson? // null),
     git: {branch: $branch, head: $head, dirty: ($dirty | split("\n") | map(select(. != "")))},
     pipelines: $p}' "${files[@]}" </dev/null >"$tmp" && mv "$tmp" "$snap"

echo "## decision-critical pipeline state (snapshot: $snap)"
jq -r '[.pipelines[].normalized | select(.current_phase | test("^(done|complete|completed|closed|merged|cancelled|abandoned)$"; "i") | not)]
  | sort_by(.last_updated) | reverse | .[:3][]
  | "### Issue #\(.issue) (\(.issue_type), PR #\(.pr_number))\n- Phase and iteration: \(.current_phase), active agent \(.active_agent); plan iteration \(.plan_iterations), review fix cycle \(.review_fix_count), QA fix cycle \(.qa_fix_count)\n- Active verdicts: review \(.review_passed), QA \(.qa_passed); overall \(.verdict)\n- Pending human decisions: \(.pending_decisions | join("; "))\n- Failure context: \(.failure_context)\n- Approved plan: see state/pipeline/\(.issue)-compact-plan.md"' "$snap" \
  | while IFS= read -r line; do
      case "$line" in
        "- Approved plan: see "*) plan="$root/${line#- Approved plan: see }"
          if [ -f "$plan" ]; then echo "- Approved plan:"; head -c 1500 "$plan"; echo; else echo "- Approved plan: none"; fi ;;
        *) echo "$line" ;;
      esac
    done
echo "- Git state: branch $branch, HEAD ${head:0:12}, $(printf '%s' "$dirty" | grep -c .) uncommitted paths"
exit 0
