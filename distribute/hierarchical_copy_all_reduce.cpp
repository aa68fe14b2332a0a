#include "distribute/hierarchical_copy_all_reduce.h"

#include <stdexcept>

namespace tower::distribute {

void HierarchicalCopyAllReduceImpl::reduce_on_gpus(int r, int k, int g, float* const* parts, float* out, Index count,
                                                   const std::vector<LogicalDevice>& devices,
                                                   detail::Barrier& barrier) const {
  // Each group's first replica sums its group on its own GPU; then the first adds the second group's sum.
  if (r == 0) detail::sum_parts_on_devices(parts, devices.data(), g, out, devices[0].device, count, scratch(r));
  if (r == g && k - g > 1)
    detail::sum_parts_on_devices(parts + g, devices.data() + g, k - g, parts[g], devices[static_cast<std::size_t>(g)].device,
                                 count, scratch(r));
  barrier.arrive_and_wait();
  if (r != 0) return;
  float* const both[2] = {out, parts[g]};
  const LogicalDevice where[2] = {devices[0], devices[static_cast<std::size_t>(g)]};
  detail::sum_parts_on_devices(both, where, 2, out, devices[0].device, count, scratch(r));
}

void HierarchicalCopyAllReduceImpl::check_devices(const std::vector<LogicalDevice>& devices,
                                                  const std::string& caller) const {
  // Any devices: CPU replicas sum in host loops, GPU replicas with device copies and the backend's add kernel.
  (void)devices;
  (void)caller;
}

void HierarchicalCopyAllReduceImpl::reduce(int r, int k, float* const* parts, float* out, Index count,
                                           const std::vector<LogicalDevice>& devices, detail::Barrier& barrier) const {
  // Group 0 is replicas [0, g), summed into out; group 1 is [g, k), summed into its first member's buffer.
  const int g = (k + 1) / 2;
  if (!devices[0].device.is_cpu()) return reduce_on_gpus(r, k, g, parts, out, count, devices, barrier);
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
