#pragma once
// The replicas of one model on this worker during a step: their ReplicaContexts, the barrier they meet at, and
// the all-reduce that SyncBN calls. Sums are deterministic: every replica adds the local replicas' values in
// replica order (then the workers' sums travel over the communicator), so all replicas get the same bits.
#include <memory>
#include <vector>

#include "api/core/tensor.h"
#include "api/engine/replica_context.h"
#include "distribute/detail/barrier.h"
#include "distribute/detail/communicator.h"

namespace tower::distribute::detail {

class ReplicaGroup {
 public:
  // `local` replicas on every worker of `workers` (null: this process is the only worker).
  ReplicaGroup(int local, std::shared_ptr<Communicator> workers);
  ~ReplicaGroup();
  ReplicaGroup(const ReplicaGroup&) = delete;
  ReplicaGroup& operator=(const ReplicaGroup&) = delete;

  // Before a step: the first `active` local replicas take part (those with rows), `in_sync` over all workers,
  // on the first `active_workers` workers.
  void begin_step(int active, int in_sync, int active_workers);
  ReplicaContext* context(int r);
  // The barrier of this step's active local replicas.
  Barrier& barrier() { return barrier_; }
  void all_reduce_sum(int r, double* values, std::size_t count);
  // The same with values in memory of `device` (replica r's): on GPUs, every replica adds every replica's values
  // in replica order on its own device (device copies from the others' GPUs, the backend's add_doubles), so all
  // get the same bits; between workers the sums travel through the host.
  void all_reduce_sum(int r, double* values, std::size_t count, Device device);

 private:
  class Context;

  int local_;
  std::shared_ptr<Communicator> workers_;
  int active_ = 1, in_sync_ = 1, active_workers_ = 1;
  std::vector<std::unique_ptr<Context>> contexts_;
  Barrier barrier_;
  // Two generations of slots, alternating per call, so one barrier per call suffices: a replica cannot write a
  // slot of generation g again before every replica has passed the next call's barrier, and so read g.
  std::vector<std::vector<double>> slots_[2];
  std::vector<int> parity_;
  std::vector<double> result_;
  // The device sums: per replica, its values and device this call, its sum and a buffer for another GPU's
  // values (grown as needed), and host staging between workers.
  struct DevicePart {
    const double* values = nullptr;
    Device device;
  };
  std::vector<DevicePart> device_parts_;
  std::vector<std::shared_ptr<Storage>> device_sums_, device_copies_;
  std::vector<std::vector<double>> host_staging_;
};

}  // namespace tower::distribute::detail
