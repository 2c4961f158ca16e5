#!/usr/bin/env bash
# Runs every fuzz target for a bounded time: JKZ_FUZZ_SECONDS each (default
# 45). The committed seeds (fuzz/seeds/<target>) start each run; what the
# fuzzer learns goes to fuzz/corpus/<target> (git-ignored). A crash stops the
# run with a non-zero exit and leaves its input in fuzz/artifacts/<target>/:
# turn it into a regression test named after what broke.
#
# cargo fuzz needs nightly compiler flags; RUSTC_BOOTSTRAP=1 allows them on
# the stable toolchain.
set -euo pipefail
cd "$(dirname "$0")"

seconds="${JKZ_FUZZ_SECONDS:-45}"
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  echo "fuzz: installing cargo-fuzz (once per machine)"
  cargo install cargo-fuzz --locked --version 0.13.2
fi
export RUSTC_BOOTSTRAP=1

cargo fuzz build --dev
for target in $(cargo fuzz list); do
  mkdir -p "corpus/$target" "seeds/$target"
  echo "fuzz: $target for ${seconds}s"
  set +e
  # A target's dictionary (fuzz/dicts/<target>.dict), when it has one.
  dict=()
  [ -f "dicts/$target.dict" ] && dict=(-dict="dicts/$target.dict")
  cargo fuzz run --dev "$target" "corpus/$target" "seeds/$target" -- \
    -max_total_time="$seconds" -rss_limit_mb=2048 -print_final_stats=1 "${dict[@]}" 2>&1 |
    grep -E '^(Done|stat::number_of_executed_units|==|SUMMARY)|panicked|crash-'
  # The fuzzer's status, not grep's.
  status=${PIPESTATUS[0]}
  set -e
  if [ "$status" -ne 0 ]; then
    echo "fuzz: $target failed (exit $status); input saved under fuzz/artifacts/$target/" >&2
    exit 1
  fi
done
