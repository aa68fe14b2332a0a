#include "layers/average.h"

#include "testing/layer_test.h"

namespace tower {
namespace {

TEST(Average, MeanOfTwoAndThree) {
  layers::Average avg;
  const Tensor a = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  const Tensor b = Tensor::from_vector(std::vector<float>{3, -2, 0, 5}, {2, 2});
  const Tensor c = Tensor::from_vector(std::vector<float>{2, 3, -3, 0}, {2, 2});
  testing::expect_near(testing::run_layer(avg, {a, b})[0], {2, 0, 1.5f, 4.5f});
  layers::Average avg3;
  testing::expect_near(testing::run_layer(avg3, {a, b, c})[0], {2, 1, 0, 3});
}

TEST(Average, Gradients) {
  layers::Average avg;
  testing::check_gradients(avg, {testing::random_tensor({2, 3, 4}, 1), testing::random_tensor({2, 3, 4}, 2)});
  layers::Average avg3;
  testing::check_gradients(avg3, {testing::random_tensor({3, 5}, 3), testing::random_tensor({3, 5}, 4),
                                  testing::random_tensor({3, 5}, 5)});
}

TEST(Average, ConfigRoundTrip) {
  layers::Average avg({.name = "mean"});
  testing::check_config_roundtrip(avg);
}

TEST(Average, MismatchNamesLayerAndShapes) {
  layers::Average avg({.name = "avg"});
  try {
    avg(std::vector<SymbolicTensor>{Input({4}), Input({5})});
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'avg' (Average)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[(None, 4), (None, 5)]"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace tower
