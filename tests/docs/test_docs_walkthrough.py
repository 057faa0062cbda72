"""Runs the commands of README.md and of every page of docs/ as a user would after the two
set-up commands (`make demo`, `make test`), and compares the sample outputs the pages show with
what the tools print now.

usage: test_docs_walkthrough.py POSEMB SOURCE_DIR WORK_DIR [PAGE ...]

The conventions of the pages (what this test reads):

- A ```sh block is a walkthrough: its lines run in order as one bash script (`set -e`: any
  failing command fails the test) in WORK_DIR/<page>, which stands for the repository root: it
  holds the checkout's files (symbolic links to SOURCE_DIR's), `posemb` is on PATH (as `make demo`
  puts it there), and `build/` is the build under test (`./build/tools/posemb/posemb` is posemb,
  `build/python` the Python module). Each page starts from a directory without outputs, and its
  blocks and samples run in the order the page gives them.
  Lines starting with `make ` are the set-up itself and are not run again. The install prefix
  `/opt/posemb` is WORK_DIR/<page>/opt/posemb (the test writes nothing outside WORK_DIR).
- A block that is legitimately long (a whole build, a benchmark) or needs what a test machine
  has not (a cluster) is listed in NOT_RUN below, with the reason and what CTest runs instead
  (a shorter script of the same programs, run here, when no other test runs them); an entry
  that names no block of its page fails the test. A ```text, ```cpp, ```cmake,
  ```python or bare ``` block is not run.
- A bare ``` block whose lines start with `$ ` is a sample: each `$ COMMAND` (continued on the
  next lines while its quotes are open or a line ends in `\`) runs in the page's directory and
  its output (stdout, then stderr) must equal the lines under it, after one normalisation: the
  memory budget, which depends on the machine's memory, is written `<budget>` on both sides
  ("budget of 18957376512 bytes (17.7 GiB)" -> "budget of <budget>"), and of an `mpirun`
  sample only posemb's lines are compared: mpirun's own report of a failed job (its boxes of
  dashes, from the first such line on) is cut. A line `...` in the page stands for any number
  of lines of output. Nothing else differs.
- Sizes: every `posemb train`, `sweep` and `demo` is run through a wrapper that caps the
  training steps (`--steps`, `--randomized-steps`, `--extension-steps`, `--rope-extension-steps`,
  `--checkpoint-every`)
  at 40 and the evaluation samples (`--samples`) at 10, adding the caps to `demo` (whose
  defaults are the long run), `posemb bench` at one repetition (`--reps 1`) and
  `build/bench/bench_embedding` at one short run of each case (`--benchmark_min_time=0`), so the pages
  run in a few minutes on 2 cores; the command line otherwise runs exactly as written (the
  parser sees every flag the page gives). With POSEMB_DOCTEST_FULL=1 nothing is capped.
  Samples run uncapped.
- The files the pages use are made by the pages' own commands (`posemb make-checkpoint`,
  `posemb train`): nothing is prepared behind the reader's back.
"""
import fnmatch
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import time

CAP_STEPS = 40
CAP_SAMPLES = 10
STEP_FLAGS = ("--steps", "--randomized-steps", "--extension-steps", "--rope-extension-steps",
              "--checkpoint-every")

