#include "layers/concatenate.h"

#include "layers/dense.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

TEST(Concatenate, LastAxisHandComputed) {
  layers::Concatenate cat;
  const Tensor a = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  const Tensor b = Tensor::from_vector(std::vector<float>{5, 6, 7, 8, 9, 10}, {2, 3});
  const Tensor y = testing::run_layer(cat, {a, b})[0];
  EXPECT_EQ(y.shape(), (Shape{2, 5}));
  testing::expect_near(y, {1, 2, 5, 6, 7, 3, 4, 8, 9, 10}, 0.f, 0.f);
}

TEST(Concatenate, MiddleAxisOfThreeInputsAgainstANaiveLoop) {
  layers::Concatenate cat({.axis = 2});
  const std::vector<Tensor> xs = {testing::random_tensor({2, 3, 1, 2}, 1), testing::random_tensor({2, 3, 2, 2}, 2),
                                  testing::random_tensor({2, 3, 3, 2}, 3)};
  EXPECT_EQ(cat(std::vector<SymbolicTensor>{Input({3, 1, 2}), Input({3, 2, 2}), Input({3, 3, 2})})[0].shape(),
            (Shape{-1, 3, 6, 2}));
  std::vector<float> expected;
  for (int n = 0; n < 2; ++n)
    for (int h = 0; h < 3; ++h)
      for (const Tensor& x : xs) {
        const std::vector<float> v = x.to_vector();
        const Index w = x.dim(2);
        for (Index j = 0; j < w * 2; ++j) expected.push_back(v[static_cast<std::size_t>((n * 3 + h) * w * 2 + j)]);
      }
  layers::Concatenate cat2({.axis = -2});
  testing::expect_near(testing::run_layer(cat2, xs)[0], expected, 0.f, 0.f);
}

TEST(Concatenate, Gradients) {
  layers::Concatenate last;
  testing::check_gradients(last, {testing::random_tensor({2, 3, 2}, 4), testing::random_tensor({2, 3, 4}, 5)});
  layers::Concatenate axis1({.axis = 1});
  testing::check_gradients(axis1, {testing::random_tensor({2, 2, 3}, 6), testing::random_tensor({2, 3, 3}, 7),
                                   testing::random_tensor({2, 1, 3}, 8)});
}

TEST(Concatenate, GradientsWhenOnlySomeInputsNeedThem) {
  // Only the Dense branch (the middle input) wants a gradient; the others are skipped but still offset it.
  auto a = Input({2}), b = Input({3}), c = Input({4});
  auto y = layers::Concatenate()(std::vector<SymbolicTensor>{a, layers::Dense({.units = 3})(b), c})[0];
  Model model({a, b, c}, {y});
  testing::GradCheckOptions o;
  o.check_inputs = false;
  testing::check_gradients(model, {testing::random_tensor({2, 2}, 9), testing::random_tensor({2, 3}, 10),
                                   testing::random_tensor({2, 4}, 11)}, o);
}

TEST(Concatenate, ConfigRoundTrip) {
  layers::Concatenate cat({.axis = 1, .name = "cat"});
  testing::check_config_roundtrip(cat);
  EXPECT_EQ(cat->get_config().at("axis").as_int(), 1);
}

TEST(Concatenate, MismatchNamesLayerAxisAndShapes) {
  layers::Concatenate cat({.axis = 1, .name = "join"});
  try {
    cat(std::vector<SymbolicTensor>{Input({2, 3}), Input({4, 5})});
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'join' (Concatenate)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("axis 1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[(None, 2, 3), (None, 4, 5)]"), std::string::npos) << msg;
  }
  layers::Concatenate ranks;
  EXPECT_THROW(ranks(std::vector<SymbolicTensor>{Input({2, 3}), Input({3})}), ShapeError);
  layers::Concatenate batch({.axis = 0});
  EXPECT_THROW(batch(std::vector<SymbolicTensor>{Input({3}), Input({3})}), ShapeError);
  layers::Concatenate out_of_range({.axis = 2});
  EXPECT_THROW(out_of_range(std::vector<SymbolicTensor>{Input({3}), Input({3})}), ShapeError);
}

}  // namespace
}  // namespace tower
