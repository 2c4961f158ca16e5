#!/usr/bin/env bash
# Bench: team mode (PostgreSQL) against the local backend (state/chat.db,
# state/locks/), side by side in one run, with and without PgBouncer.
#
# Usage: bench/team.sh [RUNS]   (default 300)
#        JKZ_TEAM_BASE=DIR bench/team.sh   adds DIR/jkz and DIR/jkz-chat (an
#        older release build) to the same turns, on the same server.
#        CARGO=… names the cargo to build with (default cargo); the built
#        jkz and jkz-chat are copied into the bench's own directory, so a
#        later build elsewhere cannot change them mid-run.
#
# A PostgreSQL server of its own (Debian's `postgresql` binaries: initdb and
# pg_ctl in a temporary directory, 127.0.0.1 and a free port, as `nobody`
# when run as root; fsync off, as the tests run it), trust authentication
# for the user `postgres` on loopback so the figures are jkz's and not the
# password hash's, and a user `scram` with a password and TLS to measure
# what those cost. PgBouncer (Debian's `pgbouncer`) in transaction pooling
# in front of it, as docs/worktrees.md sets it up.
#
# 0. What a connection costs here: pgbench's average connection time
#    (a new connection per transaction, `-C`) for TCP + trust, + SCRAM,
#    + TLS, and a client connection to PgBouncer (the server's connection
#    kept); `SELECT 1` on a kept connection is the round-trip floor.
# 1. The guard: jkz-chat on PreToolUse (an Edit in another chat's claimed
#    worktree: refused) with 50 chats and 500 claims, local and team,
#    taking turns with a team heartbeat of another chat (the team is
#    active, so the replica is fresh), and team with the replica kept
#    from refreshing (every call asks the server, as before the replica).
#    Target: team p50 <= local p50 + 0.5 ms.
# 2. Writes: the heartbeat hook (jkz-chat UserPromptSubmit) and a claim
#    (jkz claim of the chat's own issue, a write under the registry's
#    lock), local, team direct, team through PgBouncer.
#    Target: p50 <= 5 ms with the pooler; the figure without it.
# 3. jkz lock acquire then release of one lock, local, team direct, team
#    through PgBouncer, taking turns.
#    Target: team p50 <= 1.2 x local p50 (local pays an fsync).
# Note `uptime` first: other builds on the machine move every figure.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-300}
${CARGO:-cargo} build --release --locked --bin jkz --bin jkz-chat >&2
built="${CARGO_TARGET_DIR:-$PWD/target}/release"
base=${JKZ_TEAM_BASE:-}
[ -z "$base" ] || [ -x "$base/jkz-chat" ] || { echo "bench: JKZ_TEAM_BASE=$base holds no jkz-chat" >&2; exit 1; }
pg=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$pg/initdb" ] || { echo "bench: no PostgreSQL server binaries (apt-get install postgresql)" >&2; exit 1; }
command -v pgbouncer >/dev/null || [ -x /usr/sbin/pgbouncer ] || { echo "bench: no pgbouncer (apt-get install pgbouncer)" >&2; exit 1; }
pgbouncer=$(command -v pgbouncer || echo /usr/sbin/pgbouncer)
work=$(mktemp -d "${TMPDIR:-/tmp}/jkz-bench.XXXXXX")
chmod 755 "$work"
mkdir "$work/bin"
cp "$built/jkz" "$built/jkz-chat" "$work/bin/"
bin="$work/bin"
hook_timer="$work/bin/tool-output-runs"
rustc -O --edition 2021 -o "$hook_timer" bench/tool_output_runs.rs
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u nobody -- "$@"; else "$@"; fi; }
mkdir "$work/pg-run"
[ "$(id -u)" != 0 ] || chown nobody "$work/pg-run"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
bport=$(free_port)
cleanup() {
  [ ! -f "$work/pg-run/pgbouncer.pid" ] || kill "$(cat "$work/pg-run/pgbouncer.pid")" 2>/dev/null || true
  as_pg "$pg/pg_ctl" -D "$work/pg-run/pg" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
as_pg "$pg/initdb" -D "$work/pg-run/pg" -U postgres -E UTF8 --no-sync --auth=trust >/dev/null
# postgres: trust; scram: a password (SCRAM-SHA-256).
cat >"$work/pg-run/pg/pg_hba.conf" <<EOF
local all all trust
host all scram 127.0.0.1/32 scram-sha-256
host all all 127.0.0.1/32 trust
EOF
(cd "$work/pg-run/pg" && as_pg openssl req -new -x509 -days 2 -nodes -subj /CN=127.0.0.1 \
  -keyout server.key -out server.crt >/dev/null 2>&1 && chmod 600 server.key)
as_pg "$pg/pg_ctl" -D "$work/pg-run/pg" -l "$work/pg-run/pg.log" -w \
  -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories='$work/pg-run' -c fsync=off -c ssl=on -c max_connections=200" start >/dev/null
"$pg/psql" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -c "CREATE ROLE scram LOGIN PASSWORD 'bench' SUPERUSER" >/dev/null
cat >"$work/pg-run/pgbouncer.ini" <<EOF
[databases]
* = host=127.0.0.1 port=$port
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $bport
unix_socket_dir =
auth_type = trust
auth_file = $work/pg-run/userlist.txt
pool_mode = transaction
ignore_startup_parameters = options
max_client_conn = 500
default_pool_size = 20
logfile = $work/pg-run/pgbouncer.log
pidfile = $work/pg-run/pgbouncer.pid
EOF
echo '"postgres" ""' >"$work/pg-run/userlist.txt"
[ "$(id -u)" != 0 ] || chown -R nobody "$work/pg-run"
as_pg "$pgbouncer" -d -q "$work/pg-run/pgbouncer.ini"
for _ in $(seq 50); do "$pg/psql" -q -h 127.0.0.1 -p "$bport" -U postgres -d postgres -c 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.1; done
unset CLAUDE_PROJECT_DIR JKZ_STATE_DIR CLAUDE_CODE_SESSION_ID JKZ_REGISTRY_URL PGSSLMODE PGPASSWORD
url="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
pooled="postgres://postgres@127.0.0.1:$bport/postgres?sslmode=disable"
uptime

echo "== 0. a connection (pgbench, $runs connections each: average connection time; a kept connection's SELECT 1)"
echo 'SELECT 1;' >"$work/select1.sql"
conn_ms() { # LABEL PGBENCH-ARGS...
  local label=$1; shift
  local out
  out=$(env "${pgenv[@]}" "$pg/pgbench" -n -f "$work/select1.sql" -t "$runs" "$@" postgres 2>&1)
  printf '%-34s connection %s ms, latency %s ms\n' "$label" \
    "$(sed -n 's/^\(average\|initial\) connection time = \([0-9.]*\) ms/\2/p' <<<"$out")" \
    "$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' <<<"$out")"
}
pgenv=(PGSSLMODE=disable)
conn_ms "kept connection (floor)" -h 127.0.0.1 -p "$port" -U postgres
conn_ms "TCP + backend, trust" -C -h 127.0.0.1 -p "$port" -U postgres
pgenv=(PGSSLMODE=disable PGPASSWORD=bench)
conn_ms "TCP + backend + SCRAM" -C -h 127.0.0.1 -p "$port" -U scram
pgenv=(PGSSLMODE=require PGPASSWORD=bench)
conn_ms "TCP + backend + SCRAM + TLS" -C -h 127.0.0.1 -p "$port" -U scram
pgenv=(PGSSLMODE=disable)
conn_ms "PgBouncer (client connection only)" -C -h 127.0.0.1 -p "$bport" -U postgres
python3 - "$port" "$runs" <<'EOF'
import socket, sys, time
port, runs = int(sys.argv[1]), int(sys.argv[2])
ts = []
for _ in range(runs):
    t = time.perf_counter(); s = socket.create_connection(("127.0.0.1", port)); ts.append(time.perf_counter() - t); s.close()
ts.sort()
print(f"{'TCP handshake alone (python)':34s} p50 {ts[len(ts)//2]*1000:.3f} ms")
EOF

ev() { # CWD SESSION EVENT [EXTRA]
  printf '{"session_id":"%s","transcript_path":"/dev/null","cwd":"%s","hook_event_name":"%s"%s}\n' \
    "$2" "$1" "$3" "${4:+,$4}"
}
# Three state directories: local, team (the replica refreshed by the
# team's hooks) and team-cold (its replica cannot be written: every guard
# asks the server).
for kind in local team cold; do
  repo="$work/$kind"
  mkdir -p "$repo"
  git -C "$repo" init -q -b main
  mkdir -m 700 "$repo/state"
  envs=(env "CLAUDE_PROJECT_DIR=$repo")
  case $kind in
    team) envs+=("JKZ_REGISTRY_URL=$url") ;;
    cold) envs+=("JKZ_REGISTRY_URL=${url/\/postgres\?/\/cold?}") ;;
  esac
  [ "$kind" != cold ] || { "$pg/psql" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -c 'CREATE DATABASE cold' >/dev/null; mkdir "$repo/state/registry-replica.db"; }
  for ((i = 1; i <= 50; i++)); do
    ev "$repo" "chat-$i" SessionStart '"source":"startup"' | "${envs[@]}" "$bin/jkz-chat" 2>/dev/null
  done
  # 500 claims: ten per chat, each with a worktree of its own.
  for ((n = 1; n <= 500; n++)); do
    mkdir -p "$repo/wt/$n/src"
    (cd "$repo" && "${envs[@]}" "$bin/jkz" --state-dir "$repo/state" claim "$n" --session "chat-$(((n - 1) / 10 + 1))" --worktree "$repo/wt/$n" >/dev/null)
  done
  n=$("${envs[@]}" "$bin/jkz" --state-dir "$repo/state" chats --json 2>/dev/null | grep -c '"session_id"')
  c=$("${envs[@]}" "$bin/jkz" --state-dir "$repo/state" chats --json 2>/dev/null | grep -c '"issue"')
  [ "$n" = 50 ] && [ "$c" = 500 ] || { echo "bench: expected 50 $kind chats and 500 claims, found $n and $c" >&2; exit 1; }
  ev "$repo" chat-1 UserPromptSubmit '"prompt":"go"' >"$work/prompt-$kind.json"
  ev "$repo" chat-2 PostToolUse '"tool_name":"Bash","tool_input":{"command":"true"},"tool_response":{"stdout":""}' >"$work/post-$kind.json"
  # chat-1 edits chat-50's claimed worktree: refused.
  ev "$repo" chat-1 PreToolUse "\"tool_name\":\"Edit\",\"tool_input\":{\"file_path\":\"$repo/wt/500/src/a.rs\",\"old_string\":\"a\",\"new_string\":\"b\"}" >"$work/guard-$kind.json"
