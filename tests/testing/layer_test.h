#pragma once
// Shared checks every layer test uses (Keras' run_layer_test, flashlight's Jacobian helper):
//   check_gradients   central finite differences of L = sum(output * R) (R fixed random) against the
//                     layer's backward, for every input and every trainable weight (a random layer keeps the masks
//                     of the analytic pass);
//   check_config_roundtrip   get_config -> from_config -> get_config is the identity;
//   run_layer        forward through a one-layer model, returning the outputs.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "tower/tower.h"
#include "testing/errors.h"

namespace tower::testing {

// Uniform random tensor in [low, high) from a fixed seed.
Tensor random_tensor(const Shape& shape, std::uint64_t seed, float low = -1.f, float high = 1.f);

struct GradCheckOptions {
  // Central differences with step eps on float32 values: the truncation error is O(eps^2) and the rounding
  // error about 1e-7 * |L| / eps, so eps = 1e-2 keeps both near 1e-4 for the O(1) values used in the tests.
  double eps = 1e-2;
  double atol = 2e-3;
  double rtol = 2e-2;
  bool training = true;
  // At most this many elements of each tensor are perturbed (chosen at random, always including the first
  // and last); 0 means all.
  int max_elements_per_tensor = 120;
  bool check_inputs = true;
  bool check_weights = true;
};

// Builds Model(Input(...)..., layer(inputs)) for the given concrete inputs (batch = dim 0) and compares
// analytic and numeric gradients. Reports failures through gtest with the tensor and element index.
void check_gradients(const LayerPtr& layer, const std::vector<Tensor>& inputs, GradCheckOptions options = {});

// Forward only; `training` selects the layer's training behaviour.
std::vector<Tensor> run_layer(const LayerPtr& layer, const std::vector<Tensor>& inputs, bool training = false);

void check_config_roundtrip(const LayerPtr& layer);


// Element-wise comparison with a message naming the first mismatch.
void expect_near(const Tensor& actual, const std::vector<float>& expected, float atol = 1e-5f, float rtol = 1e-5f,
                 const std::string& what = "");
void expect_near(const Tensor& actual, const Tensor& expected, float atol = 1e-5f, float rtol = 1e-5f,
                 const std::string& what = "");

}  // namespace tower::testing
