#include "layers/conv1d.h"

#include <functional>
#include <string>

#include "layers/conv2d.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

using testing::check_gradients;
using testing::random_tensor;

// 1..n in row-major order.
Tensor iota(const Shape& shape) {
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i + 1);
  return Tensor::from_vector(v, shape);
}

TEST(Conv1D, ValidForwardMatchesHandComputedValues) {
  layers::Conv1D conv(
      {.filters = 1, .kernel_size = 2, .kernel_initializer = "ones", .bias_initializer = initializers::Constant(0.5)});
  // x = 1 2 3 4: window sums 3 5 7, plus 0.5.
  auto y = testing::run_layer(conv, {iota({1, 4, 1})});
  EXPECT_EQ(y[0].shape(), (Shape{1, 3, 1}));
  testing::expect_near(y[0], {3.5f, 5.5f, 7.5f});
}

TEST(Conv1D, CausalPadsOnlyBeforeTheSequence) {
  // x = 1 2 3 4, kernel [1, 10, 100] (oldest first): y[t] = x[t-2] + 10 x[t-1] + 100 x[t], zeros before t = 0.
  layers::Conv1D conv({.filters = 1, .kernel_size = 3, .padding = "causal", .use_bias = false});
  conv(Input({4, 1}));
  conv->kernel()->value.copy_from(Tensor::from_vector(std::vector<float>{1, 10, 100}, {3, 1, 1}));
  auto y = testing::run_layer(conv, {iota({1, 4, 1})});
  testing::expect_near(y[0], {100.f, 210.f, 321.f, 432.f});
  // Dilated by 2: y[t] = x[t-2] + 10 x[t] with kernel [1, 10].
  layers::Conv1D dilated({.filters = 1, .kernel_size = 2, .padding = "CAUSAL", .dilation_rate = 2, .use_bias = false});
  dilated(Input({4, 1}));
  dilated->kernel()->value.copy_from(Tensor::from_vector(std::vector<float>{1, 10}, {2, 1, 1}));
  testing::expect_near(testing::run_layer(dilated, {iota({1, 4, 1})})[0], {10.f, 20.f, 31.f, 42.f});
  EXPECT_EQ(dilated->options().padding, "causal");
}

TEST(Conv1D, MatchesConv2DOnARowImage) {
  // Conv1D on [N, W, C] is Conv2D with a (1, k) kernel on [N, 1, W, C].
  layers::Conv1D c1({.filters = 4,
                     .kernel_size = 3,
                     .strides = 2,
                     .padding = "same",
                     .groups = 2,
                     .activation = activations::Activation("tanh")});
  layers::Conv2D c2({.filters = 4,
                     .kernel_size = {1, 3},
                     .strides = {1, 2},
                     .padding = "same",
                     .groups = 2,
                     .activation = activations::Activation("tanh")});
  c1(Input({7, 6}));
  c2(Input({1, 7, 6}));
  c2->kernel()->value.copy_from(c1->kernel()->value);
  c2->bias()->value.copy_from(random_tensor({4}, 3));
  c1->bias()->value.copy_from(c2->bias()->value);
  const Tensor x = random_tensor({2, 7, 6}, 1);
  const auto y1 = testing::run_layer(c1, {x});
  const auto y2 = testing::run_layer(c2, {x.reshape({2, 1, 7, 6})});
  EXPECT_EQ(y1[0].shape(), (Shape{2, 4, 4}));
  testing::expect_near(y1[0], y2[0].reshape({2, 4, 4}));
}

TEST(Conv1D, OutputShapesFollowKeras) {
  EXPECT_EQ(layers::Conv1D({.filters = 5, .kernel_size = 3})(Input({10, 2})).shape(), (Shape{-1, 8, 5}));
  EXPECT_EQ(layers::Conv1D({.filters = 5, .kernel_size = 3, .strides = 2, .padding = "same"})(Input({10, 2})).shape(),
            (Shape{-1, 5, 5}));
  EXPECT_EQ(layers::Conv1D({.filters = 5, .kernel_size = 3, .strides = 2, .padding = "causal"})(Input({10, 2})).shape(),
            (Shape{-1, 5, 5}));
  EXPECT_EQ(layers::Conv1D({.filters = 5, .kernel_size = 3, .dilation_rate = 3})(Input({10, 2})).shape(),
            (Shape{-1, 4, 5}));
}

TEST(Conv1D, WeightsFollowKerasLayout) {
  layers::Conv1D conv({.filters = 6, .kernel_size = 3, .groups = 3});
  conv(Input({5, 9}));
  ASSERT_EQ(conv->weights().size(), 2u);
  EXPECT_EQ(conv->weights()[0]->name, "kernel");
  EXPECT_EQ(conv->kernel()->value.shape(), (Shape{3, 3, 6}));
  EXPECT_EQ(conv->weights()[1]->name, "bias");
  EXPECT_EQ(conv->count_params(), 3 * 3 * 6 + 6);
}

