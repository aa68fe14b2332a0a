#include "distribute/reduction_to_one_device.h"

#include <stdexcept>

namespace tower::distribute {

ReductionToOneDeviceImpl::ReductionToOneDeviceImpl(Options options)
    : CrossDeviceOps("ReductionToOneDevice"), options_(std::move(options)) {}

void ReductionToOneDeviceImpl::check_devices(const std::vector<LogicalDevice>& devices, const std::string& caller) const {
  const std::string who = message_prefix(caller);
  if (options_.reduce_to_device.empty()) return;
  const LogicalDevice target = parse_logical_device(options_.reduce_to_device, who + name() + ": ");
  std::string names;
  for (const LogicalDevice& d : devices) {
    if (d.name == target.name) return;
    names += (names.empty() ? "" : ", ") + d.name;
  }
  throw std::invalid_argument(who + name() + ": reduce_to_device '" + options_.reduce_to_device +
                              "' is not one of the strategy's devices (" + names + ")");
}

void ReductionToOneDeviceImpl::reduce(int r, int k, float* const* parts, float* out, Index count,
                                      const std::vector<LogicalDevice>& devices, detail::Barrier&) const {
  int target = 0;
  if (!options_.reduce_to_device.empty()) {
    const std::string name = parse_logical_device(options_.reduce_to_device, "").name;
    for (int i = 0; i < k; ++i)
      if (devices[static_cast<std::size_t>(i)].name == name) target = i;
  }
  if (r != target) return;
  if (devices[0].device.is_cpu())
    detail::sum_parts(parts, k, out, 0, count);
  else
    detail::sum_parts_on_devices(parts, devices.data(), k, out, devices[0].device, count, scratch(r));
}

}  // namespace tower::distribute
