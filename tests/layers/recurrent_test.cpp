// What SimpleRNN, LSTM and GRU share (layers/recurrent.h): the sequence options, initial states, the fused ops
// against the composed steps, errors. Keras' own values for each layer: tests/reference/layers/{LSTM,GRU,SimpleRNN}_*.
#include "layers/recurrent.h"

#include <string>

#include "layers/gru.h"
#include "layers/lstm.h"
#include "layers/simple_rnn.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

using testing::random_tensor;

// Outputs, input gradients and weight gradients of a one-layer model for L = sum(output_i * R_i).
struct Pass {
  std::vector<Tensor> outputs, input_grads, weight_grads;
};

Pass run_pass(const LayerPtr& layer, const std::vector<Tensor>& inputs) {
  std::vector<SymbolicTensor> sym;
  for (const Tensor& x : inputs) sym.push_back(Input(x.shape().without_batch()));
  Model model(sym, (*layer)(sym));
  PlanOptions po;
  po.batch_size = inputs[0].dim(0);
  po.training = true;
  po.backward = true;
  po.input_gradients = true;
  Plan plan(model.impl(), po);
  for (std::size_t i = 0; i < inputs.size(); ++i) plan.set_input(static_cast<int>(i), inputs[i]);
  plan.forward();
  Pass p;
  for (int i = 0; i < plan.num_outputs(); ++i) {
    p.outputs.push_back(plan.output(i).clone());
    plan.output_grad(i).copy_from(random_tensor(plan.output(i).shape(), 500 + static_cast<std::uint64_t>(i)));
  }
  plan.backward();
  for (std::size_t i = 0; i < inputs.size(); ++i) p.input_grads.push_back(plan.input_grad(static_cast<int>(i)).clone());
  for (const Tensor& g : plan.weight_grads()) p.weight_grads.push_back(g.clone());
  return p;
}

void expect_same_pass(const Pass& a, const Pass& b, const std::string& what) {
  ASSERT_EQ(a.outputs.size(), b.outputs.size());
  for (std::size_t i = 0; i < a.outputs.size(); ++i)
    testing::expect_near(a.outputs[i], b.outputs[i], 1e-5f, 1e-4f, what + ": output " + std::to_string(i));
  for (std::size_t i = 0; i < a.input_grads.size(); ++i)
    testing::expect_near(a.input_grads[i], b.input_grads[i], 1e-5f, 1e-4f, what + ": input gradient " + std::to_string(i));
  ASSERT_EQ(a.weight_grads.size(), b.weight_grads.size());
  for (std::size_t i = 0; i < a.weight_grads.size(); ++i)
    testing::expect_near(a.weight_grads[i], b.weight_grads[i], 1e-5f, 1e-4f,
                         what + ": weight gradient " + std::to_string(i));
}

// Random weights in [-0.5, 0.5), the same for `to` as for `from`.
void copy_random_weights(const LayerPtr& from, const LayerPtr& to, std::uint64_t seed) {
  const auto w = from->weights(), v = to->weights();
  ASSERT_EQ(w.size(), v.size());
  for (std::size_t k = 0; k < w.size(); ++k) {
    w[k]->value.copy_from(random_tensor(w[k]->value.shape(), seed + k, -0.5f, 0.5f));
    v[k]->value.copy_from(w[k]->value);
  }
}

// The fused op against the composed steps, for one set of options, with and without initial states.
template <class Layer>
void expect_fused_equals_composed(typename Layer::Options o, int states) {
  for (const bool with_states : {false, true}) {
    o.fused = true;
    Layer fused(o);
    o.fused = false;
    Layer composed(o);
    std::vector<Tensor> inputs{random_tensor({3, 6, 5}, 1)};
    if (with_states)
      for (int k = 0; k < states; ++k) inputs.push_back(random_tensor({3, o.units}, 2 + static_cast<std::uint64_t>(k)));
    std::vector<SymbolicTensor> sym;
    for (const Tensor& x : inputs) sym.push_back(Input(x.shape().without_batch()));
    fused(sym);
    composed(sym);
    ASSERT_TRUE(fused->uses_fused_op());
    ASSERT_FALSE(composed->uses_fused_op());
    copy_random_weights(fused, composed, 10);
    expect_same_pass(run_pass(fused, inputs), run_pass(composed, inputs),
                     fused->type() + (with_states ? " with initial states" : ""));
  }
}

