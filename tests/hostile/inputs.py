"""Hostile inputs for the posemb CLI, written by script (Python's standard library only).

make_inputs(posemb, root) writes every input file under root/in and returns a dict name -> path.
Checkpoints are real ones (`posemb train`, tiny), then rewritten with edited metadata or
tensors. Nothing here is committed as a binary file.
"""
import json
import os
import socket
import struct
import subprocess

F32_NAN = struct.pack("<f", float("nan"))
F32_INF = struct.pack("<f", float("inf"))


def safetensors_bytes(entries, metadata=None, data=b"", header_text=None, pad=True):
    """A safetensors file: entries is {name: (dtype, shape, (begin, end))} or raw dicts."""
    if header_text is None:
        h = {}
        if metadata is not None:
            h["__metadata__"] = metadata
        for name, e in entries.items():
            if isinstance(e, dict):
                h[name] = e
            else:
                dtype, shape, offsets = e
                h[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}
        header_text = json.dumps(h)
    raw = header_text.encode("utf-8", "surrogateescape") if isinstance(header_text, str) else header_text
    if pad:
        raw += b" " * ((8 - len(raw) % 8) % 8)
    return struct.pack("<Q", len(raw)) + raw + data


def f32_table(rows, cols, fill=0.25, poison=None):
    """rows x cols float32 bytes; poison = (row, col, bytes) replaces one value."""
    vals = bytearray(struct.pack("<f", fill) * (rows * cols))
    if poison is not None:
        r, c, b = poison
        i = (r * cols + c) * 4
        vals[i:i + 4] = b
    return bytes(vals)


def table_file(name, rows, cols, dtype="F32", fill=0.25, poison=None, metadata=None):
    width = {"F32": 4, "F64": 8, "F16": 2, "BF16": 2}[dtype]
    if dtype == "F32":
        data = f32_table(rows, cols, fill, poison)
    else:
        one = {"F64": struct.pack("<d", fill), "F16": struct.pack("<e", fill),
               "BF16": struct.pack("<f", fill)[2:]}[dtype]
        data = bytearray(one * (rows * cols))
        if poison is not None:
            r, c, b = poison
            i = (r * cols + c) * width
            data[i:i + width] = b
        data = bytes(data)
    return safetensors_bytes({name: (dtype, (rows, cols), (0, len(data)))}, metadata, data)


def npy_bytes(descr, shape, data=b"", header=None, magic=b"\x93NUMPY", version=(1, 0)):
    if header is None:
        shape_text = "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
        header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape_text)
    raw = header.encode("latin-1") if isinstance(header, str) else header
    lenfmt = "<H" if version[0] == 1 else "<I"
    pre = len(magic) + 2 + struct.calcsize(lenfmt)
    raw += b" " * ((64 - (pre + len(raw) + 1) % 64) % 64) + b"\n"
    return magic + bytes(version) + struct.pack(lenfmt, len(raw)) + raw + data


def read_safetensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def rewrite(src, dst, edit_header=None, edit_tensors=None):
    """Copies checkpoint src to dst with its header (a dict) edited, or its tensors replaced:
    edit_tensors(tensors) gets and returns {name: (dtype, shape, bytes)}."""
    h, data = read_safetensors(src)
    meta = h.pop("__metadata__", {})
    tensors = {}
    for name, e in h.items():
        b, end = e["data_offsets"]
        tensors[name] = (e["dtype"], e["shape"], data[b:end])
    if edit_tensors is not None:
        tensors = edit_tensors(tensors)
    out = {"__metadata__": meta}
    blob = b""
    for name, (dtype, shape, b) in tensors.items():
        out[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [len(blob), len(blob) + len(b)]}
        blob += b
    if edit_header is not None:
        edit_header(out)
    with open(dst, "wb") as f:
        f.write(safetensors_bytes({}, header_text=json.dumps(out), data=blob))


def make_checkpoints(posemb, root, env):
    """Tiny real checkpoints (one per encoding kind the cases need)."""
    tiny = ["--d-model", "16", "--heads", "2", "--layers", "1", "--train-len", "3", "--alphabet",
            "4", "--batch", "4", "--micro-batch", "2", "--steps", "2", "--warmup", "1", "--quiet"]
    out = {}
    for pe in ("learned", "rope", "learned-randomized"):
        d = os.path.join(root, "train-" + pe)
        subprocess.run([posemb, "train", *tiny, "--pe", pe, "--out", d], check=True, env=env,
                       stdout=subprocess.DEVNULL)
        out[pe] = os.path.join(d, "checkpoint.safetensors")
    return out


