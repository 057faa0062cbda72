#!/usr/bin/env bash
# check-lab-names.py can fail: in a scratch tree with an encoding name, a task name and a lab
# checkpoint key spelled outside their places, and a task defined but not registered (and the
# same words in comments and the rooms, which are allowed), it must exit 1 naming exactly the four
# offences.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/lab/encodings" "$tmp/lab/tasks" "$tmp/tools/x"
printf 'extern const EncodingSpec kA{\n    .name = "alpha",\n};\nextern const EncodingSpec kB{.name = "beta-two"};\n' \
  >"$tmp/lab/encodings/a.cpp"
cat >"$tmp/lab/encodings/registry.cpp" <<'CPP'
extern const EncodingSpec kA, kB;
constexpr std::array kRegistry = {&kA, &kB};
auto a = find("alpha");  // ok: the room
CPP
cat >"$tmp/lab/tasks/t.cpp" <<'CPP'
extern const TaskSpec kT{.name = "tee"};
extern const TaskSpec kU{.name = "you-two"};
extern const TaskSpec kLost{.name = "lost"};
CPP
cat >"$tmp/lab/tasks/registry.cpp" <<'CPP'
extern const TaskSpec kT, kU;
constexpr std::array kRegistry = {&kT, &kU};
CPP
printf 'std::string k = "posemb.lab.run";  // ok: in lab/\n' >"$tmp/lab/checkpoint.cpp"
cat >"$tmp/tools/x/cmd.cpp" <<'CPP'
// "alpha" and "tee" in a comment are fine
/* "beta-two" too */
auto pe = "alphabet";
auto bad = run("beta-two");
auto key = md.at("posemb.lab.step");
auto task = run("you-two");
CPP
set +e
out="$(/usr/bin/python3 "$here/check-lab-names.py" "$tmp")"
rc=$?
set -e
echo "$out"
[ "$rc" -eq 1 ] || { echo "FAIL: exit $rc, want 1"; exit 1; }
[ "$(echo "$out" | wc -l)" -eq 4 ] || { echo "FAIL: want exactly 4 violations"; exit 1; }
echo "$out" | grep -q '^lab/tasks/t.cpp: TaskSpec kLost is not in the registry' || {
  echo "FAIL: registry"
  exit 1
}
echo "$out" | grep -q '^tools/x/cmd.cpp:4: the encoding name "beta-two"' || { echo "FAIL: name"; exit 1; }
echo "$out" | grep -q '^tools/x/cmd.cpp:5: the lab checkpoint key "posemb.lab.step"' || {
  echo "FAIL: key"
  exit 1
}
echo "$out" | grep -q '^tools/x/cmd.cpp:6: the task name "you-two"' || { echo "FAIL: task"; exit 1; }
echo "ok: check-lab-names.py catches all four"
