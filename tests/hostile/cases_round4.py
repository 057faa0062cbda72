"""Hostile cases of the fourth round (issue 46), by class:

r4-outputs   every command's output against every file it read: the table, each shard, the
             index, config.json and the other files of a folder, under every spelling (a hard
             link, a symbolic link, ./x, d/../d/x); each refused with exit 2 before any work,
             the file byte for byte as it was
r4-float     every factor, scale and base a config.json can carry, at the edges of float: exit 1
             naming the key, or a report whose every number is finite (no JSON null)
r4-work      every command's work against its limit before it starts (`rope --precision`,
             train, each run of a sweep and of the demo, make-checkpoint's tensors against the
             memory budget): a clear error at once, nothing written
r4-keys      every length key of a folder's config (GPT-2's max_position_embeddings) reported and
             written
r4-derived   derived config values that would wrap (a patch_size of 2^62) refused, nothing written
r4-empty     a file, an output or a name given as "" on purpose: a usage error
"""
import json
import os

from cases_folders import SHARD1, SHARD2, gpt2_folder, untouched, write
from inputs import f32_table, safetensors_bytes
from runner import Case, tree_hashes


def _table(d, name="t.safetensors"):
    write(os.path.join(d, name), safetensors_bytes(
        {"wpe.weight": ("F32", (8, 4), (0, 128))}, data=f32_table(8, 4, fill=0.25)))


def _config(d, name="config.json", **extra):
    cfg = {"hidden_size": 64, "num_attention_heads": 2, "max_position_embeddings": 64,
           "rope_theta": 10000.0}
    cfg.update(extra)
    write(os.path.join(d, name), json.dumps(cfg))


def _link(kind, target, name):
    def make(d):
        src, dst = os.path.join(d, target), os.path.join(d, name)
        (os.link if kind == "hard" else os.symlink)(src if kind == "hard" else os.path.abspath(src), dst)
    return make


def _then(*steps):
    def run(d):
        for s in steps:
            s(d)
    return run


def _same_folder(setup):
    """setup, and a check that every file of the case's directory is unchanged."""
    seen = {}

    def files(d):  # the runner's .stdout and .stderr aside
        return {k: v for k, v in tree_hashes(d).items() if not k.startswith(".std")}

    def run(d):
        setup(d)
        seen[d] = files(d)

    def check(d, r):
        now = files(d)
        changed = sorted(k for k in set(now) | set(seen.get(d, {})) if now.get(k) != seen[d].get(k))
        return ["files changed or made: %s" % changed] if changed else []
    return run, check


def output_cases():
    cases = []
    # inspect DIR --plot X: every file of the folder, and links and spellings of them.
    folder_files = [SHARD1, SHARD2, "model.safetensors.index.json", "config.json", "tokenizer.json"]
    spellings = []
    tags = ["shard1", "shard2", "index", "config", "tokenizer"]
    for tag, f in zip(tags, folder_files):
        spellings.append((tag, "m/" + f, None))
        spellings.append((tag + "-dotdot", "./m/../m/" + f, None))
    spellings += [
        ("hardlink-shard", "h.png", _link("hard", "m/" + SHARD2, "h.png")),
        ("hardlink-index", "hi.png", _link("hard", "m/model.safetensors.index.json", "hi.png")),
        ("symlink-shard1", "s.png", _link("sym", "m/" + SHARD1, "s.png")),
        ("symlink-config", "sc.png", _link("sym", "m/config.json", "sc.png")),
    ]
    for tag, out, extra in spellings:
        setup, check = _same_folder(_then(gpt2_folder, *(extra and [extra] or [])))
        cases.append(Case("r4-inspect-plot-%s" % tag, "r4-outputs",
                          ["inspect", "{dir}/m", "--plot", "{dir}/" + out], (2,),
                          ("is the input file",), setup=setup, check=check))
    # The table file of inspect, convert and resize, and the config of rope --set, under other names.
    single = [
        ("inspect", ["inspect", "{dir}/t.safetensors", "--plot", "{dir}/o"]),
        ("convert", ["convert", "{dir}/t.safetensors", "{dir}/o"]),
        ("resize", ["resize", "{dir}/t.safetensors", "--to", "16", "--method", "copy", "-o", "{dir}/o"]),
        ("resize-grid", ["resize", "{dir}/t.safetensors", "--grid", "2x2", "--prefix-tokens", "4",
                         "-o", "{dir}/o"]),
    ]
    for cmd, args in single:
        for kind in ("hard", "sym"):
            setup, check = _same_folder(_then(_table, _link(kind, "t.safetensors", "o")))
            cases.append(Case("r4-%s-%slink" % (cmd, kind), "r4-outputs", args, (2,),
                              ("is the input file",), setup=setup, check=check))
    for kind in ("hard", "sym"):
        setup, check = _same_folder(_then(_config, _link(kind, "config.json", "o.json")))
        cases.append(Case("r4-rope-set-%slink" % kind, "r4-outputs",
                          ["rope", "{dir}/config.json", "--set", "linear", "--factor", "2", "-o",
                           "{dir}/o.json"], (2,), ("is the input file",), setup=setup, check=check))
    # A folder output that holds a file read (a hard link to a shard), replaced with --force.
    def holds_shard(d):
        gpt2_folder(d)
        os.makedirs(os.path.join(d, "out"))
        os.link(os.path.join(d, "m", SHARD1), os.path.join(d, "out", "x.safetensors"))
    setup, check = _same_folder(holds_shard)
    cases.append(Case("r4-resize-folder-out-holds-a-shard", "r4-outputs",
                      ["resize", "{dir}/m", "--to", "32", "--method", "copy", "-o", "{dir}/out",
                       "--force"], (1,), ("holds the input file",), setup=setup, check=check))
    # A plot written beside the folder, not over it: fine.
    cases.append(Case("r4-inspect-plot-beside", "r4-outputs",
                      ["inspect", "{dir}/m", "--plot", "{dir}/m.png"], (0,), ("heatmap",),
                      setup=gpt2_folder))
    return cases


