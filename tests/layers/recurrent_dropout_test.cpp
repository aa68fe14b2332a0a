// Keras' dropout and recurrent_dropout in SimpleRNN, LSTM and GRU (layers/recurrent.h): one mask per sequence, the
// same at every step; one mask per gate under recurrent dropout; inference untouched; gradients through the masks;
// new masks each training step, the same ones for a seeded layer in every run; training with them.
#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>
#include <string>

#include "api/losses/losses.h"
#include "api/ops/ops.h"
#include "api/optimizers/optimizers.h"
#include "layers/bidirectional.h"
#include "layers/dense.h"
#include "layers/gru.h"
#include "layers/lstm.h"
#include "layers/simple_rnn.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

using testing::random_tensor;

constexpr Index kN = 8, kT = 5, kF = 16;

float max_difference(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = a.to_vector(), y = b.to_vector();
  float d = 0.f;
  for (std::size_t i = 0; i < x.size(); ++i) d = std::max(d, std::fabs(x[i] - y[i]));
  return d;
}

// The output and input gradient of one training step (forward, backward for L = sum(output * R)) of a one-layer
// model on x.
struct TrainingPass {
  Tensor output, input_grad;
};

TrainingPass training_pass(const LayerPtr& layer, const Tensor& x, std::uint64_t seed = 42) {
  const SymbolicTensor in = Input(x.shape().without_batch());
  Model model(in, (*layer)(in));
  PlanOptions po;
  po.batch_size = x.dim(0);
  po.training = true;
  po.backward = true;
  po.input_gradients = true;
  po.seed = seed;
  Plan plan(model.impl(), po);
  plan.set_input(0, x);
  plan.forward();
  plan.output_grad(0).copy_from(random_tensor(plan.output(0).shape(), 77));
  plan.backward();
  return {plan.output(0).clone(), plan.input_grad(0).clone()};
}

// The (example, feature) columns of an input gradient [N, T, F] that are zero at every step from `first` on, or -1
// when a column is zero at some of those steps only (a mask that changed between steps). (With zero states before
// the first step, a gate that multiplies them, such as an LSTM's forget gate, gives its input no gradient there.)
int zero_columns(const Tensor& grad, Index first = 0) {
  const std::vector<float> g = grad.to_vector();
  int zero = 0;
  for (Index n = 0; n < kN; ++n)
    for (Index f = 0; f < kF; ++f) {
      int zeros = 0;
      for (Index t = first; t < kT; ++t) zeros += g[static_cast<std::size_t>((n * kT + t) * kF + f)] == 0.f ? 1 : 0;
      if (zeros != 0 && zeros != kT - first) return -1;
      zero += zeros == kT - first ? 1 : 0;
    }
  return zero;
}

template <class Layer>
void expect_one_input_mask_per_sequence(typename Layer::Options o, const std::string& what) {
  SCOPED_TRACE(what);
  o.return_sequences = true;
  o.dropout = 0.5;
  o.seed = 3;
  Layer dropped(o);
  o.dropout = 0.0;
  Layer reference(o);
  dropped(Input({kT, kF}));
  reference(Input({kT, kF}));
  const auto w = dropped->weights(), v = reference->weights();
  for (std::size_t k = 0; k < w.size(); ++k) v[k]->value.copy_from(w[k]->value);

  const Tensor x = random_tensor({kN, kT, kF}, 5);
  const TrainingPass pass = training_pass(dropped, x);
  const int zero = zero_columns(pass.input_grad);
  ASSERT_GT(zero, 0) << "no input feature was dropped";
  ASSERT_LT(zero, kN * kF) << "every input feature was dropped";
  // The dropped features, as a mask [N, 1, F] of 0 and 1 / (1 - rate): the layer without dropout on x times it
  // computes what the layer with dropout did.
  const std::vector<float> g = pass.input_grad.to_vector();
  std::vector<float> m(static_cast<std::size_t>(kN * kT * kF));
  for (Index n = 0; n < kN; ++n)
    for (Index f = 0; f < kF; ++f)
      for (Index t = 0; t < kT; ++t)
        m[static_cast<std::size_t>((n * kT + t) * kF + f)] = g[static_cast<std::size_t>(n * kT * kF + f)] == 0.f ? 0.f : 2.f;
  const Tensor masked = x * Tensor::from_vector(m, x.shape());
  testing::expect_near(pass.output, training_pass(reference, masked).output, 1e-5f, 1e-4f, "dropout as a mask");
}

