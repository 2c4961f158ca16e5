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

# cargo itself builds and copies the binaries out, wherever it builds
# (CARGO_TARGET_DIR, a build.target-dir setting, else ./target: a path
# install reuses it, so a second run is incremental). They land in a
# staging root first, so that --prefix names the directory of the
# binaries themselves and no cargo bookkeeping files are left anywhere.
staging="$(mktemp -d "${TMPDIR:-/tmp}/jkz-install.XXXXXX")"
trap 'rm -rf "$staging"' EXIT
echo "building jkz (release; the first build takes a few minutes)"
cargo install --locked --quiet --no-track --path . --root "$staging"
mkdir -p "$prefix"
prefix="$(cd "$prefix" && pwd -P)"
# Every binary cargo built: the [[bin]]s of Cargo.toml, which the tests hold
# to the library's one list (setup::BINARIES) that jkz install and jkz doctor
# check.
count=0
for path in "$staging"/bin/*; do
  install -m 0755 "$path" "$prefix/$(basename "$path")"
  count=$((count + 1))
done
echo "installed $count binaries to $prefix"

# The hooks point at the installed binaries; the checkout is the project.
"$prefix/jkz" install --project .

# Doctor sees the binaries through PATH as Claude Code will once the prefix
# is on it; --shell-path lets it say when the user's own PATH lacks it.
user_path="$PATH"
PATH="$prefix:$PATH" "$prefix/jkz" doctor --project . --shell-path "$user_path"
