#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "distribute/detail/device_communicator.h"

#ifdef TOWER_WITH_NCCL
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "api/core/cuda/cuda_device.h"
#endif

namespace tower::distribute::detail {

namespace {

void check_gpu_devices(const std::vector<LogicalDevice>& devices, const std::string& who) {
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (!devices[i].device.is_cuda())
      throw std::invalid_argument(who + "NCCL reduces between GPUs; " + devices[i].name + " is a CPU device");
    for (std::size_t j = 0; j < i; ++j)
      if (devices[j].device == devices[i].device)
        throw std::invalid_argument(who + "NCCL refuses two ranks on one GPU, and " + devices[j].name + " and " +
                                    devices[i].name + " are both on " + devices[i].device.to_string() +
                                    " (logical GPUs): use ReductionToOneDevice or HierarchicalCopyAllReduce");
  }
}

}  // namespace

#ifndef TOWER_WITH_NCCL

bool nccl_built() { return false; }

std::shared_ptr<DeviceCommunicator> make_nccl_communicator(const std::vector<LogicalDevice>& devices,
                                                           const std::shared_ptr<Communicator>&,
                                                           const std::string& caller) {
  const std::string who = message_prefix(caller);
  check_gpu_devices(devices, who);
  throw std::runtime_error(who + "this build of Tower has no NCCL: configure with the CUDA toolkit and NCCL "
                                 "(libnccl-dev, or NCCL_ROOT naming its folder) to reduce between GPUs with it");
}

#else

bool nccl_built() { return true; }

namespace {

// Seconds an all-reduce between workers may stay unfinished before the watchdog ends it: TOWER_NCCL_TIMEOUT, else
// 120.
double worker_timeout_seconds() {
  if (const char* v = std::getenv("TOWER_NCCL_TIMEOUT")) {
    char* end = nullptr;
    const double t = std::strtod(v, &end);
    if (end != v && *end == '\0' && t > 0) return t;
    throw std::invalid_argument("TOWER_NCCL_TIMEOUT must be a positive number of seconds, got \"" + std::string(v) +
                                "\"");
  }
  return 120.0;
}

// One NCCL communicator per local GPU, a stream per GPU for the sums (beside the GPU's compute stream), and the
// events that order the two.
//
// Between workers, a worker that dies leaves NCCL's kernels on the others waiting for it forever. A watchdog
// thread (PyTorch's NCCL watchdog, in small) looks once a second at the step's last all-reduces: when one has stayed
// unfinished for the timeout, or NCCL reports an error, it aborts the communicators, which ends the waiting
// kernels, and the next call into this communicator throws an error that says so.
class NcclCommunicator final : public DeviceCommunicator {
 public:
  NcclCommunicator(const std::vector<LogicalDevice>& devices, const std::shared_ptr<Communicator>& workers,
                   std::string who)
      : who_(std::move(who)) {
    const int local = static_cast<int>(devices.size());
    const int worker = workers ? workers->rank() : 0;
    size_ = local * (workers ? workers->size() : 1);
    first_rank_ = worker * local;
    for (const LogicalDevice& d : devices) {
      tower::cuda::require_device(d.device.index);
      gpus_.push_back(d.device.index);
    }
    comms_.assign(static_cast<std::size_t>(local), nullptr);
    ncclUniqueId id{};
    if (first_rank_ == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    // Every worker needs the chief's id to join the same communicator; MPI carries it.
    if (workers && workers->size() > 1) workers->broadcast(&id, sizeof id, 0);
    check(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < local; ++r) {
      tower::cuda::set_device(gpus_[static_cast<std::size_t>(r)]);
      check(ncclCommInitRank(&comms_[static_cast<std::size_t>(r)], size_, id, first_rank_ + r),
            "ncclCommInitRank (rank " + std::to_string(first_rank_ + r) + " of " + std::to_string(size_) + ")");
    }
    check(ncclGroupEnd(), "ncclGroupEnd after creating the communicators");
    for (int r = 0; r < local; ++r) {
      tower::cuda::set_device(gpus_[static_cast<std::size_t>(r)]);
      cudaStream_t s = nullptr;
      cudaEvent_t produced = nullptr, reduced = nullptr;
      tower::cuda::check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "creating an NCCL stream");
      tower::cuda::check(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming), "creating an NCCL event");
      tower::cuda::check(cudaEventCreateWithFlags(&reduced, cudaEventDisableTiming), "creating an NCCL event");
      streams_.push_back(s);
      produced_.push_back(produced);
      reduced_.push_back(reduced);
    }
    if (size_ > local) {
      timeout_ = worker_timeout_seconds();
      issued_.assign(static_cast<std::size_t>(local), Clock::time_point::max());
      watchdog_ = std::thread([this] { watch(); });
    }
  }

