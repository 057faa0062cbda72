# posemb: the two commands of the quick start are `make demo` and `make test`.
# Each sets up (installs missing Debian packages), builds, then runs.

BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: all setup build build-asan demo test test-release test-asan format format-check bench clean

all: build

setup:
	@bash scripts/setup.sh

build: setup
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DPOSEMB_WERROR=ON -DPOSEMB_BUILD_BENCH=ON $(CMAKE_ARGS)
	cmake --build $(BUILD) -j $(JOBS)

build-asan: setup
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DPOSEMB_WERROR=ON -DPOSEMB_SANITIZE=ON \
	  -DPOSEMB_BUILD_EXAMPLES=OFF $(CMAKE_ARGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)

# The main job.
demo: build
	./$(BUILD)/tools/posemb/posemb demo

# Every test: the release build's full suite (unit, CLI, numpy/torch oracles, install +
# find_package consumer, clang-format check), then the unit tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer.
test: test-release test-asan

test-release: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

test-asan: build-asan
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS) -L unit

format:
	bash scripts/check-format.sh --fix

format-check: setup
	bash scripts/check-format.sh

bench: build
	./$(BUILD)/tools/posemb/posemb bench

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
