#include "distribute/detail/worker_reduction.h"

#include <stdexcept>

#include "distribute/cross_device_ops.h"

namespace tower::distribute::detail {

WorkerReductionChoice choose_worker_reduction(const std::vector<LogicalDevice>& devices,
                                              const std::string& implementation, bool nccl_available,
                                              const std::string& caller) {
  const std::string who = message_prefix(caller);
  if (implementation != "AUTO" && implementation != "RING" && implementation != "NCCL")
    throw std::invalid_argument(who + "unknown communication implementation '" + implementation +
                                "' (expected AUTO, RING or NCCL)");
  const bool required = implementation == "NCCL";
  // Why NCCL cannot run here, or empty when it can.
  std::string obstacle;
  if (devices.empty() || devices[0].device.is_cpu()) {
    obstacle = "the replicas are on " + (devices.empty() ? std::string("no device") : devices[0].name) +
               ", a CPU device";
  } else if (const auto [a, b] = shared_physical_device(devices); a >= 0) {
    obstacle = devices[static_cast<std::size_t>(a)].name + " and " + devices[static_cast<std::size_t>(b)].name +
               " are logical GPUs of one physical GPU (" + devices[static_cast<std::size_t>(a)].device.to_string() +
               "), and NCCL refuses two ranks on one GPU";
  } else if (!nccl_available) {
    obstacle = "this build of Tower has no NCCL";
  }
  if (required) {
    if (!obstacle.empty())
      throw std::invalid_argument(who + "NCCL communication needs GPU replicas, each on a GPU of its own, and NCCL; " +
                                  obstacle + " (use AUTO or RING)");
    return {WorkerReduction::nccl, "NCCL between the workers' GPUs, as asked"};
  }
  if (implementation == "RING") return {WorkerReduction::mpi, "MPI between the workers, as asked (RING)"};
  if (!obstacle.empty()) return {WorkerReduction::mpi, "MPI between the workers: " + obstacle};
  return {WorkerReduction::nccl, "NCCL between the workers' GPUs"};
}

bool agree_on_nccl(Communicator& workers, bool mine, bool required, const std::string& caller) {
  const int n = workers.size();
  std::vector<unsigned char> all(static_cast<std::size_t>(n), 0);
  all[static_cast<std::size_t>(workers.rank())] = mine ? 1 : 0;
  std::vector<std::size_t> sizes(static_cast<std::size_t>(n), 1), offsets(static_cast<std::size_t>(n));
  for (int w = 0; w < n; ++w) offsets[static_cast<std::size_t>(w)] = static_cast<std::size_t>(w);
  workers.all_gather(all.data(), sizes, offsets);
  for (int w = 0; w < n; ++w)
    if (!all[static_cast<std::size_t>(w)]) {
      if (required)
        throw std::invalid_argument(message_prefix(caller) + "NCCL communication was asked for, but worker " +
                                    std::to_string(w) + " cannot use it (its replicas are not GPUs each on a GPU "
                                    "of its own, or its build has no NCCL)");
      return false;
    }
  return true;
}

}  // namespace tower::distribute::detail