done
[ ! -e "$work/team/state/chat.db" ] || { echo "bench: team mode wrote state/chat.db" >&2; exit 1; }
out=$(env "CLAUDE_PROJECT_DIR=$work/team" "JKZ_REGISTRY_URL=$url" "$bin/jkz-chat" <"$work/guard-team.json")
grep -q '"deny"' <<<"$out" || { echo "bench: the team guard did not refuse: $out" >&2; exit 1; }
mkdir -p "$work/scratch"

report() { # NAMES... (after lines=…)
  local i
  for i in "${!names[@]}"; do printf '%-34s %s\n' "${names[$i]}" "${lines[$i]}"; done
}
p50() { read -r v _ <<<"${lines[$1]}"; echo "$v"; }

echo "== 1. the guard: jkz-chat PreToolUse, 50 chats, 500 claims, $runs runs each (p50 p90, ms)"
hooks=("$work/guard-local.json" env "CLAUDE_PROJECT_DIR=$work/local" "$bin/jkz-chat" ::
  "$work/guard-team.json" env "CLAUDE_PROJECT_DIR=$work/team" "JKZ_REGISTRY_URL=$url" "$bin/jkz-chat" ::
  "$work/post-team.json" env "CLAUDE_PROJECT_DIR=$work/team" "JKZ_REGISTRY_URL=$url" "$bin/jkz-chat" ::
  "$work/guard-cold.json" env "CLAUDE_PROJECT_DIR=$work/cold" "JKZ_REGISTRY_URL=${url/\/postgres\?/\/cold?}" "$bin/jkz-chat" ::)
