// ops::dot_product_attention against the composed formula (einsum, softmax, where: what MultiHeadAttention composed
// before it), central differences, and torch.nn.functional.scaled_dot_product_attention's fixtures
// (tests/reference/make_attention_fixtures.py).
#include "api/ops/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <stdexcept>
#include <optional>
#include <string>
#include <vector>

#include "api/core/device.h"
#include "api/core/random.h"
#include "api/ops/einsum.h"
#include "api/ops/ops.h"
#include "api/training/gradient_tape.h"
#include "testing/fixtures.h"
#include "testing/errors.h"

namespace tower {
namespace {

Tensor random_tensor(Generator& g, const Shape& shape) {
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  for (float& x : v) x = g.uniform(-1.f, 1.f);
  return Tensor::from_vector(v, shape);
}

// 1 / 0 with about `keep` of the positions kept.
Tensor random_mask(Generator& g, const Shape& shape, float keep) {
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  for (float& x : v) x = g.uniform() < keep ? 1.f : 0.f;
  return Tensor::from_vector(v, shape);
}

// [tq, tk]: 1 where j <= i.
Tensor causal(Index tq, Index tk) {
  std::vector<float> v;
  for (Index i = 0; i < tq; ++i)
    for (Index j = 0; j < tk; ++j) v.push_back(j <= i ? 1.f : 0.f);
  return Tensor::from_vector(v, Shape{tq, tk});
}

// The formula composed of ops, masked as Keras' Softmax masks (-1e9 before, 0 after): the reference.
Tensor composed(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& bias, const Tensor& mask,
                std::optional<float> scale, bool is_causal) {
  const float s = scale ? *scale : 1.f / std::sqrt(static_cast<float>(q.dim(3)));
  Tensor logits = ops::einsum("bqnh,bknh->bnqk", q, k) * s;
  if (bias.defined()) logits = logits + bias;
  Tensor keep = mask;
  if (is_causal) {
    const Tensor c = causal(q.dim(1), k.dim(1));
    keep = keep.defined() ? ops::multiply(ops::not_equal(keep, ops::scalar(0.f)), c) : c;
  }
  Tensor weights;
  if (keep.defined()) {
    keep = ops::broadcast_to(ops::not_equal(keep, ops::scalar(0.f)), logits.shape());
    weights = ops::softmax(ops::where(keep, logits, ops::scalar(-1e9f)), -1);
  } else {
    weights = ops::softmax(logits, -1);
  }
  return ops::einsum("bnqk,bknh->bqnh", weights, v);
}

void expect_near(const Tensor& actual, const Tensor& expected, double tol, const std::string& what) {
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  const std::vector<float> a = actual.to_vector(), e = expected.to_vector();
  int bad = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(std::fabs(a[i] - e[i]) <= tol * (1.0 + std::fabs(e[i]))) && ++bad <= 3)
      ADD_FAILURE() << what << ", element " << i << ": " << a[i] << ", expected " << e[i];
}

struct Problem {
  Index b, tq, tk, n, h, hv;
  std::vector<Index> bias_shape, mask_shape;  // empty: none
  bool causal = false;
  std::optional<float> scale;
};

struct Inputs {
  std::vector<Tensor> differentiable;  // q, k, v and the bias when there is one
  Tensor bias, mask;
};

Inputs draw(Generator& g, const Problem& p) {
  Inputs in;
  in.differentiable = {random_tensor(g, Shape{p.b, p.tq, p.n, p.h}), random_tensor(g, Shape{p.b, p.tk, p.n, p.h}),
                       random_tensor(g, Shape{p.b, p.tk, p.n, p.hv})};
  if (!p.bias_shape.empty()) {
    in.bias = random_tensor(g, Shape(p.bias_shape));
    in.differentiable.push_back(in.bias);
  }
  if (!p.mask_shape.empty()) in.mask = random_mask(g, Shape(p.mask_shape), 0.7f);
  return in;
}

using Attention = Tensor (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                             std::optional<float>, bool);

// The output and the gradients of sum(output * r) for every differentiable input.
std::vector<Tensor> run(Attention f, const Problem& p, const Inputs& in, const Tensor& r) {
  GradientTape tape;
  for (const Tensor& x : in.differentiable) tape.watch(x);
  const Tensor& bias = p.bias_shape.empty() ? Tensor() : in.differentiable[3];
  const Tensor y = f(in.differentiable[0], in.differentiable[1], in.differentiable[2], bias, in.mask, p.scale,
                     p.causal);
  std::vector<Tensor> out{y};
  for (const Tensor& g : tape.gradient(ops::sum(y * r), in.differentiable, UnconnectedGradients::zero))
    out.push_back(g);
  return out;
}

Tensor fused(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& bias, const Tensor& mask,
             std::optional<float> scale, bool is_causal) {
  return ops::dot_product_attention(q, k, v, bias, mask, scale, is_causal);
}

std::string describe(const Problem& p) {
  std::string s = "B=" + std::to_string(p.b) + " Tq=" + std::to_string(p.tq) + " Tk=" + std::to_string(p.tk) +
                  " N=" + std::to_string(p.n) + " H=" + std::to_string(p.h) + " Hv=" + std::to_string(p.hv);
  if (!p.bias_shape.empty()) s += " bias " + Shape(p.bias_shape).to_string();
  if (!p.mask_shape.empty()) s += " mask " + Shape(p.mask_shape).to_string();
  if (p.causal) s += " causal";
  return s;
}

TEST(DotProductAttention, AgreesWithTheComposedFormula) {
  // Sizes across the CPU's 64-query and 128-key blocks, head sizes off the vector width, Tq != Tk both ways.
  const std::vector<Problem> problems = {
      {2, 5, 7, 3, 6, 6, {}, {}},
      {1, 70, 130, 2, 17, 17, {}, {}},
      {2, 9, 4, 2, 5, 3, {}, {}},
      {1, 67, 140, 2, 8, 8, {}, {}, true},
      {1, 140, 67, 2, 8, 9, {}, {}, true},
      {2, 6, 6, 2, 4, 4, {}, {}, true},
      {2, 7, 129, 3, 5, 5, {}, {2, 1, 7, 129}},
      {2, 5, 6, 2, 4, 4, {}, {6}},
      {2, 5, 6, 2, 4, 4, {2, 5, 6}, {}, false, 0.7f},
      {2, 66, 70, 2, 3, 5, {2, 1, 66, 70}, {1, 2, 1, 70}, true},
      {1, 4, 5, 2, 3, 3, {5}, {4, 5}},
  };
  Generator g(31);
  for (const Problem& p : problems) {
    SCOPED_TRACE(describe(p));
    const Inputs in = draw(g, p);
    const Tensor r = random_tensor(g, Shape{p.b, p.tq, p.n, p.hv});
    const std::vector<Tensor> want = run(composed, p, in, r), got = run(fused, p, in, r);
    const char* names[] = {"output", "dquery", "dkey", "dvalue", "dbias"};
    for (std::size_t i = 0; i < want.size(); ++i) expect_near(got[i], want[i], 2e-5, names[i]);
  }
}

TEST(DotProductAttention, AFullyMaskedRowAveragesTheValuesAsKeras) {
  Generator g(7);
  const Problem p{1, 3, 4, 1, 2, 2, {}, {1, 1, 3, 4}};
  Inputs in = draw(g, p);
  in.mask = Tensor::from_vector(std::vector<float>{1, 0, 1, 1, 0, 0, 0, 0, 0, 1, 1, 0}, Shape{1, 1, 3, 4});
  const Tensor r = Tensor::full(Shape{1, 3, 1, 2}, 1.f);
  const std::vector<Tensor> got = run(fused, p, in, r);
  const std::vector<float> y = got[0].to_vector(), dq = got[1].to_vector(), v = in.differentiable[2].to_vector();
  for (int c = 0; c < 2; ++c)
    EXPECT_NEAR(y[static_cast<std::size_t>(2 + c)], (v[c] + v[2 + c] + v[4 + c] + v[6 + c]) / 4, 1e-6) << c;
  EXPECT_EQ(dq[2], 0.f);
  EXPECT_EQ(dq[3], 0.f);
  const std::vector<Tensor> want = run(composed, p, in, r);
  for (std::size_t i = 0; i < want.size(); ++i)
    expect_near(got[i], want[i], 2e-5, "output or gradient " + std::to_string(i));
}

// d sum(y * r) / d input k against central differences of the fused op itself, summed in double.
TEST(DotProductAttention, GradientsMatchCentralDifferences) {
  const std::vector<Problem> problems = {
      {1, 3, 4, 2, 3, 2, {1, 2, 3, 4}, {}},
      {2, 4, 3, 1, 2, 3, {3}, {2, 1, 4, 3}, true},
  };
  Generator g(11);
  for (const Problem& p : problems) {
    SCOPED_TRACE(describe(p));
    const Inputs in = draw(g, p);
    const Tensor r = random_tensor(g, Shape{p.b, p.tq, p.n, p.hv});
    const std::vector<Tensor> grads = run(fused, p, in, r);
    const auto loss = [&](const std::vector<Tensor>& x) {
      const Tensor y = fused(x[0], x[1], x[2], p.bias_shape.empty() ? Tensor() : x[3], in.mask, p.scale, p.causal);
      const std::vector<float> yv = y.to_vector(), rv = r.to_vector();
      double l = 0;
      for (std::size_t i = 0; i < yv.size(); ++i) l += double(yv[i]) * rv[i];
      return l;
    };
    const float h = 1e-3f;
    const char* names[] = {"query", "key", "value", "bias"};
    for (std::size_t k = 0; k < in.differentiable.size(); ++k) {
      const std::vector<float> analytic = grads[k + 1].to_vector();
      std::vector<float> v = in.differentiable[k].to_vector();
      for (std::size_t j = 0; j < v.size(); ++j) {
        std::vector<Tensor> plus = in.differentiable, minus = in.differentiable;
        std::vector<float> w = v;
        w[j] = v[j] + h;
        plus[k] = Tensor::from_vector(w, in.differentiable[k].shape());
        w[j] = v[j] - h;
        minus[k] = Tensor::from_vector(w, in.differentiable[k].shape());
        const double numeric = (loss(plus) - loss(minus)) / (2.0 * h);
        EXPECT_NEAR(analytic[j], numeric, 5e-3 * (1.0 + std::fabs(numeric))) << names[k] << " element " << j;
      }
    }
  }
}

TEST(DotProductAttention, MatchesTorchScaledDotProductAttention) {
  const Config doc = testing::read_json_fixture("ops/attention.json");
  const std::vector<std::string> names = testing::fixture_case_names(doc);
  ASSERT_GE(names.size(), 7u);
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const Config& c = testing::fixture_case(doc, name);
    const Tensor q = testing::fixture_tensor(c.at("query")), k = testing::fixture_tensor(c.at("key")),
                 v = testing::fixture_tensor(c.at("value")), r = testing::fixture_tensor(c.at("r"));
    const Tensor bias = c.contains("bias") ? testing::fixture_tensor(c.at("bias")) : Tensor();
    const Tensor mask = c.contains("mask") ? testing::fixture_tensor(c.at("mask")) : Tensor();
    std::optional<float> scale;
    if (!c.at("scale").is_null()) scale = static_cast<float>(c.at("scale").as_double());
    std::vector<Tensor> sources{q, k, v};
    if (bias.defined()) sources.push_back(bias);
    GradientTape tape;
    for (const Tensor& x : sources) tape.watch(x);
    const Tensor y = ops::dot_product_attention(q, k, v, bias, mask, scale, c.at("is_causal").as_bool());
    const std::vector<Tensor> grads = tape.gradient(ops::sum(y * r), sources, UnconnectedGradients::zero);
    expect_near(y, testing::fixture_tensor(c.at("y")), 1e-5, "output");
    const char* keys[] = {"dquery", "dkey", "dvalue", "dbias"};
    for (std::size_t i = 0; i < grads.size(); ++i)
      expect_near(grads[i], testing::fixture_tensor(c.at(keys[i])), 1e-5, keys[i]);
  }
}

