"""Hostile cases for the lab commands (train, eval, demo), bench, the memory budget, every flag's
bad values and the standard output: classes 9 and 10 of issue 10 and the families beyond it."""
import os

from runner import Case
from cases_files import old_file


def class9_checkpoints(p):
    out = []

    def both(name, eval_expect=(1,), resume_expect=(1,), contains=()):
        f = p[name]
        return [
            Case("c9-%s-eval" % name, "9", ["eval", "--checkpoint", f, "--lengths", "1:2", "--samples", "2"],
                 eval_expect, contains if eval_expect == (1,) else ()),
            Case("c9-%s-resume" % name, "9", ["train", "--resume", f, "--out", "{dir}/t", "--quiet"],
                 resume_expect, contains if resume_expect == (1,) else ()),
        ]

    for name in sorted(n for n in p if isinstance(p[n], str) and n.startswith("meta_")):
        out += both(name, contains=(_meta_key(name),))
    for name in sorted(n for n in p if isinstance(p[n], str) and n.startswith("run_")):
        out += both(name, contains=("posemb.lab.run",))
    for name in sorted(n for n in p if isinstance(p[n], str) and n.startswith("field_")):
        out.append(Case("c9-%s-eval" % name, "9",
                        ["eval", "--checkpoint", p[name], "--lengths", "1:2", "--samples", "2"], (1,),
                        ("posemb.lab.run",)))
    for name in sorted(n for n in p if isinstance(p[n], str) and n.startswith("limit_")):
        out += both(name, contains=("posemb.lab.run",))
    for name, ev, rs in (("tensor_missing_head.safetensors", 1, 1), ("tensor_missing_table.safetensors", 1, 1),
                         ("tensor_missing_moment.safetensors", 0, 1), ("tensor_shape_wte.safetensors", 1, 1),
                         ("tensor_3d_wte.safetensors", 1, 1), ("tensor_i64_bias.safetensors", 1, 1),
                         ("table_rows_short.safetensors", 1, 1), ("table_rows_huge.safetensors", 1, 1),
                         ("table_cols.safetensors", 1, 1), ("table_rows_past_limit.safetensors", 1, 1),
                         ("table_longer.safetensors", 0, 1), ("weight_nan.safetensors", 1, 1),
                         ("table_inf.safetensors", 1, 1), ("moment_inf.safetensors", 0, 1),
                         ("moment_negative_v.safetensors", 0, 1), ("moment_shape.safetensors", 0, 1),
                         ("rope_with_table.safetensors", 0, 0)):
        out += both(name, (ev,), (rs,))
    # A finite table whose values overflow float in the forward: eval stops instead of scoring the
    # argmax of infinite or NaN logits (it reported 0.000 at every length).
    out.append(Case("c9-table_huge-eval", "9", ["eval", "--checkpoint", p["table_huge.safetensors"], "--lengths",
                                                "1:2", "--samples", "2"], (1,), ("logits are infinite or NaN",)))
    # A checkpoint resumed into an output directory whose checkpoint must not be lost.
    out.append(Case("c9-resume-bad-keeps-old", "9", ["train", "--resume", p["meta_step_neg.safetensors"],
                                                     "--out", "{dir}/t", "--quiet"], (1,),
                    setup=old_file("t/checkpoint.safetensors"), keep=("t/checkpoint.safetensors",)))
    return out


def _meta_key(name):
    """The metadata key a meta_* file breaks, as the message must name it."""
    for prefix, key in (("meta_step_", "posemb.lab.step"), ("meta_adamw_steps_", "posemb.lab.adamw_steps"),
                        ("meta_missing_format", "format"), ("meta_missing_run", "posemb.lab.run"),
                        ("meta_missing_step", "posemb.lab.step"), ("meta_missing_adamw", "posemb.lab.adamw_steps"),
                        ("meta_format_", "not a posemb lab checkpoint")):
        if name.startswith(prefix):
            return key
    raise ValueError(name)


