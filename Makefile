# posemb: the two commands of the quick start are `make demo` and `make test`.
# Each sets up (installs missing Debian packages), builds, then runs.

BUILD      ?= build
ASAN_BUILD ?= build-asan
NOMPI_BUILD ?= build-nompi
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 30
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=
# Where `make build` / `make demo` put the `posemb` symlink (on root's PATH on Debian).
BIN_DIR    ?= /usr/local/bin

.PHONY: all setup setup-demo link-posemb build build-demo build-asan build-nompi build-fuzz fuzz demo test test-release test-asan test-no-mpi test-python format format-check bench clean

all: build

# Each command installs only the Debian packages it needs (scripts/setup.sh).
setup:
	@bash scripts/setup.sh test

setup-demo:
	@bash scripts/setup.sh demo

# `posemb` on PATH: BIN_DIR/posemb -> this checkout's build/tools/posemb/posemb (replaced
# each time, so it is always the last build; nothing to do when it already points there).
link-posemb:
	@bash scripts/setup.sh link $(abspath $(BUILD))/tools/posemb/posemb $(BIN_DIR)

build: setup
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DPOSEMB_WERROR=ON -DPOSEMB_BUILD_TESTS=ON \
	  -DPOSEMB_BUILD_BENCH=ON $(CMAKE_ARGS)
	cmake --build $(BUILD) -j $(JOBS)
	@$(MAKE) --no-print-directory link-posemb

# The library, the lab and the tool only: what the demo needs (no test or benchmark packages).
build-demo: setup-demo
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DPOSEMB_WERROR=ON -DPOSEMB_BUILD_TESTS=OFF \
	  -DPOSEMB_BUILD_BENCH=OFF $(CMAKE_ARGS)
	cmake --build $(BUILD) -j $(JOBS) --target posemb_cli
	@$(MAKE) --no-print-directory link-posemb

build-asan: setup
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DPOSEMB_WERROR=ON -DPOSEMB_SANITIZE=ON \
	  -DPOSEMB_BUILD_EXAMPLES=OFF $(CMAKE_ARGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)

# The main job. --force: running it again replaces demo-out/ (posemb demo alone refuses a folder
# that holds another run).
demo: build-demo
	$(abspath $(BUILD))/tools/posemb/posemb demo --force

# Every test: the release build's full suite (unit, CLI, numpy/torch oracles, the hostile-input
# suite, MPI jobs under mpirun, install + find_package consumer, clang-format check, the Python
# package's pytest suite and its offline `pip install`), then the unit tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer, the lab and the tool built without MPI, then
# the file readers under libFuzzer.
test: test-release test-asan test-no-mpi fuzz

test-release: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# The Python package only: pytest on the build tree's module (PYTHONPATH=$(BUILD)/python) and the
# offline `pip install` into a scratch venv.
test-python: build
	ctest --test-dir $(BUILD) --output-on-failure -L python

test-asan: build-asan
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS) -L unit

# MPI is optional: the lab, the tool and their tests built and run without it.
build-nompi: setup
	cmake -S . -B $(NOMPI_BUILD) -DCMAKE_BUILD_TYPE=Release -DPOSEMB_WERROR=ON -DPOSEMB_WITH_MPI=OFF \
	  -DPOSEMB_BUILD_EXAMPLES=OFF -DPOSEMB_INSTALL=OFF $(CMAKE_ARGS)
	cmake --build $(NOMPI_BUILD) -j $(JOBS) --target posemb_cli posemb_lab_tests

test-no-mpi: build-nompi
	ctest --test-dir $(NOMPI_BUILD) --output-on-failure -j $(JOBS) -R '^(test_lab_|lab_cli|sweep_cli|no_mpi_cli|cli$$)'

# The file readers and the lab's checkpoint metadata parser under libFuzzer (clang, ASan +
# UBSan): FUZZ_SECONDS per target from a seed corpus of the committed files in tests/data, after
# replaying the regression inputs.
build-fuzz: setup
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
	  -DPOSEMB_BUILD_FUZZERS=ON -DPOSEMB_BUILD_TESTS=OFF -DPOSEMB_BUILD_TOOLS=OFF \
	  -DPOSEMB_BUILD_EXAMPLES=OFF -DPOSEMB_INSTALL=OFF -DPOSEMB_WERROR=ON $(CMAKE_ARGS)
	cmake --build $(FUZZ_BUILD) -j $(JOBS)

fuzz: build-fuzz
	bash fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

format:
	bash scripts/check-format.sh --fix

format-check: setup
	bash scripts/check-format.sh

bench: build
	$(abspath $(BUILD))/tools/posemb/posemb bench

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(NOMPI_BUILD) $(FUZZ_BUILD)
