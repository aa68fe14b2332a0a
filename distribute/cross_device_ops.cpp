#include "distribute/cross_device_ops.h"

#include <algorithm>
#include <cstring>

#include "distribute/in_process_all_reduce.h"
#include "distribute/nccl_all_reduce.h"

namespace tower::distribute {

CrossDeviceOpsPtr default_cross_device_ops(const std::vector<LogicalDevice>& devices) {
  if (!devices.empty() && devices[0].device.is_cuda()) return NcclAllReduce();
  return InProcessAllReduce();
}

namespace detail {

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
