#!/usr/bin/env bash
# check-lab-names.py can fail: in a scratch tree with one encoding name and one lab checkpoint
# key spelled outside the registry (and the same words in comments and the registry, which are
# allowed), it must exit 1 naming exactly the two offending lines.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/lab/encodings" "$tmp/tools/x"
printf 'const S kA{\n    .name = "alpha",\n};\nconst S kB{.name = "beta-two"};\n' \
  >"$tmp/lab/encodings/a.cpp"
printf 'auto a = find("alpha");  // ok: the registry\n' >"$tmp/lab/encodings/registry.cpp"
printf 'std::string k = "posemb.lab.run";  // ok: in lab/\n' >"$tmp/lab/checkpoint.cpp"
cat >"$tmp/tools/x/cmd.cpp" <<'CPP'
// "alpha" in a comment is fine
/* "beta-two" too */
auto pe = "alphabet";
auto bad = run("beta-two");
auto key = md.at("posemb.lab.step");
CPP
set +e
out="$(/usr/bin/python3 "$here/check-lab-names.py" "$tmp")"
rc=$?
set -e
echo "$out"
[ "$rc" -eq 1 ] || { echo "FAIL: exit $rc, want 1"; exit 1; }
[ "$(echo "$out" | wc -l)" -eq 2 ] || { echo "FAIL: want exactly 2 violations"; exit 1; }
echo "$out" | grep -q '^tools/x/cmd.cpp:4: the encoding name "beta-two"' || { echo "FAIL: name"; exit 1; }
echo "$out" | grep -q '^tools/x/cmd.cpp:5: the lab checkpoint key "posemb.lab.step"' || {
  echo "FAIL: key"
  exit 1
}
echo "ok: check-lab-names.py catches both"