TEST(Recurrent, TheFusedLstmEqualsItsComposedSteps) {
  expect_fused_equals_composed<layers::LSTM>({.units = 4, .return_sequences = true, .return_state = true}, 2);
  expect_fused_equals_composed<layers::LSTM>({.units = 3, .go_backwards = true}, 2);
  expect_fused_equals_composed<layers::LSTM>({.units = 4, .use_bias = false, .return_state = true}, 2);
}

TEST(Recurrent, TheFusedGruEqualsItsComposedSteps) {
  expect_fused_equals_composed<layers::GRU>({.units = 4, .return_sequences = true, .return_state = true}, 1);
  expect_fused_equals_composed<layers::GRU>({.units = 3, .go_backwards = true}, 1);
  expect_fused_equals_composed<layers::GRU>({.units = 4, .use_bias = false, .return_state = true}, 1);
}

TEST(Recurrent, OutputShapesFollowReturnSequencesAndReturnState) {
  const SymbolicTensor x = Input({7, 5});
  EXPECT_EQ(layers::LSTM({.units = 4})(x).shape(), Shape({-1, 4}));
  EXPECT_EQ(layers::GRU({.units = 4, .return_sequences = true})(x).shape(), Shape({-1, 7, 4}));
  const SymbolicTensors lstm = layers::LSTM({.units = 3, .return_sequences = true, .return_state = true})(
      std::vector<SymbolicTensor>{x});
  ASSERT_EQ(lstm.size(), 3u);
  EXPECT_EQ(lstm[0].shape(), Shape({-1, 7, 3}));
  EXPECT_EQ(lstm[1].shape(), Shape({-1, 3}));
  EXPECT_EQ(lstm[2].shape(), Shape({-1, 3}));
  const SymbolicTensors rnn = layers::SimpleRNN({.units = 2, .return_state = true})(std::vector<SymbolicTensor>{x});
  ASSERT_EQ(rnn.size(), 2u);
  EXPECT_EQ(rnn[1].shape(), Shape({-1, 2}));
}

// Without return_sequences the output is the last step's h, which return_state returns again.
TEST(Recurrent, TheOutputIsTheLastStepOfTheSequence) {
  for (const bool fused : {true, false}) {
    layers::LSTM seq({.units = 3, .return_sequences = true, .fused = fused});
    layers::LSTM last({.units = 3, .return_state = true, .fused = fused});
    const SymbolicTensor x = Input({5, 2});
    seq(x);
    last(std::vector<SymbolicTensor>{x});
    copy_random_weights(seq, last, 3);
    const Tensor in = random_tensor({2, 5, 2}, 4);
    const Tensor all = testing::run_layer(seq, {in})[0];
    const std::vector<Tensor> out = testing::run_layer(last, {in});
    const std::vector<float> a = all.to_vector();
    std::vector<float> want;
    for (int n = 0; n < 2; ++n)
      for (int j = 0; j < 3; ++j) want.push_back(a[static_cast<std::size_t>((n * 5 + 4) * 3 + j)]);
    testing::expect_near(out[0], want, 0, 0, "output");
    testing::expect_near(out[1], want, 0, 0, "returned h");
  }
}

// go_backwards reads the steps from the last: the same as the forward layer on the reversed sequence.
TEST(Recurrent, GoBackwardsRunsTheReversedSequence) {
  layers::GRU forward({.units = 3, .return_sequences = true});
  layers::GRU backward({.units = 3, .return_sequences = true, .go_backwards = true});
  const SymbolicTensor x = Input({4, 2});
  forward(x);
  backward(x);
  copy_random_weights(forward, backward, 5);
  const Tensor in = random_tensor({2, 4, 2}, 6);
  const std::vector<float> v = in.to_vector();
  std::vector<float> reversed(v.size());
  for (int n = 0; n < 2; ++n)
    for (int t = 0; t < 4; ++t)
      for (int f = 0; f < 2; ++f)
        reversed[static_cast<std::size_t>((n * 4 + t) * 2 + f)] = v[static_cast<std::size_t>((n * 4 + 3 - t) * 2 + f)];
  testing::expect_near(testing::run_layer(backward, {in})[0],
                       testing::run_layer(forward, {Tensor::from_vector(reversed, in.shape())})[0], 0, 0);
}

