# The two commands of the README:
#   make demo   installs what is missing, builds, and trains the Fashion-MNIST example
#   make test   installs what is missing, builds, and runs the whole test suite
BUILD_DIR ?= build
BUILD_TYPE ?= Release
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc)

.PHONY: all deps configure build test demo install clean

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	cd $(BUILD_DIR) && OMP_NUM_THREADS=2 ctest --output-on-failure -j 2

demo: build
	$(BUILD_DIR)/bin/fashion_mnist_convnet

install: build
	cmake --install $(BUILD_DIR) --prefix $(or $(PREFIX),/usr/local)

clean:
	rm -rf $(BUILD_DIR)
