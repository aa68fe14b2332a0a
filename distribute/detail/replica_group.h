#pragma once
// The replicas of one model on this worker during a step: their ReplicaContexts, the barrier they meet at, and
// the collectives that SyncBN and Optimizer::apply_gradients in replica context call. Sums are deterministic:
// every replica adds the local replicas' values in replica order (then the workers' sums travel over the
// communicator), so all replicas get the same bits.
//
// Every collective first checks that this worker's replicas are in the same one (the same kind, the same count of
// values) and throws std::logic_error on each of them naming two that differ; a replica that finishes its step
// while another waits for it (Barrier::depart) ends the step with Departed.
#include <functional>
#include <memory>
#include <vector>

#include "api/core/tensor.h"
#include "api/engine/replica_context.h"
#include "distribute/detail/barrier.h"
#include "distribute/detail/communicator.h"

namespace tower::distribute::detail {

// What the replicas' owner tells their contexts about the variables (ReplicaContext::mirrored_variables,
// to_model_variables, own_copies_diverged).
class ReplicaVariables {
 public:
  virtual ~ReplicaVariables() = default;
  virtual bool mirrored() const = 0;
  // Replica r's copies in `variables` replaced with the model's own variables.
  virtual void to_model_variables(int r, std::vector<VariablePtr>& variables) const = 0;
  virtual void own_copies_diverged() = 0;
};

class ReplicaGroup {
 public:
  // `local` replicas on every worker of `workers` (null: this process is the only worker); `variables` (null: the
  // replicas share one copy, the model's) as above.
  ReplicaGroup(int local, std::shared_ptr<Communicator> workers, ReplicaVariables* variables = nullptr);
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
  // in replica order on its own device (device copies from the others' GPUs, the backend's add_doubles or add),
  // so all get the same bits; between workers the sums travel through the host.
  void all_reduce_sum(int r, double* values, std::size_t count, Device device);
  void all_reduce_sum(int r, float* values, std::size_t count, Device device);
  // fn on replica 0 while this worker's other replicas wait (ReplicaContext::merge_call).
  void merge_call(int r, const std::function<void()>& fn);

 private:
  class Context;
  enum class Collective { sum_doubles, sum_floats, merge_call };
  struct Record {
    Collective kind = Collective::sum_doubles;
    std::size_t count = 0;
  };
  // Replica r enters a collective: its record is written, the active replicas meet at the barrier, and every
  // record is compared with r's. Returns the generation of slots (0 or 1) this call uses.
  int meet(int r, Collective kind, std::size_t count);
  template <class T>
  void all_reduce_host(int r, T* values, std::size_t count, Collective kind);
  template <class T>
  void all_reduce_device(int r, T* values, std::size_t count, Device device, Collective kind);
  template <class T>
  std::vector<std::vector<T>>& slots(int generation);
  template <class T>
  std::vector<T>& result();
  template <class T>
  std::vector<T>& host_staging(int r);

  int local_;
  std::shared_ptr<Communicator> workers_;
  ReplicaVariables* variables_;
  int active_ = 1, in_sync_ = 1, active_workers_ = 1;
  std::vector<std::unique_ptr<Context>> contexts_;
  Barrier barrier_;
  // Two generations of records and slots, alternating per call, so one barrier per call suffices: a replica
  // cannot write a slot of generation g again before every replica has passed the next call's barrier, and so
  // read g.
  std::vector<Record> records_[2];
  std::vector<std::vector<double>> slots_[2];
  std::vector<std::vector<float>> float_slots_[2];
  std::vector<int> parity_;
  std::vector<double> result_;
  std::vector<float> float_result_;
  // The device sums: per replica, its values and device this call, its sum and a buffer for another GPU's
  // values (grown as needed), and host staging between workers.
  struct DevicePart {
    const void* values = nullptr;
    Device device;
  };
  std::vector<DevicePart> device_parts_;
  std::vector<std::shared_ptr<Storage>> device_sums_, device_copies_;
  std::vector<std::vector<double>> host_staging_;
  std::vector<std::vector<float>> float_host_staging_;
};

}  // namespace tower::distribute::detail
