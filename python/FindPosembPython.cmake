# Finds what the Python module needs, quietly: the interpreter it is built for (Debian's
# /usr/bin/python3 unless Python_EXECUTABLE says otherwise: the python3 first on PATH may be
# another one, without numpy or torch), its headers (python3-dev) and pybind11 (pybind11-dev).
# Sets POSEMB_PYTHON_FOUND.
if(NOT DEFINED Python_EXECUTABLE AND EXISTS /usr/bin/python3)
  set(Python_EXECUTABLE /usr/bin/python3 CACHE FILEPATH "The Python the module is built for")
endif()
find_package(Python 3 QUIET COMPONENTS Interpreter Development.Module)
set(PYBIND11_FINDPYTHON ON)
if(Python_FOUND)
  find_package(pybind11 2.6 CONFIG QUIET)
endif()
set(POSEMB_PYTHON_FOUND OFF)
if(Python_FOUND AND pybind11_FOUND)
  set(POSEMB_PYTHON_FOUND ON)
endif()
