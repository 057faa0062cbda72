"""Hostile cases for Hugging Face checkpoint folders (`posemb resize DIR`, `posemb inspect DIR`,
issue 22): a shard missing, an index naming a shard outside the folder or with `..`, a
symlinked shard, two shards claiming a tensor, a config that is not JSON, and output folders
that must not be touched. Each must fail with one line and write nothing: no output folder, no
`.posemb-*` temporary (the runner checks those), the input folder byte for byte as it was."""
import json
import os
import signal

from inputs import f32_table, safetensors_bytes
from runner import Case, tree_hashes

SHARD1 = "model-00001-of-00002.safetensors"
SHARD2 = "model-00002-of-00002.safetensors"


def shard(tensors):
    """A safetensors file of {name: (rows, cols)} float32 tensors."""
    entries, data = {}, b""
    for name, (rows, cols) in tensors.items():
        b = f32_table(rows, cols, fill=0.125)
        entries[name] = ("F32", (rows, cols), (len(data), len(data) + len(b)))
        data += b
    return safetensors_bytes(entries, data=data)


def write(path, data):
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def gpt2_folder(d, weight_map=None, shard1=None, config=None):
    """A GPT-2-shaped folder of two shards under d/m, the table in the second."""
    m = os.path.join(d, "m")
    os.makedirs(m)
    write(os.path.join(m, SHARD1), shard1 or shard({"wte.weight": (10, 4)}))
    write(os.path.join(m, SHARD2), shard({"wpe.weight": (16, 4)}))
    wm = weight_map or {"wte.weight": SHARD1, "wpe.weight": SHARD2}
    write(os.path.join(m, "model.safetensors.index.json"),
          json.dumps({"metadata": {"total_size": 26 * 16}, "weight_map": wm}))
    write(os.path.join(m, "config.json"),
          config if config is not None else json.dumps({"model_type": "gpt2", "n_positions": 16, "n_ctx": 16}))
    write(os.path.join(m, "tokenizer.json"), "{}")
    return m


def untouched(setup):
    """Setup plus a check that the input folder is byte for byte as setup left it, and that no
    output folder was made."""
    seen = {}

    def run(d):
        setup(d)
        seen[d] = tree_hashes(os.path.join(d, "m"))

    def check(d, r):
        out = []
        if tree_hashes(os.path.join(d, "m")) != seen.get(d):
            out.append("the input folder changed")
        if r.rc != 0 and os.path.lexists(os.path.join(d, "out")):
            out.append("a failed command made the output folder")
        return out
    return run, check


def total_size(value):  # 2^64 - 1 wrapped around to 511, written without a word
    def setup(d):
        m = gpt2_folder(d)
        path = os.path.join(m, "model.safetensors.index.json")
        with open(path) as f:
            index = json.load(f)
        index["metadata"]["total_size"] = value
        write(path, json.dumps(index))
    return setup


def spoiled_folders():
    """(name, setup(d), text the error must hold)."""
    def missing_shard(d):
        os.remove(os.path.join(gpt2_folder(d), SHARD2))

    def symlinked_shard(d):
        m = gpt2_folder(d)
        os.rename(os.path.join(m, SHARD2), os.path.join(d, "real.safetensors"))
        os.symlink(os.path.join(d, "real.safetensors"), os.path.join(m, SHARD2))

    def outside(name):
        def setup(d):
            gpt2_folder(d, weight_map={"wte.weight": SHARD1, "wpe.weight": name})
            write(os.path.join(d, "evil.safetensors"), shard({"wpe.weight": (16, 4)}))
        return setup

    def two_claims(d):
        gpt2_folder(d, shard1=shard({"wte.weight": (10, 4), "wpe.weight": (16, 4)}))

    def config(text):
        return lambda d: gpt2_folder(d, config=text)

    def no_config(d):
        os.remove(os.path.join(gpt2_folder(d), "config.json"))

    def index_not_json(d):
        write(os.path.join(gpt2_folder(d), "model.safetensors.index.json"), "{\"weight_map\": ")

    def index_text(text):
        def spoil(d):
            write(os.path.join(gpt2_folder(d), "model.safetensors.index.json"), text)
        return spoil

    def index_twice(d):  # the table listed under both shards: which one was meant is not known
        path = os.path.join(gpt2_folder(d), "model.safetensors.index.json")
        with open(path) as f:
            text = f.read()
        write(path, text.replace('"weight_map": {', '"weight_map": {"wpe.weight": "%s", ' % SHARD1, 1))

    def deep_index(d):  # 200,000 levels crashed the tool (stack overflow)
        m = gpt2_folder(d)
        path = os.path.join(m, "model.safetensors.index.json")
        with open(path) as f:
            index = json.load(f)
        deep = 200000
        text = json.dumps(index)[:-1] + ', "x": ' + "[" * deep + "]" * deep + "}"
        write(path, text)

    def fifo_in_folder(d):
        os.mkfifo(os.path.join(gpt2_folder(d), "vocab.txt"))

    return [
        ("missing-shard", missing_shard, "not a file in the folder"),
        ("symlinked-shard", symlinked_shard, "symbolic link"),
        ("index-dotdot", outside("../evil.safetensors"), "plain file name"),
        ("index-absolute", outside(os.path.join("/", "etc", "passwd")), "plain file name"),
        ("index-subdir", outside("sub/evil.safetensors"), "plain file name"),
        ("two-shards-claim", two_claims, "in two shards"),
        ("config-not-json", config("{\"n_positions\": 16,"), "not valid JSON"),
        ("config-binary", config("\x00\xff\x1b[2J"), "not JSON text: a NUL byte"),
        ("config-array", config("[16]"), "not a JSON object"),
        ("config-missing", no_config, "no config.json"),
        ("index-not-json", index_not_json, "not valid JSON"),
        ("index-array", index_text("[1]"), "not a JSON object"),
        ("index-twice", index_twice, "key 'wpe.weight' appears twice in one object"),
        ("index-deep", deep_index, "deep; posemb reads JSON at most 64 deep"),
        ("config-deep", config('{"model_type": "gpt2", "n_positions": 16, "x": ' + "[" * 8000 + "]" * 8000 + "}"),
         "8001 deep"),
        ("fifo-in-folder", fifo_in_folder, "not a regular file"),
    ]


