#include <stdexcept>
#include <string>
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

// One NCCL communicator per local GPU, a stream per GPU for the sums (beside the GPU's compute stream), and the
// events that order the two.
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
  }

  ~NcclCommunicator() override {
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
    const auto r = static_cast<std::size_t>(local);
    tower::cuda::set_device(gpus_[r]);
    // The sum starts once the compute stream has produced the bucket; backward's next kernels do not wait for it.
    auto compute = static_cast<cudaStream_t>(tower::cuda::stream(gpus_[r]));
    tower::cuda::check(cudaEventRecord(produced_[r], compute), "recording a bucket's gradients");
    tower::cuda::check(cudaStreamWaitEvent(streams_[r], produced_[r], 0), "ordering an all-reduce after backward");
    check(ncclAllReduce(send, receive, count, ncclFloat32, ncclSum, comms_[r], streams_[r]),
          "ncclAllReduce of " + std::to_string(count) + " floats on rank " + std::to_string(first_rank_ + local));
  }

  void join(int local) override {
    const auto r = static_cast<std::size_t>(local);
    tower::cuda::set_device(gpus_[r]);
    auto compute = static_cast<cudaStream_t>(tower::cuda::stream(gpus_[r]));
    tower::cuda::check(cudaEventRecord(reduced_[r], streams_[r]), "recording the end of the all-reduces");
    tower::cuda::check(cudaStreamWaitEvent(compute, reduced_[r], 0), "ordering the update after the all-reduces");
  }

  void group_start() override { check(ncclGroupStart(), "ncclGroupStart"); }
  void group_end() override { check(ncclGroupEnd(), "ncclGroupEnd"); }

 private:
  void check(ncclResult_t result, const std::string& what) const {
    if (result == ncclSuccess) return;
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
