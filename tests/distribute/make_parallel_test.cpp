// make_parallel: a batched function split over towers gives what the unsplit call gives, for batch sizes that do
// not divide evenly, with every tower on its own thread and its own rows; a model made parallel trains, evaluates
// and predicts as the model alone does. Errors name the problem.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "api/backend/backend.h"
#include "distribute/replica_testing.h"
#include "tower/tower.h"

namespace tower {
namespace {

using testing::relative_difference;

Tensor random_tensor(Shape shape, std::uint64_t seed) {
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  std::uint64_t s = seed;
  for (float& x : v) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    x = static_cast<float>(static_cast<double>(s >> 40) / static_cast<double>(1ULL << 24)) - 0.5f;
  }
  return Tensor::from_vector(v, shape);
}

// The seed's function: outputs relu(x w + b) [n, 5] and the rows' sums of z [n, 1] (two outputs, one input each
// of two batched inputs: x [n, 3] and z [n, 2, 2]).
struct Dense {
  Tensor w = random_tensor(Shape{3, 5}, 1), b = random_tensor(Shape{5}, 2);

  std::vector<Tensor> operator()(const std::vector<Tensor>& in) const {
    const Tensor& x = in[0];
    const Index n = x.dim(0);
    backend::Backend& be = backend::get(x.device());
    Tensor y(Shape{n, 5}, DType::float32, x.device());
    be.gemm(false, false, n, 5, 3, 1.f, x.data<float>(), 3, w.data<float>(), 5, 0.f, y.data<float>(), 5);
    be.add_bias(y.data<float>(), b.data<float>(), n, 5);
    be.activation_forward(backend::ActivationKind::relu, {}, y.data<float>(), y.data<float>(), n * 5);
    const Tensor z = in[1].to(Device::cpu());
    Tensor sums(Shape{n, 1});
    for (Index r = 0; r < n; ++r) {
      float s = 0;
      for (Index j = 0; j < 4; ++j) s += z.data<float>()[r * 4 + j];
      sums.data<float>()[r] = s;
    }
    return {y, sums};
  }
};

class MakeParallelSplits : public ::testing::TestWithParam<std::tuple<int, Index>> {};

TEST_P(MakeParallelSplits, OutputEqualsTheUnsplitCall) {
  const auto [towers, n] = GetParam();
  const Dense dense;
  std::mutex mutex;
  std::map<std::thread::id, std::vector<Index>> rows_by_thread;
  auto fn = [&](const std::vector<Tensor>& in) {
    {
      const std::lock_guard lock(mutex);
      rows_by_thread[std::this_thread::get_id()].push_back(in[0].dim(0));
    }
    return dense(in);
  };
  std::vector<std::string> devices;
  for (int t = 0; t < towers; ++t) devices.push_back("cpu:" + std::to_string(t));
  const distribute::BatchedFunction parallel = distribute::make_parallel(fn, devices);
  const Tensor x = random_tensor(Shape{n, 3}, 10 + static_cast<std::uint64_t>(n));
  const Tensor z = random_tensor(Shape{n, 2, 2}, 20 + static_cast<std::uint64_t>(n));
  const std::vector<Tensor> want = dense({x, z});
  const std::vector<Tensor> got = parallel({x, z});
  ASSERT_EQ(got.size(), 2u);
  for (std::size_t o = 0; o < 2; ++o) {
    EXPECT_EQ(got[o].shape(), want[o].shape()) << "output " << o;
    EXPECT_LE(relative_difference(got[o], want[o]), 1e-6) << "output " << o;
  }
  // One thread per tower, each with its consecutive rows (as even as possible), and a second call reuses them.
  EXPECT_EQ(rows_by_thread.size(), static_cast<std::size_t>(towers));
  std::multiset<Index> sizes;
  for (const auto& [id, rows] : rows_by_thread) sizes.insert(rows.begin(), rows.end());
  std::multiset<Index> even;
  for (int t = 0; t < towers; ++t) even.insert(n / towers + (t < n % towers ? 1 : 0));
  EXPECT_EQ(sizes, even);
  parallel({x, z});
  EXPECT_EQ(rows_by_thread.size(), static_cast<std::size_t>(towers));
}

INSTANTIATE_TEST_SUITE_P(, MakeParallelSplits,
                         ::testing::Combine(::testing::Values(1, 2, 3), ::testing::Values<Index>(7, 13)),
                         [](const ::testing::TestParamInfo<std::tuple<int, Index>>& info) {
                           return std::to_string(std::get<0>(info.param)) + "Towers_Batch" +
                                  std::to_string(std::get<1>(info.param));
                         });

TEST(MakeParallel, TowerRowsAreConsecutiveAndEven) {
  EXPECT_EQ(distribute::detail::tower_rows(7, 0, 3), (std::pair<Index, Index>{0, 3}));
  EXPECT_EQ(distribute::detail::tower_rows(7, 1, 3), (std::pair<Index, Index>{3, 5}));
  EXPECT_EQ(distribute::detail::tower_rows(7, 2, 3), (std::pair<Index, Index>{5, 7}));
  EXPECT_EQ(distribute::detail::tower_rows(4, 3, 4), (std::pair<Index, Index>{3, 4}));
}

void expect_invalid(const std::function<void()>& call, const std::string& part) {
  try {
    call();
    ADD_FAILURE() << "no error; expected one containing: " << part;
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("make_parallel: ", 0), 0u) << message;
    EXPECT_NE(message.find(part), std::string::npos) << message;
  }
}

