// Every cross-device op sums k replica buffers exactly (integers in float32 add exactly in any order), run by k
// threads as a strategy runs them, for odd sizes and every k from 2 to 5.
#include <gtest/gtest.h>

#include <sstream>
#include <thread>

#include "distribute/detail/device_communicator.h"

#include "tower/tower.h"

namespace tower::distribute {
namespace {

void check_sum(const CrossDeviceOpsPtr& ops, int k, Index count) {
  std::vector<LogicalDevice> devices;
  for (int r = 0; r < k; ++r) devices.push_back({"cpu:" + std::to_string(r), Device::cpu()});
  const auto n = static_cast<std::size_t>(count);
  std::vector<std::vector<float>> buffers(static_cast<std::size_t>(k), std::vector<float>(n));
  std::vector<float*> parts;
  std::vector<float> want(n, 0.f), out(n, -1.f);
  for (int r = 0; r < k; ++r) {
    std::vector<float>& b = buffers[static_cast<std::size_t>(r)];
    for (std::size_t i = 0; i < n; ++i) {
      b[i] = static_cast<float>((static_cast<int>(i) * 7 + r * 13) % 101 - 50);
      want[i] += b[i];
    }
    parts.push_back(b.data());
  }
  detail::Barrier barrier;
  barrier.reset(k);
  std::vector<std::thread> threads;
  for (int r = 0; r < k; ++r)
    threads.emplace_back([&, r] { ops->reduce(r, k, parts.data(), out.data(), count, devices, barrier); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(out, want) << ops->name() << " k=" << k << " count=" << count;
}

TEST(CrossDeviceOps, SumEveryReplica) {
  const std::vector<CrossDeviceOpsPtr> all{InProcessAllReduce(), ReductionToOneDevice(),
                                           ReductionToOneDevice({.reduce_to_device = "cpu:1"}),
                                           HierarchicalCopyAllReduce()};
  for (const CrossDeviceOpsPtr& ops : all)
    for (int k = 2; k <= 5; ++k)
      for (Index count : {1, 15, 16, 17, 1000, 4099}) check_sum(ops, k, count);
}

TEST(CrossDeviceOps, CheckDevices) {
  const std::vector<LogicalDevice> cpus{{"cpu:0", Device::cpu()}, {"cpu:1", Device::cpu()}};
  EXPECT_NO_THROW(InProcessAllReduce()->check_devices(cpus, ""));
  EXPECT_NO_THROW(HierarchicalCopyAllReduce()->check_devices(cpus, ""));
  EXPECT_THROW(NcclAllReduce()->check_devices(cpus, ""), std::invalid_argument);
  const std::vector<LogicalDevice> gpus{{"gpu:0", Device::cuda(0)}};
  EXPECT_NO_THROW(NcclAllReduce()->check_devices(gpus, ""));
  EXPECT_THROW(InProcessAllReduce()->check_devices(gpus, ""), std::invalid_argument);
  EXPECT_NO_THROW(ReductionToOneDevice()->check_devices(gpus, ""));
  EXPECT_NO_THROW(HierarchicalCopyAllReduce()->check_devices(gpus, ""));
  EXPECT_THROW(NcclAllReduce({.num_packs = 0}), std::invalid_argument);
  EXPECT_EQ(default_cross_device_ops(cpus)->name(), "InProcessAllReduce");
  EXPECT_EQ(default_cross_device_ops(gpus)->name(), "NcclAllReduce");
}

// The choice of cross-device ops from the devices alone: distinct physical GPUs get NCCL, logical GPUs of one
// physical GPU (which NCCL refuses) get ReductionToOneDevice, and the fallback is said once.
TEST(CrossDeviceOps, ChoiceFollowsThePhysicalGpus) {
  const std::vector<LogicalDevice> cpus{{"cpu:0", Device::cpu()}, {"cpu:1", Device::cpu()}};
  EXPECT_EQ(choose_cross_device_ops(cpus).ops->name(), "InProcessAllReduce");
  const std::vector<LogicalDevice> physical{{"gpu:0", Device::cuda(0)}, {"gpu:1", Device::cuda(1)}};
  EXPECT_EQ(choose_cross_device_ops(physical).ops->name(), "NcclAllReduce");
  EXPECT_NO_THROW(NcclAllReduce()->check_devices(physical, ""));
  // Two physical GPUs split two ways each: gpu:0, gpu:1 on cuda:0 and gpu:2, gpu:3 on cuda:1.
  const std::vector<LogicalDevice> logical = logical_gpus(2, 2);
  ASSERT_EQ(logical.size(), 4u);
  EXPECT_EQ(logical[1], (LogicalDevice{"gpu:1", Device::cuda(0)}));
  EXPECT_EQ(logical[2], (LogicalDevice{"gpu:2", Device::cuda(1)}));
  const CrossDeviceOpsChoice choice = choose_cross_device_ops(logical);
  EXPECT_EQ(choice.ops->name(), "ReductionToOneDevice");
  EXPECT_NE(choice.reason.find("gpu:0 and gpu:1 are logical GPUs of one physical GPU (cuda:0), which NCCL refuses"),
            std::string::npos)
      << choice.reason;
  EXPECT_EQ(detail::shared_physical_device(logical), std::make_pair(0, 1));
  EXPECT_EQ(detail::shared_physical_device(physical), std::make_pair(-1, -1));
  // Only the pair on one GPU matters: {gpu:1, gpu:2} are on cuda:0 and cuda:1.
  EXPECT_EQ(choose_cross_device_ops({logical[1], logical[2]}).ops->name(), "NcclAllReduce");
  try {
    NcclAllReduce()->check_devices(logical, "Who");
    ADD_FAILURE() << "NcclAllReduce accepted two logical GPUs of one GPU";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("Who: NcclAllReduce: gpu:0 and gpu:1 are logical GPUs of one physical GPU "
                                         "(cuda:0), and NCCL refuses two ranks on one GPU"),
              std::string::npos)
        << e.what();
  }
  detail::OnceLog log;
  std::ostringstream out;
  EXPECT_TRUE(log.write(out, choice.reason));
  EXPECT_FALSE(log.write(out, choice.reason));
  EXPECT_EQ(out.str(), choice.reason + "\n");
}

// NcclAllReduce's logic, per bucket and replica thread, over an injected in-process communicator: every replica
// makes one all-reduce per call, in the same order; replica 0 receives the sum in `out`, the others in place.
TEST(CrossDeviceOps, NcclAllReduceOverAnInjectedCommunicator) {
  std::shared_ptr<detail::InProcessCommunicator> comm;
  const CrossDeviceOpsPtr ops = NcclAllReduce({.communicator = [&](const std::vector<LogicalDevice>& devices) {
    comm = std::make_shared<detail::InProcessCommunicator>(static_cast<int>(devices.size()));
    return comm;
  }});
  check_sum(ops, 3, 1001);
  ASSERT_TRUE(comm);
  ASSERT_EQ(comm->calls().size(), 3u);
  for (const auto& call : comm->calls()) EXPECT_EQ(call.count, 1001u);
}

TEST(LogicalGpus, TowerLogicalGpusAndTheApiCall) {
  const int before = logical_gpus_per_gpu();
  set_logical_gpus_per_gpu(3);
  EXPECT_EQ(logical_gpus_per_gpu(), 3);
  if (cuda_device_count() == 0) EXPECT_EQ(default_devices(), (std::vector<LogicalDevice>{{"cpu:0", Device::cpu()}}));
  else EXPECT_EQ(default_devices().size(), static_cast<std::size_t>(3 * cuda_device_count()));
  set_logical_gpus_per_gpu(before);
  EXPECT_THROW(set_logical_gpus_per_gpu(0), std::invalid_argument);
  EXPECT_EQ(logical_gpus_per_gpu(), before);
  EXPECT_EQ(logical_gpus(1, 1), (std::vector<LogicalDevice>{{"gpu:0", Device::cuda(0)}}));
  EXPECT_TRUE(logical_gpus(0, 4).empty());
}

}  // namespace
}  // namespace tower::distribute
