# The world the examples of README.md and docs/*.md run in: every
# placeholder they use, defined once. tests/integration/examples.rs sources
# this file with bash, calls `make_sandbox` once per page, then, for each
# example of the page in order, `enter_sandbox` and the example itself.
#
# It is given: EXAMPLES_ROOT (a fresh temp directory; HOME is
# $EXAMPLES_ROOT/home, and $EXAMPLES_ROOT/bin, where the stand-ins below
# go, is on PATH before the built jkz binaries), EXAMPLES_PAGE (the page,
# as `README.md` or `docs/run.md`) and EXAMPLES_CHECKOUT (this checkout).

# The repository an example runs in, and its linked worktree for issue 42.
SANDBOX="$EXAMPLES_ROOT/repo"

# Placeholders of the pipeline scripts in docs/registry.md and
# docs/pipeline-state.md: the issue, its worktree, and the script's
# arguments (`$1`: the pull request it was asked to act on).
ISSUE=42
WORKTREE=../wt/i42
set -- 17

# The review comments of one pull request, three iterations of them, as
# GitHub's API returns them: the fixtures the tests of `jkz findings` use.
FINDINGS="$EXAMPLES_CHECKOUT/tests/integration/fixtures/findings"

# The pages whose examples run in a chat's Bash tool, as their comments say
# ("from a chat"): the client sets these for every command it runs.
chat_pages="README.md docs/registry.md"

# A stand-in for a program of the user's: an executable on PATH (`jkz run`
# starts its CMD without a shell, so a shell function would not do).
stand_in() {
    cat >"$EXAMPLES_ROOT/bin/$1"
    chmod +x "$EXAMPLES_ROOT/bin/$1"
}

make_sandbox() {
    set -e
    mkdir -p "$EXAMPLES_ROOT/bin" "$HOME"
    git config --global user.name "A. Reader"
    git config --global user.email reader@example.com
    git config --global init.defaultBranch main
    git init -q "$SANDBOX"
    cd "$SANDBOX"
    printf 'fn main() {}\n' >main.rs
    git add main.rs
    git commit -qm 'A project'
    jkz install >/dev/null
    git add .claude .gitignore
    git commit -qm 'Register jkz hooks'
    git worktree add -q "$WORKTREE" -b issue-42
    make_stand_ins
    make_documents
    seed_page
}

enter_sandbox() {
    cd "$SANDBOX"
    case " $chat_pages " in
    *" $EXAMPLES_PAGE "*)
        export CLAUDECODE=1 CLAUDE_CODE_SESSION_ID=chat-7f3a CLAUDE_PROJECT_DIR="$SANDBOX"
        ;;
    esac
}

make_stand_ins() {
    # judge-answer VERDICT BYTES: a judge's answer of exactly BYTES bytes,
    # its reasoning first, its verdict-json block last.
    stand_in judge-answer <<'EOF'
#!/bin/sh
verdict='```verdict-json
{"verdict":"'"$1"'","findings":[]}
```'
body=$(( $2 - ${#verdict} - 1 ))
awk -v n="$body" 'BEGIN {
    line = "the parser keeps nested fences whole and the cache stays warm\n"
    for (i = 0; i + length(line) <= n; i += length(line)) printf "%s", line
    while (i < n - 1) { printf "."; i++ }
    if (i < n) printf "\n"
}'
printf '%s\n' "$verdict"
EOF
    # The model wrappers the docs call: each prints a judge's answer.
    for wrapper in run-judge codex-judge.sh judge.sh; do
        printf '#!/bin/sh\nexec judge-answer PASS 412950\n' | stand_in "$wrapper"
    done
    printf '#!/bin/sh\nexec judge-answer PASS 20480\n' | stand_in ollama-judge.sh
    # `codex exec PROMPT`: a judge's answer, as the Codex CLI prints it.
    printf '#!/bin/sh\nexec judge-answer PASS 412950\n' | stand_in codex
    # A build's output, 380 KB: more than the primary cap.
    stand_in run-builder <<'EOF'
#!/bin/sh
i=0
while [ $i -lt 8000 ]; do
    echo "   Compiling crate-$i v0.1.0 (/src/crate-$i)"
    i=$((i + 1))
done
echo "    Finished release profile [optimized] target(s) in 61.02s"
EOF
    # `gh api …/pulls/42/comments`: GitHub's answer, recorded: the review
    # comments of the pull request's third iteration.
    printf '#!/bin/sh\nexec cat "%s/coderabbit-3.json"\n' "$FINDINGS" | stand_in gh
}

make_documents() {
    # plan.md: a plan of 140 KB in sections, for jkz-compress --budget.
    {
        printf '# Plan\n\n## TL;DR\nShip the cache behind a flag.\n\n'
        for step in 1 2 3 4 5 6; do
            printf '## Step %s\n\n' "$step"
            i=0
            while [ $i -lt 400 ]; do
                echo "step $step, detail $i: measure, change one thing, measure again"
                i=$((i + 1))
            done
        done
    } >plan.md
    # plan.log: a planner's log, larger than the agent cap.
    judge-answer PASS 100000 >plan.log
    # prompt.md: the prompt a wrapper reads on its stdin.
    printf 'Review the change on branch issue-42.\n' >prompt.md
    # review.md: the reviewer's answer for iteration 3: the rounding again.
    cat >review.md <<'EOF'
The rounding regressed.

```verdict-json
{"verdict": "FAIL", "findings": [
  {"file": "src/pay.rs", "line": 91, "severity": "major",
   "message": "Round after converting to cents — not before!"}
]}
```
EOF
    # test-result.json: iteration 3's test run, nothing failing.
    printf '{"passed": 42, "failed": 0, "failures": []}\n' >test-result.json
}

# What a page assumes happened before its first example.
seed_page() {
    case "$EXAMPLES_PAGE" in
    docs/run.md)
        # The judge's first answer on issue 42, a failing one.
        jkz run --role judge --issue 42 --phase review --iteration 1 \
            --model gpt-5-codex --service codex -- judge-answer FAIL 18204 >/dev/null
        ;;
    docs/findings.md)
        # CodeRabbit's reviews of iterations 1 and 2.
        for k in 1 2; do
            jkz findings import --issue 42 --iteration $k --source coderabbit \
                "$FINDINGS/coderabbit-$k.json" >/dev/null
        done
        ;;
    docs/patterns.md)
        # A judge's answer on issue 42 that wrote down twelve patterns
        # (P1 … P12).
        {
            printf 'Done.\n\n## Accumulated Patterns\n\n'
            for text in "Run cargo fmt before committing" \
                "Check every binary's exit code" \
                "Keep the lockfile in the same commit as Cargo.toml" \
                "Name a regression test after what broke" \
                "Read the failing assertion before the stack trace" \
                "Prefer a temp file and rename for every write" \
                "Bound every read of user input" \
                "Quote paths that may hold spaces" \
                "Rebuild the index from the log after a crash" \
                "Measure before optimizing a hot loop" \
                "Document each exit code in one table" \
                "Escape stored text before it reaches a terminal"; do
                printf -- '- %s\n' "$text"
            done
        } | jkz-truncate --record --role judge --issue 42 >/dev/null
        ;;
    docs/worktrees.md)
        # A second clone of the repository, to attach to this one's state.
        git clone -q --shared "$SANDBOX" "$EXAMPLES_ROOT/clone-42"
        ;;
    docs/security.md)
        # The mistake the page's example repairs: state/ committed.
        jkz state set 42 current_phase building >/dev/null
        git add -f state/pipeline
        git commit -qm 'Add state'
        ;;
    esac
}
