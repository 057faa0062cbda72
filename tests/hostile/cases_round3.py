"""Hostile cases of issue 26 (round 3) for the tool: finite values that would become infinity in
F16 / BF16 outputs, narrow position ids that would wrap when a checkpoint's table grows, state
checked before the work (a resume past --steps, a table whose provenance the final checkpoint
could not hold) and threads inside the address-space pre-check (sweep --parallel-runs). The
Python and MPI classes of the issue are tested in tests/python/test_hostile_round3.py and
tests/mpi/test_mpi_round3.sh."""
import os
import struct

from cases_files import absent
from inputs import safetensors_bytes, table_file
from runner import Case


def write(name, content):
    def setup(d):
        with open(os.path.join(d, name), "wb") as f:
            f.write(content)
    return setup


def overflow_cases(p):
    out = []
    # (dtype flag, value that rounds to infinity in it, the largest finite value named)
    for dt, value, largest in (("f16", 65520.0, "65504"), ("f16", -1e30, "65504"),
                               ("bf16", 3.4e38, "3.38953139e+38")):
        poison = (3, 5, struct.pack("<f", value))
        tag = "%s-%g" % (dt, value)
        table = table_file("wpe.weight", 40, 16, poison=poison)
        if dt == "f16":  # .npy holds no bf16
            out.append(Case("r3-overflow-%s-convert-npy" % tag, "r3-overflow",
                            ["convert", "{dir}/in.safetensors", "{dir}/o.npy", "--dtype", dt], (1,),
                            ("row 3, column 5", largest, "infinity"), setup=write("in.safetensors", table),
                            check=absent("o.npy")))
        for cmd, args in (("convert", ["convert", "{dir}/in.safetensors", "{dir}/o.safetensors", "--dtype", dt]),
                          ("resize", ["resize", "{dir}/in.safetensors", "--to", "64", "--method", "copy",
                                      "--dtype", dt, "-o", "{dir}/o.safetensors"])):
            out.append(Case("r3-overflow-%s-%s" % (tag, cmd), "r3-overflow", args, (1,),
                            ("row 3, column 5", largest, "infinity"), setup=write("in.safetensors", table),
                            check=absent("o.safetensors")))
    # The values that round down to the largest finite one are written.
    ok = table_file("wpe.weight", 40, 16, poison=(3, 5, struct.pack("<f", 65519.0)))
    out.append(Case("r3-overflow-f16-largest", "r3-overflow",
                    ["convert", "{dir}/in.safetensors", "{dir}/o.safetensors", "--dtype", "f16"], (0,),
                    setup=write("in.safetensors", ok)))
    return out


def position_id_cases(p):
    """A BERT-like file whose position_ids are U8 / I8: growing the table past 256 / 128 rows
    widens them (and says so), never wraps."""
    out = []
    for dt, fmt, n in (("U8", "<B", 100), ("I8", "<b", 100)):
        table = b"".join(struct.pack("<f", 0.25) for _ in range(n * 8))
        ids = b"".join(struct.pack(fmt, i) for i in range(n))
        f = safetensors_bytes({"bert.embeddings.position_embeddings.weight": ("F32", (n, 8), (0, len(table))),
                               "bert.embeddings.position_ids": (dt, (1, n), (len(table), len(table) + len(ids)))},
                              None, table + ids)
        out.append(Case("r3-position-ids-%s" % dt, "r3-wrap",
                        ["resize", "{dir}/in.safetensors", "--to", "300", "--method", "copy",
                         "-o", "{dir}/o.safetensors"], (0,), ("widened from %s to I64" % dt,),
                        setup=write("in.safetensors", f)))
    return out


def state_cases(p):
    out = []
    # The checkpoint is at step 2: --steps 1 would train nothing and write step 2 as "of 1".
    out.append(Case("r3-resume-past-steps", "r3-state",
                    ["train", "--resume", p["ck"], "--steps", "1", "--out", "{dir}/t", "--quiet"], (2,),
                    ("at step 2, past the run's 1 steps",), check=absent("t/checkpoint.safetensors")))
    # A table whose provenance is over the 64 KiB a checkpoint's lineage may hold: refused before
    # training (the run would otherwise train, then fail to write or to resume).
    big = table_file("wpe.weight", 40, 16, metadata={"posemb.provenance": "x" * (100 << 10)})
    out.append(Case("r3-table-provenance", "r3-state",
                    ["train", "--init-from", p["ck"], "--table", "{dir}/big.safetensors", "--steps", "40000",
                     "--out", "{dir}/t", "--quiet"], (1,), ("lineage", "nothing was trained"),
                    setup=write("big.safetensors", big), check=absent("t/checkpoint.safetensors"),
                    timeout=60.0))
    return out


def thread_cases(p):
    grid = ["--pe", "learned", "--seeds", "1:64", "--task", "copy", "--train-len", "3", "--d-model", "16",
            "--heads", "2", "--alphabet", "4", "--batch", "4", "--micro-batch", "2", "--steps", "2",
            "--warmup", "1", "--samples", "4", "--eval-max", "4", "--quiet", "--threads", "1"]
    return [Case("r3-sweep-parallel-runs-%d" % n, "r3-threads",
                 ["sweep", *grid, "--parallel-runs", str(n), "--out", "{dir}/s"], (1,),
                 ("sweep --parallel-runs", "address-space limit"), as_limit=4 << 30, max_rss_mb=1024,
                 check=absent("s/results.csv"), timeout=60.0)
            for n in (64, 1024)]


def same_file_cases(p):
    """An output that is the input under another name: refused (exit 2), the input unchanged.
    `inspect T --plot T` replaced the table with a PNG."""
    table = table_file("wpe.weight", 40, 16)
    config = b'{"hidden_size": 64, "num_attention_heads": 4, "max_position_embeddings": 64}'

    def both(d):
        write("in.safetensors", table)(d)
        write("c.json", config)(d)
        os.symlink("in.safetensors", os.path.join(d, "alias.safetensors"))
        os.link(os.path.join(d, "c.json"), os.path.join(d, "hard.json"))
        os.link(os.path.join(d, "in.safetensors"), os.path.join(d, "hard.safetensors"))
        os.mkdir(os.path.join(d, "sub"))

    keep = ("in.safetensors", "c.json")
    return [Case("same-file-%s" % tag, "same-file", args, (2,), ("is the input file",), setup=both, keep=keep)
            for tag, args in (
                ("inspect-plot", ["inspect", "{dir}/in.safetensors", "--plot", "{dir}/in.safetensors"]),
                ("inspect-plot-link", ["inspect", "{dir}/in.safetensors", "--plot", "{dir}/alias.safetensors"]),
                ("convert-hard-link", ["convert", "{dir}/in.safetensors", "{dir}/sub/../hard.safetensors"]),
                ("resize", ["resize", "{dir}/in.safetensors", "--to", "64", "--method", "copy", "-o",
                            "{dir}/./in.safetensors"]),
                ("rope-set-hard-link", ["rope", "{dir}/c.json", "--set", "linear", "--factor", "2", "-o",
                                        "{dir}/hard.json"]))]


def round3_cases(p):
    return overflow_cases(p) + position_id_cases(p) + state_cases(p) + thread_cases(p) + same_file_cases(p)
