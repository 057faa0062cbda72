#!/usr/bin/env python3
"""posemb's hostile-input suite: every bad file, flag and situation gets one clear line,
bounded time and memory, and nothing lost (issue 10). Generates its inputs (inputs.py), runs
every case (cases_files.py, cases_lab.py) with the checks of runner.py, two at a time, and
prints the failures and a count per class.

    run.py POSEMB_BINARY WORK_DIR [--jobs N] [--only SUBSTRING] [--keep]

Cases that need root (device nodes in a private mount namespace, a small tmpfs to fill) run when
the suite runs as root and are reported as skipped otherwise."""
import argparse
import collections
import concurrent.futures
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cases_files import file_cases  # noqa: E402
from cases_folders import folder_cases  # noqa: E402
from cases_io4 import io4_cases  # noqa: E402
from cases_lab import lab_cases  # noqa: E402
from cases_round3 import round3_cases  # noqa: E402
from cases_round4 import round4_cases  # noqa: E402
from inputs import make_inputs  # noqa: E402
from runner import Runner, temporaries, tree_hashes  # noqa: E402

CLASS_NAMES = {
    "1": "empty rows at scale", "2": "header cost and limits", "3": "non-regular inputs",
    "4": "non-regular outputs", "5": "the writer: planted links, full disk, file-size limit",
    "6": "signals during a write", "7": "file modes", "8": "values (NaN, infinity, std)",
    "9": "checkpoint metadata and tensors", "10": "memory budget and work bounds",
    "11": "untrusted bytes echoed", "12": "names and paths", "flags": "every flag's bad values",
    "stdout": "standard output that cannot be written",
    "r3-overflow": "values that would overflow to infinity", "r3-wrap": "ids that would wrap",
    "r3-state": "state checked before the work", "r3-threads": "threads in the memory pre-check",
    "folders": "checkpoint folders (issue 22)",
    "io4": "configs kept byte for byte, numpy's shape limit, idle flags, exact messages",
    "r4-outputs": "outputs against every file read (shards, index, config, links, spellings)",
    "r4-float": "config values at the edges of float", "r4-work": "work bounded before it starts",
    "r4-keys": "every length key of a folder's config", "r4-derived": "derived config values",
    "r4-empty": "empty values given on purpose",
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("posemb")
    ap.add_argument("work")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    a = ap.parse_args()
    posemb = os.path.abspath(a.posemb)
    work = os.path.abspath(a.work)
    if os.path.exists(work):
        subprocess_rmtree(work)
    os.makedirs(work)
    # The same on every machine: two OpenMP threads (the lab's memory needs depend on them).
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C.UTF-8", "OMP_NUM_THREADS": "2"}
    t0 = time.monotonic()
    p = make_inputs(posemb, work, env)
    p["tiny"] = ["--d-model", "16", "--heads", "2", "--layers", "1", "--train-len", "3", "--alphabet", "4",
                 "--batch", "4", "--micro-batch", "2", "--steps", "2", "--warmup", "1", "--quiet"]
    t_inputs = time.monotonic() - t0
    cases = [c for c in file_cases(p) + lab_cases(p) + round3_cases(p) + folder_cases(p) + io4_cases(p)
             + round4_cases(p) if a.only in c.name]
    names = collections.Counter(c.name for c in cases)
    dup = [n for n, k in names.items() if k > 1]
    if dup:
        print("duplicate case names: %s" % dup[:10])
        return 1
    before = {root: tree_hashes(os.path.join(work, root)) for root in ("in", "ckpt")}
    is_root = os.geteuid() == 0
    runner = Runner(posemb, work, env, is_root)
    results = {}
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        futures = {pool.submit(runner.run, c): c for c in cases}
        for f in concurrent.futures.as_completed(futures):
            c = futures[f]
            try:
                results[c.name] = f.result()
            except Exception as e:  # a bug of the suite itself
                results[c.name] = None
                print("ERROR in the suite running %s: %r" % (c.name, e))
    failed, skipped = [], []
    per_class = collections.defaultdict(lambda: [0, 0, 0])
    slowest = []
    for c in cases:
        r = results.get(c.name)
        k = per_class[c.cls]
        if r is None:
            failed.append(c.name)
            k[1] += 1
            continue
        if r.skipped:
            skipped.append((c.name, r.skipped))
            k[2] += 1
            continue
        slowest.append((r.seconds, c.name))
        if r.problems:
            failed.append(c.name)
            k[1] += 1
            print("FAIL %s (class %s): posemb %s" % (c.name, c.cls, " ".join(repr(x)[:80] for x in c.args)))
            for pr in r.problems:
                print("    %s" % pr)
            print("    exit %d, %.2f s, peak RSS %.0f MiB; stderr: %r" % (r.rc, r.seconds, r.max_rss_mb, r.stderr[:400]))
        else:
            k[0] += 1
    after = {root: tree_hashes(os.path.join(work, root)) for root in ("in", "ckpt")}
    for root in before:
        if before[root] != after[root]:
            changed = [k for k in set(before[root]) | set(after[root]) if before[root].get(k) != after[root].get(k)]
            print("FAIL: inputs changed under %s: %s" % (root, sorted(changed)[:20]))
            failed.append("inputs-" + root)
    left = temporaries(work)
    if left:
        print("FAIL: temporaries left in the work directory: %s" % left[:10])
        failed.append("temporaries")
    for name, why in skipped[:5]:
        print("SKIPPED %s: %s" % (name, why))
    if skipped:
        print("SKIPPED %d case(s) that need root (%s)" % (len(skipped), "not running as root"))
    print("\nclass  passed  failed  skipped  what")
    for cls in sorted(per_class, key=lambda c: (not c.isdigit(), int(c) if c.isdigit() else 0, c)):
        ok, bad, sk = per_class[cls]
        print("%5s  %6d  %6d  %7d  %s" % (cls, ok, bad, sk, CLASS_NAMES.get(cls, cls)))
    total = time.monotonic() - t0
    slowest.sort(reverse=True)
    print("slowest: %s" % ", ".join("%s %.1fs" % (n, s) for s, n in slowest[:5]))
    print("%d cases: %d passed, %d failed, %d skipped; inputs %.1f s, total %.1f s, %d jobs, load %s" % (
        len(cases), sum(v[0] for v in per_class.values()), len(failed), len(skipped), t_inputs, total, a.jobs,
        " ".join("%.2f" % x for x in os.getloadavg())))
    if not failed and not a.keep:
        subprocess_rmtree(work)
    return 1 if failed else 0


def subprocess_rmtree(path):
    # Case directories may hold FIFOs and read-only files; chmod back what a case locked.
    for dirpath, dirs, files in os.walk(path):
        for n in dirs:
            try:
                os.chmod(os.path.join(dirpath, n), 0o755)
            except OSError:
                pass
    shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
