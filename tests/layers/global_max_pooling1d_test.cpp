#include "layers/global_max_pooling1d.h"

#include <string>

#include "testing/layer_test.h"

namespace tower {
namespace {

// Steps (1, 2), (5, -1), (3, 0): mean (3, 1/3), max (5, 2).
TEST(GlobalMaxPooling1D, ReducesTheSteps) {
  const Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 5, -1, 3, 0}, {1, 3, 2});
  const std::vector<float> expected =
      "Max" == std::string("Max") ? std::vector<float>{5.f, 2.f} : std::vector<float>{3.f, 1.f / 3};
  auto y = testing::run_layer(layers::GlobalMaxPooling1D(), {x});
  EXPECT_EQ(y[0].shape(), (Shape{1, 2}));
  testing::expect_near(y[0], expected);
  y = testing::run_layer(layers::GlobalMaxPooling1D({.keepdims = true}), {x});
  EXPECT_EQ(y[0].shape(), (Shape{1, 1, 2}));
  testing::expect_near(y[0], expected);
}

TEST(GlobalMaxPooling1D, Gradients) {
  // Distinct values far apart, so a finite-difference step never changes which step is the maximum.
  std::vector<float> v(30);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.05f * static_cast<float>((i * 7) % 30) - 0.7f;
  const Tensor x = Tensor::from_vector(v, {2, 5, 3});
  testing::check_gradients(layers::GlobalMaxPooling1D(), {x});
  testing::check_gradients(layers::GlobalMaxPooling1D({.keepdims = true}), {x});
}

TEST(GlobalMaxPooling1D, ConfigRoundTrip) {
  layers::GlobalMaxPooling1D pool({.keepdims = true, .name = "g"});
  testing::check_config_roundtrip(pool);
  EXPECT_TRUE(pool->get_config().at("keepdims").as_bool());
}

TEST(GlobalMaxPooling1D, WrongInputsNameTheLayerAndShapes) {
  try {
    layers::GlobalMaxPooling1D({.name = "g"})(Input({4, 4, 2}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Layer 'g' (GlobalMaxPooling1D): expects input of rank 3"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 4, 4, 2)"), std::string::npos) << msg;
  }
  EXPECT_THROW(layers::GlobalMaxPooling1D({.data_format = "channels_first"}), std::invalid_argument);
}

}  // namespace
}  // namespace tower