def class10_memory(p):
    tiny = p["tiny"]
    ck, rope = p["ck"], p["ck_rope"]
    ev = ["eval", "--checkpoint"]
    out = [
        Case("c10-eval-lengths-200000", "10", ev + [ck, "--lengths", "1:200000"], (2,), ("--lengths",)),
        Case("c10-eval-lengths-999999999", "10", ev + [ck, "--lengths", "1:999999999"], (2,)),
        Case("c10-eval-lengths-10-digits", "10", ev + [ck, "--lengths", "1:9999999999"], (2,)),
        Case("c10-eval-lengths-2p64", "10", ev + [ck, "--lengths", "1:18446744073709551617"], (2,)),
        Case("c10-eval-learned-100000", "10", ev + [ck, "--lengths", "1:100000", "--samples", "100"], (0,),
             ("beyond_table",), timeout=20, max_rss_mb=512),
        Case("c10-eval-learned-100000-out", "10", ev + [ck, "--lengths", "99990:100000", "--out", "{dir}/D"], (0,)),
        Case("c10-eval-rope-100000", "10", ev + [rope, "--lengths", "1:100000"], (2,), ("multiply-adds",)),
        Case("c10-eval-rope-100000-1-sample", "10", ev + [rope, "--lengths", "1:100000", "--samples", "1"], (2,)),
        Case("c10-eval-rope-samples-100000", "10", ev + [rope, "--lengths", "500:500", "--samples", "100000"], (1, 2)),
        Case("c10-eval-rope-memory", "10", ["--max-memory", "1M"] + ev + [rope, "--lengths", "1:50"], (1,),
             ("--max-memory",)),
        Case("c10-eval-table-memory", "10", ["--max-memory", "1M"] + ev + [ck, "--table", p["ck_table16.safetensors"],
                                                                           "--lengths", "1:19", "--samples", "1000"],
             (1,), ("--max-memory",)),
        Case("c10-train-eval-max-learned", "10", ["train", *tiny, "--eval-max", "100000", "--out", "{dir}/t"], (0,),
             timeout=20, max_rss_mb=512),
        Case("c10-train-eval-max-rope", "10", ["train", *tiny, "--pe", "rope", "--eval-max", "100000", "--out",
                                               "{dir}/t"], (2,), ("--eval-max",), check=_no_checkpoint),
        Case("c10-train-eval-max-sinusoidal", "10", ["train", *tiny, "--pe", "sinusoidal", "--eval-max", "20000",
                                                     "--out", "{dir}/t"], (2,), check=_no_checkpoint),
        Case("c10-train-eval-samples", "10", ["train", *tiny, "--pe", "none", "--eval-max", "3000",
                                              "--eval-samples", "100000", "--out", "{dir}/t"], (2,)),
        Case("c10-demo-eval-max", "10", ["demo", "--eval-max", "100000", "--out", "{dir}/D"], (2,), ("--eval-max",)),
        Case("c10-demo-samples", "10", ["demo", "--eval-max", "5000", "--samples", "100000", "--out", "{dir}/D"], (1, 2)),
    ]
    big_model = [("width", ["--d-model", "4096", "--heads", "64", "--layers", "64", "--d-ff", "65536"]),
                 ("batch", ["--batch", "65536", "--train-len", "1024"]),
                 ("micro-batches", ["--batch", "65536", "--micro-batch", "1"]),
                 ("table", ["--pe", "learned-randomized", "--max-seq-len", "1048576", "--d-model", "4096", "--heads", "64"]),
                 ("d-ff", ["--d-ff", "65536", "--train-len", "1024", "--batch", "4096"]),
                 ("layers", ["--layers", "64", "--train-len", "1024", "--batch", "1024"])]
    for tag, flags in big_model:
        out.append(Case("c10-train-%s" % tag, "10", ["train", *flags, "--steps", "1", "--quiet", "--out", "{dir}/t"],
                        (1,), ("--max-memory",), max_rss_mb=128, check=_no_checkpoint))
        out.append(Case("c10-train-%s-low-budget" % tag, "10", ["--max-memory", "64M", "train", *flags, "--steps", "1",
                                                                 "--quiet", "--out", "{dir}/t"], (1,), ("64.0 MiB",), max_rss_mb=128))
    wide = p["wide.npy"]
    out += [
        Case("c10-resize-wide-copy", "10", ["resize", wide, "--to", "16777216", "--method", "copy", "-o", "{dir}/o.npy"],
             (1,), ("--max-memory",), max_rss_mb=128),
        Case("c10-resize-wide-random", "10", ["resize", wide, "--to", "16777216", "--method", "random", "-o",
                                              "{dir}/o.safetensors"], (1,), ("--max-memory",), max_rss_mb=128),
        Case("c10-resize-wide-interpolate", "10", ["resize", wide, "--to", "16777216", "--method", "interpolate",
                                                   "-o", "{dir}/o.npy"], (1,), max_rss_mb=128),
        Case("c10-resize-to-past-limit", "10", ["resize", wide, "--to", "16777217", "--method", "copy", "-o",
                                                "{dir}/o.npy"], (2,)),
        # Each step fit the budget alone; together they did not (a 16 GiB result under a 17.7 GiB
        # budget was killed by the OOM killer): the whole resize is checked before it starts.
        Case("c10-resize-budget-whole", "10", ["--max-memory", "100M", "resize", p["big.npy"], "--to", "300000",
                                               "--method", "copy", "-o", "{dir}/o.npy"], (1,),
             ("resize (the table read, the resized table)", "100"), check=_absent("o.npy")),
        Case("c10-resize-budget-small", "10", ["--max-memory", "1M", "resize", p["big.npy"], "--to", "100000",
                                               "--method", "copy", "-o", "{dir}/o.npy"], (1,), ("--max-memory",)),
        Case("c10-inspect-plot-budget", "10", ["inspect", p["plot.npy"], "--plot", "{dir}/p.png", "--max-memory",
                                               "1M"], (1,), ("--max-memory",)),
        # A budget above what the address space allows: the allocation is refused against the
        # address space left (ulimit -v), one line (exit 1) naming the limit, never an abort (it
        # failed as std::bad_alloc before the budget looked at the address space).
        Case("c10-bad-alloc", "10", ["--max-memory", "100G", "resize", p["big.npy"], "--to", "4000000",
                                     "--method", "copy", "-o", "{dir}/o.npy"], (1,), ("ulimit -v",),
             as_limit=512 << 20, max_rss_mb=600),
        Case("c10-bad-alloc-train", "10", ["--max-memory", "100G", "train", "--batch", "4096", "--train-len", "256",
                                           "--steps", "1", "--quiet", "--out", "{dir}/t"], (1,), as_limit=768 << 20,
             max_rss_mb=800),
    ]
    # A small address space: the lab's own matrix products (lab/model/gemm.hpp) need no large work
    # buffers (OpenBLAS's took 128 MiB per thread), so a tiny run trains and evaluates in 64 MiB.
    for mb in (64, 128, 256, 380):
        out += [Case("c10-as-%dM-train" % mb, "10", ["train", *tiny, "--out", "{dir}/t"], (0,),
                     as_limit=mb << 20, timeout=15),
                Case("c10-as-%dM-eval" % mb, "10", ev + [ck, "--lengths", "1:3"], (0,), as_limit=mb << 20, timeout=15),
                Case("c10-as-%dM-inspect" % mb, "10", ["inspect", p["good.npy"]], (0,), as_limit=mb << 20, timeout=15),
                Case("c10-as-%dM-help" % mb, "10", ["--help"], (0,), as_limit=mb << 20, timeout=15)]
    for mb in (450, 600, 1024):
        out.append(Case("c10-as-%dM-train-ok" % mb, "10", ["train", *tiny, "--out", "{dir}/t"], (0,),
                        as_limit=mb << 20, timeout=30))
    # --max-memory itself, before the subcommand and among its flags.
    for tag, value in (("abc", "abc"), ("empty", ""), ("zero", "0"), ("1K", "1K"), ("neg", "-1"), ("exp", "1e9"),
                       ("fraction", "1.5G"), ("overflow", "99999999999999999999"), ("huge-unit", "16777216T"),
                       ("trailing", "1G1"), ("space", " 1G"), ("unit-only", "G"), ("bytes-suffix", "1GB")):
        out.append(Case("c10-max-memory-%s-global" % tag, "10", ["--max-memory", value, "inspect", p["good.npy"]], (2,),
                        ("--max-memory",)))
        out.append(Case("c10-max-memory-%s-sub" % tag, "10", ["convert", p["good.npy"], "{dir}/o.npy", "--max-memory",
                                                               value], (2,), check=_absent("o.npy")))
    for value in ("1M", "1048576", "64m", "2GiB", "1T"):
        out.append(Case("c10-max-memory-ok-%s" % value, "10", ["--max-memory", value, "convert", p["good.npy"],
                                                              "{dir}/o.npy"], (0,)))
    return out


