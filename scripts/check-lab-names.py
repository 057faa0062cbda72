#!/usr/bin/env python3
"""Checks that the lab's names are spelled in one place (docs/architecture.md, "One list of
encodings"):

  encoding names   each `.name = "..."` of lab/encodings/*.cpp appears as a C++ string literal
                   only in the encodings' room (lab/encodings/: the interface, the registry and
                   one file per encoding);
                   the rest of lab/, tools/, bench/ and viz/ read the registry
                   (lab::encodings(), lab::find_encoding_if, the specs' properties).
  checkpoint keys  "posemb.lab.*" metadata keys appear only in lab/ (tests may spell them where
                   they test the format).

Comments are ignored. Exits 1 listing every violation. An argument names another source tree
to check (scripts/test-check-lab-names.sh checks that a violation is caught).
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                    pathlib.Path(__file__).resolve().parent.parent)
SCANNED = ["lab", "tools", "bench", "viz"]
# (file, literal): the same word naming something else than a lab encoding.
OTHER_MEANING = {
    # the library's initializer "sinusoidal" of new table rows (posemb/initializers.hpp)
    ("tools/posemb/files/cmd_resize.cpp", "sinusoidal"),
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


def main():
    names = set()
    for f in sorted((ROOT / "lab/encodings").glob("*.cpp")):
        names.update(NAME.findall(f.read_text()))
    if len(names) < 2:
        print("check-lab-names: found no encoding names in lab/encodings/*.cpp")
        return 1
    errors = []
    for top in SCANNED:
        for f in sorted((ROOT / top).rglob("*")):
            if f.suffix not in {".cpp", ".hpp", ".h", ".cc"} or not f.is_file():
                continue
            rel = f.relative_to(ROOT).as_posix()
            code = strip_comments(f.read_text(errors="replace"))
            in_registry = rel.startswith("lab/encodings/")
            for lineno, line in enumerate(code.splitlines(), 1):
                for lit in LITERAL.findall(line):
                    if lit in names and not in_registry and (rel, lit) not in OTHER_MEANING:
                        errors.append(f'{rel}:{lineno}: the encoding name "{lit}" outside the '
                                      "registry: read it from lab/encodings/registry.hpp (a property or "
                                      "lab::encodings())")
                    if (lit.startswith("posemb.lab.") and not rel.startswith("lab/")
                            and rel not in KEY_PENDING):
                        errors.append(f'{rel}:{lineno}: the lab checkpoint key "{lit}" outside '
                                      "lab/: use the functions of lab/train/checkpoint.hpp")
    for e in errors:
        print(e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