names=("local (chat.db)" "team, replica fresh" "team heartbeat (keeps it fresh)" "team, every call asks the server")
if [ -n "$base" ]; then
  hooks+=("$work/guard-team.json" env "CLAUDE_PROJECT_DIR=$work/team" "JKZ_REGISTRY_URL=$url" "$base/jkz-chat" ::)
  names+=("base team")
fi
mapfile -t lines < <("$hook_timer" "$runs" "$work/scratch" "${hooks[@]}" - /bin/true 2>/dev/null)
names+=("/bin/true")
report
awk -v l="$(p50 0)" -v t="$(p50 1)" 'BEGIN {printf "team guard p50 %.2f ms, local %.2f ms (target <= local + 0.5 ms): %s\n", t, l, (t <= l + 0.5 ? "met" : "MISSED")}'

echo "== 2. writes: heartbeat hook and claim, $runs runs each (p50 p90, ms)"
claim() { # KIND URL
  local e=(env)
  [ -z "$2" ] || e+=("JKZ_REGISTRY_URL=$2")
  printf '%s\n' "${e[@]}" "$bin/jkz" --state-dir "$work/$1/state" claim 1 --session chat-1
}
mapfile -t cl < <(claim local "")
mapfile -t ct < <(claim team "$url")
mapfile -t cp < <(claim team "$pooled")
writes=("$work/prompt-local.json" env "CLAUDE_PROJECT_DIR=$work/local" "$bin/jkz-chat" ::
  "$work/prompt-team.json" env "CLAUDE_PROJECT_DIR=$work/team" "JKZ_REGISTRY_URL=$url" "$bin/jkz-chat" ::
  "$work/prompt-team.json" env "CLAUDE_PROJECT_DIR=$work/team" "JKZ_REGISTRY_URL=$pooled" "$bin/jkz-chat" ::
  - "${cl[@]}" :: - "${ct[@]}" :: - "${cp[@]}" ::)
