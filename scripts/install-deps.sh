#!/usr/bin/env bash
# Installs the Debian packages Tower needs that are not installed yet. Safe to run again: it does nothing when
# everything is there. Set TOWER_EXTRA_PACKAGES to add more.
set -euo pipefail

packages=(
  cmake ninja-build g++ make pkg-config ccache
  libdnnl-dev        # oneDNN: CPU convolution, pooling, batch norm, GEMM
  ocl-icd-opencl-dev # oneDNN's CMake config (dnnl-config.cmake) requires OpenCL; Debian only recommends it
  libyaml-cpp-dev    # YAML experiment files
  libstb-dev         # stb_image: PNG/JPEG/BMP decoding
  libgtest-dev       # GoogleTest
  zlib1g-dev         # .gz IDX files
  libhdf5-dev        # Keras .h5 weight files
  openmpi-bin libopenmpi-dev  # MultiWorkerMirroredStrategy (mpirun, MPI all-reduce between CPU workers)
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc  # ParameterServerStrategy (gRPC, protoc)
  openssl            # the certificates of the ParameterServerStrategy mutual-TLS tests
  dataset-fashion-mnist  # the default data set, /usr/share/datasets/fashion-mnist
  qt6-base-dev qt6-charts-dev libqt6opengl6-dev libgl-dev  # tower-monitor (gui/); Qt6Charts' CMake needs Qt6OpenGL
)
# shellcheck disable=SC2206
packages+=(${TOWER_EXTRA_PACKAGES:-})

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "Installing: ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "error: these packages are missing and installing them needs root: ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
