#!/usr/bin/env bash
# Builds jkz in release mode, installs its binaries, registers jkz in this
# checkout's Claude Code settings (jkz install --project .) and ends with
# jkz doctor.
#
#   ./install.sh [--prefix DIR]     default DIR: ~/.local/bin
set -euo pipefail
cd "$(dirname "$0")"

prefix="${HOME}/.local/bin"
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix="${2:?--prefix needs a directory}"; shift 2 ;;
    --prefix=*) prefix="${1#--prefix=}"; shift ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done

bins=(jkz jkz-truncate jkz-compress jkz-pre-compact jkz-session-start jkz-session)
cargo build --release --locked
mkdir -p "$prefix"
prefix="$(cd "$prefix" && pwd -P)"
for b in "${bins[@]}"; do
  install -m 0755 "target/release/$b" "$prefix/$b"
done
echo "installed ${#bins[@]} binaries to $prefix"

# The hooks point at the installed binaries; the checkout is the project.
"$prefix/jkz" install --project .

# Doctor sees the binaries through PATH as Claude Code will once the prefix
# is on it; --shell-path lets it say when the user's own PATH lacks it.
user_path="$PATH"
PATH="$prefix:$PATH" "$prefix/jkz" doctor --project . --shell-path "$user_path"
