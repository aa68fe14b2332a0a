// tower::ops' values, errors and recording: NumPy's broadcasting and reductions, errors that name the op and the
// shapes, and a GradientTape that records ops on watched tensors and on a model's outputs, and nothing else.
#include <gtest/gtest.h>

#include <cmath>
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

}  // namespace
}  // namespace tower