# Every rope key at the edges of float, as JSON can write them (1e400 is refused as an overflow).
NUMBERS = ["0", "-0", "4.9406564584124654e-324", "1e-310", "1e-300", "0.5", "4", "1e20", "1e300",
           "1e308", "1.7976931348623157e308", "-1", "1e400"]


def _rope_json_finite(d, r):
    if r.rc != 0:
        return []
    try:
        j = json.loads(r.stdout)
    except ValueError as e:
        return ["the report is not JSON: %s" % e]
    bad = []
    for key in ("inv_freq", "wavelengths", "stretch"):
        if any(v is None for v in j[key]):
            bad.append("%s holds null (a number that is not finite)" % key)
    for key in ("base", "base_in_effect", "attention_factor"):
        if j[key] is None:
            bad.append("%s is null" % key)
    return bad


def float_cases():
    cases = []
    blocks = {
        "theta": lambda n: '"rope_theta": %s' % n,
        "partial": lambda n: '"partial_rotary_factor": %s' % n,
        "linear": lambda n: '"rope_scaling": {"rope_type": "linear", "factor": %s}' % n,
        "dynamic": lambda n: '"rope_scaling": {"rope_type": "dynamic", "factor": %s}' % n,
        "yarn-factor": lambda n: '"rope_scaling": {"rope_type": "yarn", "factor": %s}' % n,
        "yarn-beta": lambda n: '"rope_scaling": {"rope_type": "yarn", "factor": 4, "beta_fast": %s}' % n,
        "yarn-mscale": lambda n: ('"rope_scaling": {"rope_type": "yarn", "factor": 4, "mscale": %s, '
                                  '"mscale_all_dim": 1}' % n),
        "llama3-low": lambda n: ('"rope_scaling": {"rope_type": "llama3", "factor": 8, "low_freq_factor": %s, '
                                 '"high_freq_factor": 4, "original_max_position_embeddings": 16}' % n),
    }
    for key, block in blocks.items():
        for i, n in enumerate(NUMBERS):
            text = ('{"hidden_size": 64, "num_attention_heads": 2, "max_position_embeddings": 64, '
                    + (block(n) if key == "theta" else '"rope_theta": 10000, ' + block(n)) + "}")

            def setup(d, text=text):
                write(os.path.join(d, "config.json"), text)
            cases.append(Case("r4-float-%s-%d" % (key, i), "r4-float",
                              ["rope", "{dir}/config.json", "--json", "--seq-len", "128"], (0, 1),
                              setup=setup, keep=("config.json",), check=_rope_json_finite))
    # The two: refused, naming the factor.
    for name, block in (("dynamic-1e20", '{"rope_type": "dynamic", "factor": 1e20}'),
                        ("linear-1e308", '{"rope_type": "linear", "factor": 1e308}')):
        cases.append(Case("r4-float-issue-%s" % name, "r4-float",
                          ["rope", "{dir}/config.json", "--json"], (1,), ("rope_scaling.factor",),
                          setup=lambda d, b=block: write(os.path.join(d, "config.json"),
                                                         '{"hidden_size": 64, "num_attention_heads": 2, '
                                                         '"max_position_embeddings": 64, "rope_scaling": %s}' % b)))
    return cases


