#!/usr/bin/env python3
"""Every path the library is given reaches the file system through one checked place.

The library (src/) and the Python extension (python/src/) may call the file system with a path
only in src/io/file_system.cpp, src/io/mapped_file.cpp (the reader) and src/io/atomic_file.cpp
(the writer), whose functions check the path first (detail::check_path: a NUL byte would cut it
short, and "o\\0ut" would be written as "o"). Anywhere else, a system call, a C stdio or
iostream file, or a std::filesystem operation that takes a path is reported with its file and
line, and the test fails. A path that is a string literal ("/proc/self/statm") is allowed.

    check_file_access.py SOURCE_DIR          # exit 0: none found; 1: each one listed
    check_file_access.py --self-test         # the checker finds what it must find
"""
import os
import re
import sys

CHECKED = {"src/io/file_system.cpp", "src/io/mapped_file.cpp", "src/io/mapped_file.hpp",
           "src/io/atomic_file.cpp"}
ROOTS = ("src", "python/src")

# Functions that take a path (POSIX and C).
PATH_CALLS = ("open|openat|open64|creat|stat|stat64|lstat|fstatat|statx|access|faccessat|"
              "mkdir|mkdirat|mkfifo|mknod|rename|renameat|renameat2|unlink|unlinkat|rmdir|"
              "remove|chmod|fchmodat|chown|lchown|fchownat|truncate|link|linkat|symlink|"
              "symlinkat|readlink|readlinkat|realpath|opendir|scandir|fopen|freopen|utime|"
              "utimes|utimensat|chdir|statfs|statvfs|getxattr|setxattr|nftw|ftw|glob")
# A call of one of them: at global scope (::open) or unqualified, not a member (x.open, p->open
# and Type::open are other functions); group 3 is '"' when the path is a string literal.
GLOBAL = re.compile(r"(?<![\w>.:])(::|std::)?(" + PATH_CALLS + r")\s*\(\s*(\"?)")
STREAMS = re.compile(r"\bstd::(?:i|o)?fstream\b|\bstd::filebuf\b|\bFILE\s*\*")
# std::filesystem: only building and taking apart paths is allowed; every operation touches
# the file system.
FS_CALL = re.compile(r"\b(?:std::filesystem|fs)::(\w+)\s*\(")
FS_PURE = {"path", "u8path"}


def strip_comments(text):
    """The text with comments and the contents of string literals blanked, lines kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c == '"' or (c == "'" and i > 0 and not text[i - 1].isalnum()):
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            literal = text[i:j + 1]
            out.append(c + "".join(ch if ch == "\n" else "x" for ch in literal[1:-1]) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def problems_in(rel, text):
    found = []
    code = strip_comments(text)
    for lineno, line in enumerate(code.splitlines(), 1):
        for m in GLOBAL.finditer(line):
            if m.group(3) == '"':
                continue  # a literal path
            found.append("%s:%d: %s(...) takes a path" % (rel, lineno, m.group(2)))
        if STREAMS.search(line):
            found.append("%s:%d: a C++ file stream or C FILE opens a path" % (rel, lineno))
        for m in FS_CALL.finditer(line):
            if m.group(1) not in FS_PURE:
                found.append("%s:%d: std::filesystem::%s touches the file system" %
                             (rel, lineno, m.group(1)))
    return found


def check(source_dir):
    found = []
    for root in ROOTS:
        for dirpath, _, files in os.walk(os.path.join(source_dir, root)):
            for name in sorted(files):
                if not name.endswith((".cpp", ".hpp", ".h", ".cc")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, source_dir).replace(os.sep, "/")
                if rel in CHECKED:
                    continue
                with open(path, encoding="utf-8") as f:
                    found += problems_in(rel, f.read())
    return found


def self_test():
    must = ['int fd = ::open(path.c_str(), O_RDONLY);', 'if (stat(p.c_str(), &st) == 0) {}',
            'std::ifstream in(path);', 'fs::remove_all(tmp, ec);',
            'std::filesystem::create_directories(p);', 'FILE* f = fopen(name, "r");',
            'const bool ok = fs::exists(s);', '  ::mkdir(p.c_str(), 0777);']
    must_not = ['auto m = MappedFile::open(path, op);', 'file.open(x);', 'p->stat(y);',
                'const fs::path p = fs::path(dir) / name;', '// ::open(path) in a comment',
                'int fd = ::open("/proc/self/statm", O_RDONLY);', 'x.rename(a, b);',
                'throw Error("cannot open(" + path + ")");', 'detail::file_id(path, op);']
    bad = [s for s in must if not problems_in("t.cpp", s)]
    bad += [s for s in must_not if problems_in("t.cpp", s)]
    for s in bad:
        print("self-test: wrong verdict on %r" % s)
    return 1 if bad else 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print(__doc__)
        return 2
    if self_test() != 0:
        return 1
    found = check(argv[1])
    for f in found:
        print(f)
    if found:
        print("%d call(s) reach the file system without the checked functions of "
              "src/io/file_system.hpp, mapped_file.hpp or posemb/atomic_file.hpp" % len(found))
        return 1
    print("every path reaches the file system through the checked functions")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
