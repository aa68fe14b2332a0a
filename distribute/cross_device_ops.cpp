#include "distribute/cross_device_ops.h"

#include <algorithm>
#include <cstring>
#include <iostream>

#include "api/backend/backend.h"
#include "api/core/device_memory.h"
#include "distribute/in_process_all_reduce.h"
#include "distribute/nccl_all_reduce.h"
#include "distribute/reduction_to_one_device.h"

namespace tower::distribute {

Tensor& CrossDeviceOps::scratch(int r) const {
  std::lock_guard<std::mutex> lock(scratch_mutex_);
  return scratch_[r];
}

CrossDeviceOpsChoice choose_cross_device_ops(const std::vector<LogicalDevice>& devices) {
  if (devices.empty() || devices[0].device.is_cpu())
    return {InProcessAllReduce(), "CPU devices: InProcessAllReduce sums the replicas' gradients in this process"};
  const auto [a, b] = detail::shared_physical_device(devices);
  if (a < 0) return {NcclAllReduce(), "every replica has a GPU of its own: NcclAllReduce"};
  const LogicalDevice& first = devices[static_cast<std::size_t>(a)];
  const LogicalDevice& second = devices[static_cast<std::size_t>(b)];
  return {ReductionToOneDevice(), first.name + " and " + second.name + " are logical GPUs of one physical GPU (" +
                                      first.device.to_string() +
                                      "), which NCCL refuses: ReductionToOneDevice sums the gradients instead"};
}

CrossDeviceOpsPtr default_cross_device_ops(const std::vector<LogicalDevice>& devices) {
  static detail::OnceLog log;
  CrossDeviceOpsChoice choice = choose_cross_device_ops(devices);
  if (detail::shared_physical_device(devices).first >= 0) log.write(std::cerr, "Tower: " + choice.reason);
  return choice.ops;
}

namespace detail {

bool OnceLog::write(std::ostream& out, const std::string& text) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (std::find(written_.begin(), written_.end(), text) != written_.end()) return false;
  written_.push_back(text);
  out << text << std::endl;
  return true;
}

std::pair<int, int> shared_physical_device(const std::vector<LogicalDevice>& devices) {
  for (std::size_t i = 0; i < devices.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (devices[i].device.is_cuda() && devices[i].device == devices[j].device)
        return {static_cast<int>(j), static_cast<int>(i)};
  return {-1, -1};
}

void sum_parts_on_devices(float* const* parts, const LogicalDevice* devices, int k, float* out, Device out_device,
                          Index count, Tensor& scratch) {
  if (count <= 0) return;
  if (out_device.is_cpu()) {
    bool host = true;
    for (int p = 0; p < k; ++p) host = host && devices[p].device.is_cpu();
    if (host) return sum_parts(parts, k, out, 0, count);
  }
  const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(float);
  backend::Backend& be = backend::get(out_device);
  const auto local = [&](int p) -> const float* {
    if (devices[p].device == out_device) return parts[p];
    if (!scratch.defined() || scratch.numel() < count || !(scratch.device() == out_device))
      scratch = Tensor(Shape{count}, DType::float32, out_device);
    copy_bytes(scratch.data<float>(), out_device, parts[p], devices[p].device, bytes);
    return scratch.data<float>();
  };
  if (out != parts[0]) copy_bytes(out, out_device, parts[0], devices[0].device, bytes);
  for (int p = 1; p < k; ++p) be.add(out, local(p), out, count);
}

void sum_parts(float* const* parts, int k, float* out, Index begin, Index end) {
  if (begin >= end) return;
  const std::size_t n = static_cast<std::size_t>(end - begin);
  if (out + begin != parts[0] + begin) std::memcpy(out + begin, parts[0] + begin, n * sizeof(float));
  for (int p = 1; p < k; ++p) {
    const float* src = parts[p];
#pragma omp simd
    for (Index i = begin; i < end; ++i) out[i] += src[i];
  }
}

std::pair<Index, Index> chunk(Index count, int index, int workers) {
  const Index per = ((count + workers - 1) / workers + 15) / 16 * 16;
  const Index begin = std::min(count, per * index);
  return {begin, std::min(count, begin + per)};
}

}  // namespace detail
}  // namespace tower::distribute
