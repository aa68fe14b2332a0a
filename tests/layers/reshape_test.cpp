#include "layers/reshape.h"

#include "testing/layer_test.h"

namespace tower {
namespace {

TEST(Reshape, ExplicitTargetKeepsValues) {
  layers::Reshape reshape({.target_shape = {4, 3}});
  EXPECT_EQ(reshape(Input({3, 4})).shape(), (Shape{-1, 4, 3}));
  const Tensor x = testing::random_tensor({2, 3, 4}, 1);
  const Tensor y = testing::run_layer(reshape, {x})[0];
  EXPECT_EQ(y.shape(), (Shape{2, 4, 3}));
  testing::expect_near(y, x.to_vector(), 0.f, 0.f);
}

TEST(Reshape, MinusOneIsInferred) {
  layers::Reshape reshape({.target_shape = {-1, 2}});
  EXPECT_EQ(reshape(Input({3, 4})).shape(), (Shape{-1, 6, 2}));
  layers::Reshape front({.target_shape = {2, -1, 3}});
  EXPECT_EQ(front(Input({12})).shape(), (Shape{-1, 2, 2, 3}));
}

TEST(Reshape, Gradients) {
  layers::Reshape reshape({.target_shape = {2, -1}});
  testing::check_gradients(reshape, {testing::random_tensor({3, 2, 3, 2}, 2)});
}

TEST(Reshape, ConfigRoundTrip) {
  layers::Reshape reshape({.target_shape = {-1, 2}, .name = "rs"});
  testing::check_config_roundtrip(reshape);
  const Config c = reshape->get_config();
  const Config::List& t = c.at("target_shape").as_list();
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].as_int(), -1);
  EXPECT_EQ(t[1].as_int(), 2);
}

TEST(Reshape, SizeMismatchNamesLayerAndBothShapes) {
  layers::Reshape reshape({.target_shape = {5, 2}, .name = "rs"});
  try {
    reshape(Input({3, 4}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'rs'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 3, 4)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(5, 2)"), std::string::npos) << msg;
  }
  layers::Reshape indivisible({.target_shape = {-1, 5}});
  EXPECT_THROW(indivisible(Input({3, 4})), ShapeError);
}

TEST(Reshape, RejectsBadTargets) {
  EXPECT_THROW(layers::Reshape({.target_shape = {-1, -1}}), std::invalid_argument);
  EXPECT_THROW(layers::Reshape({.target_shape = {0, 3}}), std::invalid_argument);
  EXPECT_THROW(layers::Reshape({.target_shape = {-2, 3}}), std::invalid_argument);
}

}  // namespace
}  // namespace tower
