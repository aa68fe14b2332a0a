#include "layers/depthwise_conv2d.h"

#include "testing/layer_test.h"

namespace tower {
namespace {

using testing::check_gradients;
using testing::random_tensor;

TEST(DepthwiseConv2D, MultiplierOrdersOutputChannelsByInputChannel) {
  // 1x1 kernel [1, 1, 2, 2] = {{1, 2}, {3, 4}}: outputs c0*1, c0*2, c1*3, c1*4 (+ bias 0.5).
  layers::DepthwiseConv2D dw({.kernel_size = 1, .depth_multiplier = 2, .bias_initializer = initializers::Constant(0.5)});
  dw(Input({1, 2, 2}));
  dw->kernel()->value.copy_from(Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {1, 1, 2, 2}));
  auto out = testing::run_layer(dw, {Tensor::from_vector(std::vector<float>{10, 100, 20, 200}, {1, 1, 2, 2})});
  EXPECT_EQ(out[0].shape(), (Shape{1, 1, 2, 4}));
  testing::expect_near(out[0], {10.5f, 20.5f, 300.5f, 400.5f, 20.5f, 40.5f, 600.5f, 800.5f});
}

TEST(DepthwiseConv2D, SameForwardMatchesHandComputedValues) {
  // 3x3 input, channel 0 = 1..9, channel 1 = 10 * (1..9); 3x3 kernel of ones on channel 0 and twos on
  // channel 1, 'same' (pad 1 everywhere): the centre sums all 9 (45), a corner sums its 2x2 block.
  layers::DepthwiseConv2D dw({.kernel_size = 3, .padding = "same", .use_bias = false});
  dw(Input({3, 3, 2}));
  std::vector<float> k;
  for (int i = 0; i < 9; ++i) k.insert(k.end(), {1.f, 2.f});
  dw->kernel()->value.copy_from(Tensor::from_vector(k, {3, 3, 2, 1}));
  std::vector<float> x;
  for (int i = 1; i <= 9; ++i) x.insert(x.end(), {static_cast<float>(i), 10.f * static_cast<float>(i)});
  auto out = testing::run_layer(dw, {Tensor::from_vector(x, {1, 3, 3, 2})});
  // Channel 0 window sums: 12 21 16 / 27 45 33 / 24 39 28; channel 1 is 20 times those.
  const std::vector<float> sums{12, 21, 16, 27, 45, 33, 24, 39, 28};
  std::vector<float> expected;
  for (float s : sums) expected.insert(expected.end(), {s, 20.f * s});
  testing::expect_near(out[0], expected);
}

TEST(DepthwiseConv2D, StridedSameForwardMatchesNaiveLoop) {
  // 'same', stride 2, 3x3 on 6x5: out 3x3, pads top 0 bottom 1, left 1 right 1.
  const Index n = 2, h = 6, w = 5, c = 3, m = 2;
  layers::DepthwiseConv2D dw({.kernel_size = 3, .strides = 2, .padding = "same", .depth_multiplier = m,
                              .bias_initializer = initializers::Constant(-0.5)});
  const Tensor x = random_tensor({n, h, w, c}, 11);
  auto out = testing::run_layer(dw, {x});
  ASSERT_EQ(out[0].shape(), (Shape{n, 3, 3, c * m}));
  const std::vector<float> xv = x.to_vector(), kv = dw->kernel()->value.to_vector();
  std::vector<float> expected;
  for (Index b = 0; b < n; ++b)
    for (Index i = 0; i < 3; ++i)
      for (Index j = 0; j < 3; ++j)
        for (Index ci = 0; ci < c; ++ci)
          for (Index q = 0; q < m; ++q) {
            double s = -0.5;
            for (Index di = 0; di < 3; ++di)
              for (Index dj = 0; dj < 3; ++dj) {
                const Index ii = 2 * i + di, jj = 2 * j - 1 + dj;
                if (ii >= h || jj < 0 || jj >= w) continue;
                s += static_cast<double>(xv[((b * h + ii) * w + jj) * c + ci]) * kv[((di * 3 + dj) * c + ci) * m + q];
              }
            expected.push_back(static_cast<float>(s));
          }
  testing::expect_near(out[0], expected);
}

TEST(DepthwiseConv2D, OutputShapesAndParamCount) {
  layers::DepthwiseConv2D dw({.kernel_size = 3});
  EXPECT_EQ(dw(Input({16, 16, 32})).shape(), (Shape{-1, 14, 14, 32}));
  EXPECT_EQ(dw->count_params(), 320);
  EXPECT_EQ(dw->kernel()->value.shape(), (Shape{3, 3, 32, 1}));
  EXPECT_EQ(dw->kernel()->name, "kernel");  // Keras 3's name (tf.keras 2: "depthwise_kernel")
  EXPECT_EQ(dw->bias()->name, "bias");
  layers::DepthwiseConv2D strided({.kernel_size = 3, .strides = 2, .padding = "same", .depth_multiplier = 3,
                                   .use_bias = false});
  EXPECT_EQ(strided(Input({7, 8, 4})).shape(), (Shape{-1, 4, 4, 12}));
  EXPECT_EQ(strided->count_params(), 3 * 3 * 4 * 3);
  EXPECT_EQ(strided->kernel()->value.shape(), (Shape{3, 3, 4, 3}));
}

TEST(DepthwiseConv2D, GradientsValid) {
  layers::DepthwiseConv2D dw({.kernel_size = 3});
  check_gradients(dw, {random_tensor({2, 5, 6, 3}, 1)});
}

TEST(DepthwiseConv2D, GradientsSameStridedAsymmetricPadding) {
  layers::DepthwiseConv2D dw({.kernel_size = 3, .strides = 2, .padding = "same"});
  check_gradients(dw, {random_tensor({2, 6, 7, 4}, 2)});
}

TEST(DepthwiseConv2D, GradientsMultiplierTwoDilated) {
  layers::DepthwiseConv2D dw({.kernel_size = {3, 2}, .padding = "same", .depth_multiplier = 2, .dilation_rate = 2});
  check_gradients(dw, {random_tensor({2, 6, 5, 3}, 3)});
}

TEST(DepthwiseConv2D, GradientsWithoutBias) {
  layers::DepthwiseConv2D dw({.kernel_size = 2, .strides = 2, .depth_multiplier = 2, .use_bias = false});
  check_gradients(dw, {random_tensor({2, 5, 6, 3}, 4)});
}

TEST(DepthwiseConv2D, GradientsThroughActivations) {
  for (const char* act : {"tanh", "swish"}) {
    SCOPED_TRACE(act);
    layers::DepthwiseConv2D dw({.kernel_size = 3, .padding = "same", .activation = act});
    check_gradients(dw, {random_tensor({2, 4, 5, 3}, 5)});
  }
}

TEST(DepthwiseConv2D, BlockedChannelCount) {
  // 32 channels, stride 2, as in MobileNetV2, where oneDNN picks a blocked kernel layout.
  layers::DepthwiseConv2D dw({.kernel_size = 3, .strides = 2, .padding = "same"});
  check_gradients(dw, {random_tensor({2, 6, 6, 32}, 6)}, {.max_elements_per_tensor = 60});
}

TEST(DepthwiseConv2D, ConfigRoundTrip) {
  layers::DepthwiseConv2D dw({.kernel_size = {3, 5}, .strides = 2, .padding = "same", .depth_multiplier = 2,
                              .activation = "relu6", .use_bias = false,
                              .depthwise_regularizer = regularizers::L2(1e-4), .name = "block_1_depthwise"});
  dw(Input({9, 9, 4}));
  testing::check_config_roundtrip(dw);
  const Config c = dw->get_config();
  EXPECT_EQ(c.at("kernel_size").to_json(), "[3, 5]");
  EXPECT_EQ(c.at("depth_multiplier").as_int(), 2);
  EXPECT_EQ(c.at("activation").as_string(), "relu6");
}

TEST(DepthwiseConv2D, MismatchedInputNamesLayerAndShapes) {
  layers::DepthwiseConv2D dw({.kernel_size = 3, .name = "dw_a"});
  dw(Input({8, 8, 3}));
  try {
    dw(Input({8, 8, 6}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'dw_a'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("value 3"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 8, 8, 6)"), std::string::npos) << msg;
  }
}

TEST(DepthwiseConv2D, BadInputShapesThrowShapeError) {
  layers::DepthwiseConv2D big({.kernel_size = 4, .name = "big_dw"});
  try {
    big(Input({3, 9, 2}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'big_dw'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 3, 9, 2)"), std::string::npos) << msg;
  }
  layers::DepthwiseConv2D dw({.kernel_size = 3});
  EXPECT_THROW(dw(Input({8, 8})), ShapeError);
}

TEST(DepthwiseConv2D, RejectsBadArguments) {
  EXPECT_THROW(layers::DepthwiseConv2D({.kernel_size = 3, .depth_multiplier = 0}), std::invalid_argument);
  EXPECT_THROW(layers::DepthwiseConv2D(layers::DepthwiseConv2DOptions{}), std::invalid_argument);  // kernel_size is required
  EXPECT_THROW(layers::DepthwiseConv2D({.kernel_size = 3, .strides = 2, .dilation_rate = 2}), std::invalid_argument);
  EXPECT_THROW(layers::DepthwiseConv2D({.kernel_size = 3, .data_format = "channels_first"}), std::invalid_argument);
  EXPECT_THROW(layers::DepthwiseConv2D({.kernel_size = 3, .padding = "full"}), std::invalid_argument);
}

}  // namespace
}  // namespace tower
