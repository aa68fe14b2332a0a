#pragma once
// Helpers shared by the Keras weight file tests (tests/io/keras_weights_test.cpp,
// tests/applications/mobilenet_v2_keras_test.cpp): the fixtures written by
// tests/reference/make_keras_weights_fixtures.py and the files written for that script's --check-tower.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tower/tower.h"

namespace tower::testing {

// Keras and Tower sum in different orders (TensorFlow's oneDNN/Eigen kernels, Tower's own), so outputs of a
// float32 network agree to a few ulps per layer, not bitwise: |tower - keras| <= 1e-5 + 1e-4 |keras|.
inline constexpr float kKerasAtol = 1e-5f;
inline constexpr float kKerasRtol = 1e-4f;

// reference_dir() / "keras_weights" / name, as a string.
std::string keras_weights_fixture(const std::string& name);

struct KerasOutputsFixture {
  std::vector<std::string> layers;  // Keras' model.layers names, in order
  Tensor inputs;                    // [batch, h, w, c]
  Tensor outputs;                   // Keras' model(inputs, training=False)
  // For each nested model among `layers`, its own layers' names in Keras' order.
  std::map<std::string, std::vector<std::string>> nested_layers;
};
// Reads keras_weights/<name>.json; throws naming the file when it is missing or malformed.
KerasOutputsFixture read_keras_outputs(const std::string& name);

// Seeded random weights as the fixture script draws them: BatchNormalization gamma and moving_variance in
// [0.5, 1.5], beta and moving_mean in [-0.2, 0.2], every other weight in [-0.5, 0.5] when `all_weights`
// (else left as the initializers made them).
void randomize_weights(const Model& model, std::uint64_t seed, bool all_weights);

// The directory the files for the fixture script's --check-tower go to: $TOWER_KERAS_CHECK_DIR when set,
// else a fresh temporary directory.
std::string keras_check_dir();
// Saves `model` to <dir>/tower_<name>.weights.h5 and writes <dir>/tower_<name>.json with `inputs` and
// `outputs` (Tower's outputs on them) as {"inputs": {shape, data}, "outputs": {shape, data}}.
void write_files_for_keras(const Model& model, const std::string& dir, const std::string& name, const Tensor& inputs,
                           const Tensor& outputs);

// The groups of a Keras 3 .weights.h5 file that hold weights, as "/layers/conv2d_1/vars" -> "branch_a (1, 1, 8, 6)
// (6)": the layer's name attribute and the shapes of datasets 0, 1, ... Keras loads a file by these paths, so
// a Tower-written file must have the same map as Keras' own file of that model.
std::map<std::string, std::string> keras3_weight_groups(const std::string& file);

// Expects fn() to throw E whose message contains every one of `words`.
template <class E>
void expect_throws_mentioning(const std::function<void()>& fn, const std::vector<std::string>& words) {
  try {
    fn();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    for (const std::string& w : words)
      EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << "'" << w << "' not in: " << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected exception type: " << e.what();
  }
}

}  // namespace tower::testing
