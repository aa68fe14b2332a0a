#include "layers/separable_conv1d.h"

#include <string>

#include "layers/conv1d.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

using testing::check_gradients;
using testing::random_tensor;

TEST(SeparableConv1D, WeightsFollowKerasNamesAndLayouts) {
  layers::SeparableConv1D sep({.filters = 5, .kernel_size = 3, .depth_multiplier = 2});
  sep(Input({8, 3}));
  ASSERT_EQ(sep->weights().size(), 3u);
  EXPECT_EQ(sep->weights()[0]->name, "depthwise_kernel");
  EXPECT_EQ(sep->depthwise_kernel()->value.shape(), (Shape{3, 3, 2}));
  EXPECT_EQ(sep->weights()[1]->name, "pointwise_kernel");
  EXPECT_EQ(sep->pointwise_kernel()->value.shape(), (Shape{1, 6, 5}));
  EXPECT_EQ(sep->weights()[2]->name, "bias");
  EXPECT_EQ(sep->bias()->value.shape(), (Shape{5}));
  layers::SeparableConv1D no_bias({.filters = 5, .kernel_size = 3, .use_bias = false});
  no_bias(Input({8, 3}));
  EXPECT_EQ(no_bias->weights().size(), 2u);
}

// A depthwise kernel [k, C, dm] is a grouped Conv1D kernel [k, 1, C * dm] (groups = C); the pointwise kernel a
// size-1 Conv1D's.
TEST(SeparableConv1D, IsADepthwiseThenAPointwiseConvolution) {
  const auto tanh = activations::Activation("tanh");
  layers::SeparableConv1D sep(
      {.filters = 4, .kernel_size = 3, .strides = 2, .padding = "same", .depth_multiplier = 2, .activation = tanh});
  sep(Input({9, 3}));
  sep->bias()->value.copy_from(random_tensor({4}, 9));
  layers::Conv1D depthwise(
      {.filters = 6, .kernel_size = 3, .strides = 2, .padding = "same", .groups = 3, .use_bias = false});
  layers::Conv1D pointwise({.filters = 4, .kernel_size = 1, .activation = tanh});
  Model reference = [&] {
    SymbolicTensor x = Input({9, 3});
    return Model(x, pointwise(depthwise(x)));
  }();
  depthwise->kernel()->value.copy_from(sep->depthwise_kernel()->value);
  pointwise->kernel()->value.copy_from(sep->pointwise_kernel()->value);
  pointwise->bias()->value.copy_from(sep->bias()->value);
  const Tensor x = random_tensor({2, 9, 3}, 4);
  const auto y = testing::run_layer(sep, {x});
  EXPECT_EQ(y[0].shape(), (Shape{2, 5, 4}));
  testing::expect_near(y[0], reference.predict(x));
}

TEST(SeparableConv1D, Gradients) {
  struct Case {
    layers::SeparableConv1DOptions options;
    Shape input;
  };
  const std::vector<Case> cases{
      {{.filters = 3, .kernel_size = 3}, {2, 6, 2}},
      {{.filters = 2, .kernel_size = 3, .padding = "same", .depth_multiplier = 2}, {2, 5, 3}},
      {{.filters = 4, .kernel_size = 2, .strides = 2, .use_bias = false}, {2, 7, 2}},
      {{.filters = 2,
        .kernel_size = 3,
        .padding = "same",
        .dilation_rate = 2,
        .activation = activations::Activation("sigmoid")},
       {1, 6, 2}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.input.to_string());
    check_gradients(layers::SeparableConv1D(c.options), {random_tensor(c.input, 6)});
  }
}

TEST(SeparableConv1D, FrozenLayerStillGivesInputGradients) {
  layers::SeparableConv1D sep({.filters = 2, .kernel_size = 3});
  sep->set_trainable(false);
  testing::GradCheckOptions o;
  o.check_weights = false;
  check_gradients(sep, {random_tensor({2, 5, 2}, 7)}, o);
}

TEST(SeparableConv1D, ConfigRoundTrip) {
  layers::SeparableConv1D sep(
      {.filters = 2, .kernel_size = 3, .padding = "same", .depth_multiplier = 3, .name = "sep"});
  sep(Input({6, 2}));
  testing::check_config_roundtrip(sep);
  const Config c = sep->get_config();
  EXPECT_EQ(c.at("depth_multiplier").as_int(), 3);
  EXPECT_EQ(c.at("pointwise_initializer").at("class_name").as_string(), "GlorotUniform");
}

TEST(SeparableConv1D, WrongInputsNameTheLayerAndShapes) {
  layers::SeparableConv1D sep({.filters = 2, .kernel_size = 3, .name = "sep"});
  try {
    sep(Input({6}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Layer 'sep' (SeparableConv1D): expects input of rank 3"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 6)"), std::string::npos) << msg;
  }
  EXPECT_THROW(sep(Input({2, 3})), ShapeError);  // shorter than the kernel
  sep(Input({6, 3}));
  EXPECT_THROW(sep(Input({6, 4})), ShapeError);  // other channels than built
}

TEST(SeparableConv1D, RejectsBadArguments) {
  EXPECT_THROW(layers::SeparableConv1D({.filters = 0, .kernel_size = 3}), std::invalid_argument);
  EXPECT_THROW(layers::SeparableConv1D({.filters = 2, .kernel_size = 3, .depth_multiplier = 0}), std::invalid_argument);
  EXPECT_THROW(layers::SeparableConv1D({.filters = 2, .kernel_size = 3, .padding = "causal"}), std::invalid_argument);
  EXPECT_THROW(layers::SeparableConv1D({.filters = 2, .kernel_size = 0}), std::invalid_argument);
}

}  // namespace
}  // namespace tower
