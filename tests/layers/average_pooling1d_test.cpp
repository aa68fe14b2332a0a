#include "layers/average_pooling1d.h"

#include <string>

#include "testing/layer_test.h"

namespace tower {
namespace {

TEST(AveragePooling1D, ForwardMatchesHandComputedValues) {
  const Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5}, {1, 5, 1});
  auto y = testing::run_layer(layers::AveragePooling1D({.pool_size = 2}), {x});
  EXPECT_EQ(y[0].shape(), (Shape{1, 2, 1}));
  testing::expect_near(y[0], {1.5f, 3.5f});
  // 'same', pool 3 stride 2: out 3, pad 1 before and 1 after; the padding is not counted.
  y = testing::run_layer(layers::AveragePooling1D({.pool_size = 3, .strides = Size1(2), .padding = "same"}), {x});
  EXPECT_EQ(y[0].shape(), (Shape{1, 3, 1}));
  testing::expect_near(y[0], {1.5f, 3.f, 4.5f});
}

TEST(AveragePooling1D, Gradients) {
  testing::check_gradients(layers::AveragePooling1D({.pool_size = 2}), {testing::random_tensor({2, 7, 3}, 1)});
  testing::check_gradients(layers::AveragePooling1D({.pool_size = 3, .strides = Size1(2), .padding = "same"}),
                           {testing::random_tensor({2, 6, 2}, 2)});
}

TEST(AveragePooling1D, ConfigRoundTrip) {
  layers::AveragePooling1D pool({.pool_size = 2, .strides = Size1(1), .padding = "same", .name = "ap"});
  testing::check_config_roundtrip(pool);
  EXPECT_EQ(pool->get_config().at("strides").to_json(), "[1]");
}

TEST(AveragePooling1D, WrongInputsNameTheLayerAndShapes) {
  try {
    layers::AveragePooling1D({.pool_size = 2, .name = "ap"})(Input({4}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Layer 'ap' (AveragePooling1D): expects input of rank 3"), std::string::npos) << msg;
  }
  EXPECT_THROW(layers::AveragePooling1D({.pool_size = 3})(Input({2, 2})), ShapeError);
}

TEST(AveragePooling1D, PoolSizeIsRequiredAsInKeras) {
  EXPECT_THROW(layers::AveragePooling1D(), std::invalid_argument);
  EXPECT_THROW(layers::AveragePooling1D({.pool_size = 2, .padding = "full"}), std::invalid_argument);
}

}  // namespace
}  // namespace tower
