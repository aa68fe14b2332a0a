#include "layers/conv2d.h"

#include <functional>

#include "testing/layer_test.h"

namespace tower {
namespace {

using testing::check_gradients;
using testing::random_tensor;

// 1..n in row-major order as an NHWC tensor.
Tensor iota(const Shape& shape) {
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i + 1);
  return Tensor::from_vector(v, shape);
}

TEST(Conv2D, ValidForwardMatchesHandComputedValues) {
  layers::Conv2D conv({.filters = 1, .kernel_size = 2, .kernel_initializer = "ones",
                       .bias_initializer = initializers::Constant(0.5)});
  // x = [[1,2,3],[4,5,6],[7,8,9]], 2x2 window sums: 12 16 / 24 28, plus 0.5.
  auto out = testing::run_layer(conv, {iota({1, 3, 3, 1})});
  EXPECT_EQ(out[0].shape(), (Shape{1, 2, 2, 1}));
  testing::expect_near(out[0], {12.5f, 16.5f, 24.5f, 28.5f});
}

TEST(Conv2D, SameStridedPadsTheExtraPixelAtTheBottomRight) {
  // 4x4 input 1..16, 3x3 ones, stride 2, 'same': out 2x2, pad_total 1 -> 0 on top/left, 1 on bottom/right.
  // (0,0) rows 0-2 cols 0-2: 6+18+30 = 54; (0,1) rows 0-2 cols 2-3: 7+15+23 = 45;
  // (1,0) rows 2-3 cols 0-2: 30+42 = 72; (1,1) rows 2-3 cols 2-3: 11+12+15+16 = 54.
  layers::Conv2D conv({.filters = 1, .kernel_size = 3, .strides = 2, .padding = "same", .use_bias = false,
                       .kernel_initializer = "ones"});
  auto out = testing::run_layer(conv, {iota({1, 4, 4, 1})});
  EXPECT_EQ(out[0].shape(), (Shape{1, 2, 2, 1}));
  testing::expect_near(out[0], {54.f, 45.f, 72.f, 54.f});
}

TEST(Conv2D, DilatedForwardMatchesHandComputedValues) {
  // 5x5 input 1..25, 2x2 ones dilated by 2: y(i,j) = x(i,j) + x(i,j+2) + x(i+2,j) + x(i+2,j+2).
  layers::Conv2D conv({.filters = 1, .kernel_size = 2, .dilation_rate = 2, .use_bias = false,
                       .kernel_initializer = "ones"});
  auto out = testing::run_layer(conv, {iota({1, 5, 5, 1})});
  EXPECT_EQ(out[0].shape(), (Shape{1, 3, 3, 1}));
  std::vector<float> expected;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      const float x = static_cast<float>(5 * i + j + 1);
      expected.push_back(x + (x + 2) + (x + 10) + (x + 12));
    }
  testing::expect_near(out[0], expected);
}

TEST(Conv2D, GroupsConvolveTheirOwnChannels) {
  // 1x1 kernel [1, 1, 2, 4] on 4 channels in 2 groups: filters 0-1 see channels 0-1, filters 2-3 channels 2-3.
  layers::Conv2D conv({.filters = 4, .kernel_size = 1, .groups = 2, .use_bias = false});
  conv(Input({1, 1, 4}));
  // kernel[0, 0, i, o] = row i: {1, 2, 3, 4} and {10, 20, 30, 40}.
  conv->kernel()->value.copy_from(Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 10, 20, 30, 40}, {1, 1, 2, 4}));
  auto out = testing::run_layer(conv, {Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {1, 1, 1, 4})});
  // y0 = 1*1 + 2*10, y1 = 1*2 + 2*20, y2 = 3*3 + 4*30, y3 = 3*4 + 4*40.
  testing::expect_near(out[0], {21.f, 42.f, 129.f, 172.f});
}

TEST(Conv2D, MultiChannelForwardMatchesNaiveLoop) {
  // 'same', stride 1, 3x2 kernel on 5x4: pads top 1 bottom 1, left 0 right 1.
  const Index n = 2, h = 5, w = 4, c = 3, f = 2, kh = 3, kw = 2;
  layers::Conv2D conv({.filters = f, .kernel_size = {kh, kw}, .padding = "same",
                       .bias_initializer = initializers::Constant(0.25)});
  const Tensor x = random_tensor({n, h, w, c}, 3);
  auto out = testing::run_layer(conv, {x});
  const std::vector<float> xv = x.to_vector(), kv = conv->kernel()->value.to_vector();
  std::vector<float> expected;
  for (Index b = 0; b < n; ++b)
    for (Index i = 0; i < h; ++i)
      for (Index j = 0; j < w; ++j)
        for (Index o = 0; o < f; ++o) {
          double s = 0.25;
          for (Index di = 0; di < kh; ++di)
            for (Index dj = 0; dj < kw; ++dj)
              for (Index ci = 0; ci < c; ++ci) {
                const Index ii = i - 1 + di, jj = j + dj;
                if (ii < 0 || ii >= h || jj >= w) continue;
                s += static_cast<double>(xv[((b * h + ii) * w + jj) * c + ci]) * kv[((di * kw + dj) * c + ci) * f + o];
              }
          expected.push_back(static_cast<float>(s));
        }
  testing::expect_near(out[0], expected);
}

