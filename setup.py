"""Builds the posemb Python package. The extension posemb._posemb is built by CMake, the same
target `make build` builds (python/CMakeLists.txt), with only the library and the module
enabled; setuptools copies it into the package. Offline, with Debian's packages:

    /usr/bin/python3 -m venv --system-site-packages venv
    venv/bin/pip install --no-build-isolation --no-index .

POSEMB_PREBUILT_EXTENSION=<build>/python/posemb/_posemb....so packages an extension `make build`
already built (for the same Python) instead of building it again: the packaging test of
`make test` does so.
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
# setuptools' scratch space, inside the ignored build folder rather than beside the sources.
BUILD_BASE = ROOT / "build" / "setuptools"


def version():
    text = (ROOT / "CMakeLists.txt").read_text()
    return re.search(r"project\(posemb VERSION ([0-9.]+)", text).group(1)


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        prebuilt = os.environ.get("POSEMB_PREBUILT_EXTENSION")
        if prebuilt:
            shutil.copyfile(prebuilt, target)
            return
        build_dir = Path(self.build_temp).resolve() / "cmake"
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
        subprocess.run(
            ["cmake", "-S", str(ROOT), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
             "-DPOSEMB_BUILD_PYTHON=ON", "-DPOSEMB_BUILD_TESTS=OFF", "-DPOSEMB_BUILD_TOOLS=OFF",
             "-DPOSEMB_BUILD_EXAMPLES=OFF", "-DPOSEMB_BUILD_BENCH=OFF", "-DPOSEMB_INSTALL=OFF",
             f"-DPython_EXECUTABLE={sys.executable}"],
            check=True)
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "_posemb", "-j", jobs],
                       check=True)
        name = Path(self.get_ext_filename(ext.name)).name
        shutil.copyfile(build_dir / "python" / "posemb" / name, target)


BUILD_BASE.mkdir(parents=True, exist_ok=True)
setup(
    version=version(),
    ext_modules=[CMakeExtension("posemb._posemb")],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": str(BUILD_BASE)}, "egg_info": {"egg_base": str(BUILD_BASE)}},
)
