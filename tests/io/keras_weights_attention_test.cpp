// A Keras weight file of a model with MultiHeadAttention (tests/reference/make_attention_weights_fixtures.py):
// Keras 3 keeps the layer's weights in sub-groups named after its EinsumDense sublayers, the legacy layout in the
// layer's one group; both load into Tower's layer and predict what Keras predicted.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "keras_weights_testing.h"
#include "testing/layer_test.h"
#include "tower/tower.h"

namespace tower {
namespace {

Model mha_model() {
  auto x = Input({6, 8});
  auto h = layers::Dense({.units = 8, .name = "embed"})(x);
  auto y = layers::MultiHeadAttention({.num_heads = 2, .key_dim = 4, .value_dim = 3,
                                       .output_shape = std::vector<int>{5}, .use_causal_mask = true,
                                       .name = "mha"})({h, h})[0];
  return Model({x}, {layers::Dense({.units = 4, .name = "head"})(y)});
}

TEST(KerasWeights, LoadsMultiHeadAttentionAndPredictsAsKeras) {
  const testing::KerasOutputsFixture f = testing::read_keras_outputs("mha");
  for (const char* file : {"mha.weights.h5", "mha.h5"}) {
    SCOPED_TRACE(file);
    Model m = mha_model();
    m.load_weights(testing::keras_weights_fixture(file));
    testing::expect_near(m.predict(f.inputs), f.outputs, testing::kKerasAtol, testing::kKerasRtol, "outputs");
  }
}

TEST(KerasWeights, WritesMultiHeadAttentionInKerasSublayerGroups) {
  Model a = mha_model(), b = mha_model();
  testing::randomize_weights(a, 3, true);
  const std::string path = ::testing::TempDir() + "mha_roundtrip.weights.h5";
  a.save_weights(path);
  const std::map<std::string, std::string> groups = testing::keras3_weight_groups(path);
  const std::map<std::string, std::string> keras = testing::keras3_weight_groups(testing::keras_weights_fixture("mha.weights.h5"));
  for (const auto& [group, shape] : keras)
    if (group.find("multi_head_attention") != std::string::npos) {
      ASSERT_TRUE(groups.count(group)) << group << " is missing in Tower's file";
      EXPECT_EQ(groups.at(group), shape) << group;
    }
  b.load_weights(path);
  const Tensor x = testing::random_tensor({3, 6, 8}, 4);
  testing::expect_near(b.predict(x), a.predict(x), 0.f, 0.f, "outputs after the round trip");
}

TEST(KerasWeights, AFileWithoutTheAttentionLayerNamesIt) {
  auto x = Input({6, 8});
  auto y = layers::MultiHeadAttention({.num_heads = 2, .key_dim = 4, .name = "lone"})({x, x})[0];
  Model m({x}, {y});
  try {
    m.load_weights(testing::keras_weights_fixture("convnet.weights.h5"));
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("'lone' (MultiHeadAttention)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tower