def folder_cases(p):
    out = []
    commands = [
        ("resize", ["resize", "{dir}/m", "--to", "32", "--method", "copy", "-o", "{dir}/out"]),
        ("resize-force", ["resize", "{dir}/m", "--to", "32", "--method", "copy", "-o", "{dir}/out", "--force"]),
        ("inspect", ["inspect", "{dir}/m"]),
    ]
    for name, spoil, text in spoiled_folders():
        for tag, args in commands:
            setup, check = untouched(spoil)
            out.append(Case("folder-%s-%s" % (name, tag), "folders", args, (1,), (text,), timeout=15,
                            setup=setup, check=check))

    # Output folders: a non-empty one is kept unless --force; the input itself, a folder inside
    # it and a regular file are refused even with --force.
    def with_out(kind):
        def setup(d):
            gpt2_folder(d)
            o = os.path.join(d, "out")
            if kind == "file":
                write(o, b"old output, must survive a failed write\n")
            else:
                os.makedirs(o)
                write(os.path.join(o, "keep.txt"), b"old output, must survive a failed write\n")
        return setup
    resize = ["resize", "{dir}/m", "--to", "32", "--method", "copy", "-o"]
    same_input = untouched(gpt2_folder)
    out += [
        Case("folder-out-nonempty", "folders", resize + ["{dir}/out"], (1,), ("--force",),
             setup=with_out("dir"), keep=("out/keep.txt",)),
        Case("folder-out-file", "folders", resize + ["{dir}/out", "--force"], (1,), ("not a directory",),
             setup=with_out("file"), keep=("out",)),
        Case("folder-out-is-input", "folders", resize + ["{dir}/m", "--force"], (1,), ("input folder",),
             setup=same_input[0], check=same_input[1]),
        Case("folder-out-inside-input", "folders", resize + ["{dir}/m/sub", "--force"], (1,),
             ("input folder",), setup=lambda d: gpt2_folder(d)),
        Case("folder-out-holds-input", "folders", resize + ["{dir}", "--force"], (1,), ("input folder",),
             setup=lambda d: gpt2_folder(d)),
        # A folder is written as a folder: -o NAME.npy wrote a folder named NAME.npy whose weights
        # had lost every tensor, then failed.
        Case("folder-out-npy", "folders", resize + ["{dir}/t.npy"], (2,), ("checkpoint folder",),
             setup=lambda d: gpt2_folder(d),
             check=lambda d, r: ["a refused resize wrote t.npy"] if os.path.exists(os.path.join(d, "t.npy")) else []),
        Case("folder-table-only", "folders", resize + ["{dir}/t.safetensors", "--table-only"], (2,), ("--table-only",),
             setup=lambda d: gpt2_folder(d),
             check=lambda d, r: ["a refused resize wrote t.safetensors"]
             if os.path.exists(os.path.join(d, "t.safetensors")) else []),
        Case("folder-grid-on-gpt2", "folders",
             ["resize", "{dir}/m", "--grid", "4x4", "-o", "{dir}/out"], (2,), ("1-D",),
             setup=lambda d: gpt2_folder(d)),
        Case("folder-force-replaces", "folders", resize + ["{dir}/out", "--force"], (0,), ("total_size",),
             setup=with_out("dir"),
             check=lambda d, r: [] if not os.path.exists(os.path.join(d, "out", "keep.txt")) and
             os.path.exists(os.path.join(d, "out", SHARD2)) else ["--force did not replace the folder"]),
    ]
    # A written folder keeps its input's permission bits (a private file stayed private only
    # by luck of the umask: everything came out 0644 and the folder 0755).
    def private_folder(d):
        m = gpt2_folder(d)
        write(os.path.join(m, "token.txt"), "hf_secret")
        os.chmod(os.path.join(m, "token.txt"), 0o600)
        os.chmod(os.path.join(m, "config.json"), 0o640)
        os.chmod(m, 0o700)

    def modes_kept(d, r):
        o = os.path.join(d, "out")
        want = {"": 0o700, "token.txt": 0o600, "config.json": 0o640}
        got = {k: os.stat(os.path.join(o, k)).st_mode & 0o7777 for k in want}
        return [] if got == want else ["modes %s, not %s" % (got, want)]
    out.append(Case("folder-index-total-size-huge", "folders", resize + ["{dir}/out"], (1,),
                    ("cannot be the shards' size",), setup=total_size(2**64 - 1),
                    check=lambda d, r: ["a refused resize wrote out"] if os.path.exists(os.path.join(d, "out")) else []))
    out.append(Case("folder-modes-kept", "folders", resize + ["{dir}/out"], (0,), setup=private_folder,
                    check=modes_kept, umask=0o022))
    out += signal_cases()
    out += grid_flag_cases()
    return out


