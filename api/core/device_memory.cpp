#include "api/core/device_memory.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace tower {

namespace {
[[noreturn]] void no_runtime(const std::string& what) {
  throw std::invalid_argument(what + ": this build of Tower has no CUDA backend");
}
}  // namespace

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes) {
  if (!dst_device.is_cpu() || !src_device.is_cpu())
    no_runtime("copy from " + src_device.to_string() + " to " + dst_device.to_string());
  if (bytes) std::memmove(dst, src, bytes);
}

void fill_bytes(void* dst, Device device, std::size_t bytes, unsigned char value) {
  if (!device.is_cpu()) no_runtime("fill on " + device.to_string());
  if (bytes) std::memset(dst, value, bytes);
}

void fill_floats(float* dst, Device device, std::size_t n, float value) {
  if (!device.is_cpu()) no_runtime("fill on " + device.to_string());
  std::fill_n(dst, n, value);
}

}  // namespace tower
