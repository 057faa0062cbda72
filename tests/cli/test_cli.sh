#!/usr/bin/env bash
# The posemb CLI: exit codes (0 / 1 / 2), one-line errors on stderr, --help, --version, demo.
set -u
bin="$1"
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

expect 0 "help" -- --help
contains out "demo" "help lists the demo subcommand"
cp "$tmp/out" "$tmp/help_out"
expect 0 "version" -- --version
contains out "posemb 0." "version string"
expect 2 "no subcommand" --
one_line "no subcommand"
expect 2 "unknown flag" -- --no-such-flag
one_line "unknown flag"
contains err "usage error" "unknown flag says usage error"
expect 2 "unknown subcommand" -- no-such-command
expect 2 "bad demo value" -- demo --steps banana
one_line "bad demo value"
expect 2 "demo value out of range" -- demo --samples 0
expect 1 "runtime failure: not a checkpoint" -- eval --checkpoint "$bin" --lengths 1:2
one_line "runtime failure"
contains err "posemb: error: checkpoint" "runtime error names the operation"
contains help_out "train" "help lists train"
contains help_out "eval" "help lists eval"
expect 0 "bench help" -- bench --help
contains out "--json" "bench help lists --json"
expect 2 "bench with zero repetitions" -- bench --reps 0 --no-peer
one_line "bench with zero repetitions"
contains err "--reps" "bench usage error names the flag"
expect 2 "bench with a bad thread count" -- bench --threads 1,0 --no-peer
contains err "--threads" "bench thread-count error names the flag"

finish "cli"