TEST(Recurrent, Gradients) {
  testing::check_gradients(layers::LSTM({.units = 3, .return_sequences = true, .return_state = true}),
                           {random_tensor({2, 4, 3}, 1), random_tensor({2, 3}, 2), random_tensor({2, 3}, 3)});
  testing::check_gradients(layers::LSTM({.units = 2, .activation = "softsign", .go_backwards = true}),
                           {random_tensor({2, 3, 3}, 4)});
  testing::check_gradients(layers::GRU({.units = 3, .return_sequences = true, .return_state = true}),
                           {random_tensor({2, 4, 3}, 5), random_tensor({2, 3}, 6)});
  testing::check_gradients(layers::GRU({.units = 2, .reset_after = false}), {random_tensor({2, 3, 3}, 7)});
  testing::check_gradients(layers::SimpleRNN({.units = 3, .return_sequences = true}), {random_tensor({2, 4, 3}, 8)});
}

TEST(Recurrent, ConfigsRoundTrip) {
  testing::check_config_roundtrip(layers::LSTM({.units = 3, .activation = "relu", .unit_forget_bias = false,
                                                .return_sequences = true, .go_backwards = true}));
  testing::check_config_roundtrip(layers::GRU({.units = 2, .return_state = true, .reset_after = false}));
  testing::check_config_roundtrip(layers::SimpleRNN({.units = 4, .use_bias = false}));
}

TEST(Recurrent, BadArgumentsAndShapesNameTheLayer) {
  EXPECT_NE(testing::error_of([] { layers::LSTM({.units = 0, .name = "l"}); }).find("Layer 'l' (LSTM): units must be positive"),
            std::string::npos);
  EXPECT_NE(testing::error_of([] { layers::LSTM({.units = 2, .name = "r"})(Input({5})); })
                .find("Layer 'r' (LSTM): expects a sequence [batch, timesteps, features], got shape (None, 5)"),
            std::string::npos);
  EXPECT_NE(testing::error_of([] {
              layers::LSTM({.units = 2, .name = "s"})(std::vector<SymbolicTensor>{Input({4, 3}), Input({3})});
            }).find("Layer 's' (LSTM): takes a sequence and optionally 2 initial states, got 2 inputs"),
            std::string::npos);
  EXPECT_NE(testing::error_of([] {
              layers::GRU({.units = 2, .name = "h"})(std::vector<SymbolicTensor>{Input({4, 3}), Input({3})});
            }).find("Layer 'h' (GRU): expects initial states [batch, 2], got shape (None, 3)"),
            std::string::npos);
  layers::SimpleRNN built({.units = 2, .name = "b"});
  built(Input({4, 3}));
  EXPECT_NE(testing::error_of([&] { built(Input({4, 5})); }).find("Layer 'b' (SimpleRNN): was built for 3 features, got input shape (None, 4, 5)"),
            std::string::npos);
}

}  // namespace
}  // namespace tower

namespace tower {
namespace {

// A model built for 5 steps refuses 7, naming the input and both shapes, before any layer runs.
TEST(Recurrent, ASequenceLongerThanTheModelsInputIsAClearError) {
  const SymbolicTensor x = Input({5, 3}, "steps");
  Model model(x, layers::Dense({.units = 2})(layers::LSTM({.units = 4})(x)));
  const std::string message = testing::error_of([&] { model.predict(testing::random_tensor({2, 7, 3}, 1)); });
  EXPECT_NE(message.find("(2, 7, 3)"), std::string::npos) << message;
  EXPECT_NE(message.find("5, 3)"), std::string::npos) << message;
}

}  // namespace
}  // namespace tower