TEST(Conv2D, ActivationIsApplied) {
  layers::Conv2D conv({.filters = 1, .kernel_size = 1, .activation = "relu",
                       .kernel_initializer = initializers::Constant(-1.0)});
  auto out = testing::run_layer(conv, {Tensor::from_vector(std::vector<float>{1, -2, 3, -4}, {1, 2, 2, 1})});
  testing::expect_near(out[0], {0.f, 2.f, 0.f, 4.f});
}

TEST(Conv2D, OutputShapesFollowKeras) {
  EXPECT_EQ(layers::Conv2D({.filters = 8, .kernel_size = 3})(Input({28, 28, 1})).shape(), (Shape{-1, 26, 26, 8}));
  EXPECT_EQ(layers::Conv2D({.filters = 8, .kernel_size = 3, .strides = 2, .padding = "same"})(Input({7, 8, 3})).shape(),
            (Shape{-1, 4, 4, 8}));
  EXPECT_EQ(layers::Conv2D({.filters = 8, .kernel_size = 3, .strides = 2})(Input({7, 8, 3})).shape(),
            (Shape{-1, 3, 3, 8}));
  EXPECT_EQ(layers::Conv2D({.filters = 8, .kernel_size = 3, .dilation_rate = 2})(Input({7, 8, 3})).shape(),
            (Shape{-1, 3, 4, 8}));
  EXPECT_EQ(layers::Conv2D({.filters = 8, .kernel_size = {5, 1}, .padding = "same"})(Input({7, 8, 3})).shape(),
            (Shape{-1, 7, 8, 8}));
}

TEST(Conv2D, ParamCount) {
  layers::Conv2D conv({.filters = 32, .kernel_size = 3});
  conv(Input({28, 28, 1}));
  EXPECT_EQ(conv->count_params(), 320);
  EXPECT_EQ(conv->kernel()->value.shape(), (Shape{3, 3, 1, 32}));
  layers::Conv2D grouped({.filters = 6, .kernel_size = 3, .groups = 2, .use_bias = false});
  grouped(Input({8, 8, 4}));
  EXPECT_EQ(grouped->kernel()->value.shape(), (Shape{3, 3, 2, 6}));
  EXPECT_EQ(grouped->count_params(), 3 * 3 * 2 * 6);
}

TEST(Conv2D, GradientsValid) {
  layers::Conv2D conv({.filters = 4, .kernel_size = 3});
  check_gradients(conv, {random_tensor({2, 5, 6, 3}, 1)});
}

TEST(Conv2D, GradientsSameStridedAsymmetricPadding) {
  layers::Conv2D conv({.filters = 4, .kernel_size = 3, .strides = 2, .padding = "same"});
  check_gradients(conv, {random_tensor({2, 7, 6, 3}, 2)});
  layers::Conv2D even({.filters = 3, .kernel_size = {2, 4}, .strides = {2, 1}, .padding = "same"});
  check_gradients(even, {random_tensor({1, 5, 5, 2}, 3)});
}

TEST(Conv2D, GradientsDilated) {
  layers::Conv2D conv({.filters = 3, .kernel_size = 3, .padding = "same", .dilation_rate = {2, 3}});
  check_gradients(conv, {random_tensor({2, 7, 8, 2}, 4)});
}

TEST(Conv2D, GradientsGrouped) {
  layers::Conv2D conv({.filters = 6, .kernel_size = 3, .padding = "same", .groups = 2});
  check_gradients(conv, {random_tensor({2, 5, 5, 4}, 5)});
}

TEST(Conv2D, GradientsWithoutBias) {
  layers::Conv2D conv({.filters = 5, .kernel_size = 2, .strides = 2, .use_bias = false});
  check_gradients(conv, {random_tensor({2, 6, 7, 3}, 6)});
}

