#pragma once
// The small models the weight-file fuzz targets load into, shared with the seed writer (make_tower_seeds.cpp)
// so that the seeds match them. tests/fuzz/make_seeds.py writes the Keras layouts of keras_model() by hand.
#include "tower/tower.h"

namespace tower::fuzz {

// Dense(4, tanh) -> Dense(2) on 3 features, compiled with SGD momentum (one slot per weight), as the
// BackupAndRestore tests use.
inline Sequential tower_model() {
  set_random_seed(1);
  Sequential m({InputLayer({.shape = {3}}), layers::Dense({.units = 4, .activation = "tanh"}),
                layers::Dense({.units = 2})});
  m.compile(optimizers::SGD({.learning_rate = 0.05, .momentum = 0.9}), losses::MeanSquaredError());
  return m;
}

// conv (Conv2D 3x3 same, 2 -> 3 channels) -> bn -> pool -> dense (3 -> 2): one layer of each weight layout.
inline Model keras_model() {
  SymbolicTensor x = Input({4, 4, 2}, "image");
  SymbolicTensor y = layers::Conv2D({.filters = 3, .kernel_size = 3, .padding = "same", .name = "conv"})(x);
  y = layers::BatchNormalization({.name = "bn"})(y);
  y = layers::GlobalAveragePooling2D({.name = "pool"})(y);
  y = layers::Dense({.units = 2, .name = "dense"})(y);
  return Model(x, y, "fuzz");
}

}  // namespace tower::fuzz
