// Replicas on a GPU, which only a machine with one can run (the tests skip themselves elsewhere): logical GPUs of
// one GPU train as one replica does (with SyncBatchNormalization, and holding their own copies of the variables),
// two physical GPUs with mirrored variables do too, the device sums of the cross-device ops, and an NCCL
// all-reduce.
#include <gtest/gtest.h>

#include <optional>
#include <thread>

#include "distribute/detail/device_communicator.h"
#include "distribute/detail/mirrored_replicas.h"
#include "distribute/replica_testing.h"
#include "tower/tower.h"

namespace tower {
namespace {

#define SKIP_WITHOUT_A_GPU() \
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU visible"

constexpr int kSteps = 20;
constexpr Index kGlobalBatch = 8;

std::vector<Tensor> host(const std::vector<Tensor>& tensors) {
  std::vector<Tensor> out;
  for (const Tensor& t : tensors) out.push_back(t.to(Device::cpu()));
  return out;
}

// 20 steps of the small convnet (with synchronized BatchNormalization when sync_bn) on cuda:0, under `strategy`
// or, without one, as a single replica; returns the weights. With `model_out`, the trained model is kept there.
std::vector<Tensor> train_on_gpu(const std::optional<distribute::Strategy>& strategy, std::vector<Tensor>& initial,
                                 bool sync_bn = false, std::optional<Model>* model_out = nullptr) {
  std::optional<Model> model;
  {
    std::optional<distribute::StrategyScope> scope;
    if (strategy) scope.emplace(strategy->scope());
    model.emplace(testing::small_convnet(sync_bn, sync_bn));
    model->compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy());
  }
  if (initial.empty())
    initial = host(model->get_weights());
  else
    model->set_weights(initial);
  if (!strategy) model->to(Device::cuda(0));
  const testing::Examples e = testing::seeded_examples(kSteps * kGlobalBatch, 21);
  for (int s = 0; s < kSteps; ++s)
    model->train_on_batch(e.x.slice(s * kGlobalBatch, (s + 1) * kGlobalBatch),
                          e.y.slice(s * kGlobalBatch, (s + 1) * kGlobalBatch));
  if (model_out) *model_out = model;
  return host(model->get_weights());
}

void expect_same_weights(const std::vector<Tensor>& got, const std::vector<Tensor>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t w = 0; w < got.size(); ++w)
    EXPECT_LE(testing::relative_difference(got[w], want[w]), 1e-5) << what << ", weight " << w;
}

// Every replica's copies equal the model's own variables.
void expect_identical_copies(Model& model, const std::string& what) {
  auto* replicas = dynamic_cast<distribute::detail::MirroredReplicas*>(model.impl().replicas());
  ASSERT_TRUE(replicas && replicas->mirrored()) << what;
  const std::vector<VariablePtr> mine = model.weights();
  for (int r = 1; r < replicas->num_local(); ++r) {
    const std::vector<VariablePtr> theirs = replicas->replica_weights(r);
    for (std::size_t i = 0; i < mine.size(); ++i)
      EXPECT_EQ(testing::relative_difference(theirs[i]->value.to(Device::cpu()), mine[i]->value.to(Device::cpu())),
                0.0)
          << what << ": replica " << r << "'s copy of " << mine[i]->path;
  }
}

using testing::LogicalGpusPerGpu;

TEST(LogicalGpus, ReplicasOnOneGpuMatchOneReplica_CUDA) {
  SKIP_WITHOUT_A_GPU();
  const LogicalGpusPerGpu four(4);
  std::vector<Tensor> initial;
  const std::vector<Tensor> single = train_on_gpu(std::nullopt, initial);
  for (int replicas : {2, 4})
    for (const char* ops : {"default", "HierarchicalCopyAllReduce"}) {
      std::vector<std::string> devices;
      for (int r = 0; r < replicas; ++r) devices.push_back("gpu:" + std::to_string(r));
      distribute::MirroredStrategy strategy(devices, std::string(ops) == "default"
                                                         ? nullptr
                                                         : distribute::CrossDeviceOpsPtr(
                                                               distribute::HierarchicalCopyAllReduce()));
      if (std::string(ops) == "default") EXPECT_EQ(strategy.cross_device_ops()->name(), "ReductionToOneDevice");
      const std::vector<Tensor> got = train_on_gpu(strategy, initial);
      ASSERT_EQ(got.size(), single.size());
      for (std::size_t w = 0; w < got.size(); ++w)
        EXPECT_LE(testing::relative_difference(got[w], single[w]), 1e-5)
            << replicas << " logical GPUs (" << ops << "), weight " << w;
      EXPECT_GT(testing::relative_difference(got[0], initial[0]), 1e-3) << "training did not move the weights";
    }
}