def _absent(name):
    def check(d, r):
        return ["%s created by a failed command" % name] if r.rc != 0 and os.path.exists(os.path.join(d, name)) else []
    return check


def _no_checkpoint(d, r):
    path = os.path.join(d, "t", "checkpoint.safetensors")
    return ["a refused run wrote a checkpoint"] if r.rc != 0 and os.path.exists(path) else []


# Every numeric flag and its bad values: (command prefix, flag, values that must be refused).
BAD_INT = ["abc", "", "-1", "1.5", "1e400", "nan", "99999999999999999999999", "0x", "--"]
BAD_FLOAT = ["abc", "", "nan", "inf", "-inf", "1e400", "-1", "0x"]


def flag_cases(p):
    tiny = p["tiny"]
    ck = p["ck"]
    out = []
    cmds = {
        "train": (["train", *tiny, "--out", "{dir}/t"], {
            "--steps": BAD_INT + ["0", "100000001"], "--batch": BAD_INT + ["0", "65537"],
            "--micro-batch": BAD_INT + ["0"], "--d-model": BAD_INT + ["0", "1", "4097"], "--layers": BAD_INT + ["0", "65"],
            "--heads": BAD_INT + ["0", "65", "3"], "--d-ff": BAD_INT + ["65537"], "--train-len": BAD_INT + ["0", "1025"],
            "--alphabet": BAD_INT + ["1", "1001"], "--max-seq-len": BAD_INT + ["1048577", "2"],
            "--warmup": BAD_INT + ["100000001"], "--lr": BAD_FLOAT + ["0"], "--min-lr-ratio": BAD_FLOAT + ["1.5"],
            "--weight-decay": BAD_FLOAT, "--beta1": BAD_FLOAT + ["1"], "--beta2": BAD_FLOAT + ["1"],
            "--grad-clip": BAD_FLOAT, "--init-std": BAD_FLOAT + ["0", "1001", "1e39"],
            "--embed-init-std": BAD_FLOAT + ["0", "1001", "1e39"],
            "--rope-base": BAD_FLOAT + ["0"], "--threads": BAD_INT + ["0", "1025"], "--stop-after": BAD_INT + ["0"],
            "--eval-max": BAD_INT + ["100001"], "--eval-samples": BAD_INT + ["0", "100001"],
            "--checkpoint-every": BAD_INT, "--seed": ["abc", "", "-1", "1.5", "99999999999999999999999"],
            "--pe": ["", "xpos", "LEARNED"], "--task": ["", "shuffle", "SORT"], "--resume": ["{dir}/absent"]}),
        "eval": (["eval", "--checkpoint", ck, "--lengths", "1:2"], {
            "--samples": BAD_INT + ["0", "100001"], "--seed": ["abc", "-1", ""], "--threads": BAD_INT + ["0"],
            "--eval-positions": ["", "sorted"], "--table": ["{dir}/absent"],
            "--rope-scaling": ["", "llama3", "LINEAR"], "--rope-factor": BAD_FLOAT + ["0", "0.5"],
            "--lengths": ["", ":", "1:", ":5", "a:b", "5:2", "1:2:3", "-1:5", "1:100001", " 1:5", "1 :5",
                          "0:0", "0:5", "1:-1", "1.5:2", "+1:2", "1:1e3", "0", "1,,2", "2,x", "64,64",
                          "1,100001", "3:1,5", ",", "1,"]}),
        "demo": (["demo", "--quick", "--out", "{dir}/D"], {
            "--steps": BAD_INT + ["0"], "--rope-extension-steps": BAD_INT + ["0"],
            "--eval-max": BAD_INT + ["0", "100001"], "--samples": BAD_INT + ["0"],
            "--threads": BAD_INT + ["0"], "--seed": ["abc", "-1"]}),
        "bench": (["bench", "--no-peer"], {"--reps": BAD_INT + ["0", "1001", "1000000000"]}),
        "resize": (["resize", p["good.npy"], "--to", "80", "--method", "copy", "-o", "{dir}/o.npy"], {
            "--to": BAD_INT + ["0", "16777217"], "--method": ["", "stretch", "COPY"], "--dtype": ["", "f8", "int8"],
            "--initializer": ["", "uniform"], "--std": BAD_FLOAT + ["0"], "--seed": ["abc", "-1", ""],
            "--reserved-rows": ["abc", "-1", "65", "1e3"]}),
        "inspect": (["inspect", p["good.npy"]], {
            "--max-plot": BAD_INT + ["0", "8193"], "--reserved-rows": ["abc", "-1", "65", ""]}),
        "convert": (["convert", p["good.npy"], "{dir}/o.safetensors"], {"--dtype": ["", "f8", "bf8", "F32 "]}),
    }
    for cmd, (base, flags) in cmds.items():
        for flag, values in flags.items():
            # The base without the flag under test (given twice, the parser would refuse that).
            args = list(base)
            if flag in args:
                i = args.index(flag)
                del args[i:i + 2]
            for i, v in enumerate(values):
                out.append(Case("flag-%s%s-%d" % (cmd, flag, i), "flags", args + [flag, v], (2,), (flag,) if v else (),
                                timeout=15, check=_no_checkpoint if cmd == "train" else _absent("o.npy")))
    # Missing required arguments, extra ones, unknown flags, no subcommand.
    for tag, args in (("none", []), ("inspect", ["inspect"]), ("resize", ["resize", p["good.npy"]]),
                      ("resize-no-out", ["resize", p["good.npy"], "--to", "8", "--method", "copy"]),
                      ("convert-one", ["convert", p["good.npy"]]), ("convert-three", ["convert", p["good.npy"], "a", "b"]),
                      ("eval", ["eval"]), ("eval-no-lengths", ["eval", "--checkpoint", ck]),
                      ("train-extra", ["train", "extra"]), ("unknown-flag", ["inspect", p["good.npy"], "--bogus"]),
                      ("unknown-sub", ["bogus"]),
                      ("resume-and-model", ["train", "--resume", ck, "--d-model", "32", "--out", "{dir}/t"]),
                      ("help-and-junk", ["inspect", "--help", "--bogus"])):
        out.append(Case("args-%s" % tag, "flags", args, (0, 2) if tag == "help-and-junk" else (2,)))
    return out


