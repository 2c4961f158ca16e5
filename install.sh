#!/usr/bin/env bash
# Builds jkz in release mode (cargo shows each step), installs its binaries,
# their shell completions (bash, zsh, fish) and man pages, registers jkz in
# this checkout's Claude Code settings (jkz install --project .) and ends
# with jkz doctor.
#
#   ./install.sh [--prefix DIR]     default DIR: ~/.local/bin
#
# Completions and man pages go to the share/ beside DIR when DIR is a bin/
# (~/.local/share for the default), else to DIR/share.
set -euo pipefail
cd "$(dirname "$0")"

prefix="${HOME}/.local/bin"
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix="${2:?--prefix needs a directory}"; shift 2 ;;
    --prefix=*) prefix="${1#--prefix=}"; shift ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
echo "building jkz (release; the first build takes a few minutes, cargo shows each step)"
cargo install --locked --no-track --path . --root "$staging"
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

# Completions and man pages, made by the installed jkz from the same
# definitions its binaries parse their arguments with.
case "$prefix" in
  */bin) share="${prefix%/bin}/share" ;;
  *) share="$prefix/share" ;;
esac
mkdir -p "$share/bash-completion/completions" "$share/zsh/site-functions" \
  "$share/fish/vendor_completions.d" "$share/man/man1"
for path in "$staging"/bin/*; do
  b="$(basename "$path")"
  "$prefix/jkz" completions bash --binary "$b" > "$share/bash-completion/completions/$b"
  "$prefix/jkz" completions zsh --binary "$b" > "$share/zsh/site-functions/_$b"
  "$prefix/jkz" completions fish --binary "$b" > "$share/fish/vendor_completions.d/$b.fish"
done
echo "installed completions (bash, zsh, fish) to $share (zsh: add $share/zsh/site-functions to fpath)"
pages=$("$prefix/jkz" man --dir "$share/man/man1" | wc -l)
echo "installed $pages man pages to $share/man/man1 (man jkz)"

# The hooks point at the installed binaries; the checkout is the project.
# A refusal (jkz is already registered for this user, or by the plugin)
# leaves the binaries installed: its line says how to switch, and doctor
# below decides, showing which registration is active.
"$prefix/jkz" install --project . ||
  echo "install.sh: jkz install --project . changed nothing (the line above says why); jkz doctor follows"

# Doctor sees the binaries through PATH as Claude Code will once the prefix
# is on it; --shell-path lets it say when the user's own PATH lacks it.
user_path="$PATH"
PATH="$prefix:$PATH" "$prefix/jkz" doctor --project . --shell-path "$user_path"