// SyncBatchNormalization on the GPU: its sums and counts are added over the logical GPUs on the device, so 2 and 4
// replicas train as one replica does on the same global batches.
TEST(LogicalGpus, SyncBatchNormMatchesOneReplica_CUDA) {
  SKIP_WITHOUT_A_GPU();
  const LogicalGpusPerGpu four(4);
  std::vector<Tensor> initial;
  const std::vector<Tensor> single = train_on_gpu(std::nullopt, initial, true);
  for (int replicas : {2, 4}) {
    std::vector<std::string> devices;
    for (int r = 0; r < replicas; ++r) devices.push_back("gpu:" + std::to_string(r));
    distribute::MirroredStrategy strategy(devices);
    expect_same_weights(train_on_gpu(strategy, initial, true), single,
                        std::to_string(replicas) + " logical GPUs with SyncBN");
  }
}

// Logical GPUs holding their own copies of the variables (mirror_variables), as replicas on several GPUs do.
TEST(LogicalGpus, ReplicasWithCopiesMatchOneReplica_CUDA) {
  SKIP_WITHOUT_A_GPU();
  const LogicalGpusPerGpu two(2);
  std::vector<Tensor> initial;
  const std::vector<Tensor> single = train_on_gpu(std::nullopt, initial, true);
  distribute::MirroredStrategy strategy({"gpu:0", "gpu:1"}, nullptr, {.mirror_variables = true});
  std::optional<Model> model;
  expect_same_weights(train_on_gpu(strategy, initial, true, &model), single, "2 logical GPUs with copies, SyncBN");
  expect_identical_copies(*model, "2 logical GPUs with copies");
}

// Two physical GPUs: each replica holds its own copies on its GPU, the gradients are summed with NCCL, and the
// copies stay identical.
TEST(MirroredVariables, TwoPhysicalGpusMatchOneReplica_CUDA) {
  if (cuda_device_count() < 2) GTEST_SKIP() << "fewer than two GPUs";
  const LogicalGpusPerGpu one(1);
  for (const bool sync_bn : {false, true}) {
    std::vector<Tensor> initial;
    const std::vector<Tensor> single = train_on_gpu(std::nullopt, initial, sync_bn);
    distribute::MirroredStrategy strategy({"gpu:0", "gpu:1"});
    EXPECT_EQ(strategy.cross_device_ops()->name(), "NcclAllReduce");
    std::optional<Model> model;
    const std::string what = std::string("cuda:0 and cuda:1") + (sync_bn ? " with SyncBN" : "");
    expect_same_weights(train_on_gpu(strategy, initial, sync_bn, &model), single, what);
    expect_identical_copies(*model, what);
    EXPECT_EQ(model->weights()[0]->value.device(), Device::cuda(0));
    auto* replicas = dynamic_cast<distribute::detail::MirroredReplicas*>(model->impl().replicas());
    ASSERT_TRUE(replicas);
    EXPECT_EQ(replicas->replica_weights(1)[0]->value.device(), Device::cuda(1));
  }
}

