#pragma once
// Shared by the distribute tests: a small convnet, seeded examples, and the relative difference the issue
// bounds.
#include <cstdint>
#include <vector>

#include "tower/tower.h"

namespace tower::testing {

// Input(8, 8, 2) -> Conv2D(6, 3, same, no bias) -> [BatchNormalization] -> ReLU -> MaxPooling2D
// -> Conv2D(8, 3, no bias) -> [BatchNormalization] -> ReLU -> GlobalAveragePooling2D -> Dense(4, softmax).
// Without batch_norm the convolutions have biases and no BatchNormalization follows them.
Model small_convnet(bool batch_norm, bool synchronized);

struct Examples {
  Tensor x, y;  // x [count, 8, 8, 2] float32, y [count] int32 labels in 0..3 (the brightest quadrant)
};
Examples seeded_examples(Index count, std::uint64_t seed);

// max |got - want| / max |want| over the tensor (the relative difference of the bounds).
double relative_difference(const Tensor& got, const Tensor& want);

// Sets the logical GPUs per GPU (distribute::set_logical_gpus_per_gpu) for a test's lifetime.
class LogicalGpusPerGpu {
 public:
  explicit LogicalGpusPerGpu(int n);
  ~LogicalGpusPerGpu();
  LogicalGpusPerGpu(const LogicalGpusPerGpu&) = delete;
  LogicalGpusPerGpu& operator=(const LogicalGpusPerGpu&) = delete;

 private:
  int before_;
};

}  // namespace tower::testing