def make_inputs(posemb, root, env):
    d = os.path.join(root, "in")
    os.makedirs(d, exist_ok=True)
    p = {}

    def put(name, content):
        path = os.path.join(d, name)
        with open(path, "wb") as f:
            f.write(content)
        p[name] = path
        return path

    ck = make_checkpoints(posemb, os.path.join(root, "ckpt"), env)
    p["ck"] = ck["learned"]
    p["ck_rope"] = ck["rope"]
    p["ck_randomized"] = ck["learned-randomized"]

    # Valid tables.
    put("good.safetensors", table_file("wpe.weight", 64, 8))
    put("good.npy", npy_bytes("<f4", (64, 8), f32_table(64, 8)))
    put("ck_table16.safetensors", table_file("wpe.weight", 40, 16))  # fits the checkpoints
    put("wide.npy", npy_bytes("<f4", (4, 4096), f32_table(4, 4096)))
    put("big.npy", npy_bytes("<f4", (256, 64), f32_table(256, 64)))
    put("plot.npy", npy_bytes("<f4", (2048, 8), f32_table(2048, 8)))
    put("not_a_tensor_file.txt", b"hello, this is text\n")
    put("empty_file", b"")

    # 1. Empty rows at scale (and other degenerate shapes).
    for rows, cols in ((1 << 40, 0), (1 << 62, 0), (0, 0), (0, 16), (1, 0), (4, 0)):
        tag = "%dx%d" % (rows, cols) if rows < 1 << 20 else "2p%dx%d" % (rows.bit_length() - 1, cols)
        put("empty_%s.safetensors" % tag, safetensors_bytes({"wpe.weight": ("F32", (rows, cols), (0, 0))}))
        put("empty_%s.npy" % tag, npy_bytes("<f4", (rows, cols)))
    put("empty_3d.safetensors", safetensors_bytes({"wpe.weight": ("F32", (1 << 40, 0, 7), (0, 0))}))
    put("empty_1d.npy", npy_bytes("<f4", (0,)))

    # 2. Header cost and limits.
    many = {"t%d" % i: ("F32", (1, 1), (4 * i, 4 * i + 4)) for i in range(100000)}
    put("tensors_100k.safetensors", safetensors_bytes(many, data=b"\0" * 400000))
    many = {"t%d" % i: ("F32", (0,), (0, 0)) for i in range(262145)}
    put("tensors_262145.safetensors", safetensors_bytes(many))
    huge_shape = '{"wpe.weight": {"dtype": "F32", "shape": [' + ",".join(["1"] * 3000000) + '], "data_offsets": [0, 4]}}'
    put("shape_3m_entries.safetensors", safetensors_bytes({}, header_text=huge_shape, data=b"\0" * 4))
    put("rank_65.safetensors", safetensors_bytes({"wpe.weight": ("F32", (1,) * 65, (0, 4))}, data=b"\0" * 4))
    put("rank_64.safetensors", safetensors_bytes({"wpe.weight": ("F32", (1,) * 64, (0, 4))}, data=b"\0" * 4))
    put("long_name_1025.safetensors", safetensors_bytes({"w" * 1025: ("F32", (1, 1), (0, 4))}, data=b"\0" * 4))
    put("header_len_lies.safetensors", struct.pack("<Q", 100000001) + b"{}")
    put("header_len_max.safetensors", struct.pack("<Q", (1 << 64) - 1) + b"{}")
    meta = {"k%d" % i: "" for i in range(65537)}
    put("metadata_65537.safetensors", safetensors_bytes({}, meta))
    put("metadata_17mib.safetensors", safetensors_bytes({}, {"big": "x" * (17 << 20)}))
    put("deep_nesting.safetensors", safetensors_bytes({}, header_text="[" * 100000 + "]" * 100000))
    put("npy_header_2mib.npy", npy_bytes("<f4", (1, 1), b"\0" * 4, header="{" + " " * (2 << 20) + "}", version=(2, 0)))
    put("shape_2p64.npy", npy_bytes("<f4", (1 << 64, 1)))
    put("shape_2p63.safetensors", safetensors_bytes({"wpe.weight": ("F32", (1 << 63, 1), (0, 0))}))
    put("offsets_overflow.safetensors", safetensors_bytes({"wpe.weight": ("F32", (2, 2), (0, (1 << 64) - 1))}, data=b"\0" * 16))
    ok = json.dumps({"wpe.weight": {"dtype": "F32", "shape": [8, 4], "data_offsets": [0, 128]}})
    put("nul_after_header.safetensors", safetensors_bytes({}, header_text=ok + "\0garbage{[", data=f32_table(8, 4)))
    put("nul_in_npy_header.npy", npy_bytes("<f4", (2, 2), f32_table(2, 2),
                                           header="{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }\0junk"))
    put("truncated.safetensors", table_file("wpe.weight", 64, 8)[:-100])
    put("truncated.npy", npy_bytes("<f4", (64, 8), f32_table(64, 8))[:-100])
    # Fortran order and big-endian are read (decoded into a copy): a short one is still refused
    # before anything is decoded, and the copy counts against the memory budget.
    fortran = "{'descr': '%s', 'fortran_order': True, 'shape': (%d, %d), }"
    put("fortran_truncated.npy", npy_bytes("", (), f32_table(64, 8)[:-100], header=fortran % (">f4", 64, 8)))
    ramp = b"".join(struct.pack(">f", float(i)) for i in range(64 * 8))  # (r, c) = r + 64 c
    put("fortran_be.npy", npy_bytes("", (), ramp, header=fortran % (">f4", 64, 8)))
    put("fortran_4mib.npy", npy_bytes("", (), f32_table(2048, 512), header=fortran % ("<f4", 2048, 512)))

    # 3. Non-regular inputs: made by the runner (FIFO, socket, directory, device symlinks).
    p["fifo"] = os.path.join(d, "fifo")
    os.mkfifo(p["fifo"])
    p["socket"] = os.path.join(d, "socket")
    s = socket.socket(socket.AF_UNIX)
    s.bind(p["socket"])
    s.close()
    p["directory"] = os.path.join(d, "directory.safetensors")
    os.mkdir(p["directory"])
    for name, target in (("link_to_fifo", p["fifo"]), ("link_to_zero", "/dev/zero"),
                         ("link_to_urandom", "/dev/urandom"), ("dangling_link", os.path.join(d, "nowhere"))):
        p[name] = os.path.join(d, name)
        os.symlink(target, p[name])

    # 8. Values.
    for dtype, bad in (("F32", struct.pack("<f", float("nan"))), ("F32", F32_INF),
                       ("F32", struct.pack("<f", float("-inf"))), ("F16", struct.pack("<e", float("inf"))),
                       ("F16", struct.pack("<e", float("nan"))), ("BF16", F32_INF[2:]),
                       ("F64", struct.pack("<d", 1e300)), ("F64", struct.pack("<d", float("nan")))):
        tag = "%s_%s" % (dtype, {F32_INF: "inf"}.get(bad, bad.hex()))
        put("value_%s.safetensors" % tag, table_file("wpe.weight", 40, 16, dtype, poison=(39, 15, bad)))
    put("value_nan_first.npy", npy_bytes("<f4", (40, 16), f32_table(40, 16, poison=(0, 0, F32_NAN))))
    put("value_inf_last.npy", npy_bytes("<f4", (40, 16), f32_table(40, 16, poison=(39, 15, F32_INF))))

    # 11. Untrusted bytes: names, metadata and headers with terminal controls.
    for tag, text in (("esc", "wpe\x1b[31m"), ("vt_ff", "w\x0bp\x0ce"), ("bel", "w\x07pe"),
                      ("csi_c1", "w\u009b2Jpe"), ("bidi", "w\u202epe"), ("newline", "w\npe"),
                      ("nul", "w\x00pe")):
        put("name_%s.safetensors" % tag,
            table_file(text, 8, 4, metadata={"posemb.tensor": text, "posemb.provenance": "made " + text,
                                             "posemb.initializer": text}))
    put("header_invalid_utf8.safetensors", safetensors_bytes(
        {}, header_text=b'{"w\xff\xfepe": {"dtype": "F32", "shape": [8, 4], "data_offsets": [0, 128]}}',
        data=f32_table(8, 4)))
    put("npy_header_esc.npy", npy_bytes("<f4", (2, 2), header="{'descr': '\x1b[2J<f4', 'fortran_order': False, 'shape': (2, 2), }"))
    put("npy_header_bytes.npy", npy_bytes("<f4", (2, 2), header=b"{'descr': '\xff\x1b\x00\x0b\x0c', 'fortran_order': False, 'shape': (2, 2), }"))
    put("bad_magic.npy", b"\x93NUMPX" + b"\x01\x00" + b"\x10\x00" + b"{}" + b" " * 14)
    put("dtype_esc.safetensors", safetensors_bytes({"wpe.weight": ("F\x1b32", (2, 2), (0, 16))}, data=b"\0" * 16))

    # 9. Checkpoint metadata and tensors.
    run = json.loads(read_safetensors(ck["learned"])[0]["__metadata__"]["posemb.lab.run"])
    p["run_json"] = run

    def meta_edit(name, fn):
        def edit(h):
            fn(h["__metadata__"])
        rewrite(ck["learned"], os.path.join(d, name), edit_header=edit)
        p[name] = os.path.join(d, name)

    for key in ("posemb.lab.step", "posemb.lab.adamw_steps"):
        for tag, v in (("neg", "-1"), ("abc", "abc"), ("empty", ""), ("exp", "1e3"), ("space", " 1"),
                       ("plus", "+1"), ("hex", "0x10"), ("float", "1.0"), ("25digits", "1" * 25),
                       ("2p64", "18446744073709551616"), ("past_limit", "100000001"), ("esc", "1\x1b[2J"),
                       ("nul", "1\x002")):
            meta_edit("meta_%s_%s.safetensors" % (key.split(".")[-1], tag), lambda m, key=key, v=v: m.__setitem__(key, v))
    for key in ("format", "posemb.lab.run", "posemb.lab.step", "posemb.lab.adamw_steps"):
        meta_edit("meta_missing_%s.safetensors" % key.split(".")[-1], lambda m, key=key: m.pop(key))
    for tag, v in (("v2", "posemb-lab-checkpoint/2"), ("empty", ""), ("esc", "posemb\x1b[2J")):
        meta_edit("meta_format_%s.safetensors" % tag, lambda m, v=v: m.__setitem__("format", v))
    for tag, text in (("truncated", json.dumps(run)[:40]), ("not_json", "model: yes"), ("empty", ""),
                      ("array", "[1, 2]"), ("null", "null"), ("nested", "[" * 50000 + "]" * 50000),
                      ("huge", json.dumps(dict(run, pad="x" * 70000))), ("esc", "{\x1b[2J}"),
                      ("nul", json.dumps(run) + "\x00"), ("duplicate", json.dumps(run).replace('"d_model"', '"d_model": 32, "d_model"', 1))):
        meta_edit("run_%s.safetensors" % tag, lambda m, text=text: m.__setitem__("posemb.lab.run", text))
    # Every field: missing, and a few wrong types or values.
    fields = [(s, k) for s in run for k in run[s]]
    p["run_fields"] = fields
    for s, k in fields:
        def drop(m, s=s, k=k):
            r = json.loads(m["posemb.lab.run"]); del r[s][k]; m["posemb.lab.run"] = json.dumps(r)
        meta_edit("field_missing_%s_%s.safetensors" % (s, k), drop)
        for tag, v in (("string", "x\x1b[1m"), ("null", None), ("neg", -1), ("list", [1]), ("obj", {"a": 1})):
            def setv(m, s=s, k=k, v=v):
                r = json.loads(m["posemb.lab.run"]); r[s][k] = v; m["posemb.lab.run"] = json.dumps(r)
            meta_edit("field_%s_%s_%s.safetensors" % (tag, s, k), setv)
    for tag, s, k, v in (("d_model_neg", "model", "d_model", -1), ("vocab_1e8", "model", "vocab_size", 1e8),
                         ("vocab_int_1e8", "model", "vocab_size", 100000000), ("layers_1e9", "model", "n_layers", 1000000000),
                         ("d_ff_huge", "model", "d_ff", 1 << 40), ("d_model_25digits", "model", "d_model", 10 ** 24),
                         ("max_seq_len_huge", "model", "max_seq_len", 1 << 40), ("heads_0", "model", "n_heads", 0),
                         ("pe_unknown", "model", "pe", "xpos"), ("pe_esc", "model", "pe", "\x1b]0;pwned\x07"),
                         ("kind_unknown", "task", "kind", "shuffle"), ("alphabet_1e6", "task", "alphabet", 1000000),
                         ("train_len_0", "task", "train_len", 0), ("lr_1e300", "train", "lr", 1e300),
                         ("lr_zero", "train", "lr", 0), ("beta2_one", "train", "beta2", 1.0),
                         ("batch_huge", "train", "batch", 1 << 40), ("seed_neg", "train", "seed", -5),
                         ("seed_float", "train", "seed", 1.5), ("sort_string", "train", "sort_by_length", "yes"),
                         ("extra_key", "model", "dropout", 0.1)):
        def setv(m, s=s, k=k, v=v):
            r = json.loads(m["posemb.lab.run"]); r[s][k] = v; m["posemb.lab.run"] = json.dumps(r)
        meta_edit("limit_%s.safetensors" % tag, setv)

    def tensor_edit(name, fn, src=None):
        rewrite(src or ck["learned"], os.path.join(d, name), edit_tensors=fn)
        p[name] = os.path.join(d, name)

    def replaced(name, dtype, shape, data):
        def fn(t):
            t[name] = (dtype, shape, data)
            return t
        return fn

    tensor_edit("tensor_missing_head.safetensors", lambda t: {k: v for k, v in t.items() if k != "head.weight"})
    tensor_edit("tensor_missing_table.safetensors", lambda t: {k: v for k, v in t.items() if k != "wpe.weight"})
    tensor_edit("tensor_missing_moment.safetensors", lambda t: {k: v for k, v in t.items() if k != "optimizer.adamw.v.wte.weight"})
    tensor_edit("tensor_shape_wte.safetensors", replaced("wte.weight", "F32", (8, 17), f32_table(8, 17)))
    tensor_edit("tensor_3d_wte.safetensors", replaced("wte.weight", "F32", (1, 8, 16), f32_table(8, 16)))
    tensor_edit("tensor_i64_bias.safetensors", replaced("lnf.bias", "I64", (1, 16), b"\0" * 128))
    tensor_edit("table_rows_short.safetensors", replaced("wpe.weight", "F32", (7, 16), f32_table(7, 16)))
    tensor_edit("table_rows_huge.safetensors", replaced("wpe.weight", "F32", (1 << 40, 0), b""))
    tensor_edit("table_cols.safetensors", replaced("wpe.weight", "F32", (8, 15), f32_table(8, 15)))
    tensor_edit("table_rows_past_limit.safetensors", replaced("wpe.weight", "F32", ((1 << 20) + 1, 1), b"\0" * 4 * ((1 << 20) + 1)))
    tensor_edit("table_longer.safetensors", replaced("wpe.weight", "F32", (40, 16), f32_table(40, 16)))
    tensor_edit("weight_nan.safetensors", replaced("blocks.0.mlp.fc.weight", "F32", (16, 32), f32_table(16, 32, poison=(3, 5, F32_NAN))))
    tensor_edit("table_inf.safetensors", replaced("wpe.weight", "F32", (8, 16), f32_table(8, 16, poison=(7, 15, F32_INF))))
    # finite, but every logit overflows float
    tensor_edit("table_huge.safetensors", replaced("wpe.weight", "F32", (8, 16), f32_table(8, 16, fill=3e38)))
    tensor_edit("moment_inf.safetensors", replaced("optimizer.adamw.m.wte.weight", "F32", (8, 16), f32_table(8, 16, poison=(0, 0, F32_INF))))
    tensor_edit("moment_negative_v.safetensors", replaced("optimizer.adamw.v.wte.weight", "F32", (8, 16), f32_table(8, 16, fill=-1.0)))
    tensor_edit("moment_shape.safetensors", replaced("optimizer.adamw.m.wte.weight", "F32", (8, 15), f32_table(8, 15)))
    tensor_edit("rope_with_table.safetensors", replaced("wpe.weight", "F32", (8, 16), f32_table(8, 16)), ck["rope"])
    return p
