"""Turns the ```cpp blocks of a documentation page into one C++ program, so that the test suite
compiles and runs the examples exactly as the page writes them.

usage: extract_snippet.py PAGE.md OUT.cpp
Each block becomes a function; its #include and `using namespace` lines go to the top of the
file. main() calls the blocks in page order. A page without a ```cpp block is an error.
"""
import sys


def blocks(text):
    out, cur = [], None
    for line in text.splitlines():
        if cur is None and line.strip() == "```cpp":
            cur = []
        elif cur is not None and line.strip() == "```":
            out.append(cur)
            cur = None
        elif cur is not None:
            cur.append(line)
    return out


def main():
    page, out = sys.argv[1:3]
    found = blocks(open(page, encoding="utf-8").read())
    if not found:
        raise SystemExit(f"{page}: no ```cpp block")
    head, bodies = [], []
    for b in found:
        body = []
        for line in b:
            if line.startswith("#include") or line.startswith("using namespace"):
                if line not in head:
                    head.append(line)
            else:
                body.append(line)
        bodies.append(body)
    lines = [f"// Generated from {page} by tests/docs/extract_snippet.py: do not edit."]
    lines += head
    for i, body in enumerate(bodies):
        lines.append(f"static void snippet_{i}() {{")
        lines += ["  " + line if line else "" for line in body]
        lines.append("}")
    lines.append("int main() {")
    lines += [f"  snippet_{i}();" for i in range(len(bodies))]
    lines.append("  return 0;")
    lines.append("}")
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
