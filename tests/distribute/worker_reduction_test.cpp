// How MultiWorkerMirroredStrategy's workers sum (detail/worker_reduction.h), decided without a GPU or a launcher:
// NCCL for GPU replicas each on a GPU of its own in a build with NCCL, MPI otherwise, the same on every worker.
#include <gtest/gtest.h>

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "distribute/detail/mirrored_replicas.h"
#include "distribute/detail/worker_reduction.h"
#include "distribute/replica_testing.h"
#include "tower/tower.h"

namespace tower::distribute {
namespace {

using detail::WorkerReduction;

std::string thrown(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "nothing thrown";
}

TEST(WorkerReduction, NcclOnlyForGpusOfTheirOwn) {
  const std::vector<LogicalDevice> cpus{{"cpu:0", Device::cpu()}};
  const std::vector<LogicalDevice> one_gpu = logical_gpus(1, 1), two_gpus = logical_gpus(2, 1);
  const std::vector<LogicalDevice> shared = logical_gpus(1, 2);
  const auto choose = [](const std::vector<LogicalDevice>& d, const char* impl, bool nccl) {
    return detail::choose_worker_reduction(d, impl, nccl, "Who");
  };
  EXPECT_EQ(choose(one_gpu, "AUTO", true).kind, WorkerReduction::nccl);
  EXPECT_EQ(choose(two_gpus, "AUTO", true).kind, WorkerReduction::nccl);
  EXPECT_EQ(choose(two_gpus, "NCCL", true).kind, WorkerReduction::nccl);
  // CPU workers, logical GPUs of one GPU, a build without NCCL, or RING: MPI, and the reason says why.
  const detail::WorkerReductionChoice cpu = choose(cpus, "AUTO", true);
  EXPECT_EQ(cpu.kind, WorkerReduction::mpi);
  EXPECT_NE(cpu.reason.find("cpu:0, a CPU device"), std::string::npos) << cpu.reason;
  const detail::WorkerReductionChoice logical = choose(shared, "AUTO", true);
  EXPECT_EQ(logical.kind, WorkerReduction::mpi);
  EXPECT_NE(logical.reason.find("gpu:0 and gpu:1 are logical GPUs of one physical GPU (cuda:0)"), std::string::npos)
      << logical.reason;
  const detail::WorkerReductionChoice no_nccl = choose(one_gpu, "AUTO", false);
  EXPECT_EQ(no_nccl.kind, WorkerReduction::mpi);
  EXPECT_NE(no_nccl.reason.find("no NCCL"), std::string::npos) << no_nccl.reason;
  EXPECT_EQ(choose(two_gpus, "RING", true).kind, WorkerReduction::mpi);
  EXPECT_EQ(choose(cpus, "RING", false).kind, WorkerReduction::mpi);
  // NCCL asked for where it cannot run, or an unknown implementation: clear errors.
  EXPECT_NE(thrown([&] { choose(cpus, "NCCL", true); })
                .find("Who: NCCL communication needs GPU replicas, each on a GPU of its own, and NCCL; the replicas "
                      "are on cpu:0, a CPU device (use AUTO or RING)"),
            std::string::npos);
  EXPECT_NE(thrown([&] { choose(shared, "NCCL", true); }).find("NCCL refuses two ranks on one GPU"), std::string::npos);
  EXPECT_NE(thrown([&] { choose(one_gpu, "NCCL", false); }).find("this build of Tower has no NCCL"),
            std::string::npos);
  EXPECT_NE(thrown([&] { choose(one_gpu, "GLOO", true); })
                .find("Who: unknown communication implementation 'GLOO' (expected AUTO, RING or NCCL)"),
            std::string::npos);
}

// A world of `size` workers seen from `rank`: all_gather fills in the other workers' bytes from `others`.
class FakeWorkers final : public detail::Communicator {
 public:
  FakeWorkers(int rank, std::vector<unsigned char> others) : rank_(rank), others_(std::move(others)) {}
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(others_.size()); }
  int local_size() const override { return 1; }
  void all_reduce_sum(float*, std::size_t, int) override { ADD_FAILURE() << "unexpected all_reduce_sum"; }
  void all_reduce_sum(double*, std::size_t, int) override { ADD_FAILURE() << "unexpected all_reduce_sum"; }
  void prepare_prefix(int) override {}
  void all_gather(void* data, std::span<const std::size_t> sizes, std::span<const std::size_t> offsets) override {
    ++gathers;
    for (int w = 0; w < size(); ++w)
      if (w != rank_) {
        ASSERT_EQ(sizes[static_cast<std::size_t>(w)], 1u);
        static_cast<unsigned char*>(data)[offsets[static_cast<std::size_t>(w)]] = others_[static_cast<std::size_t>(w)];
      }
  }
  void broadcast(void*, std::size_t, int) override { ADD_FAILURE() << "unexpected broadcast"; }
  int gathers = 0;

 private:
  int rank_;
  std::vector<unsigned char> others_;
};

TEST(WorkerReduction, EveryWorkerMustAgreeOnNccl) {
  FakeWorkers all_can(0, {1, 1, 1});
  EXPECT_TRUE(detail::agree_on_nccl(all_can, true, false, "Who"));
  EXPECT_EQ(all_can.gathers, 1);
  FakeWorkers one_cannot(1, {1, 1, 0});
  EXPECT_FALSE(detail::agree_on_nccl(one_cannot, true, false, "Who"));
  FakeWorkers me_neither(0, {0, 1});
  EXPECT_FALSE(detail::agree_on_nccl(me_neither, false, false, "Who"));
  FakeWorkers asked(0, {1, 0});
  EXPECT_NE(thrown([&] { detail::agree_on_nccl(asked, true, true, "Who"); })
                .find("Who: NCCL communication was asked for, but worker 1 cannot use it"),
            std::string::npos);
}

// NCCL between workers needs workers and GPU replicas: a model's replicas refuse it otherwise.
TEST(WorkerReduction, NcclBetweenWorkersNeedsWorkersWithGpus) {
  Model m = testing::small_convnet(false, false);
  const std::string one_process = thrown([&] {
    detail::MirroredReplicas(m.impl(), logical_gpus(1, 1), ReductionToOneDevice(), nullptr, "Who",
                             detail::kDefaultBucketCapBytes, false, true);
  });
  EXPECT_NE(one_process.find("Who: NCCL between workers needs workers with GPU replicas; the replicas are on gpu:0 "
                             "of one process"),
            std::string::npos)
      << one_process;
  const auto workers = std::make_shared<FakeWorkers>(0, std::vector<unsigned char>{1});
  const std::string cpu = thrown([&] {
    detail::MirroredReplicas(m.impl(), {{"cpu:0", Device::cpu()}}, InProcessAllReduce(), workers, "Who",
                             detail::kDefaultBucketCapBytes, false, true);
  });
  EXPECT_NE(cpu.find("the replicas are on cpu:0"), std::string::npos) << cpu;
}

}  // namespace
}  // namespace tower::distribute
