#!/usr/bin/env python3
"""Checks that the lab's names are spelled in one place and that its registries are complete
(docs/architecture.md, "One mechanism for each job"):

  encoding names   each `.name = "..."` of lab/encodings/*.cpp appears as a C++ string literal
                   only in the encodings' room (lab/encodings/: the interface, the registry and
                   one file per encoding); the rest of lab/, tools/, bench/ and viz/ read the
                   registry (lab::encodings(), lab::find_encoding_if, the specs' properties).
  task names       the same for the tasks: each `.name = "..."` of lab/tasks/*.cpp only in
                   lab/tasks/ (lab::tasks(), lab::find_task, the specs' presets and scoring).
  registries       every spec a room's files define (`extern const EncodingSpec kX{`, `extern
                   const TaskSpec kX{`) is declared and listed in its registry (both lines of
                   lab/encodings/registry.cpp, lab/tasks/registry.cpp), and the registry lists
                   nothing else: a spec added in one place only fails here.
  checkpoint keys  "posemb.lab.*" metadata keys appear only in lab/ (tests may spell them where
                   they test the format).

Comments are ignored. Exits 1 listing every violation. An argument names another source tree
to check (scripts/test-check-lab-names.sh checks that violations are caught).
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                    pathlib.Path(__file__).resolve().parent.parent)
SCANNED = ["lab", "tools", "bench", "viz"]
# (file, literal): the same word naming something else than a lab encoding or task.
OTHER_MEANING = {
    # the library's initializer "sinusoidal" of new table rows (posemb/initializers.hpp)
    ("tools/posemb/files/cmd_resize.cpp", "sinusoidal"),
    # the memory-copy bandwidth case of the benchmark harness
    ("bench/harness/embedding_cases.cpp", "copy"),
    # the library's rotary kernels (rope_forward/backward cases) and the `posemb rope` command
    ("tools/posemb/bench/bench_run.cpp", "rope"),
    ("tools/posemb/files/cmd_rope.cpp", "rope"),
    # "none": no position reaches that angle error (posemb rope --precision)
    ("tools/posemb/files/rope_report.cpp", "none"),
    # "none": no RoPE scaling (posemb eval/train --rope-scaling none; lab/config.hpp)
    ("lab/config.cpp", "none"),
}
# Files allowed to write a lab checkpoint key outside lab/ (none: the lab owns its keys).
KEY_PENDING = set()
# name -> (room, spec type): the registries this script checks.
ROOMS = {"encoding": ("lab/encodings", "EncodingSpec"), "task": ("lab/tasks", "TaskSpec")}

NAME = re.compile(r'\.name\s*=\s*"([^"]+)"')
LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')


def strip_comments(text):
    # Good enough for our sources: no "//" inside the literals being looked for.
    out, pos = [], 0
    for m in re.finditer(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*.*?\*/', text, re.S):
        out.append(text[pos:m.start()])
        tok = m.group(0)
        out.append(tok if tok.startswith("\"") else "\n" * tok.count("\n"))
        pos = m.end()
    out.append(text[pos:])
    return "".join(out)


def registry_errors(kind, room, spec_type):
    """The specs the room's files define against the two lines of its registry."""
    errors = []
    registry = ROOT / room / "registry.cpp"
    if not registry.exists():
        return [f"{room}/registry.cpp: missing: the {kind} registry"]
    reg = strip_comments(registry.read_text())
    defined = {}
    for f in sorted((ROOT / room).glob("*.cpp")):
        if f.name == "registry.cpp":
            continue
        for spec in re.findall(r"extern\s+const\s+%s\s+(\w+)\s*\{" % spec_type,
                               strip_comments(f.read_text())):
            defined[spec] = f.relative_to(ROOT).as_posix()
    declared = set()
    for m in re.finditer(r"extern\s+const\s+%s\s+([^;]*);" % spec_type, reg):
        declared.update(re.findall(r"\w+", m.group(1)))
    arrays = re.findall(r"kRegistry\s*=\s*\{([^}]*)\}", reg)
    listed = re.findall(r"&\s*(\w+)", arrays[0]) if arrays else []
    if len(listed) != len(set(listed)):
        errors.append(f"{room}/registry.cpp: a {kind} is listed twice in kRegistry")
    for spec, where in sorted(defined.items()):
        if spec not in declared or spec not in listed:
            errors.append(f"{where}: {spec_type} {spec} is not in the registry: declare it and "
                          f"list it in kRegistry ({room}/registry.cpp)")
    for spec in sorted((declared | set(listed)) - set(defined)):
        errors.append(f"{room}/registry.cpp: {spec} is registered but no file of {room}/ "
                      f"defines it")
    if not defined:
        errors.append(f"{room}/: defines no {spec_type}")
    return errors


def main():
    names = {}  # literal -> (kind, room)
    errors = []
    for kind, (room, spec_type) in ROOMS.items():
        found = set()
        for f in sorted((ROOT / room).glob("*.cpp")):
            found.update(NAME.findall(f.read_text()))
        if len(found) < 2:
            errors.append(f"check-lab-names: found no {kind} names in {room}/*.cpp")
        for n in found:
            names[n] = (kind, room)
        errors += registry_errors(kind, room, spec_type)
    for top in SCANNED:
        for f in sorted((ROOT / top).rglob("*")):
            if f.suffix not in {".cpp", ".hpp", ".h", ".cc"} or not f.is_file():
                continue
            rel = f.relative_to(ROOT).as_posix()
            code = strip_comments(f.read_text(errors="replace"))
            for lineno, line in enumerate(code.splitlines(), 1):
                for lit in LITERAL.findall(line):
                    if lit in names and (rel, lit) not in OTHER_MEANING:
                        kind, room = names[lit]
                        if not rel.startswith(room + "/"):
                            errors.append(f'{rel}:{lineno}: the {kind} name "{lit}" outside '
                                          f"its room: read it from {room}/registry.hpp (a "
                                          "property or the registry's list)")
                    if (lit.startswith("posemb.lab.") and not rel.startswith("lab/")
                            and rel not in KEY_PENDING):
                        errors.append(f'{rel}:{lineno}: the lab checkpoint key "{lit}" outside '
                                      "lab/: use the functions of lab/train/checkpoint.hpp")
    for e in errors:
        print(e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
