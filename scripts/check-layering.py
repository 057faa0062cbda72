#!/usr/bin/env python3
"""Checks the layers of docs/architecture.md: every file includes only what its place allows.

  library   include/posemb/*.hpp and src/<layer>/: core < nn < io. A file of a layer includes
            public headers (posemb/...) and internal headers (src/<layer>/...) of its own layer
            and the layers below, never above.
  lab       lab/: public posemb/... headers and its own lab/... headers; nothing from src/.
            Inside the lab, rooms (LAB_ROOMS below): a room's files include the settings
            (lab/config.hpp), files of their own room and of the rooms it lists, all lower;
            the settings include no room; every lab source is in a room but the settings'
            (lab/config*); no two lab modules (a file stem: x.hpp with x.cpp) include each other.
  viz       viz/ (the plot renderer): public posemb/... headers and its own viz/... headers.
  tools     tools/: public headers, the lab, the renderer, the benchmark harness and peers
            (bench/harness, bench/peers), its own headers; nothing from src/ or tests/.
  bench, examples, fuzz: public headers (bench also the lab and its own; fuzz also the lab, whose
            checkpoint metadata parser it fuzzes); nothing from src/.
  python    python/src/ (the Python extension): public headers and its own; nothing from src/.

A new public header must be given a layer in LAYER_OF below (and in docs/architecture.md).
Exits 1 listing every violation. An argument names another source tree to check
(scripts/test-check-layering.sh checks that violations are caught).
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                    pathlib.Path(__file__).resolve().parent.parent)
LAYERS = ["core", "nn", "io"]
RANK = {name: i for i, name in enumerate(LAYERS)}

# Public header -> layer. posemb.hpp (the umbrella) and version.hpp belong to no layer's
# implementation: the umbrella is for clients only.
LAYER_OF = {
    "matrix_view.hpp": "core",
    "matrix.hpp": "core",
    "errors.hpp": "core",
    "learned_positional_embedding.hpp": "core",
    "positions.hpp": "core",
    "sinusoidal.hpp": "core",
    "rope.hpp": "core",
    "rope_scaling.hpp": "core",
    "rope_precision.hpp": "core",
    "version.hpp": "core",
    "half.hpp": "core",
    "random.hpp": "core",
    "parallel.hpp": "core",
    "simd.hpp": "core",
    "simd_dispatch.hpp": "core",
    "memory.hpp": "core",
    "alibi.hpp": "core",
    "relative_bias.hpp": "core",
    "digest.hpp": "core",
    "embedding.hpp": "nn",
    "layer.hpp": "nn",
    "initializers.hpp": "nn",
    "optimizers.hpp": "nn",
    "atomic_file.hpp": "io",
    "tensor_file.hpp": "io",
    "safetensors.hpp": "io",
    "npy.hpp": "io",
    "position_table_file.hpp": "io",
    "resize.hpp": "io",
    "sincos_2d.hpp": "core",
    "grid_resize.hpp": "io",
    "checkpoint_folder.hpp": "io",
    "table_analysis.hpp": "io",
    "table_provenance.hpp": "io",
    "rope_config.hpp": "io",
    "read_file.hpp": "io",
}
# The lab's rooms, lowest first, each with the rooms it may include (all listed before it). Every
# room may include the settings (lab/config.hpp) and its own files. docs/architecture.md draws
# the same.
LAB_ROOMS = {
    "ranks": [],
    "encodings": [],
    "tasks": [],
    "model": ["encodings"],
    "train": ["ranks", "encodings", "tasks", "model"],
    "eval": ["encodings", "tasks", "model"],
    "report": ["encodings", "tasks", "eval"],
    "experiment": ["ranks", "encodings", "tasks", "model", "train", "eval", "report"],
}
# The settings: the lab's files outside every room (lab/config.hpp and its sources).
LAB_SETTINGS = re.compile(r"^config(_json)?\.(hpp|cpp)$")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
errors = []


def includes(path):
    return INCLUDE.findall(path.read_text(errors="replace"))


def rel(path):
    return path.relative_to(ROOT).as_posix()


def check_public_header_known():
    for h in sorted((ROOT / "include/posemb").glob("*.hpp*")):
        name = h.name.removesuffix(".in")
        if name != "posemb.hpp" and name not in LAYER_OF:
            errors.append(f"{rel(h)}: public header without a layer: add it to LAYER_OF in "
                          "scripts/check-layering.py and to docs/architecture.md")


def check_library_file(path, layer):
    for inc in includes(path):
        if inc.startswith("posemb/"):
            name = inc[len("posemb/"):]
            if name == "posemb.hpp":
                errors.append(f"{rel(path)}: includes the umbrella posemb/posemb.hpp; include "
                              "the headers it needs")
                continue
            dep = LAYER_OF.get(name)
            if dep is None:
                errors.append(f"{rel(path)}: includes unknown public header {inc}")
            elif RANK[dep] > RANK[layer]:
                errors.append(f"{rel(path)}: layer {layer} includes {inc} of layer {dep} (above)")
        elif "/" in inc:
            dep = inc.split("/", 1)[0]
            if dep not in RANK:
                errors.append(f"{rel(path)}: includes {inc}, outside the library")
            elif RANK[dep] > RANK[layer]:
                errors.append(f"{rel(path)}: layer {layer} includes {inc} of layer {dep} (above)")
        elif not (path.parent / inc).exists():
            errors.append(f"{rel(path)}: includes {inc}, which is not beside it")


def check_client(path, allowed_prefixes, what):
    for inc in includes(path):
        if inc.startswith("posemb/"):
            continue
        if any(inc.startswith(p) for p in allowed_prefixes):
            continue
        if "/" not in inc and (path.parent / inc).exists():
            continue
        # a header of the client's own tree, named from its root
        if any((ROOT / base / inc).exists() for base in allowed_roots.get(what, [])):
            continue
        errors.append(f"{rel(path)}: {what} includes {inc}; it may include only public posemb/ "
                      "headers" + (" and " + ", ".join(allowed_prefixes) if allowed_prefixes
                                   else ""))


allowed_roots = {
    "tools": ["tools/posemb"],
    "bench": ["bench"],
    "tests": ["tests/support", "src"],
}


def lab_room_of(path):
    """The room of a lab file ("model"), "settings", or None for a stray file."""
    parts = path.relative_to(ROOT / "lab").parts
    if len(parts) == 1:
        return "settings" if LAB_SETTINGS.match(parts[0]) else None
    return parts[0] if parts[0] in LAB_ROOMS else None


def check_lab_rooms():
    order = list(LAB_ROOMS)
    for room, below in LAB_ROOMS.items():
        for b in below:
            if b not in LAB_ROOMS or order.index(b) >= order.index(room):
                errors.append(f"scripts/check-layering.py: lab room {room} lists {b}, which is "
                              "not a room below it")
    modules = {}  # module (lab path without suffix) -> the modules it includes
    for f in sources("lab"):
        room = lab_room_of(f)
        if f.suffix not in (".hpp", ".cpp", ".h"):
            continue
        if room is None:
            errors.append(f"{rel(f)}: a lab source outside every room (lab/<room>/, rooms: "
                          + ", ".join(LAB_ROOMS) + "); only the settings (lab/config*) are not "
                          "in one")
            continue
        allowed = {"settings", room} | set(LAB_ROOMS.get(room, []))
        me = rel(f).rsplit(".", 1)[0].removesuffix("-inl")
        for inc in includes(f):
            if not inc.startswith("lab/"):
                continue
            target = ROOT / inc
            dep = lab_room_of(target) if target.exists() else None
            if dep is None:
                errors.append(f"{rel(f)}: includes {inc}, which is no file of a lab room")
                continue
            if dep not in allowed:
                what = "the settings include" if room == "settings" else f"room {room} includes"
                errors.append(f"{rel(f)}: {what} {inc} of room {dep}, which it may not "
                              f"(allowed: {', '.join(sorted(allowed))})")
            them = inc.rsplit(".", 1)[0].removesuffix("-inl")
            if them != me:
                modules.setdefault(me, set()).add(them)
    for a in sorted(modules):
        for b in sorted(modules[a]):
            if a < b and a in modules.get(b, set()):
                errors.append(f"{a} and {b} include each other (a .hpp or its .cpp each way): "
                              "move what both need into a file of its own")


def sources(base):
    d = ROOT / base
    if not d.exists():
        return []
    return sorted(p for p in d.rglob("*") if p.suffix in (".hpp", ".cpp", ".h", ".in"))


check_public_header_known()
for h in sorted((ROOT / "include/posemb").glob("*.hpp*")):
    name = h.name.removesuffix(".in")
    if name in LAYER_OF:
        check_library_file(h, LAYER_OF[name])
for layer in LAYERS:
    for f in sources(f"src/{layer}"):
        check_library_file(f, layer)
stray = [p for p in sources("src") if p.parent == ROOT / "src"]
for p in stray:
    errors.append(f"{rel(p)}: library source outside a layer folder (src/core, src/nn, src/io)")
for f in sources("lab"):
    check_client(f, ["lab/"], "lab")
check_lab_rooms()
for f in sources("viz"):
    check_client(f, ["viz/"], "viz")
for f in sources("tools"):
    check_client(f, ["lab/", "viz/", "harness/", "peers/"], "tools")
for f in sources("bench"):
    check_client(f, ["lab/"], "bench")
for f in sources("examples"):
    check_client(f, [], "examples")
for f in sources("fuzz"):
    check_client(f, ["lab/"], "fuzz")
for f in sources("python"):
    check_client(f, [], "python")

if errors:
    print(f"layering: {len(errors)} violation(s):")
    for e in errors:
        print("  " + e)
    sys.exit(1)
print("layering: every file includes only what its layer allows")
