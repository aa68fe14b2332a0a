#include "distribute/nccl_all_reduce.h"

#include <stdexcept>

namespace tower::distribute {

NcclAllReduceImpl::NcclAllReduceImpl(Options options) : CrossDeviceOps("NcclAllReduce"), options_(std::move(options)) {
  if (options_.num_packs < 1)
    throw std::invalid_argument("NcclAllReduce: num_packs must be >= 1, got " + std::to_string(options_.num_packs));
}

void NcclAllReduceImpl::check_devices(const std::vector<LogicalDevice>& devices, const std::string& caller) const {
  const std::string who = message_prefix(caller);
  if (options_.communicator) return;
  for (const LogicalDevice& d : devices)
    if (!d.device.is_cuda())
      throw std::invalid_argument(who + name() + " reduces between GPUs; device " + d.name +
                                  " is a CPU device (pass no cross_device_ops for the in-process all-reduce, or "
                                  "ReductionToOneDevice / HierarchicalCopyAllReduce)");
  if (const auto [a, b] = detail::shared_physical_device(devices); a >= 0) {
    const LogicalDevice& first = devices[static_cast<std::size_t>(a)];
    const LogicalDevice& second = devices[static_cast<std::size_t>(b)];
    throw std::invalid_argument(who + name() + ": " + first.name + " and " + second.name +
                                " are logical GPUs of one physical GPU (" + first.device.to_string() +
                                "), and NCCL refuses two ranks on one GPU; pass no cross_device_ops (the strategy "
                                "then picks ReductionToOneDevice), or HierarchicalCopyAllReduce");
  }
}

namespace {
std::string key_of(int k, const std::vector<LogicalDevice>& devices) {
  std::string key;
  for (int r = 0; r < k; ++r) key += devices[static_cast<std::size_t>(r)].name + ",";
  return key;
}
}  // namespace

detail::DeviceCommunicator& NcclAllReduceImpl::communicator(int k, const std::vector<LogicalDevice>& devices) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::shared_ptr<detail::DeviceCommunicator>& comm = comms_[key_of(k, devices)];
  if (!comm) {
    const std::vector<LogicalDevice> used(devices.begin(), devices.begin() + k);
    comm = options_.communicator ? options_.communicator(used) : detail::make_nccl_communicator(used, nullptr, name());
  }
  return *comm;
}

void NcclAllReduceImpl::reduce(int r, int k, float* const* parts, float* out, Index count,
                               const std::vector<LogicalDevice>& devices, detail::Barrier& barrier) const {
  detail::DeviceCommunicator& comm = communicator(k, devices);
  // Every thread must see the same communicator before any calls into it: the first reduction makes it.
  barrier.arrive_and_wait();
  comm.all_reduce_sum(r, parts[r], r == 0 ? out : parts[r], static_cast<std::size_t>(count));
}

void NcclAllReduceImpl::end_reduction(int r, const std::vector<LogicalDevice>& devices) const {
  // Every communicator this replica's GPU belongs to: a step used one of them, and joining the others is free.
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [key, comm] : comms_)
    if (r < comm->local_size() && key.rfind(key_of(r + 1, devices), 0) == 0) comm->join(r);
}

}  // namespace tower::distribute
