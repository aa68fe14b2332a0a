// The 1-D and sequence layers on a GPU: one model of all of them trained on cuda:0 gives the CPU's losses and
// weights (the layers run the backend's convolution, pooling, padding, upsampling and copy ops, and tower::ops).
#include <gtest/gtest.h>

#include "testing/device_parity.h"
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
  testing::expect_gpu_training_matches_cpu(sequence_model, x, y, 7);
}

}  // namespace
}  // namespace tower
