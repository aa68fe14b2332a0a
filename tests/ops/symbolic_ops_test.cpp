// tower::ops on symbolic tensors: nodes of the functional graph that compute what the same ops compute eagerly,
// train through the model's plan as the same model built from layers, and name themselves in errors.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/tower/tower.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

TEST(SymbolicOps, AModelOfOpsComputesWhatTheOpsComputeEagerly) {
  auto x = Input({3, 4});
  Model model({x}, {ops::relu(x * 2.f) - ops::tanh(x) / 3.f + 1.f + ops::mean(x, {-1}, true) * x});
  EXPECT_EQ(model.outputs()[0].shape(), (Shape{-1, 3, 4}));
  const Tensor xs = testing::random_tensor({2, 3, 4}, 1);
  const std::vector<float> got = model.predict(xs).to_vector();
  const std::vector<float> want =
      (ops::relu(xs * 2.f) - ops::tanh(xs) / 3.f + 1.f + ops::mean(xs, {-1}, true) * xs).to_vector();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
}

TEST(SymbolicOps, TheRestOfTheOpsComputeWhatTheyComputeEagerly) {
  const auto f = [](const auto& x) {
    const auto masked = ops::where(ops::greater(x, ops::negative(x)), ops::power(x, 2.f), ops::erf(x));
    const auto stacked = ops::sum(ops::stack({x, ops::log1p(ops::abs(x))}, 1), {1});
    return masked + stacked + ops::logsumexp(x, {-1}, true) + ops::log_softmax(x) + ops::cumsum(x, 2) +
           ops::squeeze(ops::expand_dims(x, 1), {1}) * ops::max(x, {1}, true) - ops::min(x, {2}, true) +
           ops::rsqrt(ops::square(x) + 1.f) * ops::less_equal(x, ops::square(x));
  };
  auto x = Input({3, 4});
  Model model({x}, {f(x)});
  const Tensor xs = testing::random_tensor({2, 3, 4}, 7);
  const std::vector<float> got = model.predict(xs).to_vector(), want = f(xs).to_vector();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
  EXPECT_THROW(ops::expand_dims(x, 0), std::invalid_argument);
  EXPECT_THROW(ops::stack({x, x}, 0), std::invalid_argument);
  EXPECT_THROW(ops::cumsum(x, 0), std::invalid_argument);
}

// The shape ops as nodes: split, slice, take of constant indices, one_hot, pad, tile and repeat, each keeping the
// batch axis, compute what the eager ops compute; a node that would touch the batch axis is refused.
TEST(SymbolicOps, TheShapeOpsComputeWhatTheyComputeEagerly) {
  const Tensor picks = Tensor::from_vector(std::vector<std::int32_t>{3, 0, 3}, {3});
  const auto f = [&](const auto& x) {
    const auto parts = ops::split(x, 2, 2);                                            // two [N, 3, 2]
    const auto a = ops::pad(parts[1], {{0, 0}, {1, 0}, {0, 1}}, 0.5f);                 // [N, 4, 3]
    const auto b = ops::repeat(ops::slice(parts[0], {0, 1, 0}, {-1, 2, 2}), 2, 1);     // [N, 4, 2]
    const auto c = ops::pad(ops::tile(ops::take(x, picks, 2), {1, 1, 2}), {{0, 0}, {0, 1}, {0, 0}});  // [N, 4, 6]
    return ops::concatenate({a, b, c}, 2);                                             // [N, 4, 11]
  };
  auto x = Input({3, 4});
  Model model({x}, {f(x)});
  EXPECT_EQ(model.outputs()[0].shape(), (Shape{-1, 4, 11}));
  const Tensor xs = testing::random_tensor({2, 3, 4}, 8);
  EXPECT_EQ(model.predict(xs).to_vector(), f(xs).to_vector());

  auto ids = Input({2});
  Model hot({ids}, {ops::one_hot(ids, 5)});
  const Tensor id_values = Tensor::from_vector(std::vector<float>{4, 0, 2, 7}, {2, 2});
  EXPECT_EQ(hot.predict(id_values).to_vector(), ops::one_hot(id_values, 5).to_vector());

  EXPECT_THROW(ops::split(x, 3, 2), std::invalid_argument);
  EXPECT_THROW(ops::split(x, 2, 0), std::invalid_argument);
  EXPECT_THROW(ops::slice(x, {1, 0, 0}, {-1, 3, 4}), std::invalid_argument);
  EXPECT_THROW(ops::pad(x, {{1, 0}, {0, 0}, {0, 0}}), std::invalid_argument);
  EXPECT_THROW(ops::tile(x, {2, 1, 1}), std::invalid_argument);
  EXPECT_THROW(ops::repeat(x, 2, 0), std::invalid_argument);
  EXPECT_THROW(ops::take(x, picks, -3), std::invalid_argument);
}

