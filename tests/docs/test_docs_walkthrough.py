"""Runs the shell commands of README.md and docs/experiments.md as a user would after the two
set-up commands (`make demo`, `make test`), and compares the sample outputs of
docs/experiments.md and docs/errors.md with what the tool prints now.

usage: test_docs_walkthrough.py POSEMB SOURCE_DIR WORK_DIR

The conventions of the pages (what this test reads):

- A ```sh block is a walkthrough: its lines run in order as one bash script (`set -e`: any
  failing command fails the test) in WORK_DIR/<page>, which stands for the repository root:
  `posemb` is on PATH (as `make demo` puts it there), `./build/tools/posemb/posemb` and
  `build/python` are the build under test, and each page starts from an empty directory.
  Lines starting with `make ` are the set-up itself and are not run again.
- A block preceded by a line `<!-- doc-test: not run: REASON -->` is not run (REASON says
  which test covers it instead). A ```text, ```cpp, ```cmake or bare ``` block is not run.
- A bare ``` block whose lines start with `$ ` is a sample: each `$ COMMAND` runs (in the
  directory of the page's walkthrough, after it, so `run/` is the walkthrough's) and its output
  (stdout, then stderr) must equal the lines under it, after one normalisation: the memory
  budget, which depends on the machine's memory, is written `<budget>` on both sides
  ("budget of 18957376512 bytes (17.7 GiB)" -> "budget of <budget>"), and of an `mpirun`
  sample only posemb's lines are compared: mpirun's own report of a failed job (its boxes of
  dashes, from the first such line on) is cut. Nothing else differs.
- Sizes: every `posemb train`, `sweep` and `demo` is run through a wrapper that caps the
  training steps (`--steps`, `--randomized-steps`, `--extension-steps`, `--checkpoint-every`)
  at 40 and the evaluation samples (`--samples`) at 10, adding the caps to `demo` (whose
  defaults are the long run), so the pages run in a few minutes on 2 cores; the command line
  otherwise runs exactly as written (the parser sees every flag the page gives). With
  POSEMB_DOCTEST_FULL=1 nothing is capped. Samples run uncapped.
- Files the pages assume the reader has (`gpt2.safetensors`, `roberta.safetensors`,
  `wpe.npy`, errors.md's `ck.safetensors` and `rope/checkpoint.safetensors`) are made small
  by FIXTURES below before the commands run.
"""
import json
import os
import re
import shutil
import stat
import struct
import subprocess
import sys

CAP_STEPS = 40
CAP_SAMPLES = 10
STEP_FLAGS = ("--steps", "--randomized-steps", "--extension-steps", "--checkpoint-every")

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
        for f in ("--steps", "--randomized-steps", "--extension-steps"):
            if f not in given:
                out += [f, str({steps})]
    if cmd in ("demo", "eval") and "--samples" not in given:
        out += ["--samples", str({samples})]
    args = out
with open(log, "a") as f:
    f.write(" ".join(["posemb"] + args) + "\n")