// The op on cuda:0 against the CPU, values and the gradients of q, k, v and the bias: lengths across the kernels'
// tiles, an int32 mask broadcast over heads, causal with Tq > Tk, and a head of 128 (over 48 KiB of shared memory per
// block). Skipped without a GPU; scripts/gpu-check.sh runs it where one is lent.
TEST(DotProductAttention, MatchesTheCpuOnTheGpu_CUDA) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU";
  const std::vector<Problem> problems = {
      {2, 70, 45, 3, 64, 40, {2, 1, 70, 45}, {2, 1, 70, 45}, true},
      {1, 33, 97, 2, 128, 128, {97}, {}, false, 0.05f},
  };
  Generator g(5);
  for (const Problem& p : problems) {
    SCOPED_TRACE(describe(p));
    Inputs in = draw(g, p);
    if (in.mask.defined()) in.mask = ops::cast(in.mask, DType::int32);
    const Tensor r = random_tensor(g, Shape{p.b, p.tq, p.n, p.hv});
    const std::vector<Tensor> cpu = run(fused, p, in, r);
    Inputs on_gpu;
    for (const Tensor& x : in.differentiable) on_gpu.differentiable.push_back(x.to(Device::cuda(0)));
    if (in.mask.defined()) on_gpu.mask = in.mask.to(Device::cuda(0));
    const std::vector<Tensor> gpu = run(fused, p, on_gpu, r.to(Device::cuda(0)));
    ASSERT_EQ(gpu.size(), cpu.size());
    for (std::size_t i = 0; i < cpu.size(); ++i)
      expect_near(gpu[i].to(Device::cpu()), cpu[i], 1e-4, "output or gradient " + std::to_string(i));
  }
}

