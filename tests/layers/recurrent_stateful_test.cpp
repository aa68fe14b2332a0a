// Keras' stateful recurrent layers (layers/recurrent.h): a sequence fed in consecutive batches gives what the whole
// sequence gives at once; reset_state(); the states are shared by fit, evaluate and predict; a batch of another size
// is refused, naming the layer.
#include <cmath>
#include <memory>
#include <string>

#include "api/losses/losses.h"
#include "api/ops/ops.h"
#include "api/optimizers/optimizers.h"
#include "layers/dense.h"
#include "layers/gru.h"
#include "layers/lstm.h"
#include "layers/simple_rnn.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

using testing::random_tensor;

constexpr Index kN = 3, kT = 8, kF = 4;

void reset_last_layer(const Model& model) {
  std::dynamic_pointer_cast<layers::RecurrentLayer>(model.layers().back())->reset_state();
}

// A model of one layer (return_sequences) on chunks of `steps` steps.
template <class Layer>
Model sequence_model(typename Layer::Options o, Index steps) {
  o.return_sequences = true;
  const SymbolicTensor in = Input({steps, kF});
  Model model(in, Layer(o)(in));
  for (const VariablePtr& v : model.weights()) v->value.copy_from(random_tensor(v->value.shape(), 3, -0.5f, 0.5f));
  return model;
}

template <class Layer>
void expect_chunks_continue_the_sequence(typename Layer::Options o, const std::string& what) {
  SCOPED_TRACE(what);
  const Tensor x = random_tensor({kN, kT, kF}, 4);
  Model whole = sequence_model<Layer>(o, kT);
  o.stateful = true;
  Model chunked = sequence_model<Layer>(o, kT / 2);
  const Tensor all = whole.predict(x);
  const Tensor first = chunked.predict(ops::slice(x, {0, 0, 0}, {kN, kT / 2, kF}));
  const Tensor second = chunked.predict(ops::slice(x, {0, kT / 2, 0}, {kN, kT / 2, kF}));
  testing::expect_near(ops::concatenate({first, second}, 1), all, 1e-5f, 1e-4f, "two chunks against the whole");

  // reset_state(): the next chunk starts from zeros again.
  reset_last_layer(chunked);
  testing::expect_near(chunked.predict(ops::slice(x, {0, 0, 0}, {kN, kT / 2, kF})), first, 0.f, 0.f,
                       "after reset_state");
}

TEST(RecurrentStateful, ConsecutiveBatchesContinueTheSequence) {
  expect_chunks_continue_the_sequence<layers::LSTM>({.units = 3}, "LSTM (fused)");
  expect_chunks_continue_the_sequence<layers::LSTM>({.units = 3, .fused = false}, "LSTM (composed)");
  expect_chunks_continue_the_sequence<layers::GRU>({.units = 3}, "GRU");
  expect_chunks_continue_the_sequence<layers::SimpleRNN>({.units = 3}, "SimpleRNN");
}

TEST(RecurrentStateful, EvaluateAndTrainingCarryTheStatesPredictLeft) {
  const Tensor x = random_tensor({kN, kT, kF}, 5);
  const Tensor y = random_tensor({kN, kT, 2}, 6);
  Model model = sequence_model<layers::LSTM>({.units = 2, .stateful = true}, kT);
  model.compile(optimizers::SGD({.learning_rate = 0.0}), losses::MeanSquaredError());
  const double fresh = model.evaluate(x, y).get("loss").value();
  model.predict(x);  // the states now hold the end of x
  const double carried = model.evaluate(x, y).get("loss").value();
  EXPECT_NE(fresh, carried) << "evaluate started from zeros after predict";
  reset_last_layer(model);
  EXPECT_EQ(model.evaluate(x, y).get("loss").value(), fresh);
  // fit with a learning rate of 0 changes no weight, only the states.
  model.fit(x, y, {.epochs = 1, .batch_size = kN, .verbose = 0, .shuffle = false});
  EXPECT_NE(model.evaluate(x, y).get("loss").value(), fresh) << "fit did not carry its states over";
}

TEST(RecurrentStateful, StatefulModelsTrain) {
  const SymbolicTensor in = Input({kT, kF});
  SymbolicTensor h = layers::GRU({.units = 6, .return_sequences = true, .stateful = true})(in);
  h = layers::LSTM({.units = 6, .stateful = true})(h);
  Model model(in, layers::Dense({.units = 1})(h));
  model.compile(optimizers::Adam({.learning_rate = 0.02}), losses::MeanSquaredError());
  const Tensor x = random_tensor({32, kT, kF}, 7);
  const Tensor y = ops::reshape(ops::sum(x, {1, 2}), Shape{32, 1}) * 0.1f;
  const callbacks::History history = model.fit(x, y, {.epochs = 8, .batch_size = 8, .verbose = 0, .shuffle = false});
  const std::vector<double>& loss = history["loss"];
  for (double l : loss) ASSERT_TRUE(std::isfinite(l));
  EXPECT_LT(loss.back(), 0.7 * loss.front());
}

TEST(RecurrentStateful, ABatchOfAnotherSizeNamesTheLayer) {
  const SymbolicTensor in = Input({kT, kF});
  Model model(in, layers::LSTM({.units = 2, .stateful = true, .name = "carry"})(in));
  model.predict(random_tensor({4, kT, kF}, 8));
  EXPECT_NE(testing::error_of([&] { model.predict(random_tensor({3, kT, kF}, 9)); })
                .find("Layer 'carry' (LSTM): is stateful: every batch must have the batch size of its states (4), "
                      "got a batch of 3"),
            std::string::npos);
  reset_last_layer(model);
  EXPECT_NO_THROW(model.predict(random_tensor({3, kT, kF}, 9)));
}

TEST(RecurrentStateful, ConfigRoundTrip) {
  testing::check_config_roundtrip(layers::LSTM({.units = 3, .dropout = 0.25, .recurrent_dropout = 0.5,
                                                .stateful = true, .seed = 11}));
  testing::check_config_roundtrip(layers::GRU({.units = 2, .dropout = 0.1, .stateful = true}));
}

}  // namespace
}  // namespace tower
