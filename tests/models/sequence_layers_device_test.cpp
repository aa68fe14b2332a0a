// The 1-D and sequence layers on a GPU: one model of all of them trained on cuda:0 gives the CPU's losses and
// weights (the layers run the backend's convolution, pooling, padding, upsampling and copy ops, and tower::ops).
#include <gtest/gtest.h>

#include "testing/layer_test.h"

namespace tower {
namespace {

Model sequence_model() {
  SymbolicTensor x = Input({12, 3});
  SymbolicTensor h = layers::Conv1D({.filters = 8, .kernel_size = 3, .padding = "causal", .activation = "relu"})(x);
  h = layers::SeparableConv1D({.filters = 8, .kernel_size = 3, .padding = "same", .depth_multiplier = 2})(h);
  h = layers::GroupNormalization({.groups = 4})(h);
  h = layers::MaxPooling1D()(h);                                               // 6 steps
  h = layers::ZeroPadding1D({.padding = {1, 2}})(h);                           // 9
  h = layers::AveragePooling1D({.pool_size = 3, .strides = Size1(1), .padding = "same"})(h);
  h = layers::Cropping1D({.cropping = {2, 1}})(h);                             // 6
  h = layers::UpSampling1D()(h);                                               // 12
  h = layers::TimeDistributed({.layer = layers::Dense({.units = 4, .activation = "tanh"})})(h);
  SymbolicTensor pooled = layers::GlobalMaxPooling1D()(h);                     // [4]
  SymbolicTensor repeated = layers::UnitNormalization()(layers::RepeatVector({.n = 3})(pooled));
  SymbolicTensor averaged = layers::GlobalAveragePooling1D()(repeated);
  return Model(x, layers::Dense({.units = 3, .activation = "softmax"})(averaged));
}

TEST(SequenceLayersDevice, TrainingOnTheGpuMatchesTheCpu_CUDA) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU";
  const Tensor x = testing::random_tensor({32, 12, 3}, 3);
  std::vector<std::int32_t> labels(32);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int32_t>(i % 3);
  const Tensor y = Tensor::from_vector(labels, {32});
  const auto train = [&](Device device) {
    set_random_seed(7);
    Model model = sequence_model();
    model.to(device);
    model.compile(optimizers::SGD({.learning_rate = 0.05, .momentum = 0.9}), losses::SparseCategoricalCrossentropy());
    auto history = model.fit(x, y, {.epochs = 3, .batch_size = 8, .verbose = 0, .shuffle = false});
    for (const VariablePtr& w : model.weights()) EXPECT_EQ(w->value.device(), device) << w->path;
    return std::make_pair(history["loss"], model.get_weights());
  };
  const auto [cpu_loss, cpu_weights] = train(Device::cpu());
  const auto [gpu_loss, gpu_weights] = train(Device::cuda(0));
  ASSERT_EQ(cpu_loss.size(), gpu_loss.size());
  for (std::size_t e = 0; e < cpu_loss.size(); ++e) EXPECT_NEAR(gpu_loss[e], cpu_loss[e], 2e-3) << "epoch " << e;
  ASSERT_EQ(cpu_weights.size(), gpu_weights.size());
  for (std::size_t k = 0; k < cpu_weights.size(); ++k) {
    const std::vector<float> a = cpu_weights[k].to_vector(), b = gpu_weights[k].to_vector();
    for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(b[i], a[i], 5e-3) << "weight " << k << "[" << i << "]";
  }
}

}  // namespace
}  // namespace tower
