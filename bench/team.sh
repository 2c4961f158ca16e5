#!/usr/bin/env bash
# Bench: team mode (PostgreSQL) against the local backend (state/chat.db,
# state/locks/), side by side.
#
# Usage: bench/team.sh [RUNS]   (default 500)
#        JKZ_TEAM_BASE=DIR bench/team.sh   adds DIR/jkz and DIR/jkz-chat (an
#        older release build) to the same turns, on the same server.
#
# A PostgreSQL server of its own (Debian's `postgresql` binaries: initdb and
# pg_ctl in a temporary directory, 127.0.0.1 and a free port, as `nobody`
# when run as root; fsync off, as the tests run it), trust authentication
# on loopback so the figure is jkz's and not the password hash's (scram's
# PBKDF2 adds its own cost to every connection).
#
# 1. The registry hook, as a whole process (startup and connection
#    included): jkz-chat on UserPromptSubmit (a heartbeat) with 50 chats
#    registered, local and team, taking turns (bench/tool_output_runs.rs).
#    Target: team p50 <= 3 ms.
# 2. jkz lock acquire then release of one lock, local and team, each as a
#    whole process, taking turns.
#    Target: team acquire and release p50 <= 5 ms each.
# Note `uptime` first: other builds on the machine move every figure.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-500}
cargo build --release --locked --bin jkz --bin jkz-chat >&2
bin="$PWD/target/release"
base=${JKZ_TEAM_BASE:-}
[ -z "$base" ] || [ -x "$base/jkz-chat" ] || { echo "bench: JKZ_TEAM_BASE=$base holds no jkz-chat" >&2; exit 1; }
hook_timer="$PWD/target/release/tool-output-runs"
rustc -O --edition 2021 -o "$hook_timer" bench/tool_output_runs.rs
pg=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$pg/initdb" ] || { echo "bench: no PostgreSQL server binaries (apt-get install postgresql)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/jkz-bench.XXXXXX")
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u nobody -- "$@"; else "$@"; fi; }
[ "$(id -u)" != 0 ] || chown nobody "$work"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cleanup() { as_pg "$pg/pg_ctl" -D "$work/pg" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
as_pg "$pg/initdb" -D "$work/pg" -U postgres -E UTF8 --no-sync --auth=trust >/dev/null
as_pg "$pg/pg_ctl" -D "$work/pg" -l "$work/pg.log" -w \
  -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories='$work' -c fsync=off" start >/dev/null
unset CLAUDE_PROJECT_DIR JKZ_STATE_DIR CLAUDE_CODE_SESSION_ID JKZ_REGISTRY_URL
url="postgres://postgres@127.0.0.1:$port/postgres"
uptime

ev() { # CWD SESSION EVENT [EXTRA]
  printf '{"session_id":"%s","transcript_path":"/dev/null","cwd":"%s","hook_event_name":"%s"%s}\n' \
    "$2" "$1" "$3" "${4:+,$4}"
}
for kind in local team; do
  repo="$work/$kind"
  mkdir -p "$repo"
  git -C "$repo" init -q -b main
  mkdir -m 700 "$repo/state"
  envs=(env "CLAUDE_PROJECT_DIR=$repo")
  [ "$kind" = local ] || envs+=("JKZ_REGISTRY_URL=$url")
  for ((i = 1; i <= 50; i++)); do
    ev "$repo" "chat-$i" SessionStart '"source":"startup"' | "${envs[@]}" "$bin/jkz-chat"
  done
  n=$("${envs[@]}" "$bin/jkz" --state-dir "$repo/state" chats --json | grep -c '"session_id"')
  [ "$n" = 50 ] || { echo "bench: expected 50 $kind chats, found $n" >&2; exit 1; }
  ev "$repo" chat-1 UserPromptSubmit '"prompt":"go"' >"$work/prompt-$kind.json"
done
[ ! -e "$work/team/state/chat.db" ] || { echo "bench: team mode wrote state/chat.db" >&2; exit 1; }

echo "== 1. jkz-chat UserPromptSubmit, 50 chats, $runs runs each (p50 p90, ms)"
mkdir -p "$work/scratch"
hooks=("$work/prompt-local.json" env "CLAUDE_PROJECT_DIR=$work/local" "$bin/jkz-chat" ::
  "$work/prompt-team.json" env "CLAUDE_PROJECT_DIR=$work/team" "JKZ_REGISTRY_URL=$url" "$bin/jkz-chat" ::)
names=("local (chat.db)" "team (PostgreSQL)")
if [ -n "$base" ]; then
  hooks+=("$work/prompt-local.json" env "CLAUDE_PROJECT_DIR=$work/local" "$base/jkz-chat" ::
    "$work/prompt-team.json" env "CLAUDE_PROJECT_DIR=$work/team" "JKZ_REGISTRY_URL=$url" "$base/jkz-chat" ::)
  names+=("base local" "base team")
fi
mapfile -t lines < <("$hook_timer" "$runs" "$work/scratch" "${hooks[@]}" - /bin/true)
names+=("/bin/true")
for i in "${!names[@]}"; do printf '%-20s %s\n' "${names[$i]}" "${lines[$i]}"; done
read -r p50 _ <<<"${lines[1]}"
awk -v a="$p50" 'BEGIN {printf "team hook p50 %.3f ms (target <= 3 ms): %s\n", a, (a <= 3 ? "met" : "MISSED")}'

echo "== 2. jkz lock acquire / release, $runs runs each (p50 p90, ms)"
lock() { # KIND acquire|release [JKZ]
  local e=(env)
  [ "$1" = local ] || e+=("JKZ_REGISTRY_URL=$url")
  printf '%s\n' "${e[@]}" "${3:-$bin/jkz}" --state-dir "$work/$1/state" lock "$2" pipeline 42 --owner bench
}
mapfile -t la < <(lock local acquire)
mapfile -t lr < <(lock local release)
mapfile -t ta < <(lock team acquire)
mapfile -t tr < <(lock team release)
locks=(- "${la[@]}" :: - "${lr[@]}" :: - "${ta[@]}" :: - "${tr[@]}" ::)
names=("local acquire" "local release" "team acquire" "team release")
if [ -n "$base" ]; then
  mapfile -t bla < <(lock local acquire "$base/jkz")
  mapfile -t blr < <(lock local release "$base/jkz")
  mapfile -t bta < <(lock team acquire "$base/jkz")
  mapfile -t btr < <(lock team release "$base/jkz")
  locks+=(- "${bla[@]}" :: - "${blr[@]}" :: - "${bta[@]}" :: - "${btr[@]}" ::)
  names+=("base local acquire" "base local release" "base team acquire" "base team release")
fi
mapfile -t lines < <("$hook_timer" "$runs" "$work/scratch" "${locks[@]}" - /bin/true)
names+=("/bin/true")
for i in "${!names[@]}"; do printf '%-20s %s\n' "${names[$i]}" "${lines[$i]}"; done
read -r a50 _ <<<"${lines[2]}"
read -r r50 _ <<<"${lines[3]}"
awk -v a="$a50" -v r="$r50" 'BEGIN {printf "team acquire p50 %.3f ms, release p50 %.3f ms (target <= 5 ms each): %s\n", a, r, (a <= 5 && r <= 5 ? "met" : "MISSED")}'