TEST(MakeParallel, ErrorsNameTheProblem) {
  const auto identity = [](const std::vector<Tensor>& in) { return in; };
  expect_invalid([&] { distribute::make_parallel(identity, {}); }, "empty");
  expect_invalid([&] { distribute::make_parallel(identity, {"cpu:0", "tpu:0"}); }, "tpu:0");
  const auto two = distribute::make_parallel(identity, {"cpu:0", "cpu:1", "cpu:2"});
  expect_invalid([&] { two({Tensor::zeros(Shape{2, 4})}); }, "a batch of 2 rows cannot be split over 3 towers");
  expect_invalid([&] { two({Tensor::zeros(Shape{6, 4}), Tensor::zeros(Shape{5, 4})}); }, "input 1 has 5 rows");
  expect_invalid([&] { two({}); }, "no input");
  // A tower returning one output more than the others.
  const auto uneven = distribute::make_parallel(
      [](const std::vector<Tensor>& in) {
        std::vector<Tensor> out = in;
        if (in[0].dim(0) == 3) out.push_back(in[0]);
        return out;
      },
      {"cpu:0", "cpu:1"});
  expect_invalid([&] { uneven({Tensor::zeros(Shape{5, 2})}); }, "returned 1 outputs, the tower on cpu:0 2");
  const auto shapes = distribute::make_parallel(
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{Tensor::zeros(Shape{in[0].dim(0), in[0].dim(0)})};
      },
      {"cpu:0", "cpu:1"});
  expect_invalid([&] { shapes({Tensor::zeros(Shape{5, 2})}); }, "cannot be concatenated");
  // An exception inside a tower reaches the caller.
  const auto throwing = distribute::make_parallel(
      [](const std::vector<Tensor>&) -> std::vector<Tensor> { throw std::runtime_error("tower failed"); },
      {"cpu:0", "cpu:1"});
  EXPECT_THROW(throwing({Tensor::zeros(Shape{4, 1})}), std::runtime_error);
}

// make_parallel(model): the towers train as the model alone does (same data and initial weights; weights after
// 20 steps and a short last batch to 1e-5), and the parallel model's predict equals the model's.
TEST(MakeParallel, ModelTrainsAsTheModelAlone) {
  const testing::Examples e = testing::seeded_examples(20 * 9 + 5, 51);
  const auto data = data::Dataset::from_tensor_slices({e.x, e.y}).batch(9);
  Model alone = testing::small_convnet(false, false);
  const std::vector<Tensor> initial = alone.get_weights();
  alone.compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy(),
                {metrics::SparseCategoricalAccuracy()});
  FitOptions options;
  options.verbose = 0;
  const callbacks::History want = alone.fit(data, options);

  Model model = testing::small_convnet(false, false);
  model.set_weights(initial);
  Model parallel = distribute::make_parallel(model, {"cpu:0", "cpu:1", "cpu:2"});
  ASSERT_TRUE(parallel.impl().distribution());
  EXPECT_EQ(parallel.impl().distribution()->num_replicas_in_sync(), 3);
  parallel.compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy(),
                   {metrics::SparseCategoricalAccuracy()});
  const callbacks::History got = parallel.fit(data, options);
  ASSERT_NE(parallel.impl().replicas(), nullptr);
  EXPECT_EQ(parallel.impl().replicas()->num_local(), 3);

  const std::vector<Tensor> trained = alone.get_weights(), towers = model.get_weights();
  ASSERT_EQ(towers.size(), trained.size());
  for (std::size_t i = 0; i < trained.size(); ++i) EXPECT_LE(relative_difference(towers[i], trained[i]), 1e-5) << i;
  EXPECT_GT(relative_difference(trained[0], initial[0]), 1e-3) << "training did not move the weights";
  for (const std::string& key : want.keys())
    EXPECT_LE(std::fabs(got[key][0] - want[key][0]), 1e-5 * std::fabs(want[key][0])) << key;
  EXPECT_LE(relative_difference(parallel.predict(e.x), alone.predict(e.x)), 1e-5);
}

TEST(MakeParallel, ModelErrorsNameTheProblem) {
  Model model = testing::small_convnet(false, false);
  expect_invalid([&] { distribute::make_parallel(model, {}); }, "empty");
  expect_invalid([&] { distribute::make_parallel(model, {"cpu:0", "gpu:7"}); }, "gpu:7");
}

}  // namespace
}  // namespace tower
