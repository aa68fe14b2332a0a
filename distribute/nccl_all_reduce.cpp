#include "distribute/nccl_all_reduce.h"

#include <stdexcept>

namespace tower::distribute {

NcclAllReduceImpl::NcclAllReduceImpl(Options options) : CrossDeviceOps("NcclAllReduce"), options_(options) {
  if (options_.num_packs < 1)
    throw std::invalid_argument("NcclAllReduce: num_packs must be >= 1, got " + std::to_string(options_.num_packs));
}

void NcclAllReduceImpl::check_devices(const std::vector<LogicalDevice>& devices, const std::string& caller) const {
  const std::string who = message_prefix(caller);
  for (const LogicalDevice& d : devices)
    if (!d.device.is_cuda())
      throw std::invalid_argument(who + name() + " reduces between GPUs; device " + d.name +
                                  " is a CPU device (pass no cross_device_ops for the in-process all-reduce, or "
                                  "ReductionToOneDevice / HierarchicalCopyAllReduce)");
}

void NcclAllReduceImpl::reduce(int, int, float* const*, float*, Index, const std::vector<LogicalDevice>&,
                               detail::Barrier&) const {
  throw std::logic_error(name() + ": GPU replicas need Tower's CUDA backend, which this build does not have");
}

}  // namespace tower::distribute