  ~NcclCommunicator() override {
    if (watchdog_.joinable()) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
      }
      wake_.notify_all();
      watchdog_.join();
    }
    for (std::size_t r = 0; r < comms_.size(); ++r) {
      tower::cuda::set_device(gpus_[r]);
      if (r < streams_.size()) cudaStreamSynchronize(streams_[r]);
      if (comms_[r]) ncclCommDestroy(comms_[r]);
      if (r < streams_.size()) {
        cudaEventDestroy(produced_[r]);
        cudaEventDestroy(reduced_[r]);
        cudaStreamDestroy(streams_[r]);
      }
    }
  }

  int size() const override { return size_; }
  int local_size() const override { return static_cast<int>(comms_.size()); }
  int global_rank(int local) const override { return first_rank_ + local; }

  void all_reduce_sum(int local, const float* send, float* receive, std::size_t count) override {
    throw_if_aborted();
    const auto r = static_cast<std::size_t>(local);
    tower::cuda::set_device(gpus_[r]);
    // The sum starts once the compute stream has produced the bucket; backward's next kernels do not wait for it.
    auto compute = static_cast<cudaStream_t>(tower::cuda::stream(gpus_[r]));
    tower::cuda::check(cudaEventRecord(produced_[r], compute), "recording a bucket's gradients");
    tower::cuda::check(cudaStreamWaitEvent(streams_[r], produced_[r], 0), "ordering an all-reduce after backward");
    ncclResult_t result = ncclInvalidUsage;  // the watchdog aborted the communicator: check() says why
    {
      // The watchdog cannot abort and null the communicator while this queues work on it.
      std::shared_lock<std::shared_mutex> lock(comms_mutex_);
      if (ncclComm_t comm = comms_[r])
        result = ncclAllReduce(send, receive, count, ncclFloat32, ncclSum, comm, streams_[r]);
    }
    check(result,
          "ncclAllReduce of " + std::to_string(count) + " floats on rank " + std::to_string(first_rank_ + local));
  }

  void join(int local) override {
    const auto r = static_cast<std::size_t>(local);
    tower::cuda::set_device(gpus_[r]);
    auto compute = static_cast<cudaStream_t>(tower::cuda::stream(gpus_[r]));
    throw_if_aborted();
    tower::cuda::check(cudaEventRecord(reduced_[r], streams_[r]), "recording the end of the all-reduces");
    tower::cuda::check(cudaStreamWaitEvent(compute, reduced_[r], 0), "ordering the update after the all-reduces");
    if (watchdog_.joinable()) {
      std::lock_guard<std::mutex> lock(mutex_);
      issued_[r] = Clock::now();  // the latest end: when it finishes, every earlier one has
    }
  }

  void group_start() override {
    throw_if_aborted();
    check(ncclGroupStart(), "ncclGroupStart");
  }
  void group_end() override { check(ncclGroupEnd(), "ncclGroupEnd"); }

 private:
  using Clock = std::chrono::steady_clock;

  // The watchdog's loop: once a second, each GPU's latest recorded end of all-reduces that has not finished is
  // checked against the timeout (the host may be a few steps ahead of the GPU, never the timeout ahead), and every
  // communicator against NCCL's asynchronous errors.
  void watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
      wake_.wait_for(lock, std::chrono::seconds(1));
      if (stopping_ || aborted_) continue;
      for (std::size_t r = 0; r < comms_.size() && !aborted_; ++r) {
        tower::cuda::set_device(gpus_[r]);
        ncclResult_t async = ncclSuccess;
        ncclCommGetAsyncError(comms_[r], &async);
        if (async != ncclSuccess && async != ncclInProgress) {
          abort_all("NCCL reported " + std::string(ncclGetErrorString(async)) + " on rank " +
                    std::to_string(first_rank_ + static_cast<int>(r)));
          break;
        }
        if (issued_[r] == Clock::time_point::max()) continue;
        const cudaError_t state = cudaEventQuery(reduced_[r]);
        if (state == cudaSuccess) {
          issued_[r] = Clock::time_point::max();
        } else if (state == cudaErrorNotReady) {
          const double waited = std::chrono::duration<double>(Clock::now() - issued_[r]).count();
          if (waited > timeout_)
            abort_all("an all-reduce between the " + std::to_string(size_) + " ranks has not finished in " +
                      std::to_string(static_cast<int>(waited)) + " s (TOWER_NCCL_TIMEOUT " +
                      std::to_string(static_cast<int>(timeout_)) + " s): a worker died or stopped");
        } else {
          cudaGetLastError();
          abort_all(std::string("the GPU failed while waiting for an all-reduce: ") + cudaGetErrorString(state));
        }
      }
    }
  }

  // With mutex_ held: ends every communicator's pending work and remembers why.
  void abort_all(const std::string& why) {
    aborted_ = true;
    abort_reason_ = who_ + why + "; the communicators were aborted";
    std::unique_lock<std::shared_mutex> lock(comms_mutex_);
    for (ncclComm_t& c : comms_)
      if (c) {
        ncclCommAbort(c);
        c = nullptr;
      }
  }

  void throw_if_aborted() const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_) throw std::runtime_error(abort_reason_);
  }

  void check(ncclResult_t result, const std::string& what) const {
    if (result == ncclSuccess) return;
    throw_if_aborted();
    std::string text = ncclGetErrorString(result);
    if (const char* last = ncclGetLastError(nullptr); last && *last) text += " (" + std::string(last) + ")";
    throw std::runtime_error(who_ + what + " failed: " + text);
  }

  std::string who_;
  int size_ = 1, first_rank_ = 0;
  std::vector<int> gpus_;
  std::vector<ncclComm_t> comms_;
  std::vector<cudaStream_t> streams_;
  std::vector<cudaEvent_t> produced_, reduced_;
  // The watchdog (between workers only) and what it shares, under mutex_.
  double timeout_ = 0;
  std::vector<Clock::time_point> issued_;  // per GPU: when its latest unfinished end of all-reduces was recorded, else max
  bool stopping_ = false, aborted_ = false;
  std::string abort_reason_;
  mutable std::mutex mutex_;
  // Guards comms_ between the callers that queue work on them (shared) and the watchdog's abort (exclusive). Never
  // held while taking mutex_, which the watchdog holds when it takes this one.
  std::shared_mutex comms_mutex_;
  std::condition_variable wake_;
  std::thread watchdog_;
};

}  // namespace

std::shared_ptr<DeviceCommunicator> make_nccl_communicator(const std::vector<LogicalDevice>& devices,
                                                           const std::shared_ptr<Communicator>& workers,
                                                           const std::string& caller) {
  const std::string who = message_prefix(caller);
  check_gpu_devices(devices, who);
  return std::make_shared<NcclCommunicator>(devices, workers, who);
}

#endif

}  // namespace tower::distribute::detail