def work_cases():
    wide = {"head_dim": 65536, "hidden_size": 65536, "num_attention_heads": 1,
            "max_position_embeddings": 1048576, "rope_theta": 10000}
    return [
        Case("r4-work-rope-precision-wide", "r4-work", ["rope", "{dir}/c.json", "--precision"], (2,),
             ("--seq-len", "angle checks"), timeout=10,
             setup=lambda d: write(os.path.join(d, "c.json"), json.dumps(wide))),
        Case("r4-work-rope-precision-seq-len", "r4-work",
             ["rope", "{dir}/c.json", "--precision", "--seq-len", "1099511627776"], (2,),
             ("--seq-len",), timeout=10,
             setup=lambda d: write(os.path.join(d, "c.json"), json.dumps(dict(wide, head_dim=4096)))),
        # Within the limit: runs.
        Case("r4-work-rope-precision-small", "r4-work",
             ["rope", "{dir}/c.json", "--precision", "--seq-len", "4096"], (0,), ("float16",),
             setup=lambda d: write(os.path.join(d, "c.json"), json.dumps(dict(wide, head_dim=128)))),
        # Training's work (steps x batch x the model's passes), refused before the output folder
        # is made: train, each run of a sweep, each of the demo's runs.
        Case("r4-work-train", "r4-work",
             ["train", "--steps", "100000000", "--out", "{dir}/o"], (2,),
             ("train config:", "multiply-adds", "--steps", "--batch"), check=_nothing_made),
        Case("r4-work-sweep-train", "r4-work",
             ["sweep", "--steps", "100000000", "--batch", "65536", "--out", "{dir}/o"], (2,),
             ("grid run 0", "train config:", "--steps"), check=_nothing_made),
        Case("r4-work-sweep-eval", "r4-work",
             ["sweep", "--pe", "sinusoidal", "--steps", "2", "--eval-max", "100000", "--samples",
              "100000", "--out", "{dir}/o"], (2,), ("grid run 0", "eval config:", "--eval-max"),
             check=_nothing_made),
        Case("r4-work-demo-train", "r4-work",
             ["demo", "--steps", "100000000", "--out", "{dir}/o"], (2,),
             ("demo: its", "multiply-adds", "--steps"), check=_nothing_made),
        # make-checkpoint's tensors against the memory budget before any value is drawn.
        Case("r4-work-make-checkpoint-wide", "r4-work",
             ["make-checkpoint", "roberta", "--dim", "65536", "-o", "{dir}/r.safetensors"], (1,),
             ("make-checkpoint (roberta.embeddings.word_embeddings.weight)", "memory budget"),
             timeout=10, check=_nothing_made),
    ]


def _nothing_made(d, r):
    made = [f for f in sorted(os.listdir(d)) if not f.startswith(".std")]
    return ["files made: %s" % made] if made else []


def key_cases():
    cfg = json.dumps({"model_type": "gpt2", "n_positions": 16, "n_ctx": 16, "max_position_embeddings": 1024})

    def all_three(d, r):
        j = json.load(open(os.path.join(d, "out", "config.json")))
        keys = ("n_positions", "n_ctx", "max_position_embeddings")
        return [] if all(j[k] == 32 for k in keys) else ["length keys not all written: %r" % j]
    return [
        Case("r4-keys-gpt2-max-position-embeddings-inspect", "r4-keys", ["inspect", "{dir}/m"], (0,),
             ("max_position_embeddings = 1024", "DISAGREES"), setup=lambda d: gpt2_folder(d, config=cfg)),
        Case("r4-keys-gpt2-max-position-embeddings-resize", "r4-keys",
             ["resize", "{dir}/m", "--to", "32", "--method", "copy", "-o", "{dir}/out"], (0,),
             ("max_position_embeddings 1024 -> 32",), setup=lambda d: gpt2_folder(d, config=cfg),
             check=all_three),
    ]


def vit_folder(d, patch):
    m = os.path.join(d, "m")
    os.makedirs(m)
    write(os.path.join(m, "model.safetensors"), safetensors_bytes(
        {"vit.embeddings.position_embeddings": ("F32", (1, 10, 4), (0, 160))},
        data=f32_table(10, 4, fill=0.5)))
    write(os.path.join(m, "config.json"),
          '{"model_type": "vit", "image_size": 48, "patch_size": %s}' % patch)


