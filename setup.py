"""Builds the posemb Python package. The extension posemb._posemb is the CMake target `_posemb`
(python/CMakeLists.txt); setuptools copies it into the package. Offline, with Debian's packages:

    /usr/bin/python3 -m venv --system-site-packages venv
    venv/bin/pip install --no-build-isolation --no-index .

Where the extension comes from, first match wins:
1. POSEMB_PREBUILT_EXTENSION=<build>/python/posemb/_posemb....so: that file, as it is (the
   packaging test of `make test` does so).
2. The CMake build `make build` or `make demo` made in build/ (or POSEMB_BUILD_DIR): brought up
   to date with `cmake --build build --target _posemb` (nothing to do after `make build`; after
   `make demo` only the module's own files are compiled) and copied. A build configured without
   the module (`make demo` before pybind11 was installed) is configured again with it; a build
   of another source tree or for another Python is not used.
3. Otherwise a build of the library and the module alone, under build/setuptools/.
Each step says what it does and how long it took (`pip install -v` shows it with CMake's output;
without -v, pip shows only a spinner, so CMake's progress lines go to the terminal, /dev/tty, as
well; POSEMB_NO_TTY_PROGRESS=1 turns that off).
"""
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
# setuptools' scratch space, inside the ignored build folder rather than beside the sources.
BUILD_BASE = ROOT / "build" / "setuptools"


def version():
    text = (ROOT / "CMakeLists.txt").read_text()
    return re.search(r"project\(posemb VERSION ([0-9.]+)", text).group(1)


def terminal():
    """The user's terminal when pip hides this script's output (pip shows it only with -v, and
    only a spinner otherwise), so that a build of minutes shows its progress; else None."""
    if sys.stderr.isatty() or os.environ.get("POSEMB_NO_TTY_PROGRESS"):
        return None
    try:
        return open("/dev/tty", "w", encoding="utf-8")
    except OSError:
        return None


TTY = terminal()


def say(text):
    print(f"posemb: {text}", file=sys.stderr, flush=True)
    if TTY:
        TTY.write(f"\rposemb: {text}\n")
        TTY.flush()


def cmake_cache(build_dir):
    """The entries of build_dir/CMakeCache.txt (name -> value), or None without one."""
    try:
        text = (Path(build_dir) / "CMakeCache.txt").read_text()
    except OSError:
        return None
    return dict(m.groups() for m in re.finditer(r"^([A-Za-z_][^:=\n]*):[A-Z]+=(.*)$", text, re.M))


def ext_suffix(python):
    """The extension file suffix of another interpreter (".cpython-311-x86_64-linux-gnu.so")."""
    try:
        return subprocess.run([python, "-c", "import sysconfig; "
                               "print(sysconfig.get_config_var('EXT_SUFFIX'))"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def reusable_build(root, env=os.environ):
    """(build directory, None) when the CMake build there can make the extension for this
    Python, else (None, why not)."""
    named = env.get("POSEMB_BUILD_DIR")
    build = Path(named) if named else Path(root) / "build"
    cache = cmake_cache(build)
    if cache is None:
        return None, f"{build} holds no CMake build (no CMakeCache.txt)"
    home = cache.get("CMAKE_HOME_DIRECTORY", "")
    if not named and os.path.realpath(home) != os.path.realpath(root):
        return None, f"{build} is a build of another source tree ({home})"
    python = cache.get("Python_EXECUTABLE")
    want = sysconfig.get_config_var("EXT_SUFFIX")
    if python and ext_suffix(python) != want:
        return None, f"{build} builds the module for {python}, not for this Python ({want})"
    return build, None


def run(cmd, what):
    """cmd, its output on stderr (and CMake's progress lines, "[ 42%] ...", on the terminal)."""
    say(f"{what}: {' '.join(cmd)}")
    started = time.monotonic()
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as p:
        for line in p.stdout:
            sys.stderr.write(line)
            if TTY and line.startswith("["):
                TTY.write(f"\rposemb: {line.rstrip()[:150]}\033[K")
                TTY.flush()
    if p.returncode:
        raise subprocess.CalledProcessError(p.returncode, cmd)
    say(f"{what}: done in {time.monotonic() - started:.0f} s")


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        name = Path(self.get_ext_filename(ext.name)).name
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
        prebuilt = os.environ.get("POSEMB_PREBUILT_EXTENSION")
        if prebuilt:
            say(f"packaging the prebuilt extension {prebuilt} (POSEMB_PREBUILT_EXTENSION)")
            shutil.copyfile(prebuilt, target)
            return
        build, why_not = reusable_build(ROOT)
        if build is not None:
            self.build_in(build, jobs)
        else:
            say(f"not reusing a build: {why_not}; building the library and the module alone "
                "(a few minutes on 2 cores)")
            build = Path(self.build_temp).resolve() / "cmake"
            run(["cmake", "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                 "-DPOSEMB_BUILD_PYTHON=ON", "-DPOSEMB_BUILD_TESTS=OFF", "-DPOSEMB_BUILD_TOOLS=OFF",
                 "-DPOSEMB_BUILD_EXAMPLES=OFF", "-DPOSEMB_BUILD_BENCH=OFF", "-DPOSEMB_INSTALL=OFF",
                 f"-DPython_EXECUTABLE={sys.executable}"], "configuring")
            run(["cmake", "--build", str(build), "--target", "_posemb", "-j", jobs], "building")
        shutil.copyfile(build / "python" / "posemb" / name, target)

    @staticmethod
    def build_in(build, jobs):
        """The module made by the existing build `build` (configured again with the module when
        it was configured without; put back as it was if that fails)."""
        if cmake_cache(build).get("POSEMB_BUILD_PYTHON", "OFF").upper() in ("OFF", "0", "FALSE"):
            try:
                run(["cmake", "-DPOSEMB_BUILD_PYTHON=ON", str(build)],
                    f"configuring {build} with the Python module")
            except subprocess.CalledProcessError:
                subprocess.run(["cmake", "-DPOSEMB_BUILD_PYTHON=OFF", str(build)],
                               capture_output=True)
                raise SystemExit("posemb: the Python module needs pybind11 and Python's headers: "
                                 "apt-get install pybind11-dev python3-dev (scripts/setup.sh test "
                                 "installs them); " + str(build) + " was left as it was")
        run(["cmake", "--build", str(build), "--target", "_posemb", "-j", jobs],
            f"reusing the build in {build}")


if __name__ == "__main__":
    BUILD_BASE.mkdir(parents=True, exist_ok=True)
    setup(
        version=version(),
        ext_modules=[CMakeExtension("posemb._posemb")],
        cmdclass={"build_ext": CMakeBuild},
        options={"build": {"build_base": str(BUILD_BASE)},
                 "egg_info": {"egg_base": str(BUILD_BASE)}},
    )