TEST(RecurrentDropout, InputDropoutIsOneMaskPerSequence) {
  expect_one_input_mask_per_sequence<layers::LSTM>({.units = 4}, "LSTM (fused)");
  expect_one_input_mask_per_sequence<layers::LSTM>({.units = 4, .activation = "relu"}, "LSTM (composed)");
  expect_one_input_mask_per_sequence<layers::GRU>({.units = 3}, "GRU");
  expect_one_input_mask_per_sequence<layers::SimpleRNN>({.units = 3, .go_backwards = true}, "SimpleRNN");
}

TEST(RecurrentDropout, UnderRecurrentDropoutEachGateDrawsItsOwnInputMask) {
  // A feature's gradient is zero only where every gate dropped it: 1 / 2^gates of them, not a half.
  const Tensor x = random_tensor({kN, kT, kF}, 6);
  const int lstm = zero_columns(
      training_pass(layers::LSTM({.units = 4, .dropout = 0.5, .recurrent_dropout = 0.5, .return_sequences = true}), x)
          .input_grad,
      1);
  const int gru = zero_columns(
      training_pass(layers::GRU({.units = 4, .dropout = 0.5, .recurrent_dropout = 0.5, .return_sequences = true}), x)
          .input_grad,
      1);
  EXPECT_GT(lstm, 0);
  EXPECT_LT(lstm, kN * kF / 4) << "LSTM: one mask for all four gates";
  EXPECT_GT(gru, 0);
  EXPECT_LT(gru, kN * kF / 4) << "GRU: one mask for all three gates";
}

TEST(RecurrentDropout, InferenceIsTheLayerWithoutDropout) {
  const Tensor x = random_tensor({4, kT, 3}, 7);
  layers::LSTM dropped({.units = 4, .dropout = 0.5, .recurrent_dropout = 0.5, .return_sequences = true});
  layers::LSTM plain({.units = 4, .return_sequences = true});
  dropped(Input({kT, 3}));
  plain(Input({kT, 3}));
  const auto w = dropped->weights(), v = plain->weights();
  for (std::size_t k = 0; k < w.size(); ++k) v[k]->value.copy_from(w[k]->value);
  testing::expect_near(testing::run_layer(dropped, {x})[0], testing::run_layer(plain, {x})[0], 0.f, 0.f,
                       "inference");
  EXPECT_GT(max_difference(testing::run_layer(dropped, {x}, true)[0],
                                          testing::run_layer(plain, {x}, true)[0]), 1e-4f)
      << "training drops nothing";
}

TEST(RecurrentDropout, GradientsFlowThroughTheMasks) {
  const testing::GradCheckOptions o;
  testing::check_gradients(
      layers::LSTM({.units = 3, .dropout = 0.3, .recurrent_dropout = 0.3, .return_sequences = true, .seed = 1}),
      {random_tensor({3, 4, 5}, 8)}, o);
  testing::check_gradients(layers::LSTM({.units = 3, .dropout = 0.3, .seed = 2}), {random_tensor({3, 4, 5}, 9)}, o);
  testing::check_gradients(layers::GRU({.units = 3, .dropout = 0.3, .recurrent_dropout = 0.4, .seed = 3}),
                           {random_tensor({3, 4, 5}, 10)}, o);
  testing::check_gradients(
      layers::GRU({.units = 3, .dropout = 0.3, .recurrent_dropout = 0.4, .seed = 4, .reset_after = false}),
      {random_tensor({3, 4, 5}, 11)}, o);
  testing::check_gradients(
      layers::SimpleRNN({.units = 3, .dropout = 0.2, .recurrent_dropout = 0.5, .return_sequences = true, .seed = 5}),
      {random_tensor({3, 4, 5}, 12)}, o);
}

