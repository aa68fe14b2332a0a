#include "distribute/in_process_all_reduce.h"

#include <stdexcept>

namespace tower::distribute {

void InProcessAllReduceImpl::check_devices(const std::vector<LogicalDevice>& devices, const std::string& caller) const {
  const std::string who = message_prefix(caller);
  for (const LogicalDevice& d : devices)
    if (!d.device.is_cpu())
      throw std::invalid_argument(who + name() + " sums CPU replicas' gradients in this process; device " + d.name +
                                  " is a GPU (use NcclAllReduce, the default for GPUs)");
}

void InProcessAllReduceImpl::reduce(int r, int k, float* const* parts, float* out, Index count,
                                    const std::vector<LogicalDevice>&, detail::Barrier&) const {
  const auto [begin, end] = detail::chunk(count, r, k);
  detail::sum_parts(parts, k, out, begin, end);
}

}  // namespace tower::distribute