def signal_cases():
    """A signal while a folder is written (its temporary folder exists): the temporary folder goes
    with everything in it, the process dies of the signal, no output appears (it was left, with
    the copies made so far). The signal goes to posemb alone (not its `timeout` wrapper, which takes
    SIGALRM for its own timer)."""
    def big_folder(d):
        m = gpt2_folder(d)
        os.makedirs(os.path.join(m, "sub"))
        with open(os.path.join(m, "sub", "extra.bin"), "wb") as f:
            f.write(b"\0" * (192 << 20))  # 64 MiB was sometimes copied before the runner looked

    def no_output(d, r):
        return ["an interrupted resize left the output folder"] if os.path.exists(os.path.join(d, "out")) else []

    def big_folder_and_old_output(d):
        big_folder(d)
        os.makedirs(os.path.join(d, "out"))
        write(os.path.join(d, "out", "old.txt"), b"the folder --force replaces")

    def old_output_intact(d, r):
        old = os.path.join(d, "out", "old.txt")
        if not os.path.isfile(old) or open(old, "rb").read() != b"the folder --force replaces":
            return ["an interrupted --force resize lost the folder it was replacing"]
        return []

    return [Case("folder-signal-%s" % sig.name, "folders",
                 ["resize", "{dir}/m", "--to", "32", "--method", "copy", "-o", "{dir}/out"], (-sig, 128 + sig),
                 timeout=60, setup=big_folder, check=no_output, signal_after_temp=sig)
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGPIPE, signal.SIGUSR1)] + [
        Case("folder-signal-force-SIGTERM", "folders",
             ["resize", "{dir}/m", "--to", "32", "--method", "copy", "-o", "{dir}/out", "--force"],
             (-signal.SIGTERM, 128 + signal.SIGTERM), timeout=60, setup=big_folder_and_old_output,
             check=old_output_intact, signal_after_temp=signal.SIGTERM)]


def vit_file(d):
    """A ViT table (1, 197, 8) beside its class token, in d/vit.safetensors."""
    entries = {"vit.embeddings.cls_token": ("F32", (1, 1, 8), (0, 32)),
               "vit.embeddings.position_embeddings": ("F32", (1, 197, 8), (32, 32 + 197 * 32))}
    write(os.path.join(d, "vit.safetensors"),
          safetensors_bytes(entries, data=f32_table(1, 8) + f32_table(197, 8)))


def grid_flag_cases():
    """Bad values of the grid flags on a ViT file: a usage error naming the flag or the grid,
    nothing written."""
    base = ["resize", "{dir}/vit.safetensors", "-o", "{dir}/o.safetensors"]
    bad = {
        "--grid": ["", "24", "x24", "24x", "0x4", "4x0", "-1x4", "axb", "4x4x4", "9999999x1", "24x 24"],
        "--from-grid": ["", "14", "0x14", "13x15", "14x14x1"],
        "--prefix-tokens": ["abc", "-1", "1.5", "197", "500", "2"],
        "--to": ["578", "196", "1"],
    }
    out = []
    for flag, values in bad.items():
        for i, v in enumerate(values):
            args = base + ([flag, v] if flag == "--to" else ["--grid", "24x24", flag, v])
            if flag == "--grid":
                args = base + [flag, v]
            out.append(Case("folder-flag%s-%d" % (flag, i), "flags", args, (2,), timeout=10, setup=vit_file,
                            check=lambda d, r: ["o.safetensors written by a refused resize"]
                            if os.path.exists(os.path.join(d, "o.safetensors")) else []))
    return out