WRAPPER = r'''#!/usr/bin/env python3
# posemb as the docs' commands call it, with the training sizes capped (test_docs_walkthrough.py).
import os, sys
real, log = {real!r}, {log!r}
args = sys.argv[1:]
cmd = next((a for a in args if not a.startswith("-") and a in ("train", "sweep", "demo", "eval")), "")
if os.environ.get("POSEMB_DOCTEST_FULL") != "1" and cmd:
    out, i = [], 0
    while i < len(args):
        a = args[i]
        flag, eq, val = a.partition("=")
        caps = {{**{{f: {steps} for f in {step_flags!r}}}, "--samples": {samples}}}
        if flag in caps and (eq or i + 1 < len(args)):
            v = val if eq else args[i + 1]
            if v.isdigit():
                v = str(min(int(v), caps[flag]))
            out.append(flag + "=" + v if eq else flag)
            if not eq:
                out.append(v)
                i += 1
        else:
            out.append(a)
        i += 1
    given = {{a.partition("=")[0] for a in out}}
    if cmd == "demo":
        for f in ("--steps", "--randomized-steps", "--extension-steps", "--rope-extension-steps"):
            if f not in given:
                out += [f, str({steps})]
    if cmd in ("demo", "eval") and "--samples" not in given:
        out += ["--samples", str({samples})]
    args = out
first = next((a for a in args if not a.startswith("-")), "")
if os.environ.get("POSEMB_DOCTEST_FULL") != "1" and first == "bench" and "--help" not in args:
    args = [a for i, a in enumerate(args) if a != "--reps" and (i == 0 or args[i - 1] != "--reps")]
    args += ["--reps", "1"]
with open(log, "a") as f:
    f.write(" ".join(["posemb"] + args) + "\n")
os.execv(real, [real] + args)
'''


BENCH_WRAPPER = r'''#!/bin/sh
# bench/bench_embedding as the docs call it, each case timed once (test_docs_walkthrough.py).
if [ "$POSEMB_DOCTEST_FULL" = 1 ]; then exec {real!r} "$@"; fi
exec {real!r} "$@" --benchmark_min_time=0
'''

# Blocks not run here, by page and first line: why, and what runs them instead.
NOT_RUN = {
    ("README.md", "posemb demo --task text --out demo-text     # about 12 minutes on 2 cores; --quick: about 15 seconds"):
        "the text demo: its 21 runs and 33 fine-tunings at up to 4L take minutes even capped at 40 "
        "steps (417 s here); CTest lm_demo_cli runs posemb demo --task text --quick with a few "
        "steps on a corpus of its own",
    ("docs/experiments.md", "posemb demo --task text --out demo-text            # about 12 minutes on 2 cores"):
        "as README.md's text demo (473 s here capped): CTest lm_demo_cli",
    ("README.md", "cmake -S . -B build && cmake --build build -j"):
        "a whole build (minutes); the build under test is one, `make build` configures it with "
        "the same defaults plus the tests, and the next block installs it",
    ("README.md", "/usr/bin/python3 -m venv --system-site-packages venv"):
        "pip builds and installs the package into a venv; CTest python_pip_install runs these two "
        "commands on a copy of the checkout, reusing the build as a user's `pip install .` does",
    ("docs/python.md", "/usr/bin/python3 -m venv --system-site-packages venv"):
        "as README.md's: CTest python_pip_install",
    ("docs/scale.md", "cmake -S . -B build-nompi -DPOSEMB_WITH_MPI=OFF && cmake --build build-nompi -j2"):
        "a whole second build; `make test` builds and tests it (test-no-mpi)",
    ("docs/scale.md", "cat > hosts <<'EOF'"):
        "needs a cluster (machines node1 and node2, a shared /shared); CTest mpi_cli and "
        "mpi_world_2/3 run train under mpirun on this machine",
    ("docs/errors.md", "/usr/bin/python3 tests/hostile/run.py build/tools/posemb/posemb /tmp/hostile    # or: ctest -R hostile"):
        "the hostile-input suite, over 1,500 cases (minutes): it is CTest hostile",
    ("docs/layer.md", "make build"):
        ("every benchmark four times over (each case with its peers and the training step, only "
         "the rotary cases, Google Benchmark's program, against a busy core): minutes even at one "
         "repetition each; the next block runs posemb bench over every case with its peers and "
         "against a busy core, and the two programs run here on one case each instead",
         "./build/tools/posemb/posemb bench --filter rope_forward/gpt2 --no-peer --no-train-step\n"
         "./build/bench/bench_embedding --threads=1,2 --benchmark_filter=rope_forward/gpt2"),
    ("docs/layer.md", "taskset -c 1 sh -c 'while :; do :; done' &"):
        "a benchmark with a core kept busy, meant for a quiet machine; the block at docs/layer.md's "
        "'The rotary kernels' runs posemb bench against a busy core here, with one repetition",
}


