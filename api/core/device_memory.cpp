#include "api/core/device_memory.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "api/core/capture_check.h"

#ifdef TOWER_WITH_CUDA
#include "api/core/cuda/cuda_device.h"
#endif

namespace tower {

namespace {
#ifndef TOWER_WITH_CUDA
[[noreturn]] void no_runtime(const std::string& what) {
  throw std::invalid_argument(what + ": this build of Tower has no CUDA backend");
}
#endif
}  // namespace

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes) {
  if (dst_device.is_cpu() || src_device.is_cpu())
    detail::report_to_capture_check("copying " + std::to_string(bytes) + " bytes from " + src_device.to_string() +
                                    " to " + dst_device.to_string());
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    if (bytes) std::memmove(dst, src, bytes);
    return;
  }
#ifdef TOWER_WITH_CUDA
  cuda::copy_bytes(dst, dst_device, src, src_device, bytes);
#else
  no_runtime("copy from " + src_device.to_string() + " to " + dst_device.to_string());
#endif
}

WorkMarker::~WorkMarker() {
#ifdef TOWER_WITH_CUDA
  if (event_) cuda::destroy_event(event_);
#endif
}

void WorkMarker::record() {
  if (device_.is_cpu()) return;
#ifdef TOWER_WITH_CUDA
  if (!event_) event_ = cuda::create_event(device_.index);
  cuda::record_event(event_, device_.index);
#else
  no_runtime("marking work on " + device_.to_string());
#endif
}

void upload_after(void* dst, Device dst_device, const void* src, std::size_t bytes, const WorkMarker& after) {
  if (!(after.device() == dst_device))
    throw std::invalid_argument("upload_after: the marker is of " + after.device().to_string() +
                                ", the destination on " + dst_device.to_string());
  detail::report_to_capture_check("uploading " + std::to_string(bytes) + " bytes to " + dst_device.to_string());
  if (dst_device.is_cpu()) {
    if (bytes) std::memmove(dst, src, bytes);
    return;
  }
#ifdef TOWER_WITH_CUDA
  cuda::upload_after(dst, dst_device.index, src, bytes, after.handle());
#else
  no_runtime("copy from cpu to " + dst_device.to_string());
#endif
}

void fill_bytes(void* dst, Device device, std::size_t bytes, unsigned char value) {
  if (device.is_cpu()) {
    if (bytes) std::memset(dst, value, bytes);
    return;
  }
#ifdef TOWER_WITH_CUDA
  cuda::fill_bytes(dst, device.index, bytes, value);
#else
  no_runtime("fill on " + device.to_string());
#endif
}

void fill_floats(float* dst, Device device, std::size_t n, float value) {
  if (device.is_cpu()) {
    std::fill_n(dst, n, value);
    return;
  }
#ifdef TOWER_WITH_CUDA
  cuda::fill_floats(dst, device.index, n, value);
#else
  no_runtime("fill on " + device.to_string());
#endif
}

}  // namespace tower
