"""Hostile cases of the fourth input probe (class io4): one function per defect it found, each
case failing without its fix."""
import json
import os
import struct

from cases_files import absent
from cases_folders import gpt2_folder
from inputs import npy_bytes, safetensors_bytes, table_file
from runner import Case


def write(name, content):
    def setup(d):
        with open(os.path.join(d, name), "wb") as f:
            f.write(content if isinstance(content, bytes) else content.encode())
    return setup


def read(d, *parts):
    with open(os.path.join(d, *parts), "rb") as f:
        return f.read()


# A GPT-2 config whose other values a parser would change: 1e-400 (0.0 as a double), a 30-digit
# integer (a double), its spacing and key order.
GPT2_CONFIG = ('{"model_type":"gpt2",  "n_positions": 16, "n_ctx" :16,\n'
               ' "layer_norm_epsilon": 1e-400, "vocab_hash": 123456789012345678901234567890,\n'
               ' "task_specific_params": {"n_positions": 16}}\n')


def folder_cases():
    """A folder's config.json was rewritten through a JSON parser (1e-400 became 0.0, 30 digits a
    double) and a key given twice was taken."""
    resize = ["resize", "{dir}/m", "--to", "32", "--method", "copy", "-o", "{dir}/out"]

    def bytes_kept(d, r):
        want = GPT2_CONFIG.replace('"n_positions": 16, "n_ctx" :16', '"n_positions": 32, "n_ctx" :32')
        got = read(d, "out", "config.json").decode()
        return [] if got == want else ["config.json was not kept byte for byte: %r" % got]
    return [
        Case("io4-folder-config-bytes", "io4", resize, (0,), ("n_positions",),
             setup=lambda d: gpt2_folder(d, config=GPT2_CONFIG), check=bytes_kept),
        # Refused as `posemb rope` refuses it: which n_positions was meant is unknown.
        Case("io4-folder-config-duplicate-key", "io4", resize, (1,), ("'n_positions' appears twice",),
             setup=lambda d: gpt2_folder(d, config='{"model_type": "gpt2", "n_positions": 16, "n_positions": 64}'),
             check=absent("out")),
        Case("io4-inspect-folder-duplicate-key", "io4", ["inspect", "{dir}/m"], (1,), ("appears twice",),
             setup=lambda d: gpt2_folder(d, config='{"model_type": "gpt2", "n_positions": 16, "n_positions": 16}')),
    ]


ROPE_BASE = ('{"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 4096,\n'
             ' "rope_theta": 500000.0, "initializer_range": 1e-400,\n')


def rope_cases():
    """`rope --set` on a config with both rope_scaling and rope_parameters edited only the first."""
    yarn = ["rope", "{dir}/config.json", "--set", "yarn", "--factor", "4", "-o", "{dir}/out.json"]
    agree = ROPE_BASE + (' "rope_scaling": {"type": "linear", "factor": 2.0},\n'
                         ' "rope_parameters": {"rope_type": "linear", "factor": 2, "rope_theta": 500000.0}}\n')
    disagree = ROPE_BASE + (' "rope_scaling": {"rope_type": "linear", "factor": 2.0},\n'
                            ' "rope_parameters": {"rope_type": "yarn", "factor": 8.0}}\n')

    def both_edited(d, r):
        text = read(d, "out.json").decode()
        j = json.loads(text)
        out = []
        for key in ("rope_scaling", "rope_parameters"):
            if j[key].get("rope_type") != "yarn" or j[key].get("factor") != 4.0:
                out.append("%s was not edited: %r" % (key, j[key]))
        if j["rope_parameters"].get("rope_theta") != 500000.0:
            out.append("rope_parameters lost its rope_theta")
        if "1e-400" not in text:
            out.append("initializer_range 1e-400 was rewritten")
        return out
    return [
        Case("io4-rope-both-blocks-edited", "io4", yarn, (0,), ("rope_scaling and rope_parameters",),
             setup=write("config.json", agree), check=both_edited),
        Case("io4-rope-blocks-disagree", "io4", yarn, (1,), ("rope_scaling", "rope_parameters", "disagree"),
             setup=write("config.json", disagree), check=absent("out.json")),
        Case("io4-rope-read-blocks-disagree", "io4", ["rope", "{dir}/config.json"], (0,),
             setup=write("config.json", disagree),
             check=lambda d, r: [] if b"disagree" in r.stderr else ["no warning of the two blocks"]),
    ]


