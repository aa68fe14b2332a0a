// tower::ops' values, errors and recording: NumPy's broadcasting and reductions, errors that name the op and the
// shapes, and a GradientTape that records ops on watched tensors and on a model's outputs, and nothing else; each op
// against NumPy's results on small cases, with gradients worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "api/ops/ops.h"
#include "api/ops/recorder.h"
#include "api/tower/tower.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

Tensor floats(std::vector<float> values, Shape shape) { return Tensor::from_vector(values, std::move(shape)); }

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected std::invalid_argument";
  return "";
}

TEST(Ops, BroadcastingFollowsNumPy) {
  const Tensor a = floats({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  const Tensor b = floats({10, 20, 30}, Shape{3});
  const Tensor c = floats({100, 200}, Shape{2, 1});
  EXPECT_EQ((a + b).to_vector(), (std::vector<float>{11, 22, 33, 14, 25, 36}));
  EXPECT_EQ((a * c).to_vector(), (std::vector<float>{100, 200, 300, 800, 1000, 1200}));
  EXPECT_EQ(ops::add(b, c).shape(), (Shape{2, 3}));
  EXPECT_EQ((2.f - a).to_vector(), (std::vector<float>{1, 0, -1, -2, -3, -4}));
  EXPECT_EQ(ops::maximum(a, ops::scalar(3.5f)).to_vector(), (std::vector<float>{3.5, 3.5, 3.5, 4, 5, 6}));
  EXPECT_EQ(ops::equal(a, ops::scalar(2.f)).to_vector(), (std::vector<float>{0, 1, 0, 0, 0, 0}));
}

TEST(Ops, ReductionsOverAxesWithAndWithoutKeepdims) {
  const Tensor a = floats({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  EXPECT_EQ(ops::sum(a).shape(), Shape{});
  EXPECT_EQ(ops::sum(a).to_vector(), std::vector<float>{21});
  EXPECT_EQ(ops::sum(a, {0}).to_vector(), (std::vector<float>{5, 7, 9}));
  EXPECT_EQ(ops::sum(a, {-1}, true).shape(), (Shape{2, 1}));
  EXPECT_EQ(ops::sum(a, {-1}, true).to_vector(), (std::vector<float>{6, 15}));
  EXPECT_EQ(ops::mean(a, {1}).to_vector(), (std::vector<float>{2, 5}));
  EXPECT_EQ(ops::sum(a, {0, 1, -1}).to_vector(), std::vector<float>{21});  // repeats counted once
  EXPECT_EQ(ops::matmul(a, ops::reshape(a, Shape{3, 2})).to_vector(), (std::vector<float>{22, 28, 49, 64}));
  EXPECT_EQ(ops::broadcast_to(floats({1, 2}, Shape{2, 1}), Shape{2, 2}).to_vector(),
            (std::vector<float>{1, 1, 2, 2}));
}

TEST(Ops, ShapesOfTheReshapingOps) {
  const Tensor a = floats({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  EXPECT_EQ(ops::transpose(a).to_vector(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(ops::concatenate({a, a}, 0).shape(), (Shape{4, 3}));
  EXPECT_EQ(ops::concatenate({a, ops::sum(a, {1}, true)}, -1).to_vector(),
            (std::vector<float>{1, 2, 3, 6, 4, 5, 6, 15}));
  EXPECT_EQ(ops::clip(a, 2.f, 4.5f).to_vector(), (std::vector<float>{2, 2, 3, 4, 4.5, 4.5}));
  EXPECT_NEAR(ops::var(a).to_vector()[0], 35.0 / 12.0, 1e-6);
  const std::vector<float> p = ops::softmax(a).to_vector();
  EXPECT_NEAR(p[0] + p[1] + p[2], 1.0, 1e-6);
  std::string msg = message_of([&] { ops::concatenate({a, floats({1, 2}, Shape{2})}, 0); });
  EXPECT_NE(msg.find("ops.concatenate: shapes (2, 3) and (2,)"), std::string::npos) << msg;
  msg = message_of([&] { ops::transpose(a, {0, 0}); });
  EXPECT_NE(msg.find("ops.transpose"), std::string::npos) << msg;
}

TEST(Ops, ErrorsNameTheOpAndTheShapes) {
  const Tensor a = Tensor::zeros(Shape{2, 3}), b = Tensor::zeros(Shape{4});
  std::string msg = message_of([&] { ops::multiply(a, b); });
  EXPECT_NE(msg.find("ops.multiply"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(2, 3)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(4,)"), std::string::npos) << msg;
  msg = message_of([&] { ops::sum(a, {2}); });
  EXPECT_NE(msg.find("ops.sum: axis 2 is out of range for shape (2, 3)"), std::string::npos) << msg;
  msg = message_of([&] { ops::matmul(a, a); });
  EXPECT_NE(msg.find("ops.matmul: shapes (2, 3) and (2, 3) do not multiply"), std::string::npos) << msg;
  msg = message_of([&] { ops::exp(Tensor::zeros(Shape{2}, DType::int32)); });
  EXPECT_NE(msg.find("ops.exp: the operand must be float32, got int32"), std::string::npos) << msg;
  msg = message_of([&] { ops::reshape(a, Shape{4}); });
  EXPECT_NE(msg.find("ops.reshape"), std::string::npos) << msg;
  msg = message_of([&] { ops::broadcast_to(a, Shape{3}); });
  EXPECT_NE(msg.find("ops.broadcast_to"), std::string::npos) << msg;
}

TEST(Ops, ATapeRecordsOnlyWhatDependsOnItsSources) {
  const Tensor x = floats({1, 2, 3}, Shape{3}), c = floats({4, 5, 6}, Shape{3});
  GradientTape tape;
  tape.watch(x);
  const Tensor unrelated = ops::square(c);  // on no source: a constant to the tape
  const Tensor loss = ops::sum(ops::multiply(x, unrelated) + ops::stop_gradient(ops::square(x)));
  const std::vector<Tensor> g = tape.gradient(loss, std::vector<Tensor>{x});
  EXPECT_EQ(g[0].to_vector(), (std::vector<float>{16, 25, 36}));  // square(x) was stopped
  // Not watched, not a source.
  GradientTape other;
  const Tensor y = ops::sum(ops::square(x));
  const std::string msg = [&] {
    try {
      other.gradient(y, std::vector<Tensor>{x});
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  }();
  EXPECT_NE(msg.find("is not a tensor this tape watches"), std::string::npos) << msg;
}

// A loss written with ops on a model's output reaches the model's weights through the model's own backward: the
// same gradients as the tape's Keras loss.
TEST(Ops, ALossWrittenWithOpsOnAModelsOutputGivesTheKerasLossGradients) {
  Sequential model({InputLayer({.shape = {3}}), layers::Dense({.units = 2})});
  const Tensor x = testing::random_tensor({4, 3}, 1), y = testing::random_tensor({4, 2}, 2);
  std::vector<Tensor> by_ops, by_loss;
  {
    GradientTape tape;
    const Tensor out = tape.call(model, x);
    const Tensor loss = ops::mean(ops::square(out - y));
    by_ops = tape.gradient(loss, model.trainable_weights());
  }
  {
    GradientTape tape;
    const Tensor out = tape.call(model, x);
    const Tensor loss = tape.loss(losses::MeanSquaredError(), y, out);
    by_loss = tape.gradient(loss, model.trainable_weights());
  }
  ASSERT_EQ(by_ops.size(), by_loss.size());
  for (std::size_t i = 0; i < by_ops.size(); ++i) {
    const std::vector<float> a = by_ops[i].to_vector(), b = by_loss[i].to_vector();
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t j = 0; j < a.size(); ++j) EXPECT_NEAR(a[j], b[j], 1e-6) << i << "," << j;
  }
}

// A penalty written with ops on a weight the model call watched reaches that weight, added to the model's own
// gradient: the same as the tape's l2_loss.
TEST(Ops, APenaltyWrittenWithOpsOnAWeightAddsToItsGradient) {
  Sequential model({InputLayer({.shape = {3}}), layers::Dense({.units = 2})});
  const Tensor x = testing::random_tensor({4, 3}, 1), y = testing::random_tensor({4, 2}, 2);
  const VariablePtr kernel = model.trainable_weights()[0];
  std::vector<Tensor> by_ops, by_tape;
  {
    GradientTape tape;
    const Tensor out = tape.call(model, x);
    const Tensor loss = tape.loss(losses::MeanSquaredError(), y, out) + 0.1f * ops::sum(ops::square(kernel->value));
    by_ops = tape.gradient(loss, model.trainable_weights());
  }
  {
    GradientTape tape;
    const Tensor out = tape.call(model, x);
    const Tensor loss = tape.add(tape.loss(losses::MeanSquaredError(), y, out), tape.scale(tape.l2_loss(kernel), 0.2));
    by_tape = tape.gradient(loss, model.trainable_weights());
  }
  for (std::size_t i = 0; i < by_ops.size(); ++i) {
    const std::vector<float> a = by_ops[i].to_vector(), b = by_tape[i].to_vector();
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t j = 0; j < a.size(); ++j) EXPECT_NEAR(a[j], b[j], 1e-6) << i << "," << j;
  }
}

// A tape deleted on another thread than the one it records on leaves no trace there: later ops are not handed to
// the deleted tape.
TEST(Ops, ATapeDeletedOnAnotherThreadStopsRecordingOnItsOwn) {
  auto tape = std::make_unique<GradientTape>();
  const Tensor x = floats({1, 2, 3}, Shape{3});
  tape->watch(x);
  EXPECT_TRUE(ops::recording());
  std::thread([&] { tape.reset(); }).join();
  EXPECT_FALSE(ops::recording());
  EXPECT_EQ(ops::square(x).to_vector(), (std::vector<float>{1, 4, 9}));
}

// ---- the newer ops: NumPy's values on small cases, gradients worked out by hand, every error --------------------

std::vector<std::int32_t> ints(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DType::int32);
  return std::vector<std::int32_t>(t.data<std::int32_t>(), t.data<std::int32_t>() + t.numel());
}

Tensor arange(Index n, Shape shape) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(i);
  return floats(v, std::move(shape));
}

// d sum(f(x) * w) / dx on a tape (w = ones when undefined).
Tensor gradient_of(const std::function<Tensor(const Tensor&)>& f, const Tensor& x, Tensor w = Tensor()) {
  GradientTape tape;
  tape.watch(x);
  const Tensor y = f(x);
  const Tensor loss = ops::sum(w.defined() ? y * w : y);
  return tape.gradient(loss, std::vector<Tensor>{x}, UnconnectedGradients::zero)[0];
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want, float tolerance = 1e-6f) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << i;
      continue;
    }
    EXPECT_NEAR(got[i], want[i], tolerance * (1.f + std::fabs(want[i]))) << i;
  }
}

void expect_message(const std::function<void()>& f, const std::string& part) {
  const std::string msg = message_of(f);
  EXPECT_NE(msg.find(part), std::string::npos) << "expected \"" << part << "\" in \"" << msg << "\"";
}

TEST(Ops, PowerAndTheNewElementWiseFunctions) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // np.power(np.float32([-2, 0, 2]), np.float32([0.5, 0, -1]))
  expect_near(ops::power(floats({-2, 0, 2}, Shape{3}), floats({0.5, 0, -1}, Shape{3})).to_vector(), {nan, 1, 0.5});
  expect_near(ops::power(floats({1, 2, 3}, Shape{3, 1}), floats({2, 3}, Shape{2})).to_vector(), {1, 1, 4, 8, 9, 27});
  expect_near(ops::log1p(floats({0, 1e-7f, 1}, Shape{3})).to_vector(), {0, 1e-7f, std::log(2.f)});
  expect_near(ops::rsqrt(floats({4, 0.25}, Shape{2})).to_vector(), {0.5, 2});
  expect_near(ops::erf(floats({0, 0.5, -2}, Shape{3})).to_vector(), {0, 0.5204999f, -0.9953223f});
  // Gradients: TensorFlow's for power (log(a) only where a > 0), and the derivatives of the others.
  const Tensor a = floats({2, -3, 0.5}, Shape{3}), b = floats({3, 2, -1}, Shape{3});
  expect_near(gradient_of([&](const Tensor& x) { return ops::power(x, b); }, a).to_vector(), {12, -6, -4});
  expect_near(gradient_of([&](const Tensor& x) { return ops::power(a, x); }, b).to_vector(),
              {8 * std::log(2.f), 0, 2 * std::log(0.5f)});
  expect_near(gradient_of([](const Tensor& x) { return ops::log1p(x); }, floats({1, 3}, Shape{2})).to_vector(),
              {0.5, 0.25});
  expect_near(gradient_of([](const Tensor& x) { return ops::rsqrt(x); }, floats({4}, Shape{1})).to_vector(),
              {-1.f / 16});
  expect_near(gradient_of([](const Tensor& x) { return ops::erf(x); }, floats({0}, Shape{1})).to_vector(),
              {1.1283792f});
}

TEST(Ops, ComparisonsGiveMasksAndWhereSelectsWithBroadcasting) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor a = floats({1, 2, 3, nan}, Shape{4}), two = ops::scalar(2.f);
  EXPECT_EQ(ops::not_equal(a, two).to_vector(), (std::vector<float>{1, 0, 1, 1}));
  EXPECT_EQ(ops::less(a, two).to_vector(), (std::vector<float>{1, 0, 0, 0}));
  EXPECT_EQ(ops::less_equal(a, two).to_vector(), (std::vector<float>{1, 1, 0, 0}));
  EXPECT_EQ(ops::greater(a, two).to_vector(), (std::vector<float>{0, 0, 1, 0}));
  EXPECT_EQ(ops::greater_equal(a, two).to_vector(), (std::vector<float>{0, 1, 1, 0}));
  // np.where(cond [2, 1], a [3], b []) -> [2, 3].
  const Tensor cond = floats({1, 0}, Shape{2, 1}), x = floats({1, 2, 3}, Shape{3});
  const Tensor y = ops::where(cond, x, ops::scalar(-1.f));
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(y.to_vector(), (std::vector<float>{1, 2, 3, -1, -1, -1}));
  // The gradient reaches x where cond holds, the scalar elsewhere (summed onto its shape), cond never.
  const Tensor w = floats({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  GradientTape tape;
  const Tensor s = ops::scalar(-1.f);
  tape.watch(x);
  tape.watch(s);
  tape.watch(cond);
  const std::vector<Tensor> g =
      tape.gradient(ops::sum(ops::where(cond, x, s) * w), std::vector<Tensor>{x, s, cond}, UnconnectedGradients::zero);
  EXPECT_EQ(g[0].to_vector(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(g[1].to_vector(), std::vector<float>{15});
  EXPECT_EQ(g[2].to_vector(), (std::vector<float>{0, 0}));
  // No gradient flows through a comparison.
  expect_near(gradient_of([&](const Tensor& v) { return ops::greater(v, two) * v; }, a).to_vector(), {0, 0, 1, 0});
}

// Each [m, n] product of numpy.matmul, computed naively: a [.., m, k] and b [.., k, n] read at batch entries ia, ib.
std::vector<float> naive_product(const std::vector<float>& a, Index ia, const std::vector<float>& b, Index ib, Index m,
                                 Index k, Index n) {
  std::vector<float> c(static_cast<std::size_t>(m * n), 0.f);
  for (Index i = 0; i < m; ++i)
    for (Index j = 0; j < n; ++j)
      for (Index q = 0; q < k; ++q) c[i * n + j] += a[ia * m * k + i * k + q] * b[ib * k * n + q * n + j];
  return c;
}

TEST(Ops, MatmulBroadcastsBatchAxesAndPromotesVectors) {
  // [2, 1, 3, 4] x [5, 4, 6] -> [2, 5, 3, 6]: entry (i, j) is a[i, 0] b[j].
  const Tensor a = testing::random_tensor({2, 1, 3, 4}, 3), b = testing::random_tensor({5, 4, 6}, 4);
  const Tensor y = ops::matmul(a, b);
  ASSERT_EQ(y.shape(), (Shape{2, 5, 3, 6}));
  const std::vector<float> av = a.to_vector(), bv = b.to_vector(), yv = y.to_vector();
  for (Index i = 0; i < 2; ++i)
    for (Index j = 0; j < 5; ++j) {
      const std::vector<float> want = naive_product(av, i, bv, j, 3, 4, 6);
      for (Index e = 0; e < 18; ++e) EXPECT_NEAR(yv[(i * 5 + j) * 18 + e], want[e], 1e-5) << i << "," << j << "," << e;
    }
  // Vectors: [4] x [2, 4, 6] -> [2, 6]; [2, 3, 4] x [4] -> [2, 3]; [4] x [4] -> a scalar.
  const Tensor v = floats({1, 2, 3, 4}, Shape{4});
  EXPECT_EQ(ops::matmul(v, ops::reshape(arange(48, Shape{48}), Shape{2, 4, 6})).shape(), (Shape{2, 6}));
  EXPECT_EQ(ops::matmul(v, ops::reshape(arange(24, Shape{24}), Shape{4, 6})).to_vector()[0], 0 + 12 + 36 + 72);
  const Tensor right = ops::matmul(ops::reshape(arange(24, Shape{24}), Shape{2, 3, 4}), v);
  EXPECT_EQ(right.shape(), (Shape{2, 3}));
  EXPECT_EQ(right.to_vector()[1], 4 * 1 + 5 * 2 + 6 * 3 + 7 * 4);
  const Tensor dot = ops::matmul(v, v);
  EXPECT_EQ(dot.shape(), Shape{});
  EXPECT_EQ(dot.to_vector()[0], 30);
}

TEST(Ops, MatmulGradientsAreSummedOntoEachOperandsOwnBatch) {
  // a [1, 2, 3] is shared by b's 4 entries: da = sum over the batch of dY b^T; db = a^T dY for each entry.
  const Tensor a = testing::random_tensor({1, 2, 3}, 5), b = testing::random_tensor({4, 3, 2}, 6);
  GradientTape tape;
  tape.watch(a);
  tape.watch(b);
  const std::vector<Tensor> g = tape.gradient(ops::sum(ops::matmul(a, b)), std::vector<Tensor>{a, b});
  ASSERT_EQ(g[0].shape(), a.shape());
  ASSERT_EQ(g[1].shape(), b.shape());
  const std::vector<float> av = a.to_vector(), bv = b.to_vector(), ga = g[0].to_vector(), gb = g[1].to_vector();
  for (Index i = 0; i < 2; ++i)
    for (Index q = 0; q < 3; ++q) {
      double want = 0;  // dY = ones: da[i, q] = sum over e, j of b[e, q, j]
      for (Index e = 0; e < 4; ++e)
        for (Index j = 0; j < 2; ++j) want += bv[(e * 3 + q) * 2 + j];
      EXPECT_NEAR(ga[i * 3 + q], want, 1e-5);
    }
  for (Index e = 0; e < 4; ++e)
    for (Index q = 0; q < 3; ++q)
      for (Index j = 0; j < 2; ++j) EXPECT_NEAR(gb[(e * 3 + q) * 2 + j], av[q] + av[3 + q], 1e-5);
  // [2, 1, 3] x [3] and its vector's gradient, summed over both rows.
  const Tensor m = testing::random_tensor({2, 1, 3}, 7), v = testing::random_tensor({3}, 8);
  const std::vector<float> mv = m.to_vector();
  expect_near(gradient_of([&](const Tensor& x) { return ops::matmul(m, x); }, v).to_vector(),
              {mv[0] + mv[3], mv[1] + mv[4], mv[2] + mv[5]}, 1e-5f);
}

TEST(Ops, ErrorsOfTheNewElementWiseOpsAndOfMatmulNameTheOpAndTheShapes) {
  const Tensor a = Tensor::zeros(Shape{2, 3}), b = Tensor::zeros(Shape{4});
  expect_message([&] { ops::power(a, b); }, "ops.power: shapes (2, 3) and (4,) do not broadcast");
  expect_message([&] { ops::where(ops::scalar(1.f), a, b); }, "ops.where: shapes (2, 3) and (4,) do not broadcast");
  expect_message([&] { ops::less(Tensor::zeros(Shape{2}, DType::int32), b); },
                 "ops.less: the first operand must be float32, got int32");
  expect_message([&] { ops::matmul(Tensor::zeros(Shape{2, 3, 4}), Tensor::zeros(Shape{3, 5})); },
                 "ops.matmul: shapes (2, 3, 4) and (3, 5) do not multiply: inner sizes 4 and 3 differ");
  expect_message([&] { ops::matmul(Tensor::zeros(Shape{2, 3, 4}), Tensor::zeros(Shape{3, 4, 5})); },
                 "ops.matmul: shapes (2, 3, 4) and (3, 4, 5) do not multiply: their batch axes (2,) and (3,) do not "
                 "broadcast");
  expect_message([&] { ops::matmul(ops::scalar(1.f), b); }, "ops.matmul: shapes () and (4,) do not multiply");
}

TEST(Ops, ExpandDimsSqueezeAndStack) {
  const Tensor x = arange(6, Shape{2, 3});
  EXPECT_EQ(ops::expand_dims(x, -1).shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(ops::expand_dims(x, 0).shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(ops::expand_dims(x, -3).shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(ops::squeeze(Tensor::zeros(Shape{1, 2, 1})).shape(), (Shape{2}));
  EXPECT_EQ(ops::squeeze(Tensor::zeros(Shape{1, 2, 1}), {-1}).shape(), (Shape{1, 2}));
  const Tensor s = ops::stack({x, x * 10.f}, -1);
  EXPECT_EQ(s.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(s.to_vector(), (std::vector<float>{0, 0, 1, 10, 2, 20, 3, 30, 4, 40, 5, 50}));
  EXPECT_EQ(ops::stack({x, x}).shape(), (Shape{2, 2, 3}));
}

TEST(Ops, SplitIntoSectionsOrAtIndices) {
  const Tensor x = arange(12, Shape{2, 6});
  const std::vector<Tensor> thirds = ops::split(x, 3, 1);
  ASSERT_EQ(thirds.size(), 3u);
  EXPECT_EQ(thirds[1].shape(), (Shape{2, 2}));
  EXPECT_EQ(thirds[1].to_vector(), (std::vector<float>{2, 3, 8, 9}));
  // np.split(x, [1, 5], axis=1) and a single index, which needs a vector.
  const std::vector<Tensor> parts = ops::split(x, std::vector<Index>{1, 5}, 1);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].to_vector(), (std::vector<float>{0, 6}));
  EXPECT_EQ(parts[1].shape(), (Shape{2, 4}));
  EXPECT_EQ(parts[2].to_vector(), (std::vector<float>{5, 11}));
  const std::vector<Tensor> rows = ops::split(x, std::vector<Index>{1});
  EXPECT_EQ(rows[1].to_vector(), (std::vector<float>{6, 7, 8, 9, 10, 11}));
  // Each part's gradient lands in its place.
  expect_near(gradient_of([](const Tensor& v) { return ops::split(v, std::vector<Index>{1, 5}, 1)[2] * 3.f; }, x)
                  .to_vector(),
              {0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 3});
}

TEST(Ops, SliceAndStridedSliceWithNegativeStrides) {
  const Tensor x = arange(12, Shape{3, 4});
  EXPECT_EQ(ops::slice(x, {1, 1}, {2, -1}).to_vector(), (std::vector<float>{5, 6, 7, 9, 10, 11}));
  // x[::-1, 3:0:-2] and x[-100:100, -1] of arange(12).reshape(3, 4).
  const Tensor r = ops::strided_slice(x, {-1, 3}, {-100, 0}, {-1, -2});
  EXPECT_EQ(r.shape(), (Shape{3, 2}));
  EXPECT_EQ(r.to_vector(), (std::vector<float>{11, 9, 7, 5, 3, 1}));
  EXPECT_EQ(ops::strided_slice(x, {-100, -1}, {100, 100}, {1, 1}).to_vector(), (std::vector<float>{3, 7, 11}));
  EXPECT_EQ(ops::strided_slice(x, {0}, {3}, {2}).shape(), (Shape{2, 4}));  // later axes whole
  EXPECT_EQ(ops::strided_slice(x, {2, 0}, {1, 4}, {1, 1}).shape(), (Shape{0, 4}));  // empty
  // The gradients go back to the elements read.
  expect_near(gradient_of([](const Tensor& v) { return ops::strided_slice(v, {-1, 3}, {-100, 0}, {-1, -2}); }, x)
                  .to_vector(),
              {0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1});
  expect_near(gradient_of([](const Tensor& v) { return ops::slice(v, {1, 1}, {2, 1}) * 2.f; }, x).to_vector(),
              {0, 0, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0});
}

TEST(Ops, TakeWithNegativeAndRepeatedIndicesAndItsGradientAddingUp) {
  const Tensor x = arange(6, Shape{2, 3});
  const Tensor idx = Tensor::from_vector(std::vector<std::int32_t>{-1, 0, 0}, Shape{3});
  const Tensor y = ops::take(x, idx, 1);
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(y.to_vector(), (std::vector<float>{2, 0, 0, 5, 3, 3}));
  expect_near(gradient_of([&](const Tensor& v) { return ops::take(v, idx, 1); }, x).to_vector(), {2, 0, 1, 2, 0, 1});
  // Flattened, indices of shape [2, 2]; float indices truncated.
  const Tensor grid = Tensor::from_vector(std::vector<std::int32_t>{5, -6, 1, 1}, Shape{2, 2});
  const Tensor flat = ops::take(x, grid);
  EXPECT_EQ(flat.shape(), (Shape{2, 2}));
  EXPECT_EQ(flat.to_vector(), (std::vector<float>{5, 0, 1, 1}));
  EXPECT_EQ(ops::take(x, floats({1.7f, -0.5f}, Shape{2}), 0).to_vector(), (std::vector<float>{3, 4, 5, 0, 1, 2}));
  // x.shape[:axis] + indices.shape + x.shape[axis + 1:].
  EXPECT_EQ(ops::take(Tensor::zeros(Shape{4, 6, 5}), grid, 1).shape(), (Shape{4, 2, 2, 5}));
}

TEST(Ops, OneHotGivesZeroRowsOutsideTheClasses) {
  const Tensor idx = Tensor::from_vector(std::vector<std::int32_t>{0, -1, 3, 5}, Shape{4});
  const Tensor y = ops::one_hot(idx, 4);
  EXPECT_EQ(y.shape(), (Shape{4, 4}));
  EXPECT_EQ(y.to_vector(), (std::vector<float>{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}));
  const Tensor columns = ops::one_hot(Tensor::from_vector(std::vector<std::int32_t>{2, 0}, Shape{2}), 3, 0);
  EXPECT_EQ(columns.shape(), (Shape{3, 2}));
  EXPECT_EQ(columns.to_vector(), (std::vector<float>{0, 1, 0, 0, 1, 0}));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(ops::one_hot(floats({1.9f, nan}, Shape{2}), 2).to_vector(), (std::vector<float>{0, 1, 0, 0}));
}

TEST(Ops, PadTileAndRepeat) {
  const Tensor x = arange(6, Shape{2, 3});
  const Tensor p = ops::pad(x, {{1, 0}, {0, 2}}, 7.f);  // keras.ops.pad(x, [[1, 0], [0, 2]], constant_values=7)
  EXPECT_EQ(p.shape(), (Shape{3, 5}));
  EXPECT_EQ(p.to_vector(), (std::vector<float>{7, 7, 7, 7, 7, 0, 1, 2, 7, 7, 3, 4, 5, 7, 7}));
  EXPECT_EQ(ops::pad(x, {{1, 1}}).shape(), (Shape{4, 5}));
  expect_near(gradient_of([](const Tensor& v) { return ops::pad(v, {{1, 0}, {0, 2}}, 7.f); }, x,
                          arange(15, Shape{3, 5}))
                  .to_vector(),
              {5, 6, 7, 10, 11, 12});
  EXPECT_EQ(ops::tile(x, {2}).to_vector(), (std::vector<float>{0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}));
  EXPECT_EQ(ops::tile(x, {2, 1, 1}).shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(ops::repeat(x, 2).to_vector(), (std::vector<float>{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5}));
  EXPECT_EQ(ops::repeat(x, 2, 0).to_vector(), (std::vector<float>{0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}));
  expect_near(gradient_of([](const Tensor& v) { return ops::tile(v, {1, 2}); }, x).to_vector(), {2, 2, 2, 2, 2, 2});
  expect_near(gradient_of([](const Tensor& v) { return ops::repeat(v, 3, 1); }, x).to_vector(), {3, 3, 3, 3, 3, 3});
}

TEST(Ops, MaxAndMinShareTheGradientAmongTies) {
  const Tensor x = floats({1, 3, 3, 2, 2, 1}, Shape{2, 3});
  EXPECT_EQ(ops::max(x, {1}).to_vector(), (std::vector<float>{3, 2}));
  EXPECT_EQ(ops::min(x).to_vector(), std::vector<float>{1});
  EXPECT_EQ(ops::max(x, {0}, true).shape(), (Shape{1, 3}));
  EXPECT_EQ(ops::max(x, {0}, true).to_vector(), (std::vector<float>{2, 3, 3}));
  expect_near(gradient_of([](const Tensor& v) { return ops::max(v, {1}); }, x).to_vector(), {0, 0.5, 0.5, 0.5, 0.5, 0});
  expect_near(gradient_of([](const Tensor& v) { return ops::min(v); }, x).to_vector(), {0.5, 0, 0, 0, 0, 0.5});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(ops::max(floats({1, nan, 3}, Shape{3})).to_vector()[0]));
}

TEST(Ops, ArgmaxAndArgminTakeTheFirstExtreme) {
  const Tensor x = floats({1, 3, 3, 2, 2, 1}, Shape{2, 3});
  const Tensor am = ops::argmax(x, 1);
  EXPECT_EQ(am.shape(), (Shape{2}));
  EXPECT_EQ(ints(am), (std::vector<std::int32_t>{1, 0}));
  EXPECT_EQ(ints(ops::argmin(x, 1)), (std::vector<std::int32_t>{0, 2}));
  EXPECT_EQ(ints(ops::argmax(x, 0)), (std::vector<std::int32_t>{1, 0, 0}));
  const Tensor flat = ops::argmax(x);
  EXPECT_EQ(flat.shape(), Shape{});
  EXPECT_EQ(ints(flat), std::vector<std::int32_t>{1});
  EXPECT_EQ(ops::argmax(x, 1, true).shape(), (Shape{2, 1}));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(ints(ops::argmax(floats({1, nan, 3, nan}, Shape{4}))), std::vector<std::int32_t>{1});
}

TEST(Ops, LogsumexpIsStableAndLogSoftmaxNormalises) {
  const Tensor x = floats({1000, 1000, -1000, 0}, Shape{2, 2});
  const std::vector<float> l = ops::logsumexp(x, {1}).to_vector();
  EXPECT_NEAR(l[0], 1000 + std::log(2.f), 1e-3);
  EXPECT_NEAR(l[1], 0, 1e-6);
  EXPECT_NEAR(ops::logsumexp(floats({1, 2, 3}, Shape{3})).to_vector()[0],
              std::log(std::exp(1.f) + std::exp(2.f) + std::exp(3.f)), 1e-5);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(ops::logsumexp(floats({-inf, -inf}, Shape{2})).to_vector()[0], -inf);
  EXPECT_EQ(ops::logsumexp(x, {1}, true).shape(), (Shape{2, 1}));
  // The gradient of logsumexp is softmax.
  expect_near(gradient_of([](const Tensor& v) { return ops::logsumexp(v, {1}); }, x).to_vector(), {0.5, 0.5, 0, 1});
  const std::vector<float> ls = ops::log_softmax(floats({1, 2, 3}, Shape{3})).to_vector();
  EXPECT_NEAR(std::exp(ls[0]) + std::exp(ls[1]) + std::exp(ls[2]), 1.0, 1e-6);
  EXPECT_NEAR(ls[2] - ls[0], 2, 1e-6);
  expect_near(ops::log_softmax(x).to_vector(), {-std::log(2.f), -std::log(2.f), -1000, 0}, 1e-5f);
}

TEST(Ops, CumsumRunsAlongAnAxisAndItsGradientRunsBack) {
  const Tensor x = floats({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  EXPECT_EQ(ops::cumsum(x, 1).to_vector(), (std::vector<float>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(ops::cumsum(x, 0).to_vector(), (std::vector<float>{1, 2, 3, 5, 7, 9}));
  const Tensor flat = ops::cumsum(x);
  EXPECT_EQ(flat.shape(), (Shape{6}));
  EXPECT_EQ(flat.to_vector(), (std::vector<float>{1, 3, 6, 10, 15, 21}));
  // d sum(cumsum(x) * w) / dx is the reverse running sum of w.
  const Tensor w = floats({1, 10, 100, 2, 20, 200}, Shape{2, 3});
  expect_near(gradient_of([](const Tensor& v) { return ops::cumsum(v, 1); }, x, w).to_vector(),
              {111, 110, 100, 222, 220, 200});
}

TEST(Ops, CastConvertsDtypesAndOnlyFloatToFloatCarriesAGradient) {
  const Tensor x = floats({-1.7f, 2.9f, 300.5f}, Shape{3});
  const Tensor i = ops::cast(x, DType::int32);
  EXPECT_EQ(ints(i), (std::vector<std::int32_t>{-1, 2, 300}));
  EXPECT_EQ(ops::cast(i, DType::float32).to_vector(), (std::vector<float>{-1, 2, 300}));
  const Tensor u = ops::cast(x, DType::uint8);
  EXPECT_EQ(u.dtype(), DType::uint8);
  EXPECT_EQ(u.data<std::uint8_t>()[0], 255);
  EXPECT_EQ(u.data<std::uint8_t>()[2], 44);
  EXPECT_EQ(ops::cast(x, DType::int64).data<std::int64_t>()[1], 2);
  expect_near(gradient_of([](const Tensor& v) { return ops::cast(v, DType::float32) * v; }, x).to_vector(),
              {-3.4f, 5.8f, 601});
  // Through int32 the gradient stops: only the second factor carries one.
  expect_near(
      gradient_of([](const Tensor& v) { return ops::cast(ops::cast(v, DType::int32), DType::float32) * v; }, x)
          .to_vector(),
      {-1, 2, 300});
}

TEST(Ops, ErrorsOfTheShapeAndReductionOpsNameTheOpTheShapesAndTheAxis) {
  const Tensor a = Tensor::zeros(Shape{2, 3}), b = Tensor::zeros(Shape{4});
  expect_message([&] { ops::max(a, {2}); }, "ops.max: axis 2 is out of range for shape (2, 3)");
  expect_message([&] { ops::max(Tensor::zeros(Shape{2, 0}), {1}); }, "ops.max: axis 1 of shape (2, 0) is empty");
  expect_message([&] { ops::argmin(a, -3); }, "ops.argmin: axis -3 is out of range for shape (2, 3)");
  expect_message([&] { ops::cumsum(a, 5); }, "ops.cumsum: axis 5 is out of range for shape (2, 3)");
  expect_message([&] { ops::expand_dims(a, 3); }, "ops.expand_dims: axis 3 is out of range");
  expect_message([&] { ops::squeeze(a, {0}); }, "ops.squeeze: axis 0 of shape (2, 3) has size 2, not 1");
  expect_message([&] { ops::stack({a, b}); }, "ops.stack: shapes (2, 3) and (4,) differ");
  expect_message([&] { ops::split(a, 2, 1); },
                 "ops.split: axis 1 of shape (2, 3) does not split into 2 equal sections");
  expect_message([&] { ops::split(a, std::vector<Index>{2, 1}, 1); }, "ops.split: the split indices [2, 1]");
  expect_message([&] { ops::slice(a, {1, 2}, {2, 1}); },
                 "ops.slice: the block at [1, 2] of shape [2, 1] does not lie inside shape (2, 3)");
  expect_message([&] { ops::strided_slice(a, {0}, {1}, {0}); }, "ops.strided_slice: stride 0 on axis 0");
  expect_message([&] { ops::pad(a, {{0, -1}, {0, 0}}); }, "ops.pad: pad widths (0, -1) on axis 0");
  expect_message([&] { ops::take(a, Tensor::from_vector(std::vector<std::int32_t>{0, 3, -4}, Shape{3}), 1); },
                 "ops.take: index 3 at position 1 of the indices (3,) is out of range for axis 1 of size 3 (shape "
                 "(2, 3))");
  expect_message([&] { ops::take(a, floats({0, -3.5f}, Shape{2}), 0); }, "ops.take: index -3.5 at position 1");
  expect_message([&] { ops::take(a, Tensor::zeros(Shape{1}, DType::uint8)); },
                 "ops.take: the indices must be int32, int64 or float32, got uint8");
  expect_message([&] { ops::one_hot(a, 3, 3); }, "ops.one_hot: axis 3 is out of range");
}

}  // namespace
}  // namespace tower