names=("heartbeat local" "heartbeat team" "heartbeat team, PgBouncer" "claim local" "claim team" "claim team, PgBouncer")
mapfile -t lines < <("$hook_timer" "$runs" "$work/scratch" "${writes[@]}" - /bin/true 2>/dev/null)
names+=("/bin/true")
report
awk -v h="$(p50 2)" -v c="$(p50 5)" -v hd="$(p50 1)" -v cd="$(p50 4)" 'BEGIN {printf "with PgBouncer: heartbeat p50 %.2f ms, claim p50 %.2f ms (target <= 5 ms): %s; without: %.2f ms, %.2f ms\n", h, c, (h <= 5 && c <= 5 ? "met" : "MISSED"), hd, cd}'

echo "== 3. jkz lock acquire / release, $runs runs each (p50 p90, ms)"
lock() { # KIND URL acquire|release [JKZ]
  local e=(env)
  [ -z "$2" ] || e+=("JKZ_REGISTRY_URL=$2")
  printf '%s\n' "${e[@]}" "${4:-$bin/jkz}" --state-dir "$work/$1/state" lock "$3" pipeline 42 --owner bench
}
locks=()
for spec in "local||acquire" "local||release" "team|$url|acquire" "team|$url|release" "team|$pooled|acquire" "team|$pooled|release"; do
  IFS='|' read -r k u a <<<"$spec"
  mapfile -t l < <(lock "$k" "$u" "$a")
  locks+=(- "${l[@]}" ::)
done
names=("local acquire" "local release" "team acquire" "team release" "team acquire, PgBouncer" "team release, PgBouncer")
if [ -n "$base" ]; then
  for spec in "team|$url|acquire" "team|$url|release"; do
    IFS='|' read -r k u a <<<"$spec"
    mapfile -t l < <(lock "$k" "$u" "$a" "$base/jkz")
    locks+=(- "${l[@]}" ::)
  done
  names+=("base team acquire" "base team release")
fi
mapfile -t lines < <("$hook_timer" "$runs" "$work/scratch" "${locks[@]}" - /bin/true 2>/dev/null)
names+=("/bin/true")
report
awk -v la="$(p50 0)" -v lr="$(p50 1)" -v a="$(p50 2)" -v r="$(p50 3)" -v pa="$(p50 4)" -v pr="$(p50 5)" 'BEGIN {
  printf "team acquire %.2f / release %.2f ms vs local %.2f / %.2f (target <= 1.2x: %.2f / %.2f): %s; with PgBouncer %.2f / %.2f: %s\n",
    a, r, la, lr, 1.2 * la, 1.2 * lr, (a <= 1.2 * la && r <= 1.2 * lr ? "met" : "MISSED"), pa, pr, (pa <= 1.2 * la && pr <= 1.2 * lr ? "met" : "MISSED")}'
