// The recurrent and attention layers on a GPU: one model of Embedding, LSTM (fused), GRU (fused and composed),
// SimpleRNN, MultiHeadAttention with a causal mask and LayerNormalization, trained on cuda:0, gives the CPU's losses
// and weights (the fused steps' kernels and cuBLASLt's strided per-step products among them); and with dropout.
#include <gtest/gtest.h>

#include "testing/device_parity.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

Model recurrent_attention_model() {
  SymbolicTensor ids = Input({10});
  SymbolicTensor h = layers::Embedding({.input_dim = 20, .output_dim = 8})(ids);
  h = layers::LSTM({.units = 8, .return_sequences = true})(h);
  h = layers::MultiHeadAttention({.num_heads = 2, .key_dim = 4, .use_causal_mask = true})({h, h});
  h = layers::LayerNormalization()(h);
  h = layers::GRU({.units = 6, .return_sequences = true, .go_backwards = true})(h);
  h = layers::GRU({.units = 6, .return_sequences = true, .reset_after = false})(h);
  h = layers::SimpleRNN({.units = 5})(h);
  return Model(ids, layers::Dense({.units = 3, .activation = "softmax"})(h));
}

TEST(RecurrentAttentionDevice, TrainingOnTheGpuMatchesTheCpu_CUDA) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU";
  std::vector<float> id_values(32 * 10);
  for (std::size_t i = 0; i < id_values.size(); ++i) id_values[i] = static_cast<float>((i * 7) % 20);
  const Tensor x = Tensor::from_vector(id_values, {32, 10});
  std::vector<std::int32_t> labels(32);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int32_t>(i % 3);
  const Tensor y = Tensor::from_vector(labels, {32});
  testing::expect_gpu_training_matches_cpu(recurrent_attention_model, x, y, 11);
}

// Keras' dropout in the recurrent and attention layers: the masks come from the backend's counter-based dropout_mask,
// so cuda:0 draws the CPU's masks and trains to the CPU's weights.
Model dropout_model() {
  SymbolicTensor ids = Input({10});
  SymbolicTensor h = layers::Embedding({.input_dim = 20, .output_dim = 8})(ids);
  h = layers::LSTM({.units = 8, .dropout = 0.2, .recurrent_dropout = 0.3, .return_sequences = true})(h);
  h = layers::MultiHeadAttention({.num_heads = 2, .key_dim = 4, .dropout = 0.25f})({h, h});
  h = layers::Attention({.dropout = 0.2f})({h, h});
  h = layers::GRU({.units = 6, .dropout = 0.3})(h);
  return Model(ids, layers::Dense({.units = 3, .activation = "softmax"})(h));
}

TEST(RecurrentAttentionDevice, DropoutOnTheGpuMatchesTheCpu_CUDA) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU";
  std::vector<float> id_values(32 * 10);
  for (std::size_t i = 0; i < id_values.size(); ++i) id_values[i] = static_cast<float>((i * 3) % 20);
  const Tensor x = Tensor::from_vector(id_values, {32, 10});
  std::vector<std::int32_t> labels(32);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int32_t>(i % 3);
  testing::expect_gpu_training_matches_cpu(dropout_model, x, Tensor::from_vector(labels, {32}), 12);
}

// The same model learns on the CPU: the class is the first id's remainder modulo 3, which every layer has to carry.
TEST(RecurrentAttentionDevice, TheModelLearnsOnTheCpu) {
  Generator g(5);
  std::vector<float> id_values(32 * 10);
  for (float& v : id_values) v = static_cast<float>(g.next_u64() % 20);
  std::vector<std::int32_t> labels(32);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int32_t>(id_values[i * 10]) % 3;
  set_random_seed(11);
  Model model = recurrent_attention_model();
  model.compile(optimizers::Adam(3e-3), losses::SparseCategoricalCrossentropy());
  auto history = model.fit(Tensor::from_vector(id_values, {32, 10}), Tensor::from_vector(labels, {32}),
                           {.epochs = 30, .batch_size = 8, .verbose = 0});
  EXPECT_LT(history["loss"].back(), 0.5 * history["loss"].front());
}

}  // namespace
}  // namespace tower
