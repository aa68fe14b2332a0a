#include "layers/max_pooling2d.h"

#include <algorithm>
#include <numeric>

#include "testing/layer_test.h"

namespace tower {
namespace {

using testing::check_gradients;
using testing::GradCheckOptions;

// 1, 2, ..., h*w*c in NHWC order, one image.
Tensor counting(Index h, Index w, Index c) {
  std::vector<float> v(static_cast<std::size_t>(h * w * c));
  std::iota(v.begin(), v.end(), 1.f);
  return Tensor::from_vector(v, {1, h, w, c});
}

// A random permutation of distinct values 0.05 apart: a +-0.01 finite-difference step never changes which
// element of a window is the maximum.
Tensor distinct(const Shape& shape, std::uint64_t seed) {
  const Index n = shape.numel();
  std::vector<float> v(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i) v[i] = 0.05f * static_cast<float>(i - n / 2);
  Generator g(seed);
  for (Index i = n - 1; i > 0; --i)
    std::swap(v[i], v[static_cast<Index>(g.next_u64() % static_cast<std::uint64_t>(i + 1))]);
  return Tensor::from_vector(v, shape);
}

TEST(MaxPooling2D, ValidForwardMatchesHandComputedValues) {
  layers::MaxPooling2D pool;  // pool_size 2, strides = pool_size
  // 4x4 image 1..16: the 2x2 blocks' maxima are 6, 8, 14, 16.
  const auto y = testing::run_layer(pool, {counting(4, 4, 1)});
  EXPECT_EQ(y[0].shape(), (Shape{1, 2, 2, 1}));
  testing::expect_near(y[0], {6.f, 8.f, 14.f, 16.f});
}

TEST(MaxPooling2D, SamePaddingAndExplicitStrides) {
  // 3x3 image 1..9 (rows 1 2 3 / 4 5 6 / 7 8 9), pool 2 stride 2 'same': out 2x2, the bottom/right windows
  // are cut by the padding: max(1,2,4,5), max(3,6), max(7,8), max(9).
  layers::MaxPooling2D same({.pool_size = 2, .padding = "same"});
  auto y = testing::run_layer(same, {counting(3, 3, 1)});
  EXPECT_EQ(y[0].shape(), (Shape{1, 2, 2, 1}));
  testing::expect_near(y[0], {5.f, 6.f, 8.f, 9.f});
  // Negative values: the padding must not win.
  const Tensor neg = Tensor::from_vector(std::vector<float>{-9, -8, -7, -6, -5, -4, -3, -2, -1}, {1, 3, 3, 1});
  testing::expect_near(testing::run_layer(same, {neg})[0], {-5.f, -4.f, -2.f, -1.f});
  // pool 2 stride 1 'valid' on 3x3: overlapping windows.
  layers::MaxPooling2D overlap({.pool_size = 2, .strides = Size2(1)});
  testing::expect_near(testing::run_layer(overlap, {counting(3, 3, 1)})[0], {5.f, 6.f, 8.f, 9.f});
  // pool (1, 3) stride (1, 2) on 2x4, two channels: width windows [0,3) only ('valid').
  layers::MaxPooling2D wide({.pool_size = {1, 3}, .strides = Size2{1, 2}});
  y = testing::run_layer(wide, {counting(2, 4, 2)});
  EXPECT_EQ(y[0].shape(), (Shape{1, 2, 1, 2}));
  testing::expect_near(y[0], {5.f, 6.f, 13.f, 14.f});
}

TEST(MaxPooling2D, OutputShapesFollowTensorFlow) {
  layers::MaxPooling2D valid({.pool_size = 3, .strides = Size2(2)});
  EXPECT_EQ(valid(Input({7, 8, 5})).shape(), (Shape{-1, 3, 3, 5}));
  layers::MaxPooling2D same({.pool_size = 3, .strides = Size2(2), .padding = "SAME"});
  EXPECT_EQ(same(Input({7, 8, 5})).shape(), (Shape{-1, 4, 4, 5}));
  EXPECT_EQ(same->options().padding, "same");
}

TEST(MaxPooling2D, Gradients) {
  struct Case {
    layers::MaxPooling2DOptions options;
    Shape input;
  };
  const std::vector<Case> cases{
      {{}, {2, 4, 4, 3}},
      {{.pool_size = 3, .strides = Size2(2), .padding = "same"}, {2, 5, 6, 2}},
      {{.pool_size = {2, 3}, .strides = Size2{1, 2}, .padding = "same"}, {1, 4, 5, 3}},
      {{.pool_size = 2, .strides = Size2(3)}, {2, 7, 7, 2}},  // stride > pool: some inputs in no window
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.input.to_string());
    check_gradients(layers::MaxPooling2D(c.options), {distinct(c.input, 11)});
  }
}

TEST(MaxPooling2D, GradientsInAnInferencePlan) {
  // A plan compiled with training = false and backward = true (input gradients of a frozen model).
  layers::MaxPooling2D pool({.pool_size = 3, .strides = Size2(2), .padding = "same"});
  GradCheckOptions o;
  o.training = false;
  check_gradients(pool, {distinct({2, 5, 5, 3}, 12)}, o);
}

TEST(MaxPooling2D, ConfigRoundTrip) {
  layers::MaxPooling2D pool({.pool_size = {3, 2}, .padding = "same", .name = "pool1"});
  pool(Input({8, 8, 3}));
  testing::check_config_roundtrip(pool);
  const Config c = pool->get_config();
  // As in Keras, strides left unset are stored as pool_size.
  EXPECT_EQ(c.at("strides").to_json(), c.at("pool_size").to_json());
  EXPECT_EQ(c.at("padding").as_string(), "same");
  EXPECT_EQ(c.at("data_format").as_string(), "channels_last");
}

TEST(MaxPooling2D, BadInputNamesLayerAndShapes) {
  layers::MaxPooling2D pool({.name = "mp"});
  try {
    pool(Input({8, 3}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'mp'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("rank 4"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 8, 3)"), std::string::npos) << msg;
  }
  layers::MaxPooling2D big({.pool_size = 5, .name = "mp_big"});
  try {
    big(Input({4, 8, 3}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'mp_big'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 4, 8, 3)"), std::string::npos) << msg;
  }
}

TEST(MaxPooling2D, RejectsBadArguments) {
  EXPECT_THROW(layers::MaxPooling2D({.pool_size = 0}), std::invalid_argument);
  EXPECT_THROW(layers::MaxPooling2D({.strides = Size2(0)}), std::invalid_argument);
  EXPECT_THROW(layers::MaxPooling2D({.padding = "causal"}), std::invalid_argument);
  EXPECT_THROW(layers::MaxPooling2D({.data_format = "channels_first"}), std::invalid_argument);
}

}  // namespace
}  // namespace tower
