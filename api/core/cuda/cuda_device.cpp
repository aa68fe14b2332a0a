#include "api/core/cuda/cuda_device.h"

#include <cuda_runtime_api.h>

#include <array>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

namespace tower::cuda {

namespace {

constexpr int kMaxDevices = 64;

class CudaRawAllocator final : public RawAllocator {
 public:
  explicit CudaRawAllocator(int index) : index_(index) {}
  void* allocate(std::size_t bytes) override {
    set_device(index_);
    void* ptr = nullptr;
    if (cudaMalloc(&ptr, bytes) != cudaSuccess) {
      cudaGetLastError();  // out of memory is reported by the caller, with sizes; clear the sticky error
      return nullptr;
    }
    return ptr;
  }
  void deallocate(void* ptr, std::size_t) override {
    set_device(index_);
    // cudaFree waits for the device, so no queued work can still be using the block.
    cudaFree(ptr);
  }
  std::size_t free_bytes() const override {
    set_device(index_);
    std::size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) cudaGetLastError();
    return free;
  }
  Device device() const override { return Device::cuda(index_); }

 private:
  int index_;
};

struct PerDevice {
  std::once_flag once;
  cudaStream_t stream = nullptr;
  std::unique_ptr<CachingAllocator> allocator;
};

std::array<PerDevice, kMaxDevices>& devices() {
  // Never destroyed: tensors held by static objects may be freed at exit, after this would be, and the CUDA
  // runtime tears itself down at exit anyway.
  static auto* all = new std::array<PerDevice, kMaxDevices>();
  return *all;
}

PerDevice& device_state(int index) {
  require_device(index);
  PerDevice& d = devices()[static_cast<std::size_t>(index)];
  std::call_once(d.once, [&] {
    set_device(index);
    check(cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking), "cudaStreamCreate on cuda:" +
                                                                          std::to_string(index));
    d.allocator = std::make_unique<CachingAllocator>(std::make_unique<CudaRawAllocator>(index), 256);
  });
  return d;
}

std::string no_gpu_reason() {
  int n = 0;
  const cudaError_t status = cudaGetDeviceCount(&n);
  if (status == cudaSuccess) return "no GPU is visible";
  cudaGetLastError();
  return std::string("no GPU is visible (") + cudaGetErrorString(status) + ")";
}

}  // namespace

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

void require_device(int index) {
  const int n = device_count();
  if (index >= 0 && index < n && index < kMaxDevices) return;
  const std::string asked = "cuda:" + std::to_string(index) + " was asked for, but ";
  if (n == 0) throw std::invalid_argument(asked + no_gpu_reason());
  throw std::invalid_argument(asked + "this machine has " + std::to_string(n) + (n == 1 ? " GPU" : " GPUs") +
                              " (cuda:0" + (n > 1 ? " to cuda:" + std::to_string(n - 1) : std::string()) + ")");
}

void set_device(int index) { check(cudaSetDevice(index), "cudaSetDevice(" + std::to_string(index) + ")"); }

void* stream(int index) { return device_state(index).stream; }

void synchronize(int index) {
  cudaStream_t s = device_state(index).stream;
  check(cudaStreamSynchronize(s), "synchronizing cuda:" + std::to_string(index));
}

void check(int status, const std::string& what) {
  if (status == cudaSuccess) return;
  const auto error = static_cast<cudaError_t>(status);
  cudaGetLastError();
  throw std::runtime_error("CUDA error in " + what + ": " + cudaGetErrorString(error) + " (" +
                           cudaGetErrorName(error) + ")");
}

Allocator& allocator(int index) { return *device_state(index).allocator; }

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes) {
  if (bytes == 0) return;
  const std::string what = "copying " + std::to_string(bytes) + " bytes from " + src_device.to_string() + " to " +
                           dst_device.to_string();
  if (dst_device.is_cuda() && src_device.is_cuda()) {
    if (dst_device.index != src_device.index) {
      synchronize(src_device.index);
      auto s = static_cast<cudaStream_t>(stream(dst_device.index));
      check(cudaMemcpyPeerAsync(dst, dst_device.index, src, src_device.index, bytes, s), what);
      return;
    }
    set_device(dst_device.index);
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(stream(dst_device.index))),
          what);
    return;
  }
  const int gpu = dst_device.is_cuda() ? dst_device.index : src_device.index;
  auto s = static_cast<cudaStream_t>(stream(gpu));
  set_device(gpu);
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s), what);
  // The host's bytes must have arrived (device to host), or been read (host to device: the caller may free or
  // change them as soon as this returns).
  check(cudaStreamSynchronize(s), what);
}

void fill_bytes(void* dst, int index, std::size_t bytes, unsigned char value) {
  if (bytes == 0) return;
  auto s = static_cast<cudaStream_t>(stream(index));
  set_device(index);
  check(cudaMemsetAsync(dst, value, bytes, s), "filling " + std::to_string(bytes) + " bytes on cuda:" +
                                                   std::to_string(index));
}

}  // namespace tower::cuda
