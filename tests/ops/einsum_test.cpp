// ops::einsum against a direct evaluation of the equation (every assignment of the letters, in double), its
// gradients against central differences, and its errors.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "testing/layer_test.h"
#include "tower/tower.h"

namespace tower {
namespace {

using testing::random_tensor;

// The equation's value by definition: for every assignment of its letters, the product of the operands' elements
// added into the result's element.
std::vector<double> direct(const std::string& inputs_part, const std::string& output, const std::vector<Tensor>& xs) {
  std::vector<std::string> letters;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = inputs_part.find(',', start);
    letters.push_back(inputs_part.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::map<char, Index> size;
  for (std::size_t i = 0; i < xs.size(); ++i)
    for (std::size_t k = 0; k < letters[i].size(); ++k) size[letters[i][k]] = std::max(size[letters[i][k]], xs[i].shape()[static_cast<int>(k)]);
  std::string all;
  for (const auto& [c, n] : size) all += c;
  Index out_count = 1;
  for (char c : output) out_count *= size[c];
  std::vector<double> out(static_cast<std::size_t>(out_count), 0.0);
  std::vector<std::vector<float>> values;
  for (const Tensor& x : xs) values.push_back(x.to_vector());
  std::map<char, Index> at;
  for (char c : all) at[c] = 0;
  const auto flat = [&](const std::string& ls, const Shape& shape) {
    Index f = 0;
    for (std::size_t k = 0; k < ls.size(); ++k) {
      const Index d = shape.rank() ? shape[static_cast<int>(k)] : 1;
      f = f * d + (d == 1 ? 0 : at[ls[k]]);
    }
    return f;
  };
  while (true) {
    double p = 1.0;
    for (std::size_t i = 0; i < xs.size(); ++i) p *= values[i][static_cast<std::size_t>(flat(letters[i], xs[i].shape()))];
    Index o = 0;
    for (char c : output) o = o * size[c] + at[c];
    out[static_cast<std::size_t>(o)] += p;
    int k = static_cast<int>(all.size()) - 1;
    for (; k >= 0; --k) {
      if (++at[all[static_cast<std::size_t>(k)]] < size[all[static_cast<std::size_t>(k)]]) break;
      at[all[static_cast<std::size_t>(k)]] = 0;
    }
    if (k < 0) break;
  }
  return out;
}

struct Case {
  std::string equation;
  std::vector<Shape> shapes;
  std::string inputs, output;  // the explicit form, for the direct evaluation
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"ij,jk->ik", {{3, 4}, {4, 5}}, "ij,jk", "ik"},
      {"ij,jk", {{3, 4}, {4, 2}}, "ij,jk", "ik"},
      {"ij->ji", {{3, 4}}, "ij", "ji"},
      {"ij->", {{3, 4}}, "ij", ""},
      {"ij->j", {{3, 4}}, "ij", "j"},
      {"i,i->", {{5}, {5}}, "i,i", ""},
      {"i,j->ij", {{3}, {4}}, "i,j", "ij"},
      {"ij,kj->ik", {{2, 3}, {4, 3}}, "ij,kj", "ik"},
      {"ijk,ik->j", {{2, 3, 4}, {2, 4}}, "ijk,ik", "j"},
      {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}, "bij,bjk", "bik"},
      {"bij,bjk->bik", {{2, 3, 4}, {1, 4, 5}}, "bij,bjk", "bik"},
      {"bij,jk->bik", {{2, 3, 4}, {4, 5}}, "bij,jk", "bik"},
      {"bqhd,bkhd->bhqk", {{2, 3, 2, 4}, {2, 5, 2, 4}}, "bqhd,bkhd", "bhqk"},
      {"bhqk,bkhd->bqhd", {{2, 2, 3, 5}, {2, 5, 2, 4}}, "bhqk,bkhd", "bqhd"},
      {"aij,bjk->abik", {{2, 3, 4}, {3, 4, 2}}, "aij,bjk", "abik"},
      {"ij,jk->ki", {{3, 4}, {4, 2}}, "ij,jk", "ki"},
      {"ijx,jk->ik", {{3, 4, 2}, {4, 2}}, "ijx,jk", "ik"},
  };
  return all;
}

