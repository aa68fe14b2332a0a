#include "layers/group_normalization.h"

#include <cmath>
#include <string>

#include "layers/layer_normalization.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

// Channels [1, 3 | -1, -1] in two groups: the first has mean 2 and variance 1, the second variance 0.
TEST(GroupNormalization, NormalizesEachGroupOfChannels) {
  layers::GroupNormalization gn({.groups = 2, .epsilon = 0.5f});
  const Tensor x = Tensor::from_vector(std::vector<float>{1, 3, -1, -1}, {1, 4});
  const float s = 1 / std::sqrt(1.5f);
  testing::expect_near(testing::run_layer(gn, {x})[0], {-s, s, 0, 0});
}

TEST(GroupNormalization, OneGroupIsLayerNormalizationOverAllAxes) {
  layers::GroupNormalization gn({.groups = 1, .center = false, .scale = false});
  layers::LayerNormalization ln({.axis = {1, 2}, .center = false, .scale = false});
  const Tensor x = testing::random_tensor({2, 3, 4}, 1);
  testing::expect_near(testing::run_layer(gn, {x})[0], testing::run_layer(ln, {x})[0], 1e-5f, 1e-4f);
}

TEST(GroupNormalization, WeightsFollowKerasNamesOrderAndShapes) {
  layers::GroupNormalization gn({.groups = 2});
  gn(Input({5, 6}));
  ASSERT_EQ(gn->weights().size(), 2u);
  EXPECT_EQ(gn->weights()[0]->name, "gamma");
  EXPECT_EQ(gn->weights()[1]->name, "beta");
  EXPECT_EQ(gn->gamma()->value.shape(), (Shape{6}));
  layers::GroupNormalization axis1({.groups = 2, .axis = 1, .center = false});
  axis1(Input({4, 3}));
  ASSERT_EQ(axis1->weights().size(), 1u);
  EXPECT_EQ(axis1->gamma()->value.shape(), (Shape{4}));
}

TEST(GroupNormalization, Gradients) {
  layers::GroupNormalization gn({.groups = 3});
  gn(Input({3, 2, 6}));
  gn->gamma()->value.copy_from(testing::random_tensor({6}, 7, 0.5f, 1.5f));
  gn->beta()->value.copy_from(testing::random_tensor({6}, 8));
  testing::check_gradients(gn, {testing::random_tensor({2, 3, 2, 6}, 1)});
  testing::check_gradients(layers::GroupNormalization({.groups = 2, .axis = 1}),
                           {testing::random_tensor({2, 4, 3}, 2)});
  testing::check_gradients(layers::GroupNormalization({.groups = -1}), {testing::random_tensor({2, 5, 3}, 3)});
}

TEST(GroupNormalization, BadShapesAndArgumentsNameTheLayer) {
  try {
    layers::GroupNormalization({.groups = 4, .name = "gn"})(Input({5, 6}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Layer 'gn' (GroupNormalization): the number of channels (6)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 5, 6)"), std::string::npos) << msg;
  }
  EXPECT_THROW(layers::GroupNormalization({.groups = 8})(Input({4})), ShapeError);  // more groups than channels
  EXPECT_THROW(layers::GroupNormalization({.groups = 2, .axis = 0})(Input({4})), ShapeError);
  EXPECT_THROW(layers::GroupNormalization({.groups = 2, .axis = 3})(Input({4})), ShapeError);
  EXPECT_THROW(layers::GroupNormalization({.groups = 0}), std::invalid_argument);
  EXPECT_THROW(layers::GroupNormalization({.groups = 2, .epsilon = -1.f}), std::invalid_argument);
}

TEST(GroupNormalization, ConfigHasKerasKeysAndDefaults) {
  layers::GroupNormalization gn({.name = "gn"});
  testing::check_config_roundtrip(gn);
  const Config c = gn->get_config();
  EXPECT_EQ(c.at("groups").as_int(), 32);
  EXPECT_EQ(c.at("axis").as_int(), -1);
  EXPECT_FLOAT_EQ(static_cast<float>(c.at("epsilon").as_double()), 1e-3f);
  EXPECT_TRUE(c.at("center").as_bool());
  EXPECT_TRUE(c.at("scale").as_bool());
  EXPECT_EQ(c.at("gamma_initializer").at("class_name").as_string(), "Ones");
}

}  // namespace
}  // namespace tower
