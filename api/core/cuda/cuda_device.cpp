#include "api/core/cuda/cuda_device.h"

#include <cuda_runtime_api.h>

#include <array>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/core/alignment.h"
#include "api/core/staging.h"

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

// Host-to-device copies of one GPU: pinned buffers, sent on the GPU's copy stream, each buffer with an event that
// the compute stream waits for.
class CudaStagingOps final : public StagingOps {
 public:
  CudaStagingOps(int index, cudaStream_t compute, int slots) : index_(index), compute_(compute) {
    set_device(index);
    const std::string where = " on cuda:" + std::to_string(index);
    check(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking), "creating the copy stream" + where);
    check(cudaEventCreateWithFlags(&compute_point_, cudaEventDisableTiming), "cudaEventCreate" + where);
    events_.resize(static_cast<std::size_t>(slots));
    for (cudaEvent_t& e : events_) check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate" + where);
  }
  void* allocate_pinned(std::size_t bytes) override {
    void* ptr = nullptr;
    check(cudaHostAlloc(&ptr, bytes, cudaHostAllocDefault),
          "allocating " + std::to_string(bytes) + " bytes of pinned host memory for cuda:" + std::to_string(index_));
    return ptr;
  }
  void free_pinned(void* ptr) override { cudaFreeHost(ptr); }
  void begin_upload(const void* after) override {
    set_device(index_);
    const std::string what = "ordering an upload to cuda:" + std::to_string(index_);
    if (after) {
      check(cudaStreamWaitEvent(copy_, static_cast<cudaEvent_t>(const_cast<void*>(after)), 0), what);
      return;
    }
    check(cudaEventRecord(compute_point_, compute_), what);
    check(cudaStreamWaitEvent(copy_, compute_point_, 0), what);
  }
  void wait(int slot) override {
    check(cudaEventSynchronize(events_[static_cast<std::size_t>(slot)]),
          "waiting for an upload to cuda:" + std::to_string(index_));
  }
  void copy(void* dst, const void* pinned, std::size_t bytes, int slot) override {
    const std::string what = "copying " + std::to_string(bytes) + " bytes from cpu to cuda:" + std::to_string(index_);
    cudaEvent_t done = events_[static_cast<std::size_t>(slot)];
    check(cudaMemcpyAsync(dst, pinned, bytes, cudaMemcpyHostToDevice, copy_), what);
    check(cudaEventRecord(done, copy_), what);
    check(cudaStreamWaitEvent(compute_, done, 0), what);
  }

 private:
  int index_;
  cudaStream_t compute_;
  cudaStream_t copy_ = nullptr;
  cudaEvent_t compute_point_ = nullptr;
  std::vector<cudaEvent_t> events_;
};

// Uploads go through 4 pinned buffers of 4 MiB: a batch of MobileNetV2 images (38 MiB at 64 x 224 x 224 x 3)
// is sent in chunks while the host fills the next buffer.
constexpr int kStagingSlots = 4;
constexpr std::size_t kStagingSlotBytes = std::size_t{4} << 20;

struct PerDevice {
  std::once_flag once;
  cudaStream_t stream = nullptr;
  std::unique_ptr<CachingAllocator> allocator;
  std::unique_ptr<StagingRing> staging;
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
    d.allocator = std::make_unique<CachingAllocator>(std::make_unique<CudaRawAllocator>(index), kBufferAlignment);
    d.staging = std::make_unique<StagingRing>(std::make_unique<CudaStagingOps>(index, d.stream, kStagingSlots),
                                              kStagingSlots, kStagingSlotBytes);
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

CachingAllocator& allocator(int index) { return *device_state(index).allocator; }

namespace {

// A graph holds no host work: an upload (its pinned buffers are filled by the host, and it runs on the copy
// stream, outside the capture) or a read into the host (which waits for the stream) would happen once, at
// capture time, or break the capture. They belong before or after a captured step, never in it.
void refuse_while_capturing(int index, const std::string& what) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  check(cudaStreamIsCapturing(static_cast<cudaStream_t>(stream(index)), &status), what);
  if (status != cudaStreamCaptureStatusNone)
    throw std::logic_error(what + " while the stream of cuda:" + std::to_string(index) +
                           " is being captured as a graph: a captured step may not upload or read through the host");
}

// The copy between two GPUs on the destination's stream, after the work queued on the source's so far; the
// source's stream waits for the copy, so its later work cannot overwrite the bytes while they are read.
void copy_peer(void* dst, int dst_index, const void* src, int src_index, std::size_t bytes, const std::string& what) {
  auto src_stream = static_cast<cudaStream_t>(stream(src_index));
  auto dst_stream = static_cast<cudaStream_t>(stream(dst_index));
  cudaEvent_t ready = nullptr, done = nullptr;
  set_device(src_index);
  check(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), what);
  check(cudaEventRecord(ready, src_stream), what);
  set_device(dst_index);
  check(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), what);
  check(cudaStreamWaitEvent(dst_stream, ready, 0), what);
  check(cudaMemcpyPeerAsync(dst, dst_index, src, src_index, bytes, dst_stream), what);
  check(cudaEventRecord(done, dst_stream), what);
  set_device(src_index);
  check(cudaStreamWaitEvent(src_stream, done, 0), what);
  // Destroying a recorded event is safe: its resources go once the work it marks has finished.
  cudaEventDestroy(ready);
  cudaEventDestroy(done);
}

}  // namespace

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes) {
  if (bytes == 0) return;
  const std::string what = "copying " + std::to_string(bytes) + " bytes from " + src_device.to_string() + " to " +
                           dst_device.to_string();
  if (dst_device.is_cuda() && src_device.is_cuda()) {
    if (dst_device.index != src_device.index) {
      copy_peer(dst, dst_device.index, src, src_device.index, bytes, what);
      return;
    }
    set_device(dst_device.index);
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(stream(dst_device.index))),
          what);
    return;
  }
  if (dst_device.is_cuda()) {
    refuse_while_capturing(dst_device.index, what);
    // Through pinned buffers on the copy stream: the host does not wait for the GPU's queued work.
    set_device(dst_device.index);
    device_state(dst_device.index).staging->upload(dst, src, bytes);
    return;
  }
  refuse_while_capturing(src_device.index, what);
  auto s = static_cast<cudaStream_t>(stream(src_device.index));
  set_device(src_device.index);
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s), what);
  // The host's bytes must have arrived.
  check(cudaStreamSynchronize(s), what);
}

void upload_after(void* dst, int index, const void* src, std::size_t bytes, const void* event) {
  if (bytes == 0) return;
  refuse_while_capturing(index, "uploading " + std::to_string(bytes) + " bytes to cuda:" + std::to_string(index));
  set_device(index);
  device_state(index).staging->upload(dst, src, bytes, event);
}

void* create_event(int index) {
  set_device(index);
  cudaEvent_t event = nullptr;
  check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate on cuda:" + std::to_string(index));
  return event;
}

void record_event(void* event, int index) {
  set_device(index);
  check(cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream(index))),
        "marking the work queued on cuda:" + std::to_string(index));
}

void destroy_event(void* event) { cudaEventDestroy(static_cast<cudaEvent_t>(event)); }

void fill_bytes(void* dst, int index, std::size_t bytes, unsigned char value) {
  if (bytes == 0) return;
  auto s = static_cast<cudaStream_t>(stream(index));
  set_device(index);
  check(cudaMemsetAsync(dst, value, bytes, s), "filling " + std::to_string(bytes) + " bytes on cuda:" +
                                                   std::to_string(index));
}

}  // namespace tower::cuda