def stdout_cases(p):
    tiny = p["tiny"]
    out = [
        Case("stdout-closed-inspect", "stdout", ["inspect", p["good.npy"]], (1,), ("standard output",), stdout_file="-"),
        Case("stdout-closed-convert", "stdout", ["convert", p["good.npy"], "{dir}/o.npy"], (1,), stdout_file="-"),
        Case("stdout-closed-eval", "stdout", ["eval", "--checkpoint", p["ck"], "--lengths", "1:2"], (1,), stdout_file="-"),
        Case("stdout-closed-help", "stdout", ["--help"], (1,), stdout_file="-"),
        Case("stdout-closed-train-quiet", "stdout", ["train", *tiny, "--out", "{dir}/t"], (0,), stdout_file="-"),
        Case("stdout-fsize-inspect", "stdout", ["inspect", p["good.npy"]], (1,), fsize=100, stdout_file="out.txt"),
        Case("stdout-fsize-eval", "stdout", ["eval", "--checkpoint", p["ck"], "--lengths", "1:30"], (1,), fsize=200,
             stdout_file="out.txt"),
    ]
    for tag, args in (("inspect", ["inspect", p["good.npy"]]), ("eval", ["eval", "--checkpoint", p["ck"], "--lengths", "1:3"])):
        ns = ("mkdir -p {dir}/full && mount -t tmpfs -o size=16k tmpfs {dir}/full && "
              "(dd if=/dev/zero of={dir}/full/filler bs=1k 2>/dev/null || true)")
        out.append(Case("stdout-disk-full-%s" % tag, "stdout", args, (1,), ("standard output",), root=True,
                        ns_setup=ns, stdout_file="full/out.txt"))
    return out