def blocks(path):
    """(kind, lines, first line number) of each fenced block: kind "sh", "sample" or "other"."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^\s*```(\S*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        lang, start = m.group(1), i
        j = i + 1
        while not re.match(r"^\s*```\s*$", lines[j]):
            j += 1
        body = lines[i + 1:j]
        if lang == "sh":
            kind = "sh"
        elif lang == "" and body and body[0].startswith("$ "):
            kind = "sample"
        else:
            kind = "other"
        out.append((kind, body, start + 1))
        i = j + 1
    return out


def normalise(text):
    return re.sub(r"budget of \d+ bytes \([^)]*\)", "budget of <budget>", text).rstrip("\n")


def matches(got, want):
    """got equals want, where a line "..." of want stands for any number of lines."""
    pattern = "".join(r"(?:[^\n]*\n)*?" if line == "..." else re.escape(line) + r"\n"
                      for line in want.split("\n"))
    return re.fullmatch(pattern, got + "\n") is not None


def mpirun_cut(text):
    """posemb's lines of an mpirun job's output: mpirun's own report starts with a line of dashes."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if re.fullmatch(r"-{20,}", line):
            return "\n".join(lines[:i])
    return text


def mirror(real, fake, replace):
    """fake/ holds a symbolic link to each entry of real/, except the paths in `replace`
    (relative, first part first), made as directories that mirror theirs, and its leaf linked to
    replace's value."""
    os.makedirs(fake, exist_ok=True)
    for entry in os.listdir(real):
        inner = {k[1:]: v for k, v in replace.items() if k[0] == entry}
        target = os.path.join(fake, entry)
        if () in inner:
            os.symlink(inner[()], target)
        elif inner:
            mirror(os.path.join(real, entry), target, inner)
        else:
            os.symlink(os.path.join(real, entry), target)


