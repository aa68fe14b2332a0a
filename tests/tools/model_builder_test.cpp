#include "tools/experiment/model_builder.h"

#include <gtest/gtest.h>

#include "api/core/random.h"
#include "layers/add.h"
#include "layers/conv2d.h"
#include "layers/dense.h"
#include "layers/flatten.h"
#include "layers/global_average_pooling2d.h"
#include "tests/tools/tools_testing.h"

namespace tower::experiment {
namespace {

const std::string kData = "data: {source: synthetic, shape: [8, 8, 2], classes: 4}\n"
                          "compile: {optimizer: adam, loss: sparse_categorical_crossentropy}\n";

Model build(const std::string& model_yaml) {
  const Experiment e = Experiment::parse(kData + model_yaml, "m.yaml");
  return build_model(e, Shape({8, 8, 2}));
}

TEST(ModelBuilder, ASequentialListTakesTheDataShapeAndKerasArguments) {
  const Model m = build(R"(model:
  name: seq
  layers:
    - {type: Conv2D, filters: 3, kernel_size: [3, 2], strides: 1, padding: same, use_bias: false,
       kernel_initializer: {type: RandomNormal, stddev: 0.5, seed: 3}}
    - {type: Flatten}
    - {type: Dense, units: 4, activation: softmax, name: head}
)");
  EXPECT_EQ(m.name(), "seq");
  ASSERT_EQ(m.layers().size(), 3u);
  EXPECT_EQ(m.inputs()[0].shape(), Shape({-1, 8, 8, 2}));
  EXPECT_EQ(m.outputs()[0].shape(), Shape({-1, 4}));
  const auto conv = std::dynamic_pointer_cast<layers::Conv2DImpl>(m.layers()[0]);
  ASSERT_TRUE(conv);
  EXPECT_EQ(conv->options().kernel_size, Size2(3, 2));
  EXPECT_FALSE(conv->options().use_bias);
  EXPECT_EQ(conv->options().kernel_initializer.name, "random_normal");
  EXPECT_DOUBLE_EQ(conv->options().kernel_initializer.stddev, 0.5);
  EXPECT_EQ(m.layers()[2]->name(), "head");
  EXPECT_EQ(m.count_params(), 3 * 2 * 2 * 3 + (8 * 8 * 3) * 4 + 4);
}

TEST(ModelBuilder, AnInputLayerOrInputShapeOverridesTheDataShape) {
  EXPECT_EQ(build("model: {input_shape: [4, 4, 1], layers: [{type: Flatten}]}\n").outputs()[0].shape(), Shape({-1, 16}));
  EXPECT_EQ(build("model: {layers: [{type: Input, shape: [2, 3]}, {type: Flatten}]}\n").outputs()[0].shape(),
            Shape({-1, 6}));
}

TEST(ModelBuilder, AFunctionalGraphWiresNamedNodes) {
  const Model m = build(R"(model:
  name: res
  nodes:
    - {name: image, type: Input}
    - {name: a, type: Conv2D, filters: 2, kernel_size: 1}
    - {name: b, type: Conv2D, filters: 2, kernel_size: 3, padding: same}
    - {name: sum, type: Add, inputs: [a, b]}
    - {name: skip, type: Add, inputs: [image, sum]}
    - {name: gap, type: GlobalAveragePooling2D}
    - {name: logits, type: Dense, units: 4}
  outputs: [logits, sum]
)");
  EXPECT_EQ(m.name(), "res");
  ASSERT_EQ(m.outputs().size(), 2u);
  EXPECT_EQ(m.outputs()[0].layer().name(), "logits");
  EXPECT_EQ(m.outputs()[1].layer().name(), "sum");
  // b follows a by default (no inputs: the node before); skip joins the model input with sum.
  const LayerPtr b = m.get_layer("b");
  const Node* b_node = m.outputs()[1].node()->inputs()[1].node();
  EXPECT_EQ(b_node->layer(), b);
  EXPECT_EQ(b_node->inputs()[0].layer().name(), "a");
  const Node* gap = m.outputs()[0].node()->inputs()[0].node();
  EXPECT_EQ(gap->layer()->name(), "gap");
  EXPECT_EQ(gap->inputs()[0].layer().name(), "skip");
  EXPECT_EQ(m.count_params(), (2 * 2 + 2) + (9 * 2 * 2 + 2) + (2 * 4 + 4));
}

TEST(ModelBuilder, MobileNetV2ComesFromTheApplicationRegistry) {
  set_random_seed(5);
  const Experiment e = Experiment::parse(
      "data: {source: synthetic, shape: [32, 32, 1]}\ncompile: {optimizer: adam, loss: mse}\n"
      "model: {application: MobileNetV2, alpha: 0.35, weights: null, classes: 7}\n",
      "m.yaml");
  const Model m = build_model(e, Shape({32, 32, 1}));
  EXPECT_EQ(m.name(), "mobilenetv2_0.35_32");
  EXPECT_EQ(m.inputs()[0].shape(), Shape({-1, 32, 32, 1}));
  EXPECT_EQ(m.outputs()[0].shape(), Shape({-1, 7}));
  EXPECT_NO_THROW(m.get_layer("block_16_project_BN"));
  // Keras' MobileNetV2(alpha=0.35, input_shape=(32, 32, 1), weights=None, classes=7).count_params().
  EXPECT_EQ(m.count_params(), 418887);
  testing::expect_error_at(
      [] {
        const Experiment bad = Experiment::parse(
            "data: {source: synthetic, shape: [32, 32, 1]}\ncompile: {optimizer: adam, loss: mse}\n"
            "model: {application: MobileNetV2, alpah: 0.35}\n",
            "m.yaml");
        build_model(bad, Shape({32, 32, 1}));
      },
      "m.yaml", 3, 35, {"MobileNetV2: unknown argument 'alpah' (did you mean 'alpha'?)"});
}

}  // namespace
}  // namespace tower::experiment
