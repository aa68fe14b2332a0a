#pragma once
// The small Fashion-MNIST convnet the distribute benchmarks train: two Conv2D + BatchNormalization blocks,
// Dense 128, Dense 10.
#include <tower/tower.h>

namespace tower::bench {

inline Model batch_norm_convnet() {
  SymbolicTensor in = Input({28, 28, 1});
  SymbolicTensor h = layers::Conv2D({.filters = 32, .kernel_size = 3, .padding = "same", .use_bias = false})(in);
  h = layers::BatchNormalization()(h);
  h = layers::ReLU()(h);
  h = layers::MaxPooling2D()(h);
  h = layers::Conv2D({.filters = 64, .kernel_size = 3, .padding = "same", .use_bias = false})(h);
  h = layers::BatchNormalization()(h);
  h = layers::ReLU()(h);
  h = layers::MaxPooling2D()(h);
  h = layers::Flatten()(h);
  h = layers::Dense({.units = 128, .activation = "relu"})(h);
  return Model(in, layers::Dense({.units = 10, .activation = "softmax"})(h));
}

}  // namespace tower::bench