TEST(Einsum, MatchesTheEquationsDefinition) {
  int seed = 1;
  for (const Case& c : cases()) {
    std::vector<Tensor> xs;
    for (const Shape& s : c.shapes) xs.push_back(random_tensor(s, seed++));
    const Tensor y = xs.size() == 1 ? ops::einsum(c.equation, xs[0]) : ops::einsum(c.equation, xs[0], xs[1]);
    const std::vector<double> want = direct(c.inputs, c.output, xs);
    ASSERT_EQ(y.numel(), static_cast<Index>(want.size())) << c.equation;
    ASSERT_EQ(y.shape().rank(), static_cast<int>(c.output.size())) << c.equation;
    const std::vector<float> got = y.to_vector();
    for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4 + 1e-5 * std::fabs(want[i])) << c.equation << " [" << i << "]";
  }
}

// d sum(einsum * r) / d each operand element against central differences of the direct evaluation.
TEST(Einsum, GradientsMatchCentralDifferences) {
  int seed = 100;
  for (const Case& c : cases()) {
    std::vector<Tensor> xs;
    for (const Shape& s : c.shapes) xs.push_back(random_tensor(s, seed++));
    const Tensor probe = xs.size() == 1 ? ops::einsum(c.equation, xs[0]) : ops::einsum(c.equation, xs[0], xs[1]);
    const Tensor r = random_tensor(probe.shape(), seed++);
    GradientTape tape;
    for (const Tensor& x : xs) tape.watch(x);
    const Tensor y = xs.size() == 1 ? ops::einsum(c.equation, xs[0]) : ops::einsum(c.equation, xs[0], xs[1]);
    const std::vector<Tensor> grads = tape.gradient(ops::sum(y * r), xs);
    const std::vector<float> weights = r.to_vector();
    const auto objective = [&] {
      const std::vector<double> v = direct(c.inputs, c.output, xs);
      double s = 0;
      for (std::size_t i = 0; i < v.size(); ++i) s += v[i] * weights[i];
      return s;
    };
    for (std::size_t k = 0; k < xs.size(); ++k) {
      ASSERT_TRUE(grads[k].defined()) << c.equation;
      ASSERT_EQ(grads[k].shape(), xs[k].shape()) << c.equation;
      const std::vector<float> g = grads[k].to_vector();
      float* w = xs[k].data<float>();
      for (Index i = 0; i < xs[k].numel(); ++i) {
        const float saved = w[i];
        w[i] = saved + 0.5f;
        const double up = objective();
        w[i] = saved - 0.5f;
        const double down = objective();
        w[i] = saved;
        // The objective is linear in each element: the difference is exact up to rounding.
        EXPECT_NEAR(g[static_cast<std::size_t>(i)], up - down, 1e-4 + 1e-4 * std::fabs(up - down))
            << c.equation << " operand " << k << " [" << i << "]";
      }
    }
  }
}

TEST(Einsum, ErrorsNameTheEquationAndTheProblem) {
  const Tensor a = random_tensor({2, 3}, 1), b = random_tensor({4, 5}, 2);
  const auto expect_error = [](auto fn, const std::string& needle) {
    try {
      fn();
      ADD_FAILURE() << "no exception; expected \"" << needle << "\"";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error([&] { ops::einsum("ij,jk->ik", a, b); }, "ops.einsum(\"ij,jk->ik\"): the letter 'j' has size 3 in the first operand and 4");
  expect_error([&] { ops::einsum("ijk->i", a); }, "has shape (2, 3), not 3 axes");
  expect_error([&] { ops::einsum("ii->i", random_tensor({3, 3}, 3)); }, "appears twice in one operand");
  expect_error([&] { ops::einsum("...j->j", a); }, "ellipsis");
  expect_error([&] { ops::einsum("ij->k", a); }, "the result's letter 'k' is not in any operand");
  expect_error([&] { ops::einsum("ij,jk->ik", a); }, "2 operand(s) in the equation, 1 given");
}

}  // namespace
}  // namespace tower
