"""Runs hostile cases against the posemb binary and checks what every case must hold.

For each case (cases.py): the exit code is one of those expected; a failure (exit 1 or 2) is a
single stderr line starting with "posemb: error: " or "posemb: usage error: ", bounded in length,
valid UTF-8 without control bytes, C1 controls or bidi overrides (stdout is held to the same,
bar newlines); no signal, no abort, no timeout (`timeout`), the address space bounded
(`prlimit --as`) and the peak RSS measured (wait4); no temporary `.posemb-*` left anywhere;
the case's pre-existing files (old outputs) unchanged unless it succeeded; plus the case's own
checks. The inputs are hashed before and after the whole run.
"""
import dataclasses
import hashlib
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from typing import Callable, Optional

MAX_LINE = 4096 + 300  # main cuts messages at 4096 bytes; the prefix and "... (N bytes)" add


@dataclasses.dataclass
class Case:
    name: str
    cls: str                          # the class ("1" .. "12") or a family name
    args: list                        # posemb's arguments; "{dir}" is the case's directory
    expect: tuple = (1,)              # allowed exit codes
    contains: tuple = ()              # substrings of stderr (of stdout when exit 0)
    timeout: float = 20.0
    as_limit: int = 1 << 30           # prlimit --as
    fsize: Optional[int] = None       # prlimit --fsize
    max_rss_mb: int = 768
    umask: Optional[int] = None
    stdout_file: Optional[str] = None  # stdout to this file in the case dir ("-": closed)
    env: Optional[dict] = None
    setup: Optional[Callable] = None  # setup(dir)
    check: Optional[Callable] = None  # check(dir, result) -> list of problems
    keep: tuple = ()                  # files setup made that must stay byte for byte
    root: bool = False                # needs root: runs in a private mount namespace
    ns_setup: str = ""                # shell lines run in the namespace before posemb
    ns_check: str = ""                # shell lines after; each output line is a problem
    signal_after_temp: Optional[int] = None  # send this signal once a .posemb- file appears


@dataclasses.dataclass
class Result:
    rc: int
    stdout: bytes
    stderr: bytes
    seconds: float
    max_rss_mb: float
    signalled: Optional[int] = None
    problems: list = dataclasses.field(default_factory=list)
    skipped: Optional[str] = None


CONTROL = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]")
BAD_CODEPOINTS = re.compile("[\u0080-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")


def text_problems(what, data, allow_tab=False):
    out = []
    pattern = rb"[\x00-\x08\x0b-\x1f\x7f]" if allow_tab else rb"[\x00-\x09\x0b-\x1f\x7f]"
    m = re.search(pattern, data)
    if m:
        out.append("%s holds control byte 0x%02x at %d: %r" % (what, data[m.start()], m.start(),
                                                               data[max(0, m.start() - 40):m.start() + 20]))
    try:
        t = data.decode("utf-8")
        m = BAD_CODEPOINTS.search(t)
        if m:
            out.append("%s holds U+%04X" % (what, ord(m.group())))
    except UnicodeDecodeError as e:
        out.append("%s is not UTF-8 (%s)" % (what, e))
    return out