TEST(SymbolicOps, TrainAsTheSameModelBuiltFromLayers) {
  const Tensor x = testing::random_tensor({16, 6}, 3);
  std::vector<float> labels(16);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<float>(i % 3);
  const Tensor y = Tensor::from_vector(labels, Shape{16});

  auto in_a = Input({6});
  auto h = layers::Dense({.units = 4})(in_a);
  Model with_ops({in_a}, {layers::Dense({.units = 3, .activation = "softmax"})(ops::tanh(h) * 0.5f + ops::square(h) * 0.1f)});
  auto in_b = Input({6});
  auto h_b = layers::Dense({.units = 4})(in_b);
  auto t = layers::Rescaling({.scale = 0.5f})(layers::Activation({.activation = "tanh"})(h_b));
  auto q = layers::Rescaling({.scale = 0.1f})(layers::Multiply()(std::vector<SymbolicTensor>{h_b, h_b}));
  Model with_layers({in_b}, {layers::Dense({.units = 3, .activation = "softmax"})(layers::Add()(std::vector<SymbolicTensor>{t, q}))});
  with_layers.set_weights(with_ops.get_weights());
  for (Model* m : {&with_ops, &with_layers})
    m->compile(optimizers::SGD({.learning_rate = 0.1, .momentum = 0.9}), losses::SparseCategoricalCrossentropy());
  const callbacks::History a = with_ops.fit(x, y, {.epochs = 8, .batch_size = 8, .verbose = 0, .shuffle = false});
  const callbacks::History b = with_layers.fit(x, y, {.epochs = 8, .batch_size = 8, .verbose = 0, .shuffle = false});
  for (std::size_t e = 0; e < a["loss"].size(); ++e) EXPECT_NEAR(a["loss"][e], b["loss"][e], 1e-5) << e;
  EXPECT_LT(a["loss"].back(), a["loss"].front());
}

TEST(SymbolicOps, ErrorsNameTheNode) {
  auto x = Input({3, 4});
  try {
    ops::add(x, Input({5}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("(add)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("do not broadcast"), std::string::npos) << msg;
  }
  EXPECT_THROW(ops::sum(x, {0}), std::invalid_argument);
  Model model({x}, {ops::exp(x)});
  try {
    model->serialize();
    FAIL() << "expected std::logic_error";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("(exp)"), std::string::npos) << e.what();
  }
}

// Self-attention written with symbolic ops between Dense layers: einsum, softmax, matmul, concatenate, transpose
// and reshape as nodes compute what the same ops compute eagerly from the layers' weights, and the model trains.
TEST(SymbolicOps, SelfAttentionOfOpsMatchesTheEagerOpsAndTrains) {
  set_random_seed(9);
  auto x = Input({4, 6});
  auto q = layers::Dense({.units = 6})(x), k = layers::Dense({.units = 6})(x), v = layers::Dense({.units = 6})(x);
  auto weights = ops::softmax(ops::einsum("bqd,bkd->bqk", q, k) * (1.f / std::sqrt(6.f)), -1);
  auto attended = ops::matmul(weights, v);                                              // [N, 4, 6]
  auto joined = ops::transpose(ops::concatenate({attended, x}, -1), {0, 2, 1});         // [N, 12, 4]
  Model model({x}, {layers::Dense({.units = 3, .activation = "softmax"})(ops::reshape(joined, Shape{-1, 48}))});
  EXPECT_EQ(model.outputs()[0].shape(), (Shape{-1, 3}));

  const Tensor xs = testing::random_tensor({5, 4, 6}, 2);
  const std::vector<VariablePtr> w = model.weights();  // q, k, v kernels and biases, then the head's
  const auto dense = [&](const Tensor& in, int layer) { return ops::matmul(in, w[2 * layer]->value) + w[2 * layer + 1]->value; };
  const Tensor eq = dense(xs, 0), ek = dense(xs, 1), ev = dense(xs, 2);
  const Tensor ew = ops::softmax(ops::matmul(eq, ops::transpose(ek, {0, 2, 1})) * (1.f / std::sqrt(6.f)), -1);
  const Tensor ej = ops::transpose(ops::concatenate({ops::matmul(ew, ev), xs}, -1), {0, 2, 1});
  const std::vector<float> want = ops::softmax(dense(ops::reshape(ej, {5, 48}), 3)).to_vector();
  const std::vector<float> got = model.predict(xs).to_vector();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;

  std::vector<float> labels(20);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<float>(i % 3);
  model.compile(optimizers::Adam(1e-2), losses::SparseCategoricalCrossentropy());
  const callbacks::History h = model.fit(testing::random_tensor({20, 4, 6}, 3), Tensor::from_vector(labels, {20}),
                                         {.epochs = 15, .batch_size = 10, .verbose = 0, .shuffle = false});
  EXPECT_LT(h["loss"].back(), 0.8 * h["loss"].front());

  EXPECT_THROW(ops::reshape(joined, Shape{5, 48}), std::invalid_argument);
  EXPECT_THROW(ops::transpose(joined, {1, 0, 2}), std::invalid_argument);
  EXPECT_THROW(ops::concatenate({attended, x}, 0), std::invalid_argument);
}

// The README's example.
TEST(SymbolicOps, TheReadmesModelBuildsAndPredicts) {
  auto x = Input({16});
  auto h = layers::Dense({.units = 32})(x);
  Model model(x, layers::Dense({.units = 10})(ops::gelu(h) * ops::sigmoid(h) + h * 0.5f));
  EXPECT_EQ(model.outputs()[0].shape(), (Shape{-1, 10}));
  EXPECT_EQ(model.predict(testing::random_tensor({3, 16}, 5)).shape(), (Shape{3, 10}));
}

}  // namespace
}  // namespace tower