TEST(Conv2D, GradientsThroughActivations) {
  // tanh is applied in place (its gradient needs only the output); swish keeps the pre-activation.
  for (const char* act : {"tanh", "swish"}) {
    SCOPED_TRACE(act);
    layers::Conv2D conv({.filters = 4, .kernel_size = 3, .padding = "same", .activation = act});
    check_gradients(conv, {random_tensor({2, 5, 4, 3}, 7)});
  }
}

TEST(Conv2D, FrozenLayerStillGivesInputGradients) {
  layers::Conv2D conv({.filters = 3, .kernel_size = 3, .padding = "same", .activation = "tanh"});
  conv->set_trainable(false);
  check_gradients(conv, {random_tensor({2, 4, 5, 2}, 8)}, {.check_weights = false});
}

TEST(Conv2D, ConfigRoundTrip) {
  layers::Conv2D conv({.filters = 6, .kernel_size = {3, 1}, .strides = 2, .padding = "same", .groups = 2,
                       .activation = "relu", .use_bias = false, .kernel_initializer = "he_normal",
                       .kernel_regularizer = regularizers::L2(1e-4), .name = "stem"});
  conv(Input({9, 9, 4}));
  testing::check_config_roundtrip(conv);
  const Config c = conv->get_config();
  EXPECT_EQ(c.at("filters").as_int(), 6);
  EXPECT_EQ(c.at("kernel_size").to_json(), "[3, 1]");
  EXPECT_EQ(c.at("padding").as_string(), "same");
  EXPECT_EQ(c.at("data_format").as_string(), "channels_last");
  EXPECT_EQ(c.at("groups").as_int(), 2);
}

TEST(Conv2D, FromYamlStyleConfig) {
  Config cfg = Config::parse_json(
      R"({"class_name": "Conv2D", "config": {"filters": 8, "kernel_size": 3, "strides": 2, "padding": "SAME"}})");
  LayerPtr layer = layer_from_config(cfg);
  EXPECT_EQ((*layer)(Input({7, 7, 3})).shape(), (Shape{-1, 4, 4, 8}));
  EXPECT_EQ(layer->get_config().at("padding").as_string(), "same");
}

TEST(Conv2D, MismatchedInputNamesLayerAndShapes) {
  layers::Conv2D conv({.filters = 4, .kernel_size = 3, .name = "conv_a"});
  conv(Input({8, 8, 3}));
  try {
    conv(Input({8, 8, 5}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'conv_a'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("value 3"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 8, 8, 5)"), std::string::npos) << msg;
  }
}

TEST(Conv2D, BadInputShapesThrowShapeError) {
  layers::Conv2D big({.filters = 2, .kernel_size = 5, .name = "big"});
  try {
    big(Input({4, 6, 1}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'big'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 4, 6, 1)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(5, 5)"), std::string::npos) << msg;
  }
  EXPECT_FALSE(big->built());
  layers::Conv2D dilated({.filters = 2, .kernel_size = 3, .dilation_rate = 3});
  EXPECT_THROW(dilated(Input({6, 9, 1})), ShapeError);  // dilated extent 7 > 6
  layers::Conv2D conv({.filters = 2, .kernel_size = 3});
  EXPECT_THROW(conv(Input({8, 8})), ShapeError);
  layers::Conv2D grouped({.filters = 4, .kernel_size = 1, .groups = 2, .name = "g"});
  const std::string msg = testing::error_of<std::invalid_argument>([&] { grouped(Input({4, 4, 3})); });
  EXPECT_NE(msg.find("'g'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("groups=2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(None, 4, 4, 3)"), std::string::npos) << msg;
}

TEST(Conv2D, RejectsBadArguments) {
  EXPECT_THROW(layers::Conv2D({.filters = 0, .kernel_size = 3}), std::invalid_argument);
  EXPECT_THROW(layers::Conv2D({.filters = 4}), std::invalid_argument);  // kernel_size is required
  EXPECT_THROW(layers::Conv2D({.filters = 5, .kernel_size = 3, .groups = 2}), std::invalid_argument);
  EXPECT_THROW(layers::Conv2D({.filters = 4, .kernel_size = 3, .padding = "causal"}), std::invalid_argument);
  const std::string both = testing::error_of<std::invalid_argument>([] {
    layers::Conv2D({.filters = 4, .kernel_size = 3, .strides = 2, .dilation_rate = 2});
  });
  EXPECT_NE(both.find("dilation_rate"), std::string::npos) << both;
  const std::string format = testing::error_of<std::invalid_argument>([] {
    layers::Conv2D({.filters = 4, .kernel_size = 3, .data_format = "channels_first"});
  });
  EXPECT_NE(format.find("channels_first"), std::string::npos) << format;
  EXPECT_NE(format.find("not supported"), std::string::npos) << format;
}

}  // namespace
}  // namespace tower
