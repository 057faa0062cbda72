#!/usr/bin/env bash
# `make build` / `make demo` put posemb on PATH with `scripts/setup.sh link TOOL DIR`: a symlink
# DIR/posemb -> TOOL, made once and left alone when it already points there, replaced when it
# points at another build, never over a file that is not a symlink; without write access it
# says so and the build still succeeds.
set -u
src="$1"
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}
link() { bash "$src/scripts/setup.sh" link "$@" >"$tmp/out" 2>"$tmp/err"; }

link /opt/a/posemb "$tmp/bin" || fail "link exited $?"
[ "$(readlink "$tmp/bin/posemb")" = /opt/a/posemb ] || fail "no symlink to /opt/a/posemb"
grep -q "posemb -> /opt/a/posemb" "$tmp/out" || fail "the link was not reported"
link /opt/a/posemb "$tmp/bin" || fail "second link exited $?"
[ -s "$tmp/out" ] && fail "a second run with nothing to do printed: $(cat "$tmp/out")"
link /opt/b/posemb "$tmp/bin" || fail "relink exited $?"
[ "$(readlink "$tmp/bin/posemb")" = /opt/b/posemb ] || fail "the link was not moved to the new build"
mkdir -p "$tmp/own" && echo "a user's own posemb" >"$tmp/own/posemb"
link /opt/a/posemb "$tmp/own" || fail "link over a regular file exited $?"
[ -L "$tmp/own/posemb" ] && fail "a regular file was replaced by the link"
grep -q "not a symlink" "$tmp/err" || fail "the refusal was not said"
# A directory that cannot be made (under a regular file, so even root cannot): said, and not a
# failure of the build.
echo x >"$tmp/file"
link /opt/a/posemb "$tmp/file/bin" || fail "an unwritable directory failed the build"
grep -q "cannot write" "$tmp/err" || fail "an unwritable directory was not said"
echo "setup link: $fails failure(s)"
[ "$fails" -eq 0 ]
