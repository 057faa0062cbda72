"""setup.py's choice of the extension's build (`pip install .` after `make build` / `make demo`
reuses build/ instead of building everything again): which builds it takes and why it refuses
the others. The reuse itself, through pip, is in pip_install.sh (CTest python_pip_install)."""
import importlib.util
import os
import stat
import sysconfig
from pathlib import Path

import pytest

SOURCE = Path(os.environ.get("POSEMB_SOURCE_DIR", Path(__file__).resolve().parents[2]))


@pytest.fixture(scope="module")
def setup_py():
    spec = importlib.util.spec_from_file_location("posemb_setup", SOURCE / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # not __main__: setup() is not called
    return module


def cache(build, home, python=None, extra=""):
    build.mkdir(parents=True, exist_ok=True)
    text = f"CMAKE_HOME_DIRECTORY:INTERNAL={home}\n{extra}"
    if python:
        text += f"Python_EXECUTABLE:FILEPATH={python}\n"
    (build / "CMakeCache.txt").write_text("# a CMake cache\n" + text)


def fake_python(path, suffix):
    path.write_text(f"#!/bin/sh\necho '{suffix}'\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_reuses_the_build_of_this_tree_for_this_python(setup_py, tmp_path):
    root = tmp_path / "src"
    cache(root / "build", root, fake_python(tmp_path / "py", sysconfig.get_config_var("EXT_SUFFIX")))
    assert setup_py.reusable_build(root, env={}) == (root / "build", None)


def test_refuses_other_builds(setup_py, tmp_path):
    root = tmp_path / "src"
    build, why = setup_py.reusable_build(root, env={})
    assert build is None and "no CMake build (no CMakeCache.txt)" in why
    cache(root / "build", tmp_path / "other")
    build, why = setup_py.reusable_build(root, env={})
    assert build is None and "a build of another source tree" in why
    cache(root / "build", root, fake_python(tmp_path / "py", ".cpython-39-x86_64-linux-gnu.so"))
    build, why = setup_py.reusable_build(root, env={})
    assert build is None and "not for this Python" in why


def test_a_named_build_is_taken_whatever_tree_it_built(setup_py, tmp_path):
    named = tmp_path / "elsewhere"
    cache(named, tmp_path / "other")
    assert setup_py.reusable_build(tmp_path / "src", env={"POSEMB_BUILD_DIR": str(named)}) == (
        named, None)


def test_cache_entries_are_read_with_their_types_dropped(setup_py, tmp_path):
    cache(tmp_path, "/x", extra="POSEMB_BUILD_PYTHON:BOOL=OFF\n//POSEMB_BUILD_TESTS:BOOL=ON\n")
    entries = setup_py.cmake_cache(tmp_path)
    assert entries["POSEMB_BUILD_PYTHON"] == "OFF" and entries["CMAKE_HOME_DIRECTORY"] == "/x"
    assert "POSEMB_BUILD_TESTS" not in entries and "//POSEMB_BUILD_TESTS" not in entries
