#!/usr/bin/env bash
# Builds jkz in release mode and installs its binaries.
#
#   ./install.sh [--prefix DIR]     default DIR: ~/.local/bin
set -euo pipefail
cd "$(dirname "$0")"

prefix="${HOME}/.local/bin"
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix="${2:?--prefix needs a directory}"; shift 2 ;;
    --prefix=*) prefix="${1#--prefix=}"; shift ;;
    -h|--help) sed -n '2,4p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done

bins=(jkz jkz-truncate jkz-compress jkz-pre-compact jkz-session-start jkz-session)
cargo build --release --locked
mkdir -p "$prefix"
for b in "${bins[@]}"; do
  install -m 0755 "target/release/$b" "$prefix/$b"
done
echo "installed ${#bins[@]} binaries to $prefix"
case ":$PATH:" in
  *":$prefix:"*) ;;
  *) echo "note: $prefix is not on PATH; add it to use jkz from anywhere" ;;
esac
