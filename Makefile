# The two commands: `make demo` and `make test`. Both install missing Debian packages when run
# as root (scripts/install-deps.sh), build with CUDA when the toolkit is there and run without a
# GPU. Build folders: build/ (release), build-san/ (ASan + UBSan), build-fuzz/ (clang libFuzzer).
BUILD ?= build
SAN_BUILD ?= build-san
FUZZ_BUILD ?= build-fuzz
PREFIX ?= /usr/local
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 10
CMAKE_FLAGS ?=

.PHONY: all deps build test test-fast test-san fuzz demo install clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/Makefile:
	cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS)

build: deps $(BUILD)/Makefile
	cmake --build $(BUILD) -j$(JOBS)

# The whole suite: the release build's tests, the same tests under ASan + UBSan, and a short
# run of every fuzz target over its seed corpus (when clang is there).
test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)
	$(MAKE) --no-print-directory test-san
	$(MAKE) --no-print-directory fuzz

test-fast: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

test-san: deps
	cmake -S . -B $(SAN_BUILD) -DGD_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug $(CMAKE_FLAGS) >/dev/null
	cmake --build $(SAN_BUILD) -j$(JOBS)
	cd $(SAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
		UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j$(JOBS)

fuzz: deps
	@if command -v clang >/dev/null 2>&1; then \
		CC=clang cmake -S . -B $(FUZZ_BUILD) -DGD_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null && \
		cmake --build $(FUZZ_BUILD) -j$(JOBS) --target fuzzers && \
		fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS); \
	else echo "fuzz: clang not found, fuzz targets skipped (apt-get install clang)"; fi

# The demo: `graphdirect train` with no dataset generates the `small` preset in memory (~200K
# nodes, ~4M edges), trains GraphSAGE for 5 epochs in mode auto (a GPU mode when a GPU is
# visible, else the CPU), then the same model with the graph removed (an MLP), and prints both
# test accuracies. About 25 s on 2 cores without a GPU after the build; seconds on a GPU.
demo: build
	@echo "demo: graphdirect train (mode auto: the GPU pipeline when a GPU is visible, else the CPU)"
	$(BUILD)/graphdirect train

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) $(SAN_BUILD) $(FUZZ_BUILD)
