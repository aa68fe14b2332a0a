#include "layers/global_max_pooling2d.h"

#include <algorithm>

#include "testing/layer_test.h"

namespace tower {
namespace {

using testing::check_gradients;

// A random permutation of distinct values 0.05 apart: a +-0.01 finite-difference step never changes which
// position holds a channel's maximum.
Tensor distinct(const Shape& shape, std::uint64_t seed) {
  const Index n = shape.numel();
  std::vector<float> v(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i) v[i] = 0.05f * static_cast<float>(i - n / 2);
  Generator g(seed);
  for (Index i = n - 1; i > 0; --i)
    std::swap(v[i], v[static_cast<Index>(g.next_u64() % static_cast<std::uint64_t>(i + 1))]);
  return Tensor::from_vector(v, shape);
}

// Two 2x2 images with channels (c0, c1): image 0 = (1, 10), (2, 40), (3, 30), (-6, 20); image 1 = -x.
Tensor two_images() {
  std::vector<float> v{1, 10, 2, 40, 3, 30, -6, 20};
  for (int i = 0; i < 8; ++i) v.push_back(-v[i]);
  return Tensor::from_vector(v, {2, 2, 2, 2});
}

TEST(GlobalMaxPooling2D, ForwardMatchesHandComputedValues) {
  layers::GlobalMaxPooling2D pool;
  const auto y = testing::run_layer(pool, {two_images()});
  EXPECT_EQ(y[0].shape(), (Shape{2, 2}));
  testing::expect_near(y[0], {3.f, 40.f, 6.f, -10.f});
}

TEST(GlobalMaxPooling2D, KeepDims) {
  layers::GlobalMaxPooling2D pool({.keepdims = true});
  const auto y = testing::run_layer(pool, {two_images()});
  EXPECT_EQ(y[0].shape(), (Shape{2, 1, 1, 2}));
  testing::expect_near(y[0], {3.f, 40.f, 6.f, -10.f});
}

TEST(GlobalMaxPooling2D, Gradients) {
  check_gradients(layers::GlobalMaxPooling2D(), {distinct({2, 3, 4, 5}, 1)});
  check_gradients(layers::GlobalMaxPooling2D({.keepdims = true}), {distinct({3, 2, 2, 3}, 2)});
}

TEST(GlobalMaxPooling2D, ConfigRoundTrip) {
  layers::GlobalMaxPooling2D pool({.name = "gmp"});
  pool(Input({4, 4, 8}));
  testing::check_config_roundtrip(pool);
  EXPECT_FALSE(pool->get_config().at("keepdims").as_bool());
}

TEST(GlobalMaxPooling2D, BadInputNamesLayerAndShapes) {
  layers::GlobalMaxPooling2D pool({.name = "gmp_bad"});
  try {
    pool(Input({4, 4, 4, 8}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'gmp_bad'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 4, 4, 4, 8)"), std::string::npos) << msg;
  }
  EXPECT_THROW(layers::GlobalMaxPooling2D({.data_format = "channels_first"}), std::invalid_argument);
}

}  // namespace
}  // namespace tower
