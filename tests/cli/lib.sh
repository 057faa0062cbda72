# Shared by the CLI test scripts: source it after setting `bin` (the posemb binary).
#   expect CODE DESCRIPTION -- ARGS...   run posemb ARGS; its exit code must be CODE
#   contains FILE TEXT DESCRIPTION       FILE (out or err of the last run) contains TEXT
#   one_line DESCRIPTION                 the last run's stderr is exactly one line
#   fail MESSAGE                         count a failure
# Each script ends with `finish NAME`, which reports and sets the exit status.
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}
expect() {
  local code="$1" what="$2"
  shift 3
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" -ne "$code" ]; then
    fail "$what: posemb $* exited $got, expected $code"
    sed 's/^/  stderr: /' "$tmp/err" | tail -n 5
  fi
}
contains() {
  if ! grep -qF -- "$2" "$tmp/$1"; then
    fail "$3: '$2' not in $1"
    sed 's/^/  /' "$tmp/$1" | head -n 30
  fi
}
one_line() {
  local n
  n=$(wc -l <"$tmp/err")
  [ "$n" -eq 1 ] || fail "$1: stderr has $n lines, expected 1"
}
finish() {
  echo "$1: $fails failure(s)"
  [ "$fails" -eq 0 ]
}
