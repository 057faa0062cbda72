#!/usr/bin/env bash
# The posemb CLI: exit codes (0 / 1 / 2), one-line errors on stderr, --help, --version, demo.
set -u
bin="$1"
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect CODE DESCRIPTION -- ARGS...: run posemb with ARGS, check the exit code.
expect() {
  local code="$1" what="$2"
  shift 3
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" -ne "$code" ]; then
    echo "FAIL: $what: posemb $* exited $got, expected $code"
    sed 's/^/  stderr: /' "$tmp/err"
    fails=$((fails + 1))
  fi
}
# stderr_is_one_line DESCRIPTION: the last run's stderr is exactly one line.
stderr_is_one_line() {
  local n
  n=$(wc -l <"$tmp/err")
  if [ "$n" -ne 1 ]; then
    echo "FAIL: $1: stderr has $n lines, expected 1"
    fails=$((fails + 1))
  fi
}
contains() {  # contains FILE TEXT DESCRIPTION
  if ! grep -qF -- "$2" "$tmp/$1"; then
    echo "FAIL: $3: '$2' not in $1"
    sed 's/^/  /' "$tmp/$1" | head -20
    fails=$((fails + 1))
  fi
}

expect 0 "help" -- --help
contains out "demo" "help lists the demo subcommand"
cp "$tmp/out" "$tmp/help_out"
expect 0 "version" -- --version
contains out "posemb 0." "version string"
expect 2 "no subcommand" --
stderr_is_one_line "no subcommand"
expect 2 "unknown flag" -- --no-such-flag
stderr_is_one_line "unknown flag"
contains err "usage error" "unknown flag says usage error"
expect 2 "unknown subcommand" -- no-such-command
expect 2 "bad demo value" -- demo --steps banana
stderr_is_one_line "bad demo value"
expect 2 "demo value out of range" -- demo --samples 0
expect 1 "runtime failure: not a checkpoint" -- eval --checkpoint "$bin" --lengths 1:2
stderr_is_one_line "runtime failure"
contains err "posemb: error: checkpoint" "runtime error names the operation"
contains help_out "train" "help lists train"
contains help_out "eval" "help lists eval"
expect 0 "bench help" -- bench --help
contains out "--json" "bench help lists --json"
expect 2 "bench with zero repetitions" -- bench --reps 0 --no-peer
stderr_is_one_line "bench with zero repetitions"
contains err "--reps" "bench usage error names the flag"

echo "cli: $fails failure(s)"
[ "$fails" -eq 0 ]