TEST(DotProductAttention, BadShapesAreClearErrors) {
  const Tensor q = Tensor::zeros(Shape{2, 3, 2, 4}), k = Tensor::zeros(Shape{2, 5, 2, 4}),
               v = Tensor::zeros(Shape{2, 5, 2, 4});
  EXPECT_NE(testing::error_of<std::invalid_argument>([&] { ops::dot_product_attention(q, Tensor::zeros(Shape{2, 5, 2, 3}), v); })
                .find("ops.dot_product_attention: query and key head sizes differ: query (2, 3, 2, 4), key "
                      "(2, 5, 2, 3)"),
            std::string::npos);
  EXPECT_NE(testing::error_of<std::invalid_argument>([&] { ops::dot_product_attention(q, k, Tensor::zeros(Shape{2, 4, 2, 4})); })
                .find("key and value lengths differ"),
            std::string::npos);
  EXPECT_NE(testing::error_of<std::invalid_argument>([&] { ops::dot_product_attention(Tensor::zeros(Shape{2, 3, 8}), k, v); }).find("expects query"),
            std::string::npos);
  EXPECT_NE(testing::error_of<std::invalid_argument>([&] { ops::dot_product_attention(q, k, v, Tensor(), Tensor::zeros(Shape{3, 4})); })
                .find("the mask of shape (3, 4) does not broadcast to (2, 2, 3, 5)"),
            std::string::npos);
  EXPECT_NE(testing::error_of<std::invalid_argument>([&] { ops::dot_product_attention(q, k, v, Tensor::zeros(Shape{2, 3, 3, 5})); })
                .find("the bias of shape (2, 3, 3, 5) does not broadcast"),
            std::string::npos);
}

}  // namespace
}  // namespace tower
