#include "api/initializers/initializers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace tower {
namespace {

// The Gram matrix of the columns (or rows) of w [rows, cols], as doubles.
std::vector<double> gram(const std::vector<float>& w, Index rows, Index cols, bool of_columns) {
  const Index k = of_columns ? cols : rows, len = of_columns ? rows : cols;
  std::vector<double> g(static_cast<std::size_t>(k * k));
  const auto at = [&](Index vec, Index i) {
    return double(w[static_cast<std::size_t>(of_columns ? i * cols + vec : vec * cols + i)]);
  };
  for (Index a = 0; a < k; ++a)
    for (Index b = 0; b < k; ++b) {
      double s = 0;
      for (Index i = 0; i < len; ++i) s += at(a, i) * at(b, i);
      g[static_cast<std::size_t>(a * k + b)] = s;
    }
  return g;
}

void expect_scaled_identity(const std::vector<double>& g, Index k, double scale) {
  for (Index a = 0; a < k; ++a)
    for (Index b = 0; b < k; ++b)
      EXPECT_NEAR(g[static_cast<std::size_t>(a * k + b)], a == b ? scale : 0.0, 1e-5) << a << ", " << b;
}

TEST(Orthogonal, GivesOrthonormalColumnsOrRowsTimesTheGain) {
  Tensor tall(Shape{6, 4});
  initializers::Orthogonal(1.0, 3)(tall);
  expect_scaled_identity(gram(tall.to_vector(), 6, 4, true), 4, 1.0);
  Tensor wide(Shape{3, 5});
  initializers::Orthogonal(2.0, 4)(wide);
  expect_scaled_identity(gram(wide.to_vector(), 3, 5, false), 3, 4.0);
  Tensor conv(Shape{2, 3, 4});  // [rows 6, cols 4]
  initializers::Initializer("orthogonal")(conv);
  expect_scaled_identity(gram(conv.to_vector(), 6, 4, true), 4, 1.0);
}

TEST(Orthogonal, IsSeededAndRoundTripsThroughItsConfig) {
  Tensor a(Shape{4, 4}), b(Shape{4, 4}), c(Shape{4, 4});
  initializers::Orthogonal(1.0, 7)(a);
  initializers::Orthogonal(1.0, 7)(b);
  initializers::Orthogonal(1.0, 8)(c);
  EXPECT_EQ(a.to_vector(), b.to_vector());
  EXPECT_NE(a.to_vector(), c.to_vector());
  const initializers::Initializer back = initializers::Initializer::from_config(initializers::Orthogonal(0.5, 9).to_config());
  EXPECT_EQ(back.name, "orthogonal");
  EXPECT_EQ(back.gain, 0.5);
  EXPECT_EQ(back.seed, std::optional<std::uint64_t>(9));
  EXPECT_EQ(initializers::Orthogonal(0.5, 9).to_config().to_json(), back.to_config().to_json());
}

TEST(Orthogonal, RefusesAVector) {
  Tensor v(Shape{5});
  try {
    initializers::Orthogonal()(v);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("Orthogonal needs a shape of rank 2 or more, got (5,)"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tower
