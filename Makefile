# Thin wrapper over CMake. `make demo` and `make test` install what is missing
# (Debian packages, the pinned models) before building.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
ARCH_FLAGS ?= -march=x86-64-v3
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps models models-bench configure build test demo bench bench-profile fuzz format clean

all: build

deps:
	bash scripts/install-deps.sh

# The onnxruntime reference (tests compare against it) installs into .ort/;
# without npm the tests that need it skip with a message instead of failing.
models: deps
	bash scripts/fetch-models.sh
	bash scripts/install-ort.sh --soft

# Also the large benchmark-only models (ISNet).
models-bench: models
	bash scripts/fetch-models.sh --bench

# Ninja for a new build folder: it compiles a module's sources while the
# libraries it links are still being built (the Makefile generator waits), so
# both cores stay busy. An existing folder keeps the generator it was made with.
configure: deps
	@gen=""; if [ ! -f $(BUILD_DIR)/CMakeCache.txt ] && command -v ninja >/dev/null; then \
	  gen="-G Ninja"; fi; set -x; \
	cmake -S . -B $(BUILD_DIR) $$gen -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	  -DTAILOR_ARCH_FLAGS="$(ARCH_FLAGS)" $(CMAKE_FLAGS)

# Then `import tailor` works: scripts/python-path.sh writes tailor.pth (the
# path of $(BUILD_DIR)/python) into the user site-packages (docs/python.md).
build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)
	@bash scripts/python-path.sh $(BUILD_DIR)

test: models build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

# The PP-OCRv4 recogniser compressed to DEMO_BUDGET of its dense bytes: per-layer
# plan, verification on the OCR fixture lines, files and report in demo-out/,
# then demo-out/model.onnx cross-checked in onnxruntime. Builds only the tailor
# executable, and installs onnxruntime (a download) while it compiles, so a
# fresh clone reaches the demo sooner.
DEMO_BUDGET ?= 25%
demo: deps configure
	bash scripts/fetch-models.sh
	@bash scripts/install-ort.sh --soft > .ort-install.log 2>&1 & ort=$$!; \
	  cmake --build $(BUILD_DIR) -j $(JOBS) --target tailor || { wait $$ort; exit 1; }; \
	  wait $$ort; cat .ort-install.log; rm -f .ort-install.log
	$(BUILD_DIR)/tailor compress models/ch_PP-OCRv4_rec_infer.onnx --budget $(DEMO_BUDGET) \
	  -o demo-out --report
	scripts/ort-check.sh demo-out/model.onnx x=1x3x48x320 $(BUILD_DIR)/tailor

# Stops at the first failing benchmark; a build without benchmarks
# (-DTAILOR_BUILD_BENCH=OFF in the CMake cache) is an error, not silence.
bench: build
	@set -e; n=0; for b in $(BUILD_DIR)/bench/*_bench; do \
	  if [ -x "$$b" ]; then "$$b"; n=$$((n + 1)); fi; done; \
	  [ $$n -gt 0 ] || { echo "no benchmarks in $(BUILD_DIR)/bench: configure with -DTAILOR_BUILD_BENCH=ON" >&2; exit 1; }

# tailor profile vs a numpy/LAPACK peer (full SVDs) on the same layers, then
# peak RSS on a 2 GB synthetic model (bench/profile/*.sh say what they print).
bench-profile: models build
	bench/profile/compare.sh $(BUILD_DIR)/tailor
	bench/profile/memory_check.sh $(BUILD_DIR)/tailor

# libFuzzer targets (clang, -fsanitize=fuzzer,address,undefined); run one with
#   build-fuzz/fuzz/fuzz_safetensors -max_total_time=600 fuzz-corpus/safetensors
fuzz: deps
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DTAILOR_ARCH_FLAGS="$(ARCH_FLAGS)" -DTAILOR_BUILD_FUZZ=ON -DTAILOR_BUILD_TESTS=OFF \
	  -DTAILOR_BUILD_BENCH=OFF -DTAILOR_BUILD_PYTHON=OFF
	cmake --build build-fuzz -j $(JOBS)

format:
	git ls-files '*.cpp' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR) build-fuzz
