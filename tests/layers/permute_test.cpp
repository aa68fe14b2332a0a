#include "layers/permute.h"

#include "testing/layer_test.h"

namespace tower {
namespace {

TEST(Permute, SwapsTwoAxes) {
  layers::Permute permute({.dims = {2, 1}});
  EXPECT_EQ(permute(Input({2, 3})).shape(), (Shape{-1, 3, 2}));
  // [[1, 2, 3], [4, 5, 6]] -> [[1, 4], [2, 5], [3, 6]]
  const Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {1, 2, 3});
  testing::expect_near(testing::run_layer(permute, {x})[0], {1, 4, 2, 5, 3, 6}, 0.f, 0.f);
}

TEST(Permute, ThreeAxesAgainstANaiveLoop) {
  layers::Permute permute({.dims = {3, 1, 2}});
  const Tensor x = testing::random_tensor({2, 2, 3, 4}, 1);
  const std::vector<float> v = x.to_vector();
  // y[n, k, i, j] = x[n, i, j, k], y of shape [2, 4, 2, 3].
  std::vector<float> expected;
  for (int n = 0; n < 2; ++n)
    for (int k = 0; k < 4; ++k)
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j) expected.push_back(v[static_cast<std::size_t>(((n * 2 + i) * 3 + j) * 4 + k)]);
  const Tensor y = testing::run_layer(permute, {x})[0];
  EXPECT_EQ(y.shape(), (Shape{2, 4, 2, 3}));
  testing::expect_near(y, expected, 0.f, 0.f);
}

TEST(Permute, Gradients) {
  for (const std::vector<int>& dims : {std::vector<int>{2, 1}, std::vector<int>{3, 1, 2}, std::vector<int>{2, 3, 1}}) {
    layers::Permute permute({.dims = dims});
    Shape shape = dims.size() == 2 ? Shape{2, 3, 4} : Shape{2, 2, 3, 4};
    testing::check_gradients(permute, {testing::random_tensor(shape, 2)});
  }
}

TEST(Permute, ConfigRoundTrip) {
  layers::Permute permute({.dims = {3, 1, 2}, .name = "perm"});
  testing::check_config_roundtrip(permute);
  EXPECT_EQ(permute->get_config().at("dims"), Config::parse_json("[3, 1, 2]"));
}

TEST(Permute, RankMismatchNamesLayerAndShape) {
  layers::Permute permute({.dims = {2, 1}, .name = "p"});
  try {
    permute(Input({2, 3, 4}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'p'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 2, 3, 4)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("rank 3"), std::string::npos) << msg;
  }
}

TEST(Permute, RejectsDimsThatAreNotAPermutation) {
  EXPECT_THROW(layers::Permute({.dims = {1, 3}}), std::invalid_argument);
  EXPECT_THROW(layers::Permute({.dims = {0, 1}}), std::invalid_argument);
  EXPECT_THROW(layers::Permute({.dims = {1, 1}}), std::invalid_argument);
  EXPECT_THROW(layers::Permute({.dims = {}}), std::invalid_argument);
}

}  // namespace
}  // namespace tower
