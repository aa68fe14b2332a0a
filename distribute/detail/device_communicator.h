#pragma once
// Collectives between replicas on devices: the sum of float buffers over the ranks of a group, in place, in the
// device memory of each rank. NCCL implements it between GPUs (nccl_communicator.cpp: one communicator per
// strategy, one rank per GPU, the ranks of other workers joined through a unique id broadcast over MPI);
// InProcessCommunicator implements it in host memory between threads of this process and records every call: the
// tests inject it into NcclAllReduce to run that op's logic on CPU replicas.
//
// This process drives local_size() ranks (its replicas), numbered 0 .. local_size() - 1 here and
// global_rank(local) in the whole group. Every rank makes the same sequence of calls with the same counts; the
// calls pair up in order. A rank's calls come from one thread at a time: either each local rank from its own
// thread, or one thread making the calls of several local ranks between group_start() and group_end() (NCCL's
// grouped calls: without the group, a thread calling for its first rank would wait for the others forever).
#include <condition_variable>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "distribute/detail/communicator.h"
#include "distribute/logical_device.h"

namespace tower::distribute::detail {

class DeviceCommunicator {
 public:
  virtual ~DeviceCommunicator() = default;
  // Ranks in the group, over every process.
  virtual int size() const = 0;
  // Ranks this process drives.
  virtual int local_size() const = 0;
  virtual int global_rank(int local) const = 0;
  // receive[0, count) = the element-wise sum of send[0, count) over every rank, for local rank `local`; both
  // are memory of that rank's device, and may be the same buffer (in place). On a GPU the sum is queued on the device's stream and the call returns without waiting;
  // work queued on that stream afterwards sees the sum. Outside a group, returns when the sum is queued (NCCL)
  // or complete (in process); inside a group, the calls are issued at group_end().
  virtual void all_reduce_sum(int local, const float* send, float* receive, std::size_t count) = 0;
  // Work queued on local rank `local`'s device stream after join(local) sees every sum that rank asked for
  // before it. (NCCL sums on a stream of their own, so that backward's kernels run beside them; in process,
  // sums are complete when the call returns and join does nothing.)
  virtual void join(int local) = 0;
  // Calls made by this thread from group_start() to the matching group_end() are issued together. Groups nest.
  virtual void group_start() = 0;
  virtual void group_end() = 0;
};

// In-process ranks over host memory: all ranks are local (local rank == global rank). A call returns once every
// rank has made it and the sum (added in rank order, so identical on every rank and in every run) is in every
// rank's buffer. Thread-safe; allocates per call (it serves the tests, not a training step's fast path).
class InProcessCommunicator final : public DeviceCommunicator {
 public:
  // One call as a rank made it: the order of a rank's calls is the order of its entries in calls().
  struct Call {
    int rank = 0;
    std::size_t sequence = 0;  // the rank's n-th call
    const float* send = nullptr;
    const float* receive = nullptr;
    std::size_t count = 0;
  };
  // Throws std::invalid_argument for size < 1.
  explicit InProcessCommunicator(int size);
  int size() const override { return size_; }
  int local_size() const override { return size_; }
  int global_rank(int local) const override { return local; }
  // Throws std::logic_error when the ranks' n-th calls have different counts (naming both ranks).
  void all_reduce_sum(int local, const float* send, float* receive, std::size_t count) override;
  void join(int) override {}
  void group_start() override;
  void group_end() override;
  // Every call made so far, in the order they were made (over all ranks).
  std::vector<Call> calls() const;

 private:
  struct Pending {
    std::vector<const float*> sends;
    std::vector<float*> receives;
    std::vector<std::size_t> counts;
    int arrived = 0, left = 0;
    bool done = false;
    std::string error;
  };
  // Registers a call; the last rank to arrive sums. Returns its key.
  std::size_t arrive(int local, const float* send, float* receive, std::size_t count);
  void wait(std::size_t key);

  int size_;
  mutable std::mutex mutex_;
  std::condition_variable done_;
  std::vector<std::size_t> sequence_;  // per rank
  std::map<std::size_t, Pending> pending_;
  std::vector<Call> calls_;
  // Per thread inside a group: its depth and the calls it made there.
  struct Group {
    int depth = 0;
    std::vector<std::size_t> keys;
  };
  std::map<std::thread::id, Group> groups_;
};

// True when this build has NCCL (CUDA builds where CMake found it).
bool nccl_built();
// An NCCL communicator over `devices` (GPUs, one rank each; NCCL refuses two ranks on one GPU) of this process,
// and with `workers`, over the same number of GPUs on every worker: rank = worker * devices.size() + local. The
// NCCL unique id travels from worker 0 to the others with workers->broadcast. Throws std::invalid_argument,
// starting with `who`, for CPU devices or two devices on one GPU; std::runtime_error when this build has no
// NCCL or NCCL fails (its message included).
std::shared_ptr<DeviceCommunicator> make_nccl_communicator(const std::vector<LogicalDevice>& devices,
                                                           const std::shared_ptr<Communicator>& workers,
                                                           const std::string& who);

}  // namespace tower::distribute::detail