TEST(Conv1D, Gradients) {
  struct Case {
    layers::Conv1DOptions options;
    Shape input;
  };
  const std::vector<Case> cases{
      {{.filters = 3, .kernel_size = 3}, {2, 7, 2}},
      {{.filters = 2, .kernel_size = 4, .padding = "same"}, {2, 6, 3}},
      {{.filters = 2, .kernel_size = 3, .strides = 2, .padding = "causal"}, {2, 7, 2}},
      {{.filters = 2, .kernel_size = 2, .padding = "causal", .dilation_rate = 2}, {1, 6, 3}},
      {{.filters = 4, .kernel_size = 3, .padding = "same", .groups = 2, .use_bias = false}, {2, 5, 4}},
      {{.filters = 3, .kernel_size = 2, .activation = activations::Activation("sigmoid")}, {2, 5, 2}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.input.to_string() + " padding " + c.options.padding);
    check_gradients(layers::Conv1D(c.options), {random_tensor(c.input, 5)});
  }
}

TEST(Conv1D, ConfigRoundTripWithKerasForms) {
  layers::Conv1D conv({.filters = 4, .kernel_size = 3, .padding = "causal", .dilation_rate = 2, .name = "c1"});
  conv(Input({8, 2}));
  testing::check_config_roundtrip(conv);
  const Config c = conv->get_config();
  EXPECT_EQ(c.at("kernel_size").to_json(), "[3]");  // Keras writes (3,)
  EXPECT_EQ(c.at("padding").as_string(), "causal");
  Config keras = Config::map();
  keras.set("filters", 2);
  keras.set("kernel_size", Config(Config::List{Config(5)}));
  keras.set("strides", 1);
  Config serialized = Config::map();
  serialized.set("class_name", "Conv1D");
  serialized.set("config", keras);
  const LayerPtr layer = layer_from_config(serialized);
  EXPECT_EQ(std::dynamic_pointer_cast<layers::Conv1DImpl>(layer)->options().kernel_size.value, 5);
}

TEST(Conv1D, WrongInputsNameTheLayerAndShapes) {
  const std::string rank = testing::error_of<ShapeError>([] {
    layers::Conv1D({.filters = 2, .kernel_size = 3, .name = "c"})(Input({4, 4, 2}));
  });
  EXPECT_NE(rank.find("Layer 'c' (Conv1D): expects input of rank 3"), std::string::npos) << rank;
  EXPECT_NE(rank.find("(None, 4, 4, 2)"), std::string::npos) << rank;
  const std::string short_input = testing::error_of<ShapeError>([] {
    layers::Conv1D({.filters = 2, .kernel_size = 3, .dilation_rate = 2, .name = "c"})(Input({4, 2}));
  });
  EXPECT_NE(short_input.find("dilated extent 5"), std::string::npos) << short_input;
  const std::string groups = testing::error_of<ShapeError>([] {
    layers::Conv1D({.filters = 4, .kernel_size = 1, .groups = 2})(Input({4, 3}));
  });
  EXPECT_NE(groups.find("divisible by groups=2"), std::string::npos) << groups;
  layers::Conv1D built({.filters = 2, .kernel_size = 1, .name = "b"});
  built(Input({4, 3}));
  EXPECT_THROW(built(Input({4, 5})), ShapeError);
}

TEST(Conv1D, RejectsBadArguments) {
  EXPECT_THROW(layers::Conv1D({.filters = 0, .kernel_size = 3}), std::invalid_argument);
  EXPECT_THROW(layers::Conv1D({.filters = 2, .kernel_size = 0}), std::invalid_argument);
  EXPECT_THROW(layers::Conv1D({.filters = 2, .kernel_size = 3, .strides = 0}), std::invalid_argument);
  EXPECT_THROW(layers::Conv1D({.filters = 3, .kernel_size = 3, .groups = 2}), std::invalid_argument);
  EXPECT_THROW(layers::Conv1D({.filters = 2, .kernel_size = 3, .strides = 2, .dilation_rate = 2}),
               std::invalid_argument);
  EXPECT_THROW(layers::Conv1D({.filters = 2, .kernel_size = 3, .data_format = "channels_first"}),
               std::invalid_argument);
  const std::string padding = testing::error_of<std::invalid_argument>(
      [] { layers::Conv1D({.filters = 2, .kernel_size = 3, .padding = "full", .name = "c"}); });
  EXPECT_NE(padding.find("Layer 'c' (Conv1D): padding must be 'valid', 'same' or 'causal', got 'full'"),
            std::string::npos)
      << padding;
}

}  // namespace
}  // namespace tower