TEST(RecurrentDropout, EachStepDrawsNewMasksAndASeededLayerTheSameOnesInEveryRun) {
  const Tensor x = random_tensor({kN, kT, 3}, 13);
  const auto outputs_of_two_steps = [&](std::optional<std::int64_t> seed, std::uint64_t plan_seed) {
    const SymbolicTensor in = Input({kT, 3});
    layers::GRU gru({.units = 4, .dropout = 0.4, .recurrent_dropout = 0.4, .seed = seed});
    Model model(in, gru(in));
    for (const VariablePtr& v : model.weights()) v->value.copy_from(random_tensor(v->value.shape(), 14));
    PlanOptions po;
    po.batch_size = kN;
    po.training = true;
    po.seed = plan_seed;
    Plan plan(model.impl(), po);
    plan.set_input(0, x);
    plan.forward();
    const Tensor first = plan.output(0).clone();
    plan.forward();
    return std::pair{first, plan.output(0).clone()};
  };
  const auto [a1, a2] = outputs_of_two_steps(9, 1);
  const auto [b1, b2] = outputs_of_two_steps(9, 2);
  EXPECT_GT(max_difference(a1, a2), 1e-4f) << "the second step reused the first one's masks";
  testing::expect_near(a1, b1, 0.f, 0.f, "a seeded layer's first step");
  testing::expect_near(a2, b2, 0.f, 0.f, "a seeded layer's second step");
  const auto [c1, c2] = outputs_of_two_steps(std::nullopt, 1);
  const auto [d1, d2] = outputs_of_two_steps(std::nullopt, 2);
  EXPECT_GT(max_difference(c1, d1), 1e-4f) << "unseeded layers follow the plan's seed";
}

TEST(RecurrentDropout, ModelsWithDropoutTrain) {
  const SymbolicTensor in = Input({kT, 3});
  SymbolicTensor h = layers::Bidirectional(
      {.layer = layers::LSTM({.units = 6, .dropout = 0.2, .recurrent_dropout = 0.2, .return_sequences = true})})(in);
  h = layers::GRU({.units = 6, .dropout = 0.1, .recurrent_dropout = 0.3})(h);
  Model model(in, layers::Dense({.units = 1})(h));
  model.compile(optimizers::Adam({.learning_rate = 0.02}), losses::MeanSquaredError());
  const Tensor x = random_tensor({64, kT, 3}, 15);
  const Tensor y = ops::reshape(ops::sum(x, {1, 2}), Shape{64, 1}) * 0.1f;
  const callbacks::History history =
      model.fit(x, y, {.epochs = 8, .batch_size = 16, .verbose = 0, .shuffle = false});
  const std::vector<double>& loss = history["loss"];
  for (double l : loss) ASSERT_TRUE(std::isfinite(l));
  EXPECT_LT(loss.back(), 0.7 * loss.front());
}

TEST(RecurrentDropout, RatesOutsideZeroToOneNameTheLayer) {
  EXPECT_NE(testing::error_of([] { layers::LSTM({.units = 2, .dropout = 1.0, .name = "d"}); })
                .find("Layer 'd' (LSTM): dropout must be in [0, 1), got 1"),
            std::string::npos);
  EXPECT_NE(testing::error_of([] { layers::GRU({.units = 2, .recurrent_dropout = -0.1, .name = "r"}); })
                .find("Layer 'r' (GRU): recurrent_dropout must be in [0, 1), got -0.1"),
            std::string::npos);
}

}  // namespace
}  // namespace tower