def derived_cases():
    run, check = untouched(lambda d: vit_folder(d, "4611686018427387904"))
    return [
        Case("r4-derived-patch-2-62", "r4-derived",
             ["resize", "{dir}/m", "--grid", "4x4", "-o", "{dir}/out"], (1,), ("past 2^53",),
             setup=run, check=check),
        Case("r4-derived-patch-2-62-inspect", "r4-derived", ["inspect", "{dir}/m"], (0,),
             ("image_size", "DISAGREES"), setup=lambda d: vit_folder(d, "4611686018427387904")),
    ]


def empty_cases():
    cases = []
    for tag, args in (
            ("convert-name", ["convert", "{dir}/t.safetensors", "{dir}/o.safetensors", "--name", ""]),
            ("convert-tensor", ["convert", "{dir}/t.safetensors", "{dir}/o.npy", "--tensor", ""]),
            ("convert-output", ["convert", "{dir}/t.safetensors", ""]),
            ("inspect-file", ["inspect", ""]),
            ("inspect-tensor", ["inspect", "{dir}/t.safetensors", "--tensor", ""]),
            ("resize-output", ["resize", "{dir}/t.safetensors", "--to", "16", "--method", "copy", "-o", ""]),
            ("resize-tensor", ["resize", "{dir}/t.safetensors", "--to", "16", "--method", "copy",
                               "--tensor", "", "-o", "{dir}/o.safetensors"]),
            ("rope-config", ["rope", ""]),
            ("rope-output", ["rope", "{dir}/t.safetensors", "--set", "linear", "--factor", "2", "-o", ""]),
            ("make-checkpoint-output", ["make-checkpoint", "gpt2", "-o", ""]),
            ("make-checkpoint-folder", ["make-checkpoint", "gpt2", "--folder", "-o", ""])):
        cases.append(Case("r4-empty-%s" % tag, "r4-empty", args, (2,), ("an empty value",),
                          setup=_table,
                          check=lambda d, r: [] if [f for f in sorted(os.listdir(d))
                                                    if not f.startswith(".std")] == ["t.safetensors"]
                          else ["files made: %s" % sorted(os.listdir(d))]))
    return cases


def _copy(src, name):
    def make(d):
        dst = os.path.join(d, name)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(src, "rb") as f:
            write(dst, f.read())
    return make


def _mkdir(name):
    return lambda d: os.makedirs(os.path.join(d, name), exist_ok=True)


def lab_output_cases(p):
    """train and eval: an output file that is a file they read (the --init-from checkpoint, the
    --table, the --checkpoint), refused before any work, every file as it was."""
    ck, table = "r/checkpoint.safetensors", p["ck_table16.safetensors"]
    quick = ["--lengths", "1:2", "--samples", "2"]
    specs = [
        ("train-init-from-out", ["train", "--init-from", "{dir}/r", "--steps", "2", "--out", "{dir}/r"],
         _copy(p["ck"], ck)),
        ("train-table-hardlink", ["train", "--init-from", "{dir}/r", "--table", "{dir}/t.safetensors",
                                  "--steps", "2", "--out", "{dir}/o"],
         _then(_copy(p["ck"], ck), _copy(table, "t.safetensors"), _mkdir("o"),
               _link("hard", "t.safetensors", "o/checkpoint.safetensors"))),
        ("eval-table-as-results", ["eval", "--checkpoint", "{dir}/r", "--table", "{dir}/D/results.csv"]
         + quick + ["--out", "{dir}/D"], _then(_copy(p["ck"], ck), _copy(table, "D/results.csv"))),
        ("eval-checkpoint-hardlink", ["eval", "--checkpoint", "{dir}/r"] + quick + ["--out", "{dir}/D"],
         _then(_copy(p["ck"], ck), _mkdir("D"), _link("hard", ck, "D/results.json"))),
    ]
    cases = []
    for tag, args, make in specs:
        setup, check = _same_folder(make)
        cases.append(Case("r4-lab-%s" % tag, "r4-outputs", args, (2,), ("is the input file",),
                          setup=setup, check=check))
    return cases


def round4_cases(p):
    return (output_cases() + lab_output_cases(p) + float_cases() + work_cases() + key_cases()
            + derived_cases() + empty_cases())