// The device sums of ReductionToOneDevice and HierarchicalCopyAllReduce (copies and the backend's add kernel) for
// k replica buffers on cuda:0, against the host's sums; integers add exactly in any order.
TEST(CrossDeviceOpsOnTheGpu, SumEveryReplica_CUDA) {
  SKIP_WITHOUT_A_GPU();
  for (const distribute::CrossDeviceOpsPtr& ops :
       {distribute::CrossDeviceOpsPtr(distribute::ReductionToOneDevice()),
        distribute::CrossDeviceOpsPtr(distribute::HierarchicalCopyAllReduce())})
    for (int k : {2, 3, 4})
      for (Index count : {1, 17, 4099}) {
        const std::vector<distribute::LogicalDevice> devices = distribute::logical_gpus(1, k);
        std::vector<Tensor> parts;
        std::vector<float*> pointers;
        std::vector<float> want(static_cast<std::size_t>(count), 0.f);
        for (int r = 0; r < k; ++r) {
          std::vector<float> v(static_cast<std::size_t>(count));
          for (Index i = 0; i < count; ++i) {
            v[static_cast<std::size_t>(i)] = static_cast<float>((i * 7 + r * 13) % 101 - 50);
            want[static_cast<std::size_t>(i)] += v[static_cast<std::size_t>(i)];
          }
          parts.push_back(Tensor::from_vector(v, Shape{count}).to(Device::cuda(0)));
          pointers.push_back(parts.back().data<float>());
        }
        Tensor out = Tensor::zeros(Shape{count}, DType::float32, Device::cuda(0));
        distribute::detail::Barrier barrier;
        barrier.reset(k);
        std::vector<std::thread> threads;
        for (int r = 0; r < k; ++r)
          threads.emplace_back(
              [&, r] { ops->reduce(r, k, pointers.data(), out.data<float>(), count, devices, barrier); });
        for (auto& t : threads) t.join();
        EXPECT_EQ(out.to_vector(), want) << ops->name() << " k=" << k << " count=" << count;
      }
}

TEST(NcclCommunicator, SingleRankAllReduce_CUDA) {
  SKIP_WITHOUT_A_GPU();
  ASSERT_TRUE(distribute::detail::nccl_built());
  auto comm = distribute::detail::make_nccl_communicator({{"gpu:0", Device::cuda(0)}}, nullptr, "test");
  EXPECT_EQ(comm->size(), 1);
  const std::vector<float> values{1.f, -2.f, 3.5f, 1e-3f, 7.f};
  Tensor send = Tensor::from_vector(values, Shape{5}).to(Device::cuda(0));
  Tensor receive = Tensor::zeros(Shape{5}, DType::float32, Device::cuda(0));
  comm->all_reduce_sum(0, send.data<float>(), receive.data<float>(), 5);
  comm->join(0);
  EXPECT_EQ(receive.to_vector(), values);
  comm->all_reduce_sum(0, send.data<float>(), send.data<float>(), 5);  // in place
  comm->join(0);
  EXPECT_EQ(send.to_vector(), values);
}

// With two GPUs or more, one rank per GPU: NcclAllReduce sums them as the host does.
TEST(NcclCommunicator, OneRankPerGpu_CUDA) {
  if (cuda_device_count() < 2) GTEST_SKIP() << "fewer than two GPUs";
  const int k = cuda_device_count();
  const std::vector<distribute::LogicalDevice> devices = distribute::logical_gpus(k, 1);
  std::vector<Tensor> parts;
  std::vector<float*> pointers;
  for (int r = 0; r < k; ++r) {
    parts.push_back(Tensor::from_vector(std::vector<float>(33, static_cast<float>(r + 1)), Shape{33})
                        .to(Device::cuda(r)));
    pointers.push_back(parts.back().data<float>());
  }
  Tensor out = Tensor::zeros(Shape{33}, DType::float32, Device::cuda(0));
  const distribute::CrossDeviceOpsPtr ops = distribute::NcclAllReduce();
  distribute::detail::Barrier barrier;
  barrier.reset(k);
  std::vector<std::thread> threads;
  for (int r = 0; r < k; ++r)
    threads.emplace_back([&, r] {
      ops->reduce(r, k, pointers.data(), out.data<float>(), 33, devices, barrier);
      ops->end_reduction(r, devices);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(out.to_vector(), std::vector<float>(33, static_cast<float>(k * (k + 1) / 2)));
}

}  // namespace
}  // namespace tower
