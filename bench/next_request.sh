#!/usr/bin/env bash
# What the next model request carries after a large Bash output, with and
# without jkz's hooks: runs the real client against the integration tests'
# loopback model and prints the table of docs/tool-output-guard.md
# ("What the client does, measured"). About a minute.
#
#   bench/next_request.sh
#
# The measurement is the ignored test
# client::tool_output::measure_what_the_next_request_carries, so it shares
# the tests' model server and harness instead of a copy of them; it needs
# the pinned client the client tests need.
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo test --locked --test integration \
    client::tool_output::measure_what_the_next_request_carries \
    -- --ignored --exact --nocapture
