"""Hostile cases for the file commands (inspect, resize, convert) and the files the lab commands
read and write: the classes 1-8, 11 and 12 of issue 10, generated as families (every bad input
against every command that reads it, every bad output against every command that writes)."""
import os
import signal
import stat
import struct

from runner import Case

OLD = b"old output, must survive a failed write\n"


def old_file(name, mode=0o644):
    def setup(d):
        path = os.path.join(d, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(OLD)
        os.chmod(path, mode)
    return setup


def chain(*fns):
    def run(d):
        for f in fns:
            if f:
                f(d)
    return run


def absent(*names):
    """Check: a failed command did not create these."""
    def check(d, r):
        if r.rc == 0:
            return []
        return ["%s was created by a failed command" % n for n in names if os.path.lexists(os.path.join(d, n))]
    return check


def readers(p, path, ck=None):
    """Every command that reads a table file, on `path`: (tag, args, how it must fail)."""
    ck = ck or p["ck"]
    return [
        ("inspect", ["inspect", path]),
        ("resize-copy", ["resize", path, "--to", "8", "--method", "copy", "-o", "{dir}/o.npy"]),
        ("resize-interpolate", ["resize", path, "--to", "9", "--method", "interpolate", "-o", "{dir}/o.safetensors"]),
        ("resize-random", ["resize", path, "--to", "1000000", "--method", "random", "-o", "{dir}/o.npy"]),
        ("resize-truncate", ["resize", path, "--to", "5", "--method", "truncate", "-o", "{dir}/o.npy"]),
        ("convert-st", ["convert", path, "{dir}/o.safetensors"]),
        ("convert-npy", ["convert", path, "{dir}/o.npy"]),
        ("eval-table", ["eval", "--checkpoint", ck, "--table", path, "--lengths", "1:2", "--samples", "2"]),
    ]


def class1_empty_rows(p):
    out = []
    names = sorted(n for n in p if isinstance(p[n], str) and n.startswith("empty_"))
    for name in names:
        for tag, args in readers(p, p[name]):
            # Converting an empty tensor is a faithful copy; everything else needs a table.
            expect = (0, 1) if tag.startswith("convert") else (1,)
            if "0x16" in name and tag in ("inspect", "resize-random"):
                expect = (0, 1)  # no positions: random rows can still be drawn
            out.append(Case("c1-%s-%s" % (name, tag), "1", args, expect, timeout=10, max_rss_mb=256))
    return out


def c_order_ramp(name, rows, cols):
    """Check: `name` is a C-order little-endian float32 .npy of (rows, cols) with (r, c) = r + rows * c."""
    def check(d, r):
        if r.rc != 0:
            return []
        raw = open(os.path.join(d, name), "rb").read()
        hlen = struct.unpack("<H", raw[8:10])[0]
        header, data = raw[10:10 + hlen].decode("latin-1"), raw[10 + hlen:]
        if "'<f4'" not in header or "'fortran_order': False" not in header:
            return ["%s header %r" % (name, header)]
        vals = struct.unpack("<%df" % (rows * cols), data)
        want = tuple(float(i + rows * j) for i in range(rows) for j in range(cols))
        return [] if vals == want else ["%s does not hold the table in C order" % name]
    return check


def class2_headers(p):
    out = []
    bad = ["tensors_262145.safetensors", "shape_3m_entries.safetensors", "rank_65.safetensors",
           "long_name_1025.safetensors", "header_len_lies.safetensors", "nul_after_header.safetensors",
           "nul_in_npy_header.npy", "header_invalid_utf8.safetensors", "header_len_max.safetensors",
           "metadata_65537.safetensors", "metadata_17mib.safetensors", "deep_nesting.safetensors",
           "npy_header_2mib.npy", "shape_2p64.npy", "shape_2p63.safetensors",
           "offsets_overflow.safetensors", "truncated.safetensors", "truncated.npy",
           "fortran_truncated.npy",
           "empty_file", "not_a_tensor_file.txt"]
    for name in bad:
        for tag, args in readers(p, p[name]):
            # Under a tight address space: no std::bad_alloc abort, a refusal at the limit.
            out.append(Case("c2-%s-%s" % (name, tag), "2", args, (1,), timeout=15,
                            as_limit=(1 << 30) if tag == "eval-table" else (384 << 20), max_rss_mb=300,
                            check=absent("o.npy", "o.safetensors")))
    big = p["tensors_100k.safetensors"]
    out += [
        Case("c2-100k-inspect", "2", ["inspect", big], (1,), ("in all",), timeout=15),
        Case("c2-100k-inspect-last", "2", ["inspect", big, "--tensor", "t99999"], (0,), timeout=15),
        Case("c2-100k-convert", "2", ["convert", big, "{dir}/o.safetensors"], (0,), timeout=20),
        Case("c2-100k-resize", "2", ["resize", big, "--tensor", "t5", "--to", "4", "--method", "copy",
                                     "-o", "{dir}/o.npy"], (0,), timeout=15),
        Case("c2-rank64-convert", "2", ["convert", p["rank_64.safetensors"], "{dir}/o.safetensors"], (0,)),
        Case("c2-rank64-inspect", "2", ["inspect", p["rank_64.safetensors"]], (1,), ("2-D",)),
        Case("c2-fortran-be-convert", "2", ["convert", p["fortran_be.npy"], "{dir}/o.npy"], (0,),
             check=c_order_ramp("o.npy", 64, 8)),
        Case("c2-fortran-be-inspect", "2", ["inspect", p["fortran_be.npy"]], (0,), ("64 x 8",)),
        Case("c2-fortran-over-budget", "2", ["--max-memory", "1M", "convert", p["fortran_4mib.npy"],
                                             "{dir}/o.safetensors"], (1,), ("over the memory budget",),
             check=absent("o.safetensors")),
    ]
    return out


def class3_inputs(p):
    out = []
    kinds = {"fifo": p["fifo"], "socket": p["socket"], "directory": p["directory"], "devnull": "/dev/null",
             "devzero": "/dev/zero", "urandom": "/dev/urandom", "link_fifo": p["link_to_fifo"],
             "link_zero": p["link_to_zero"], "link_urandom": p["link_to_urandom"],
             "dangling": p["dangling_link"], "stdin": "/dev/stdin", "proc": "/proc/self/status"}
    for kind, path in kinds.items():
        cmds = [("inspect", ["inspect", path]),
                ("resize", ["resize", path, "--to", "8", "--method", "copy", "-o", "{dir}/o.npy"]),
                ("convert", ["convert", path, "{dir}/o.safetensors"]),
                ("eval-checkpoint", ["eval", "--checkpoint", path, "--lengths", "1:2"]),
                ("eval-table", ["eval", "--checkpoint", p["ck"], "--table", path, "--lengths", "1:2"]),
                ("train-resume", ["train", "--resume", path, "--out", "{dir}/t", "--quiet"])]
        for tag, args in cmds:
            flag = tag in ("eval-checkpoint", "eval-table", "train-resume")
            # Flags checked as existing files by the parser: a directory or a dangling link is a
            # usage error there.
            expect = (2,) if flag and kind in ("directory", "dangling") else (1,)
            # (A socket cannot even be opened: ENXIO, "No such device or address".)
            contains = ("not a regular file",) if kind not in ("dangling", "proc", "socket") and expect == (1,) else ()
            if kind == "proc":  # /proc says 0 bytes: not "empty", which it is not
                contains = ("reports a size of 0 bytes but holds data",)
            out.append(Case("c3-%s-%s" % (kind, tag), "3", args, expect, contains, timeout=10,
                            check=absent("o.npy", "o.safetensors", "t/checkpoint.safetensors")))
    return out


# Output kinds: setup(d, name) makes `name` in d something that is not a regular file.
def _fifo(d, n):
    os.mkfifo(os.path.join(d, n))


def _dir(d, n):
    os.mkdir(os.path.join(d, n))


def _link(target):
    def make(d, n):
        t = target.replace("{dir}", d)
        if t.endswith("victim"):
            with open(t, "wb") as f:
                f.write(OLD)
        os.symlink(t, os.path.join(d, n))
    return make


OUTPUT_KINDS = {
    "fifo": _fifo, "dir": _dir, "link_stdout": _link("/proc/self/fd/1"), "link_victim": _link("{dir}/victim"),
    "dangling": _link("{dir}/nowhere"), "link_devnull": _link("/dev/null"), "link_dir": _link("/tmp"),
}


def unchanged(name, kind):
    """Check: the output `name` is still the special file it was."""
    def check(d, r):
        path = os.path.join(d, name)
        st = os.lstat(path)
        want = {"fifo": stat.S_ISFIFO, "dir": stat.S_ISDIR}.get(kind, stat.S_ISLNK)
        pr = [] if want(st.st_mode) else ["%s (%s) was replaced" % (name, kind)]
        victim = os.path.join(d, "victim")
        if os.path.exists(victim) and open(victim, "rb").read() != OLD:
            pr.append("the file the link points to was written")
        return pr
    return check


def writers(p, out_name):
    """Commands that write `out_name` (a file, or a directory's file), with the path to pass."""
    return [
        ("convert", ["convert", p["good.npy"], "{dir}/" + out_name], out_name),
        ("resize", ["resize", p["good.npy"], "--to", "80", "--method", "copy", "-o", "{dir}/" + out_name], out_name),
        ("inspect-plot", ["inspect", p["good.npy"], "--plot", "{dir}/" + out_name], out_name),
        ("eval-csv", ["eval", "--checkpoint", p["ck"], "--lengths", "1:2", "--samples", "2", "--out", "{dir}/D"], "D/results.csv"),
        ("eval-json", ["eval", "--checkpoint", p["ck"], "--lengths", "1:2", "--samples", "2", "--out", "{dir}/D"], "D/results.json"),
        # (--force: D may hold an old checkpoint, which this run then replaces)
        ("train", ["train", *p["tiny"], "--force", "--out", "{dir}/D"], "D/checkpoint.safetensors"),
        ("demo", ["demo", "--quick", "--out", "{dir}/D"], "D/results.csv"),
    ]


def class4_outputs(p):
    out = []
    for kind, make in OUTPUT_KINDS.items():
        for tag, args, target in writers(p, "out.safetensors"):
            def setup(d, target=target, make=make):
                os.makedirs(os.path.dirname(os.path.join(d, target)), exist_ok=True)
                make(d, target)
            out.append(Case("c4-%s-%s" % (kind, tag), "4", args, (1,), ("regular file",), timeout=15,
                            setup=setup, check=unchanged(target, kind)))
    # The output directory itself is not a directory.
    for tag in ("eval", "train", "demo"):
        args = {"eval": ["eval", "--checkpoint", p["ck"], "--lengths", "1:2", "--out", "{dir}/D"],
                "train": ["train", *p["tiny"], "--out", "{dir}/D"], "demo": ["demo", "--quick", "--out", "{dir}/D"]}[tag]
        out.append(Case("c4-outdir-file-%s" % tag, "4", args, (1,), ("output directory",),
                        setup=old_file("D"), keep=("D",)))
    # Device nodes (as root, in a private mount namespace over a scratch tmpfs: the real /dev is
    # never at risk). The node must still be the same device afterwards.
    for node, (major, minor) in (("full", (1, 7)), ("null", (1, 3)), ("zero", (1, 5))):
        for tag, args, target in writers(p, "dev/" + node)[:3]:
            ns = "mkdir -p {dir}/dev && mount -t tmpfs -o size=1m tmpfs {dir}/dev && mknod {dir}/dev/%s c %d %d" % (
                node, major, minor)
            chk = '[ -c {dir}/dev/%s ] || echo "the device node %s was replaced"' % (node, node)
            out.append(Case("c4-device-%s-%s" % (node, tag), "4", args, (1,), ("regular file",), root=True,
                            ns_setup=ns, ns_check=chk))
    return out


def class5_writer(p):
    out = []
    # Planted links at the old fixed temporary names: never followed.
    for tag, args, target in writers(p, "out.safetensors")[3:6]:
        planted = target + ".tmp"

        def setup(d, planted=planted):
            os.makedirs(os.path.join(d, "D"), exist_ok=True)
            with open(os.path.join(d, "victim"), "wb") as f:
                f.write(OLD)
            os.symlink(os.path.join(d, "victim"), os.path.join(d, planted))
        out.append(Case("c5-planted-tmp-%s" % tag, "5", args, (0,), setup=setup,
                        check=unchanged(planted, "link")))
    # A file-size limit mid-write (the disk full without root): a clean failure with the reason,
    # the old output intact, no temporary.
    for tag, args, target in writers(p, "out.safetensors")[:6]:
        if tag == "demo":
            continue
        limit = 4096 if tag in ("inspect-plot", "train") else 1024
        if tag.startswith("eval"):
            args = [a if a != "1:2" else "1:60" for a in args]
        out.append(Case("c5-fsize-%s" % tag, "5", args, (1,), ("File too large",), fsize=limit,
                        setup=old_file(target), keep=(target,)))
    # A full disk (root: a 64 KiB tmpfs in a private mount namespace, filled up).
    for tag, args, target in writers(p, "full/out.safetensors")[:6]:
        if tag.startswith("eval") or tag == "train":
            args = [a.replace("{dir}/D", "{dir}/full/D") for a in args]
            target = "full/" + target
        if tag.startswith("eval"):
            args = [a if a != "1:2" else "1:60" for a in args]
        ns = ("mkdir -p {dir}/full && mount -t tmpfs -o size=64k tmpfs {dir}/full && mkdir -p $(dirname {dir}/%s)"
              " && printf 'old' > {dir}/%s && (dd if=/dev/zero of={dir}/full/filler bs=1k 2>/dev/null || true)") % (target, target)
        chk = ('[ "$(cat {dir}/%s)" = old ] || echo "the old output changed"; '
               'ls -A $(dirname {dir}/%s) | grep "^.posemb-" && echo "a temporary was left"') % (target, target)
        out.append(Case("c5-disk-full-%s" % tag, "5", args, (1,), ("No space left on device",), root=True,
                        ns_setup=ns, ns_check=chk))
    return out


def class6_signals(p):
    out = []
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        for ext in ("safetensors", "npy"):
            name = "out." + ext
            out.append(Case("c6-%s-resize-%s" % (sig.name, ext), "6",
                            ["resize", p["big.npy"], "--to", "1500000", "--method", "copy", "-o", "{dir}/" + name],
                            (-sig, 128 + sig), timeout=60, as_limit=3 << 30, max_rss_mb=1600,
                            setup=old_file(name), keep=(name,), signal_after_temp=sig))
    return out


def mode_is(name, mode):
    def check(d, r):
        got = stat.S_IMODE(os.stat(os.path.join(d, name)).st_mode)
        return [] if got == mode else ["%s has mode %o, expected %o" % (name, got, mode)]
    return check


def class7_modes(p):
    out = []
    for tag, args, target in writers(p, "out.safetensors")[:6]:
        if tag == "eval-json":
            continue
        for umask, mode in ((0o077, 0o600), (0o022, 0o644), (0o027, 0o640)):
            out.append(Case("c7-umask-%03o-%s" % (umask, tag), "7", args, (0,), umask=umask,
                            check=mode_is(target, mode)))
        for kept in (0o640, 0o444, 0o755):
            out.append(Case("c7-kept-%03o-%s" % (kept, tag), "7", args, (0,), umask=0o022,
                            setup=old_file(target, kept), check=mode_is(target, kept)))
    return out


def class8_values(p):
    out = []
    for std in ("1e300", "3.5e38", "inf", "nan", "-1", "0", "1e-50", "-inf"):
        for init in ("normal", "scaled-normal", "glorot-uniform"):
            out.append(Case("c8-std-%s-%s" % (std, init), "8",
                            ["resize", p["good.npy"], "--to", "100", "--method", "random", "--initializer", init,
                             "--std", std, "-o", "{dir}/o.npy"], (1, 2), check=absent("o.npy")))
    for name in sorted(n for n in p if isinstance(p[n], str) and n.startswith("value_")):
        for tag, args in readers(p, p[name]):
            if tag.startswith("convert"):
                # A faithful copy of the values is not a computation.
                out.append(Case("c8-%s-%s" % (name, tag), "8", args, (0,)))
            else:
                out.append(Case("c8-%s-%s" % (name, tag), "8", args, (1,), ("row",), check=absent("o.npy", "o.safetensors")))
    return out


def class11_untrusted(p):
    out = []
    for name in sorted(n for n in p if isinstance(p[n], str) and n.startswith("name_")):
        f = p[name]
        out += [Case("c11-%s-inspect" % name, "11", ["inspect", f], (0,)),
                Case("c11-%s-resize" % name, "11", ["resize", f, "--to", "16", "--method", "copy", "-o", "{dir}/o.safetensors"], (0,)),
                Case("c11-%s-convert" % name, "11", ["convert", f, "{dir}/o.npy"], (0,)),
                Case("c11-%s-wrong-tensor" % name, "11", ["inspect", f, "--tensor", "absent"], (1,), ("absent",))]
    for name in ("npy_header_esc.npy", "npy_header_bytes.npy", "bad_magic.npy", "dtype_esc.safetensors",
                 "header_invalid_utf8.safetensors"):
        for tag, args in readers(p, p[name])[:3] + readers(p, p[name])[5:]:
            out.append(Case("c11-%s-%s" % (name, tag), "11", args, (1,)))
    for tag, text in (("esc", "\x1b[31mred"), ("osc", "\x1b]0;pwned\x07"), ("nl", "a\nb"), ("cr", "a\rb"),
                      ("c1", "a\u009bb"), ("bidi", "a\u202eb"), ("del", "a\x7fb"), ("bs", "a\x08b")):
        out += [
            Case("c11-arg-tensor-%s" % tag, "11", ["inspect", p["good.safetensors"], "--tensor", text], (1,)),
            Case("c11-arg-missing-file-%s" % tag, "11", ["inspect", "{dir}/" + text], (1,)),
            Case("c11-arg-steps-%s" % tag, "11", ["train", "--steps", text], (2,)),
            Case("c11-arg-pe-%s" % tag, "11", ["train", "--pe", text], (2,)),
            Case("c11-arg-subcommand-%s" % tag, "11", [text], (2,)),
            Case("c11-arg-flag-%s" % tag, "11", ["--" + text], (2,)),
            Case("c11-arg-lengths-%s" % tag, "11", ["eval", "--checkpoint", p["ck"], "--lengths", text], (2,)),
            Case("c11-arg-max-memory-%s" % tag, "11", ["--max-memory", text, "inspect", p["good.npy"]], (2,)),
        ]

        def copy_in(d, text=text):
            with open(os.path.join(d, "t" + text + ".npy"), "wb") as f:
                f.write(open(p["good.npy"], "rb").read())
        out += [
            Case("c11-path-inspect-%s" % tag, "11", ["inspect", "{dir}/t" + text + ".npy"], (0,), setup=copy_in),
            Case("c11-path-convert-%s" % tag, "11", ["convert", "{dir}/t" + text + ".npy", "{dir}/o" + text + ".npy"],
                 (0,), setup=copy_in),
            Case("c11-path-eval-out-%s" % tag, "11", ["eval", "--checkpoint", p["ck"], "--lengths", "1:2",
                                                      "--samples", "2", "--out", "{dir}/D" + text], (0,)),
        ]
    long_arg = "x" * 100000
    out += [Case("c11-long-path", "11", ["inspect", "{dir}/" + long_arg], (1,)),
            Case("c11-long-pe", "11", ["train", "--pe", long_arg], (2,)),
            Case("c11-long-unknown-flag", "11", ["--" + long_arg], (2,)),
            Case("c11-long-tensor", "11", ["inspect", p["good.safetensors"], "--tensor", long_arg], (1,)),
            Case("c11-invalid-utf8-arg", "11", ["inspect", "{dir}/\udcff\udcfe.npy"], (1,))]
    return out


def class12_small(p):
    out = []
    for n in (250, 255):
        name = "n" * n
        out += [Case("c12-name-%d-convert" % n, "12", ["convert", p["good.npy"], "{dir}/" + name], (0,)),
                Case("c12-name-%d-resize" % n, "12", ["resize", p["good.npy"], "--to", "70", "--method", "copy",
                                                        "-o", "{dir}/" + name], (0,))]
    out += [
        Case("c12-name-256", "12", ["convert", p["good.npy"], "{dir}/" + "n" * 256], (1,), ("File name too long",)),
        Case("c12-no-such-dir", "12", ["convert", p["good.npy"], "{dir}/absent/o.npy"], (1,)),
        # An output that is the input is refused, the input kept (a truncating resize in place lost
        # rows for good; `inspect T --plot T` replaced the table with a PNG).
        Case("c12-output-is-input", "12", ["convert", "{dir}/same.npy", "{dir}/same.npy"], (2,),
             ("is the input file",), setup=old_file("same.npy"), keep=("same.npy",)),
        Case("c12-resize-in-place", "12", ["resize", "{dir}/same.npy", "--to", "70", "--method", "copy", "-o",
                                           "{dir}/same.npy"], (2,), ("is the input file",),
             setup=old_file("same.npy"), keep=("same.npy",)),
        Case("c12-symlinked-input", "12", ["inspect", "{dir}/in.npy"], (0,),
             setup=lambda d: os.symlink(p["good.npy"], os.path.join(d, "in.npy"))),
    ]
    return out


def file_cases(p):
    return (class1_empty_rows(p) + class2_headers(p) + class3_inputs(p) + class4_outputs(p) +
            class5_writer(p) + class6_signals(p) + class7_modes(p) + class8_values(p) +
            class11_untrusted(p) + class12_small(p))
