#include "layers/global_average_pooling2d.h"

#include "testing/layer_test.h"

namespace tower {
namespace {

using testing::check_gradients;
using testing::random_tensor;

// Two 2x2 images with channels (c0, c1): image 0 = (1, 10), (2, 20), (3, 30), (6, 40); image 1 = -x.
Tensor two_images() {
  std::vector<float> v{1, 10, 2, 20, 3, 30, 6, 40};
  for (int i = 0; i < 8; ++i) v.push_back(-v[i]);
  return Tensor::from_vector(v, {2, 2, 2, 2});
}

TEST(GlobalAveragePooling2D, ForwardMatchesHandComputedValues) {
  layers::GlobalAveragePooling2D pool;
  const auto y = testing::run_layer(pool, {two_images()});
  EXPECT_EQ(y[0].shape(), (Shape{2, 2}));
  testing::expect_near(y[0], {3.f, 25.f, -3.f, -25.f});
}

TEST(GlobalAveragePooling2D, KeepDims) {
  layers::GlobalAveragePooling2D pool({.keepdims = true});
  const auto y = testing::run_layer(pool, {two_images()});
  EXPECT_EQ(y[0].shape(), (Shape{2, 1, 1, 2}));
  testing::expect_near(y[0], {3.f, 25.f, -3.f, -25.f});
  layers::GlobalAveragePooling2D flat;
  EXPECT_EQ(flat(Input({7, 5, 16})).shape(), (Shape{-1, 16}));
}

TEST(GlobalAveragePooling2D, Gradients) {
  check_gradients(layers::GlobalAveragePooling2D(), {random_tensor({2, 3, 4, 5}, 1)});
  check_gradients(layers::GlobalAveragePooling2D({.keepdims = true}), {random_tensor({3, 2, 2, 3}, 2)});
}

TEST(GlobalAveragePooling2D, ConfigRoundTrip) {
  layers::GlobalAveragePooling2D pool({.keepdims = true, .name = "gap"});
  pool(Input({4, 4, 8}));
  testing::check_config_roundtrip(pool);
  EXPECT_TRUE(pool->get_config().at("keepdims").as_bool());
  EXPECT_EQ(pool->get_config().at("data_format").as_string(), "channels_last");
}

TEST(GlobalAveragePooling2D, BadInputNamesLayerAndShapes) {
  layers::GlobalAveragePooling2D pool({.name = "gap_bad"});
  try {
    pool(Input({4, 8}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'gap_bad'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 4, 8)"), std::string::npos) << msg;
  }
  EXPECT_THROW(layers::GlobalAveragePooling2D({.data_format = "channels_first"}), std::invalid_argument);
}

}  // namespace
}  // namespace tower
