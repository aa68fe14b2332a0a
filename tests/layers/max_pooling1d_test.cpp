#include "layers/max_pooling1d.h"

#include <string>

#include "testing/layer_test.h"

namespace tower {
namespace {

// A random permutation of distinct values 0.05 apart: a finite-difference step never changes a window's maximum.
Tensor distinct(const Shape& shape, std::uint64_t seed) {
  const Index n = shape.numel();
  std::vector<float> v(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i) v[i] = 0.05f * static_cast<float>(i - n / 2);
  Generator g(seed);
  for (Index i = n - 1; i > 0; --i)
    std::swap(v[i], v[static_cast<Index>(g.next_u64() % static_cast<std::uint64_t>(i + 1))]);
  return Tensor::from_vector(v, shape);
}

TEST(MaxPooling1D, ForwardMatchesHandComputedValues) {
  // Steps 3 1 4 1 5 9 2, one channel.
  const Tensor x = Tensor::from_vector(std::vector<float>{3, 1, 4, 1, 5, 9, 2}, {1, 7, 1});
  auto y = testing::run_layer(layers::MaxPooling1D(), {x});  // pool 2, stride 2, valid: 3 windows
  EXPECT_EQ(y[0].shape(), (Shape{1, 3, 1}));
  testing::expect_near(y[0], {3.f, 4.f, 9.f});
  // pool 3 stride 2 'same': out 4, pad_total 2 -> 1 before, 1 after: max(3,1), max(1,4,1), max(1,5,9), max(9,2).
  y = testing::run_layer(layers::MaxPooling1D({.pool_size = 3, .strides = Size1(2), .padding = "same"}), {x});
  EXPECT_EQ(y[0].shape(), (Shape{1, 4, 1}));
  testing::expect_near(y[0], {3.f, 4.f, 9.f, 9.f});
  // Negative values: the padding never wins.
  const Tensor neg = Tensor::from_vector(std::vector<float>{-3, -1, -4}, {1, 3, 1});
  testing::expect_near(testing::run_layer(layers::MaxPooling1D({.padding = "same"}), {neg})[0], {-1.f, -4.f});
}

TEST(MaxPooling1D, OutputShapes) {
  EXPECT_EQ(layers::MaxPooling1D()(Input({9, 4})).shape(), (Shape{-1, 4, 4}));
  EXPECT_EQ(layers::MaxPooling1D({.padding = "same"})(Input({9, 4})).shape(), (Shape{-1, 5, 4}));
  EXPECT_EQ(layers::MaxPooling1D({.pool_size = 3, .strides = Size1(1)})(Input({9, 4})).shape(), (Shape{-1, 7, 4}));
}

TEST(MaxPooling1D, Gradients) {
  testing::check_gradients(layers::MaxPooling1D(), {distinct({2, 7, 3}, 1)});
  testing::check_gradients(layers::MaxPooling1D({.pool_size = 3, .strides = Size1(2), .padding = "same"}),
                           {distinct({2, 6, 2}, 2)});
  testing::GradCheckOptions inference;
  inference.training = false;
  testing::check_gradients(layers::MaxPooling1D({.pool_size = 2, .strides = Size1(3)}), {distinct({2, 8, 2}, 3)},
                           inference);
}

TEST(MaxPooling1D, ConfigRoundTrip) {
  layers::MaxPooling1D pool({.pool_size = 3, .padding = "same", .name = "p"});
  testing::check_config_roundtrip(pool);
  const Config c = pool->get_config();
  EXPECT_EQ(c.at("pool_size").to_json(), "[3]");
  EXPECT_EQ(c.at("strides").to_json(), "[3]");  // as Keras: unset strides are pool_size
}

TEST(MaxPooling1D, WrongInputsNameTheLayerAndShapes) {
  try {
    layers::MaxPooling1D({.name = "mp"})(Input({4, 4, 2}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Layer 'mp' (MaxPooling1D): expects input of rank 3"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 4, 4, 2)"), std::string::npos) << msg;
  }
  EXPECT_THROW(layers::MaxPooling1D({.pool_size = 5})(Input({4, 2})), ShapeError);
}

TEST(MaxPooling1D, RejectsBadArguments) {
  EXPECT_THROW(layers::MaxPooling1D({.pool_size = 0}), std::invalid_argument);
  EXPECT_THROW(layers::MaxPooling1D({.strides = Size1(0)}), std::invalid_argument);
  EXPECT_THROW(layers::MaxPooling1D({.padding = "causal"}), std::invalid_argument);
  EXPECT_THROW(layers::MaxPooling1D({.data_format = "channels_first"}), std::invalid_argument);
}

}  // namespace
}  // namespace tower
