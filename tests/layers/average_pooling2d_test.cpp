#include "layers/average_pooling2d.h"

#include <numeric>

#include "testing/layer_test.h"

namespace tower {
namespace {

using testing::check_gradients;
using testing::random_tensor;

// 1, 2, ..., h*w*c in NHWC order, one image.
Tensor counting(Index h, Index w, Index c) {
  std::vector<float> v(static_cast<std::size_t>(h * w * c));
  std::iota(v.begin(), v.end(), 1.f);
  return Tensor::from_vector(v, {1, h, w, c});
}

TEST(AveragePooling2D, ValidForwardMatchesHandComputedValues) {
  layers::AveragePooling2D pool;
  // 4x4 image 1..16: block means (1+2+5+6)/4 = 3.5, 5.5, 11.5, 13.5.
  const auto y = testing::run_layer(pool, {counting(4, 4, 1)});
  EXPECT_EQ(y[0].shape(), (Shape{1, 2, 2, 1}));
  testing::expect_near(y[0], {3.5f, 5.5f, 11.5f, 13.5f});
}

TEST(AveragePooling2D, SamePaddingEdgeWindowsDivideByTheValidCount) {
  // 3x3 image 1..9, pool 2 stride 2 'same': (1+2+4+5)/4 = 3, (3+6)/2 = 4.5, (7+8)/2 = 7.5, 9/1 = 9.
  layers::AveragePooling2D same({.pool_size = 2, .padding = "same"});
  testing::expect_near(testing::run_layer(same, {counting(3, 3, 1)})[0], {3.f, 4.5f, 7.5f, 9.f});
  // pool 3 stride 1 'same' (one padding row/column each side): the corner (0,0) averages 1, 2, 4, 5 = 3
  // (divided by 4, not 9), the edge (0,1) averages 1..6 = 3.5, the centre all nine = 5.
  layers::AveragePooling2D same3({.pool_size = 3, .strides = Size2(1), .padding = "same"});
  testing::expect_near(testing::run_layer(same3, {counting(3, 3, 1)})[0],
                       {3.f, 3.5f, 4.f, 4.5f, 5.f, 5.5f, 6.f, 6.5f, 7.f});
}

TEST(AveragePooling2D, TwoChannelsAreIndependent) {
  // 2x2 image with channels (1, 10), (2, 20), (3, 30), (4, 40): means 2.5 and 25.
  layers::AveragePooling2D pool;
  const auto y =
      testing::run_layer(pool, {Tensor::from_vector(std::vector<float>{1, 10, 2, 20, 3, 30, 4, 40}, {1, 2, 2, 2})});
  testing::expect_near(y[0], {2.5f, 25.f});
}

TEST(AveragePooling2D, Gradients) {
  struct Case {
    layers::AveragePooling2DOptions options;
    Shape input;
  };
  const std::vector<Case> cases{
      {{}, {2, 4, 4, 3}},
      {{.pool_size = 3, .strides = Size2(2), .padding = "same"}, {2, 5, 6, 2}},
      {{.pool_size = {2, 3}, .strides = Size2{1, 2}, .padding = "same"}, {1, 4, 5, 3}},
      {{.pool_size = 2, .strides = Size2(3)}, {2, 7, 7, 2}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.input.to_string());
    check_gradients(layers::AveragePooling2D(c.options), {random_tensor(c.input, 21)});
  }
}

TEST(AveragePooling2D, ConfigRoundTrip) {
  layers::AveragePooling2D pool({.pool_size = 3, .strides = Size2(1), .padding = "same", .name = "avg"});
  pool(Input({6, 6, 4}));
  testing::check_config_roundtrip(pool);
  EXPECT_EQ(pool->get_config().at("padding").as_string(), "same");
}

TEST(AveragePooling2D, BadInputNamesLayerAndShapes) {
  layers::AveragePooling2D pool({.pool_size = {3, 1}, .name = "ap"});
  try {
    pool(Input({2, 8, 3}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'ap'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(3, 1)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 2, 8, 3)"), std::string::npos) << msg;
  }
}

TEST(AveragePooling2D, RejectsBadArguments) {
  EXPECT_THROW(layers::AveragePooling2D({.pool_size = {2, -1}}), std::invalid_argument);
  EXPECT_THROW(layers::AveragePooling2D({.padding = "full"}), std::invalid_argument);
  EXPECT_THROW(layers::AveragePooling2D({.data_format = "channels_first"}), std::invalid_argument);
}

}  // namespace
}  // namespace tower