os.execv(real, [real] + args)
'''


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
        skipped = any("<!-- doc-test: not run" in lines[k] for k in range(max(0, start - 3), start))
        if lang == "sh" and not skipped:
            kind = "sh"
        elif lang == "" and body and body[0].startswith("$ ") and not skipped:
            kind = "sample"
        else:
            kind = "other"
        out.append((kind, body, start + 1))
        i = j + 1
    return out


def safetensors(path, tensors, metadata=None):
    """Writes a small F32 safetensors file: tensors maps a name to (shape, values)."""
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, (shape, values) in tensors.items():
        raw = struct.pack("<%df" % len(values), *values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def table(rows, cols, first_zero_rows=0):
    return [0.0 if r < first_zero_rows else ((r * 31 + c * 17) % 97) / 97.0 - 0.5
            for r in range(rows) for c in range(cols)]


def npy(path, rows, cols):
    head = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, cols)
    head += " " * (-(len(head) + 11) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode())
        f.write(struct.pack("<%df" % (rows * cols), *table(rows, cols)))


def fixtures(work, posemb):
    """The files the pages assume: small stand-ins with the names and layouts they describe."""
    safetensors(os.path.join(work, "gpt2.safetensors"),
                {"wpe.weight": ([64, 16], table(64, 16)), "wte.weight": ([10, 16], table(10, 16))})
    safetensors(os.path.join(work, "roberta.safetensors"),
                {"roberta.embeddings.position_embeddings.weight": ([66, 16], table(66, 16, 0))})
    npy(os.path.join(work, "wpe.npy"), 32, 8)
    tiny = ["--d-model", "16", "--heads", "2", "--layers", "1", "--train-len", "3", "--alphabet",
            "4", "--batch", "4", "--micro-batch", "2", "--steps", "2", "--warmup", "1",
            "--threads", "1", "--quiet"]
    for pe, out in (("learned", "ck"), ("rope", "rope")):
        subprocess.run([posemb, "train", "--pe", pe, *tiny, "--out", os.path.join(work, out)],
                       check=True, capture_output=True)
    shutil.copy(os.path.join(work, "ck", "checkpoint.safetensors"), os.path.join(work, "ck.safetensors"))


def normalise(text):
    return re.sub(r"budget of \d+ bytes \([^)]*\)", "budget of <budget>", text).rstrip("\n")


def mpirun_cut(text):
    """posemb's lines of an mpirun job's output: mpirun's own report starts with a line of dashes."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if re.fullmatch(r"-{20,}", line):
            return "\n".join(lines[:i])
    return text


def prepare(work, posemb, source):
    os.makedirs(work, exist_ok=True)
    tool = os.path.join(work, ".bin")
    os.makedirs(tool, exist_ok=True)
    wrapper = os.path.join(tool, "posemb")
    with open(wrapper, "w") as f:
        f.write(WRAPPER.format(real=os.path.abspath(posemb), log=os.path.join(work, ".commands"),
                               steps=CAP_STEPS, samples=CAP_SAMPLES, step_flags=STEP_FLAGS))
    os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    os.makedirs(os.path.join(work, "build", "tools", "posemb"), exist_ok=True)
    os.symlink(wrapper, os.path.join(work, "build", "tools", "posemb", "posemb"))
    build_python = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(posemb)))), "python")
    if os.path.isdir(build_python):
        os.symlink(build_python, os.path.join(work, "build", "python"))
    env = dict(os.environ)
    env["PATH"] = tool + os.pathsep + env.get("PATH", "")
    return env


def run_page(page, source, posemb, root):
    work = os.path.join(root, os.path.basename(page).replace(".md", ""))
    shutil.rmtree(work, ignore_errors=True)
    env = prepare(work, posemb, source)
    fixtures(work, posemb)
    failures = []
    for kind, body, line in blocks(os.path.join(source, page)):
        if kind != "sh":
            continue
        script = "\n".join(l for l in body if not l.lstrip().startswith("make "))
        if not script.strip():
            continue
        r = subprocess.run(["bash", "-e", "-c", script], cwd=work, env=env, capture_output=True, text=True)
        print(f"{page}:{line}: sh block: exit {r.returncode}")
        if r.returncode != 0:
            failures.append(f"{page}:{line}: the block failed (exit {r.returncode}):\n{script}\n"
                            f"--- stderr (last lines):\n" + "\n".join(r.stderr.splitlines()[-8:]))
    return work, env, failures


def check_samples(page, source, work, env):
    failures = []
    for kind, body, line in blocks(os.path.join(source, page)):
        if kind != "sample":
            continue
        cmds = [i for i, l in enumerate(body) if l.startswith("$ ")]
        for n, i in enumerate(cmds):
            end = cmds[n + 1] if n + 1 < len(cmds) else len(body)
            want = "\n".join(body[i + 1:end])
            sample_env = dict(env, POSEMB_DOCTEST_FULL="1")
            r = subprocess.run(["bash", "-c", body[i][2:]], cwd=work, env=sample_env,
                               capture_output=True, text=True)
            got = r.stdout + r.stderr
            if body[i][2:].startswith("mpirun "):
                got = mpirun_cut(got)
            if normalise(got) != normalise(want):
                failures.append(f"{page}:{line + 1 + i}: {body[i]}\n  doc:  {normalise(want)!r}\n"
                                f"  tool: {normalise(got)!r}")
            else:
                print(f"{page}:{line + 1 + i}: sample matches")
    return failures


def main():
    posemb, source, root = sys.argv[1:4]
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    failures = []
    for page in ("README.md", "docs/experiments.md"):
        work, env, f = run_page(page, source, posemb, root)
        failures += f
        failures += check_samples(page, source, work, env)
    # errors.md's samples run in a directory of their own with the fixtures.
    work = os.path.join(root, "errors")
    env = prepare(work, posemb, source)
    fixtures(work, posemb)
    failures += check_samples("docs/errors.md", source, work, env)
    for f in failures:
        print("FAIL: " + f)
    print(f"docs walkthrough: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