def overflow_update_cases(p):
    """A finite loss with an update that overflows float (lr x weight decay): the run stops at that
    step, before a checkpoint holds the broken parameters; an older checkpoint stays as it was."""
    small = ["train", "--pe", "learned", "--train-len", "4", "--d-model", "8", "--layers", "1", "--heads", "2",
             "--batch", "4", "--threads", "1", "--warmup", "0", "--quiet"]
    run = small + ["--lr", "1e38", "--weight-decay", "100"]
    return [
        Case("update-overflow-first-step", "nan", run + ["--steps", "1", "--out", "{dir}/t"], (1,),
             ("made the parameter", "infinite or NaN", "no checkpoint was written"), check=_no_checkpoint),
        Case("update-overflow-every-step", "nan", run + ["--steps", "30", "--checkpoint-every", "1", "--out", "{dir}/t"],
             (1,), ("step 1", "infinite or NaN"), check=_no_checkpoint),
        # (--force: the folder holds a run; the new one replaces it only by writing its own)
        Case("update-overflow-keeps-old", "nan", run + ["--steps", "3", "--checkpoint-every", "1", "--force",
                                                        "--out", "{dir}/t"],
             (1,), ("infinite or NaN",), setup=old_file("t/checkpoint.safetensors"),
             keep=("t/checkpoint.safetensors",)),
        # A checkpoint past the file-size limit (ulimit -f): the message names the step whose
        # checkpoint was not written, the file and the reason.
        Case("train-checkpoint-fsize", "nan", small + ["--steps", "4", "--checkpoint-every", "2", "--out", "{dir}/t"],
             (1,), ("the checkpoint of step 2 was not written", "File too large"), fsize=4096,
             check=_no_checkpoint),
        # An output folder that takes no files (read-only, for root too) fails before training
        # (100000 steps would pass the case's timeout).
        Case("train-out-read-only", "nan", small + ["--steps", "100000", "--out", "{dir}/ro"], (1,),
             ("cannot create files in the output directory",), root=True,
             ns_setup="mkdir -p {dir}/ro && mount -t tmpfs -o ro tmpfs {dir}/ro"),
    ]


def lab_cases(p):
    return (class9_checkpoints(p) + class10_memory(p) + flag_cases(p) + stdout_cases(p) +
            overflow_update_cases(p))
