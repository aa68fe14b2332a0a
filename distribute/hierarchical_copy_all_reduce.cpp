#include "distribute/hierarchical_copy_all_reduce.h"

#include <stdexcept>

namespace tower::distribute {

void HierarchicalCopyAllReduceImpl::check_devices(const std::vector<LogicalDevice>& devices,
                                                  const std::string& caller) const {
  const std::string who = message_prefix(caller);
  for (const LogicalDevice& d : devices)
    if (!d.device.is_cpu())
      throw std::invalid_argument(who + name() + " is implemented for CPU replicas; device " + d.name +
                                  " is a GPU (use NcclAllReduce, the default for GPUs)");
}

void HierarchicalCopyAllReduceImpl::reduce(int r, int k, float* const* parts, float* out, Index count,
                                           const std::vector<LogicalDevice>&, detail::Barrier& barrier) const {
  // Group 0 is replicas [0, g), summed into out; group 1 is [g, k), summed into its first member's buffer.
  const int g = (k + 1) / 2;
  const bool first = r < g;
  const int size = first ? g : k - g;
  const auto [begin, end] = detail::chunk(count, first ? r : r - g, size);
  detail::sum_parts(parts + (first ? 0 : g), size, first ? out : parts[g], begin, end);
  barrier.arrive_and_wait();
  // Plain variables, not a structured binding: Clang 14 cannot use bindings inside an OpenMP construct.
  const auto range = detail::chunk(count, r, k);
  const Index b = range.first, e = range.second;
  const float* second = parts[g];
#pragma omp simd
  for (Index i = b; i < e; ++i) out[i] += second[i];
}

}  // namespace tower::distribute
