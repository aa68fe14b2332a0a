#pragma once
// A model trained on a GPU against the same model trained on the CPU: the *_CUDA tests of layer families.
#include <cstdint>
#include <functional>

#include "tower/tower.h"

namespace tower::testing {

// Builds make_model() from `seed` on the CPU and on cuda:0, trains each 3 epochs on (x, y) with SGD (0.05, momentum
// 0.9), sparse categorical cross-entropy, batches of 8 in order, and expects every weight on its device, the epochs'
// losses within 2e-3 and the weights within 5e-3 of the CPU's. Requires a GPU.
void expect_gpu_training_matches_cpu(const std::function<Model()>& make_model, const Tensor& x, const Tensor& y,
                                     std::uint64_t seed);

}  // namespace tower::testing
