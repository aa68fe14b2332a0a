// The in-process communicator the tests inject where NCCL runs on GPUs: sums in rank order into every rank,
// in place or not, from a thread per rank or from one thread in a group; mismatched calls are errors.
#include "distribute/detail/device_communicator.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>

namespace tower::distribute::detail {
namespace {

std::vector<float> values(int rank, std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>((static_cast<int>(i) * 5 + rank * 11) % 37 - 18);
  return v;
}

TEST(InProcessCommunicator, SumsOverEveryRankFromAThreadEach) {
  const int k = 3;
  const std::size_t n = 1001;
  InProcessCommunicator comm(k);
  std::vector<std::vector<float>> buffers, received(k, std::vector<float>(n, -1.f));
  std::vector<float> want(n, 0.f);
  for (int r = 0; r < k; ++r) {
    buffers.push_back(values(r, n));
    for (std::size_t i = 0; i < n; ++i) want[i] += buffers.back()[i];
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < k; ++r)
    threads.emplace_back([&, r] {
      float* b = buffers[static_cast<std::size_t>(r)].data();
      // Rank 1 receives out of place, the others in place.
      comm.all_reduce_sum(r, b, r == 1 ? received[1].data() : b, n);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(buffers[0], want);
  EXPECT_EQ(received[1], want);
  EXPECT_EQ(buffers[1], values(1, n));
  EXPECT_EQ(buffers[2], want);
  const auto calls = comm.calls();
  ASSERT_EQ(calls.size(), 3u);
  for (const auto& c : calls) {
    EXPECT_EQ(c.sequence, 0u);
    EXPECT_EQ(c.count, n);
  }
}

TEST(InProcessCommunicator, OneThreadDrivesEveryRankInAGroup) {
  const int k = 4;
  InProcessCommunicator comm(k);
  std::vector<std::vector<float>> a, b;
  for (int r = 0; r < k; ++r) {
    a.push_back(values(r, 17));
    b.push_back(values(r + 7, 5));
  }
  comm.group_start();
  for (int r = 0; r < k; ++r) comm.all_reduce_sum(r, a[r].data(), a[r].data(), 17);
  comm.group_start();  // groups nest
  for (int r = 0; r < k; ++r) comm.all_reduce_sum(r, b[r].data(), b[r].data(), 5);
  comm.group_end();
  comm.group_end();
  for (int r = 1; r < k; ++r) {
    EXPECT_EQ(a[r], a[0]);
    EXPECT_EQ(b[r], b[0]);
  }
  float want = 0.f;
  for (int r = 0; r < k; ++r) want += values(r, 17)[3];
  EXPECT_EQ(a[0][3], want);
  // The log keeps each rank's calls in order.
  const auto calls = comm.calls();
  ASSERT_EQ(calls.size(), 8u);
  EXPECT_EQ(calls[0].rank, 0);
  EXPECT_EQ(calls[0].count, 17u);
  EXPECT_EQ(calls[4].sequence, 1u);
  EXPECT_EQ(calls[4].count, 5u);
}

TEST(InProcessCommunicator, RanksThatDisagreeOnTheCountAreAnError) {
  InProcessCommunicator comm(2);
  std::vector<float> a(4, 1.f), b(5, 1.f);
  comm.group_start();
  comm.all_reduce_sum(0, a.data(), a.data(), 4);
  comm.all_reduce_sum(1, b.data(), b.data(), 5);
  try {
    comm.group_end();
    ADD_FAILURE() << "no error";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("4 values on rank 0 and 5 on rank 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(InProcessCommunicator(0), std::invalid_argument);
  EXPECT_THROW(comm.group_end(), std::logic_error);
}

TEST(NcclCommunicator, RefusesCpuDevicesAndTwoRanksOnOneGpu) {
  const auto message = [](const std::vector<LogicalDevice>& devices) {
    try {
      make_nccl_communicator(devices, nullptr, "Who");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no exception");
  };
  std::string m = message({{"cpu:0", Device::cpu()}});
  EXPECT_NE(m.find("Who: NCCL reduces between GPUs; cpu:0 is a CPU device"), std::string::npos) << m;
  m = message({{"gpu:0", Device::cuda(0)}, {"gpu:1", Device::cuda(0)}});
  EXPECT_NE(m.find("NCCL refuses two ranks on one GPU, and gpu:0 and gpu:1 are both on cuda:0"), std::string::npos)
      << m;
}

}  // namespace
}  // namespace tower::distribute::detail