def tree_hashes(root):
    """{relative path: (kind, sha256 or target)} of every entry under root."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            rel = os.path.relpath(path, root)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(path))
            elif stat.S_ISREG(st.st_mode):
                h = hashlib.sha256()
                with open(path, "rb") as f:
                    for block in iter(lambda: f.read(1 << 20), b""):
                        h.update(block)
                out[rel] = ("file", h.hexdigest(), stat.S_IMODE(st.st_mode))
            else:
                out[rel] = ("special", stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode))
    return out


def temporaries(root):
    found = []
    for dirpath, dirs, files in os.walk(root):
        found += [os.path.join(dirpath, n) for n in dirs + files if n.startswith(".posemb-")]
    return found


def posemb_pid(wrapper):
    """The pid of posemb under the `timeout` wrapper (its one child; prlimit execs posemb)."""
    try:
        with open("/proc/%d/task/%d/children" % (wrapper, wrapper)) as f:
            children = f.read().split()
    except OSError:
        children = []
    return int(children[0]) if len(children) == 1 else wrapper


class Runner:
    def __init__(self, posemb, work, env, is_root):
        self.posemb = posemb
        self.work = work
        self.env = env
        self.is_root = is_root
        self.lock = threading.Lock()

    def command(self, case, d):
        args = [a.replace("{dir}", d) if isinstance(a, str) else a for a in case.args]
        limits = ["prlimit", "--as=%d" % case.as_limit]
        if case.fsize is not None:
            limits.append("--fsize=%d" % case.fsize)
        return ["timeout", "-k", "5", str(case.timeout)] + limits + [self.posemb] + args

    def run(self, case):
        d = os.path.join(self.work, "cases", case.name)
        os.makedirs(d)
        if case.root and not self.is_root:
            return Result(0, b"", b"", 0.0, 0.0, skipped="needs root (a private mount namespace)")
        if case.setup:
            case.setup(d)
        kept = {k: open(os.path.join(d, k), "rb").read() for k in case.keep}
        kept_modes = {k: stat.S_IMODE(os.stat(os.path.join(d, k)).st_mode) for k in case.keep}
        cmd = self.command(case, d)
        out_path, err_path = os.path.join(d, ".stdout"), os.path.join(d, ".stderr")
        check_path = os.path.join(d, ".ns-check")
        if case.root:
            script = "set -e\n%s\nset +e\n\"$@\" >%s 2>%s <&-\nrc=$?\n(%s) >%s 2>&1\nexit $rc\n" % (
                case.ns_setup.replace("{dir}", d),
                shq(os.path.join(d, case.stdout_file) if case.stdout_file else out_path), shq(err_path),
                case.ns_check.replace("{dir}", d) or "true", shq(check_path))
            cmd = ["unshare", "-m", "--propagation", "private", "--", "sh", "-c", script, "sh"] + cmd
        env = dict(self.env)
        if case.env:
            env.update(case.env)

        def pre():
            if case.umask is not None:
                os.umask(case.umask)
            os.setsid()

        t0 = time.monotonic()
        if case.stdout_file == "-":  # stdout closed
            cmd = ["sh", "-c", 'exec "$@" >&-', "sh"] + cmd
        stdout = subprocess.DEVNULL
        if not case.root and case.stdout_file != "-":
            stdout = open(os.path.join(d, case.stdout_file or ".stdout"), "wb")
        stderr = open(err_path, "wb") if not case.root else subprocess.DEVNULL
        p = subprocess.Popen(cmd, cwd=d, env=env, stdin=subprocess.DEVNULL, stdout=stdout,
                             stderr=stderr, preexec_fn=pre, close_fds=True)
        signalled = None
        if case.signal_after_temp is not None:
            signalled = self.signal_when_temp(p, d, case.signal_after_temp)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - t0
        for f in (stdout, stderr):
            if hasattr(f, "close"):
                f.close()
        out = open(out_path, "rb").read() if os.path.exists(out_path) else b""
        if case.stdout_file not in (None, "-") and os.path.isfile(os.path.join(d, case.stdout_file)):
            out = open(os.path.join(d, case.stdout_file), "rb").read()
        err = open(err_path, "rb").read() if os.path.exists(err_path) else b""
        r = Result(p.returncode, out, err, seconds, usage.ru_maxrss / 1024.0, signalled)
        self.check(case, d, r, kept, kept_modes, check_path)
        return r

    def signal_when_temp(self, p, d, sig):
        """Sends sig to posemb while a temporary exists (stopping the process group to look). Only
        posemb gets it: the `timeout` wrapper would die of a signal it does not forward (SIGPIPE,
        SIGUSR1) and leave posemb cleaning up unwaited for."""
        deadline = time.monotonic() + 60

        def running():  # without reaping it (p.poll() would, and the os.wait4 after would fail)
            return os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None

        while time.monotonic() < deadline and running():
            if temporaries(d):
                os.killpg(p.pid, signal.SIGSTOP)
                if temporaries(d):
                    os.kill(posemb_pid(p.pid), sig)
                    os.killpg(p.pid, signal.SIGCONT)
                    return sig
                os.killpg(p.pid, signal.SIGCONT)
            time.sleep(0.002)
        return None

    def check(self, case, d, r, kept, kept_modes, check_path):
        pr = r.problems
        if r.rc not in case.expect:
            if r.rc == 124 or r.rc == 137:
                pr.append("timed out after %.0f s (exit %d)" % (case.timeout, r.rc))
            elif r.rc < 0 or r.rc > 128:
                pr.append("died of a signal (exit %d)" % r.rc)
            else:
                pr.append("exit %d, expected %s" % (r.rc, " or ".join(map(str, case.expect))))
        if case.signal_after_temp is not None and r.signalled is None:
            pr.append("no temporary appeared: the signal was not sent during a write")
        if r.rc in (1, 2):
            lines = r.stderr.split(b"\n")
            prefix = b"posemb: error: " if r.rc == 1 else b"posemb: usage error: "
            if len(lines) != 2 or lines[1] != b"":
                pr.append("stderr is %d lines, not one: %r" % (r.stderr.count(b"\n"), r.stderr[:300]))
            if not r.stderr.startswith(prefix):
                pr.append("stderr does not start with %r: %r" % (prefix, r.stderr[:200]))
            if len(r.stderr) > MAX_LINE:
                pr.append("stderr is %d bytes long" % len(r.stderr))
            pr += text_problems("stderr", r.stderr)
        else:
            pr += text_problems("stderr", r.stderr)
        pr += text_problems("stdout", r.stdout)
        text = (r.stderr if r.rc != 0 else r.stdout).decode("utf-8", "replace")
        for s in case.contains:
            if s not in text:
                pr.append("%r not in the %s" % (s, "stderr" if r.rc != 0 else "stdout"))
        if r.max_rss_mb > case.max_rss_mb:
            pr.append("peak RSS %.0f MiB > %d MiB" % (r.max_rss_mb, case.max_rss_mb))
        left = temporaries(d) + temporaries(os.path.join(self.work, "in"))
        if left:
            pr.append("temporaries left: %s" % left)
        if r.rc != 0:
            for k, content in kept.items():
                path = os.path.join(d, k)
                if os.path.islink(path) or not os.path.isfile(path):
                    pr.append("%s was replaced by a non-file" % k)
                elif open(path, "rb").read() != content:
                    pr.append("%s changed although the command failed" % k)
                elif stat.S_IMODE(os.stat(path).st_mode) != kept_modes[k]:
                    pr.append("%s changed mode although the command failed" % k)
        if case.root and os.path.exists(check_path):
            pr += [l for l in open(check_path, encoding="utf-8", errors="replace").read().splitlines() if l]
        if case.check:
            pr += case.check(d, r) or []


def shq(s):
    return "'" + s.replace("'", "'\\''") + "'"
