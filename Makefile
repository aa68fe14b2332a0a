# The two commands of the README:
#   make demo   installs what is missing, builds, and trains the Fashion-MNIST convnet experiment (tower train)
#   make test   installs what is missing, builds, and runs the whole test suite
BUILD_DIR ?= build
BUILD_TYPE ?= Release
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc)

SANITIZE_DIR ?= build-sanitize
TSAN_DIR ?= build-tsan

.PHONY: all deps configure build test test-sanitize test-tsan demo install clean

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	cd $(BUILD_DIR) && OMP_NUM_THREADS=2 ctest --output-on-failure -j 2

# The whole suite under AddressSanitizer + UndefinedBehaviorSanitizer (CPU only; any finding fails the test).
# Line tables only (-g1): the reports name files and lines, and the build stays short on 2 cores.
test-sanitize: deps
	cmake -S . -B $(SANITIZE_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTOWER_WITH_CUDA=OFF \
	  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
	  -DTOWER_BUILD_GUI=OFF -DTOWER_BUILD_BENCH=OFF -DTOWER_BUILD_EXAMPLES=OFF -DTOWER_SANITIZE=address,undefined
	cmake --build $(SANITIZE_DIR) -j $(JOBS)
	cd $(SANITIZE_DIR) && OMP_NUM_THREADS=2 ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j 2

# The concurrency suites under ThreadSanitizer (CPU only; any report fails the test): a model served from many
# threads, the data pipeline's threads, the strategies' replica threads. The kernels run on the calling threads
# (OMP_NUM_THREADS=1): OpenMP's own threads are not instrumented. tests/tsan.supp lists what is not Tower's.
# The tests of ParameterServerStrategy's clusters and of MultiWorkerMirroredStrategy's mpirun jobs are left out:
# Debian's gRPC and OpenMPI (with libevent) are not instrumented, and what their threads hand to Tower's looks
# unsynchronised to ThreadSanitizer (the other stages run them).
TSAN_SUITES ?= /tests/(models/(concurrent_inference|model_use|inference_plans)|data/|distribute/)
test-tsan: deps
	cmake -S . -B $(TSAN_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTOWER_WITH_CUDA=OFF \
	  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
	  -DTOWER_BUILD_GUI=OFF -DTOWER_BUILD_BENCH=OFF -DTOWER_BUILD_EXAMPLES=OFF -DTOWER_SANITIZE=thread \
	  "-DTOWER_TEST_SOURCES_MATCHING=$(TSAN_SUITES)" -DTOWER_TEST_OMP_THREADS=1
	cmake --build $(TSAN_DIR) -j $(JOBS) --target tower_tests
	cd $(TSAN_DIR) && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/tsan.supp" \
	  ctest --output-on-failure -j 2 -E '^(ParameterServer|ParameterServerSecurity|MultiWorker)\.'

demo: build
	$(BUILD_DIR)/bin/tower train examples/experiments/fashion_mnist_cnn.yaml

install: build
	cmake --install $(BUILD_DIR) --prefix $(or $(PREFIX),/usr/local)

clean:
	rm -rf $(BUILD_DIR) $(SANITIZE_DIR) $(TSAN_DIR)