def npy_cases():
    """`convert` wrote a .npy of shape [2^62, 0] that np.load refuses."""
    def empty(rows):
        return safetensors_bytes({"wpe.weight": ("F32", (rows, 0), (0, 0))})

    def loads(d, r):
        try:
            import numpy
        except ImportError:
            return []
        a = numpy.load(os.path.join(d, "o.npy"))
        return [] if a.shape == (2 ** 61 - 1, 0) else ["np.load gave shape %r" % (a.shape,)]
    return [
        # numpy's limit: item size x the non-zero dimensions <= 2^63 - 1, empty arrays too.
        Case("io4-npy-shape-numpy-refuses", "io4", ["convert", "{dir}/in.safetensors", "{dir}/o.npy"], (1,),
             ("numpy cannot load", "[4611686018427387904, 0]"), setup=write("in.safetensors", empty(2 ** 62)),
             check=absent("o.npy")),
        Case("io4-npy-shape-numpy-loads", "io4", ["convert", "{dir}/in.safetensors", "{dir}/o.npy"], (0,),
             setup=write("in.safetensors", empty(2 ** 61 - 1)), check=loads),
    ]


def minus_zero_cases():
    """A -0 offset was reported as "0, not a non-negative integer"."""
    minus_zero = safetensors_bytes({}, header_text='{"wpe.weight": {"dtype": "F32", "shape": [1, 1], '
                                                   '"data_offsets": [-0, 4]}}', data=b"\0" * 4)
    return [Case("io4-safetensors-minus-zero-offset", "io4", ["inspect", "{dir}/in.safetensors"], (1,),
                 ("data_offsets[0] is written -0",), setup=write("in.safetensors", minus_zero))]


def f64_cases():
    """A finite F64 value past float32's range was reported as +infinity."""
    f64_max = table_file("wpe.weight", 4, 4, dtype="F64", poison=(1, 2, struct.pack("<d", 1.7976931348623157e308)))

    def no_infinity(d, r):
        return ["a finite value was called infinity"] if b"holds +infinity" in r.stderr else []
    return [Case("io4-f64-max-not-infinity", "io4", ["inspect", "{dir}/in.safetensors"], (1,),
                 ("1.7976931348623157e+308 at row 1, column 2", "finite in F64"),
                 setup=write("in.safetensors", f64_max), check=no_infinity)]


def convert_flag_cases():
    """--tensor and --name were silently ignored where they do not apply."""
    table = table_file("wpe.weight", 4, 4)
    npy = npy_bytes("<f4", (4, 4), b"\0" * 64)
    return [
        Case("io4-convert-tensor-safetensors-out", "io4",
             ["convert", "{dir}/in.safetensors", "{dir}/o.safetensors", "--tensor", "wpe.weight"], (2,),
             ("--tensor",), setup=write("in.safetensors", table), check=absent("o.safetensors")),
        Case("io4-convert-name-npy-out", "io4", ["convert", "{dir}/in.npy", "{dir}/o.npy", "--name", "wpe"], (2,),
             ("--name",), setup=write("in.npy", npy), check=absent("o.npy")),
        Case("io4-convert-name-safetensors-in", "io4",
             ["convert", "{dir}/in.safetensors", "{dir}/o.npy", "--name", "wpe"], (2,),
             ("--name",), setup=write("in.safetensors", table), check=absent("o.npy")),
        Case("io4-convert-name-npy-in", "io4", ["convert", "{dir}/in.npy", "{dir}/o.safetensors", "--name", "wpe"],
             (0,), setup=write("in.npy", npy)),
    ]


def empty_table_cases():
    """An empty table grown by sinusoidal said "no positions to sinusoidal from"."""
    empty = safetensors_bytes({"wpe.weight": ("F32", (0, 4), (0, 0))})
    return [Case("io4-resize-empty-sinusoidal", "io4",
                 ["resize", "{dir}/in.safetensors", "--to", "8", "--method", "sinusoidal", "-o", "{dir}/o.safetensors"],
                 (1,), ("'sinusoidal' makes new rows from the old ones",),
                 setup=write("in.safetensors", empty), check=absent("o.safetensors"))]


def grid_cap_cases():
    """--grid 4096x4096 with a class token made 2^24 + 1 rows, one past the --to cap: a usage
    error, as --to past the cap is."""
    vit = safetensors_bytes({"vit.embeddings.position_embeddings": ("F32", (1, 5, 4), (0, 80))}, data=b"\0" * 80)
    # 1 class token + 4096 x 4096 cells is 2^24 + 1 rows, one past --to's cap.
    return [Case("io4-grid-cap-counts-prefix", "io4",
                 ["resize", "{dir}/in.safetensors", "--grid", "4096x4096", "-o", "{dir}/o.safetensors"], (2,),
                 ("16777217 rows", "at most 16777216"), setup=write("in.safetensors", vit),
                 check=absent("o.safetensors"))]


def io4_cases(p):
    return (folder_cases() + rope_cases() + npy_cases() + minus_zero_cases() + f64_cases()
            + convert_flag_cases() + empty_table_cases() + grid_cap_cases())
