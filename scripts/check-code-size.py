#!/usr/bin/env python3
"""Checks the size limits of docs/architecture.md ("Sizes"):

  lab/ and tools/   no source file over 500 lines, no function over 80 lines
  src/              no function over 100 lines (the library's kernels)
  tools/**/cmd_*.cpp  a command file at most 150 lines (it maps flags to a struct and calls the
                    lab or the library)

A function's lines run from the first line of its declaration to its closing brace; a lambda or
a class inside a function counts with it. Braces of namespaces, classes, enums and initializers
(`= {...}`, a table of entries) are not functions, but a function defined inside a class is.
Comments, string literals and preprocessor lines are ignored. Exits 1 listing every violation.
An argument names another source tree to check (scripts/test-check-code-size.sh checks that
violations are caught).
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                    pathlib.Path(__file__).resolve().parent.parent)
CHECKED = ["lab", "tools", "src"]
MAX_FILE = 500
MAX_FUNCTION = {"lab": 80, "tools": 80, "src": 100}
FILE_CHECKED = {"lab", "tools"}
MAX_COMMAND = 150
SUFFIXES = {".cpp", ".hpp", ".h", ".cc"}

# What may follow a function's parameter list before its body.
QUALIFIERS = re.compile(r"^\s*((const|noexcept|override|final|mutable|volatile|&|&&|try)\b\s*|"
                        r"noexcept\s*\([^)]*\)\s*|->\s*[\w:<>,\s*&]+?\s*)*$")


def strip(text):
    """Comments and string/char literals blanked (newlines kept); preprocessor lines emptied."""
    out, pos = [], 0
    pattern = r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|//[^\n]*|/\*.*?\*/|R"\((?:.|\n)*?\)"'
    for m in re.finditer(pattern, text, re.S):
        out.append(text[pos:m.start()])
        tok = m.group(0)
        out.append('""' if tok.startswith(('"', "R")) else
                   ("''" if tok.startswith("'") else "") + "\n" * tok.count("\n"))
        pos = m.end()
    out.append(text[pos:])
    lines = "".join(out).split("\n")
    return "\n".join("" if ln.lstrip().startswith("#") else ln for ln in lines)


def kind_of(head):
    """What a '{' opens, from the text since the last ';', '{' or '}' at its depth."""
    h = head.strip()
    if re.search(r"\bnamespace\b", h) or re.match(r'^extern\s*""', h):
        return "namespace"
    if h.endswith(("=", ",", "(", "[", "{", "return")) or h == "":
        return "initializer"
    if re.search(r"\b(class|struct|union|enum)\b", h) and "(" not in h.split("{")[0]:
        return "class"
    # A parameter list, then qualifiers or a constructor's initializer list.
    depth, close = 0, -1
    for i, c in enumerate(h):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                close = i
    if close < 0:
        return "other"
    rest = h[close + 1:]
    if QUALIFIERS.match(rest) or re.match(r"^\s*:", rest) or re.search(r"\)\s*:\s*\w", h):
        # `if (...)`, `for (...)` and friends only appear inside functions.
        if re.match(r"^(if|for|while|switch|catch)\b", h):
            return "other"
        return "function"
    return "other"


def functions(code):
    """(name, first line, last line) of every function not inside another function."""
    found = []
    stack = []  # (kind, first line, name)
    head_start = 0
    line_of = [0] * (len(code) + 1)
    n = 1
    for i, c in enumerate(code):
        line_of[i] = n
        if c == "\n":
            n += 1
    in_function = 0
    for i, c in enumerate(code):
        if c == "{":
            head = code[head_start:i]
            kind = kind_of(head) if in_function == 0 and not (
                stack and stack[-1][0] == "initializer") else "inner"
            first = head_start + len(head) - len(head.lstrip())
            name = re.findall(r"([~\w:]+)\s*\(", head)
            stack.append((kind, line_of[first], name[0] if name else "?"))
            if kind == "function":
                in_function += 1
            head_start = i + 1
        elif c == "}":
            if stack:
                kind, first, name = stack.pop()
                if kind == "function":
                    in_function -= 1
                    found.append((name, first, line_of[i]))
            head_start = i + 1
        elif c == ";":
            head_start = i + 1
    return found


def main():
    errors = []
    for top in CHECKED:
        for f in sorted((ROOT / top).rglob("*")):
            if f.suffix not in SUFFIXES or not f.is_file():
                continue
            rel = f.relative_to(ROOT).as_posix()
            text = f.read_text(errors="replace")
            lines = text.count("\n") + (0 if text.endswith("\n") else 1)
            limit = MAX_COMMAND if re.match(r"cmd_\w+\.cpp$", f.name) and top == "tools" else MAX_FILE
            if top in FILE_CHECKED and lines > limit:
                what = "a command file" if limit == MAX_COMMAND else "a source file"
                errors.append(f"{rel}: {lines} lines, more than {limit} for {what}")
            for name, first, last in functions(strip(text)):
                length = last - first + 1
                if length > MAX_FUNCTION[top]:
                    errors.append(f"{rel}:{first}: function {name} has {length} lines, more than "
                                  f"{MAX_FUNCTION[top]}")
    for e in errors:
        print(e)
    if not errors:
        print(f"code size: every file and function of {', '.join(CHECKED)} within its limit")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