def prepare(work, posemb, source):
    """WORK_DIR/<page>: the checkout's files and the build under test, posemb wrapped."""
    os.makedirs(work)
    tool = os.path.join(work, ".bin")
    os.makedirs(tool)
    wrapper = os.path.join(tool, "posemb")
    with open(wrapper, "w") as f:
        f.write(WRAPPER.format(real=os.path.abspath(posemb), log=os.path.join(work, ".commands"),
                               steps=CAP_STEPS, samples=CAP_SAMPLES, step_flags=STEP_FLAGS))
    os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(posemb))))
    # Google Benchmark's program, one short run of each case unless POSEMB_DOCTEST_FULL=1.
    bench = os.path.join(tool, "bench_embedding")
    with open(bench, "w") as f:
        f.write(BENCH_WRAPPER.format(real=os.path.join(build, "bench", "bench_embedding")))
    os.chmod(bench, os.stat(bench).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    mirror(build, os.path.join(work, "build"), {("tools", "posemb", "posemb"): wrapper,
                                                ("bench", "bench_embedding"): bench})
    for entry in os.listdir(source):
        if entry != ".git" and not entry.startswith("build"):
            os.symlink(os.path.join(source, entry), os.path.join(work, entry))
    env = dict(os.environ)
    env["PATH"] = tool + os.pathsep + env.get("PATH", "")
    return env


def sample_commands(body):
    """(command, expected output, index of its line) of each `$ COMMAND` of a sample block."""
    out, i = [], 0
    while i < len(body):
        if not body[i].startswith("$ "):
            i += 1
            continue
        start, cmd = i, body[i][2:]
        while True:
            try:
                shlex.split(cmd)
                complete = not cmd.endswith("\\")
            except ValueError:
                complete = False
            if complete or i + 1 >= len(body):
                break
            i += 1
            cmd += "\n" + body[i]
        j = i + 1
        while j < len(body) and not body[j].startswith("$ "):
            j += 1
        out.append((cmd, "\n".join(body[i + 1:j]), start))
        i = j
    return out


def run_sample(page, line, cmd, want, work, env):
    sample_env = dict(env, POSEMB_DOCTEST_FULL="1")
    r = subprocess.run(["bash", "-c", cmd], cwd=work, env=sample_env, capture_output=True,
                       text=True)
    got = r.stdout + r.stderr
    if cmd.startswith("mpirun "):
        got = mpirun_cut(got)
    if not matches(normalise(got), normalise(want)):
        return [f"{page}:{line}: $ {cmd}\n  doc:  {normalise(want)!r}\n  tool: {normalise(got)!r}"]
    print(f"{page}:{line}: sample matches", flush=True)
    return []


def not_ignored(work, source):
    """What the page's commands wrote into the checkout that .gitignore does not keep out of git
    (its patterns, as git reads them at the top level)."""
    patterns = [line.strip() for line in open(os.path.join(source, ".gitignore"))
                if line.strip() and not line.startswith("#")]
    left = []
    for entry in sorted(os.listdir(work)):
        path = os.path.join(work, entry)
        if os.path.islink(path) or entry in (".bin", ".commands", "opt"):  # the test's own
            continue
        is_dir = os.path.isdir(path)
        if not any(fnmatch.fnmatchcase(entry, p.strip("/")) and (is_dir or not p.endswith("/"))
                   for p in patterns):
            left.append(entry + ("/" if is_dir else ""))
    return left


def run_page(page, source, posemb, root):
    """Runs the page's blocks and samples in order; returns the failures."""
    work = os.path.join(root, page.replace("/", "_").replace(".md", ""))
    env = prepare(work, posemb, source)
    failures = []
    found = blocks(os.path.join(source, page))
    firsts = {body[0].strip() for kind, body, _ in found if body}
    for (p, first), why in NOT_RUN.items():
        if p == page and first not in firsts:
            failures.append(f"{page}: NOT_RUN names a block starting {first!r} that the page no "
                            "longer has")
    for kind, body, line in found:
        if kind == "sample":
            for cmd, want, i in sample_commands(body):
                failures += run_sample(page, line + 1 + i, cmd, want, work, env)
            continue
        if kind != "sh":
            continue
        why = NOT_RUN.get((page, body[0].strip()))
        if why:
            why, instead = why if isinstance(why, tuple) else (why, "")
            print(f"{page}:{line}: sh block not run: {why}", flush=True)
            if not instead:
                continue
            body = instead.split("\n")
            print(f"{page}:{line}: instead: {'; '.join(body)}", flush=True)
        script = "\n".join(l for l in body if not l.lstrip().startswith("make "))
        script = script.replace("/opt/posemb", os.path.join(work, "opt", "posemb"))
        if not script.strip():
            continue
        started = time.monotonic()
        r = subprocess.run(["bash", "-e", "-c", script], cwd=work, env=env, capture_output=True,
                           text=True)
        print(f"{page}:{line}: sh block: exit {r.returncode} ({time.monotonic() - started:.1f} s)",
              flush=True)
        if r.returncode != 0:
            failures.append(f"{page}:{line}: the block failed (exit {r.returncode}):\n{script}\n"
                            f"--- stderr (last lines):\n" + "\n".join(r.stderr.splitlines()[-8:]))
    left = not_ignored(work, source)
    if left:
        failures.append(f"{page}: its commands write {', '.join(left)} into the checkout, which "
                        ".gitignore does not keep out of git")
    return failures


def main():
    posemb, source, root = sys.argv[1:4]
    pages = sys.argv[4:] or ["README.md"] + sorted(
        "docs/" + f for f in os.listdir(os.path.join(source, "docs")) if f.endswith(".md"))
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    failures = []
    for page in pages:
        failures += run_page(page, source, posemb, root)
    for f in failures:
        print("FAIL: " + f)
    print(f"docs walkthrough: {len(pages)} pages, {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
