// Every cross-device op sums k replica buffers exactly (integers in float32 add exactly in any order), run by k
// threads as a strategy runs them, for odd sizes and every k from 2 to 5.
#include <gtest/gtest.h>

#include <thread>

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
  EXPECT_THROW(NcclAllReduce({.num_packs = 0}), std::invalid_argument);
  EXPECT_EQ(default_cross_device_ops(cpus)->name(), "InProcessAllReduce");
  EXPECT_EQ(default_cross_device_ops(gpus)->name(), "NcclAllReduce");
}

}  // namespace
}  // namespace tower::distribute
