#include "testing/layer_test.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace tower::testing {

Tensor random_tensor(const Shape& shape, std::uint64_t seed, float low, float high) {
  Generator g(seed);
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  for (float& x : v) x = g.uniform(low, high);
  return Tensor::from_vector(v, shape);
}

namespace {

struct OneLayerModel {
  std::unique_ptr<Model> model;
};

Model wrap(const LayerPtr& layer, const std::vector<Tensor>& inputs) {
  std::vector<SymbolicTensor> ins;
  for (const Tensor& x : inputs) ins.push_back(Input(x.shape().without_batch()));
  std::vector<SymbolicTensor> outs = (*layer)(ins);
  return Model(ins, outs);
}

std::vector<Index> pick(Index n, int max_elements, std::uint64_t seed) {
  std::vector<Index> idx;
  if (max_elements <= 0 || n <= max_elements) {
    for (Index i = 0; i < n; ++i) idx.push_back(i);
    return idx;
  }
  std::set<Index> s{0, n - 1};
  Generator g(seed);
  while (static_cast<int>(s.size()) < max_elements) s.insert(static_cast<Index>(g.next_u64() % static_cast<std::uint64_t>(n)));
  return {s.begin(), s.end()};
}

}  // namespace

void check_gradients(const LayerPtr& layer, const std::vector<Tensor>& inputs, GradCheckOptions o) {
  Model model = wrap(layer, inputs);
  PlanOptions po;
  po.batch_size = inputs.at(0).dim(0);
  po.training = o.training;
  po.backward = true;
  po.input_gradients = o.check_inputs;
  po.seed = 42;
  Plan plan(model.impl(), po);
  std::vector<Tensor> xs;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    xs.push_back(inputs[i].clone());
    plan.set_input(static_cast<int>(i), xs.back());
  }
  std::vector<std::vector<float>> r;
  plan.forward();
  for (int i = 0; i < plan.num_outputs(); ++i) {
    Tensor ri = random_tensor(plan.output(i).shape(), 1000 + static_cast<std::uint64_t>(i));
    r.push_back(ri.to_vector());
    plan.output_grad(i).copy_from(ri);
  }
  plan.backward();

  // The numeric evaluations keep the step values of the analytic pass (a random layer's masks).
  const auto loss = [&] {
    plan.run_forward();
    double l = 0;
    for (int i = 0; i < plan.num_outputs(); ++i) {
      const std::vector<float> out = plan.output(i).to_vector();
      for (std::size_t j = 0; j < out.size(); ++j) l += static_cast<double>(out[j]) * r[static_cast<std::size_t>(i)][j];
    }
    return l;
  };

  struct Target {
    std::string name;
    Tensor value;
    std::vector<float> analytic;
  };
  std::vector<Target> targets;
  if (o.check_inputs)
    for (std::size_t i = 0; i < xs.size(); ++i)
      targets.push_back({"input " + std::to_string(i), xs[i], plan.input_grad(static_cast<int>(i)).to_vector()});
  if (o.check_weights)
    for (std::size_t k = 0; k < plan.trainable_weights().size(); ++k)
      targets.push_back({"weight " + plan.trainable_weights()[k]->path, plan.trainable_weights()[k]->value,
                         plan.weight_grads()[k].to_vector()});
  ASSERT_FALSE(targets.empty()) << "nothing to check";

  int failures = 0;
  for (std::size_t t = 0; t < targets.size(); ++t) {
    Target& tg = targets[t];
    float* p = tg.value.data<float>();
    for (Index i : pick(tg.value.numel(), o.max_elements_per_tensor, 7 + t)) {
      const float orig = p[i];
      p[i] = orig + static_cast<float>(o.eps);
      const double lp = loss();
      p[i] = orig - static_cast<float>(o.eps);
      const double lm = loss();
      p[i] = orig;
      const double numeric = (lp - lm) / (2 * o.eps);
      const double analytic = tg.analytic[static_cast<std::size_t>(i)];
      if (std::fabs(numeric - analytic) > o.atol + o.rtol * std::fabs(numeric)) {
        if (++failures <= 10)
          ADD_FAILURE() << layer->where() << tg.name << " element " << i << ": analytic " << analytic
                        << ", numeric " << numeric;
      }
    }
  }
  EXPECT_EQ(failures, 0) << layer->where() << failures << " gradient elements differ";
}

std::vector<Tensor> run_layer(const LayerPtr& layer, const std::vector<Tensor>& inputs, bool training) {
  Model model = wrap(layer, inputs);
  PlanOptions po;
  po.batch_size = inputs.at(0).dim(0);
  po.training = training;
  po.seed = 42;
  Plan plan(model.impl(), po);
  for (std::size_t i = 0; i < inputs.size(); ++i) plan.set_input(static_cast<int>(i), inputs[i]);
  plan.forward();
  std::vector<Tensor> out;
  for (int i = 0; i < plan.num_outputs(); ++i) out.push_back(plan.output(i).clone());
  return out;
}

void check_config_roundtrip(const LayerPtr& layer) {
  const Config first = layer->serialize();
  LayerPtr copy = layer_from_config(first);
  EXPECT_EQ(copy->type(), layer->type());
  EXPECT_EQ(copy->name(), layer->name());
  EXPECT_EQ(copy->serialize().to_json(), first.to_json());
}

void expect_near(const Tensor& actual, const std::vector<float>& expected, float atol, float rtol,
                 const std::string& what) {
  const std::vector<float> a = actual.to_vector();
  ASSERT_EQ(a.size(), expected.size()) << what << ": element count";
  int bad = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!(std::fabs(a[i] - expected[i]) <= atol + rtol * std::fabs(expected[i]))) {
      if (++bad <= 5) ADD_FAILURE() << what << " element " << i << ": got " << a[i] << ", expected " << expected[i];
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << a.size() << " elements differ";
}

void expect_near(const Tensor& actual, const Tensor& expected, float atol, float rtol, const std::string& what) {
  EXPECT_EQ(actual.shape(), expected.shape()) << what;
  expect_near(actual, expected.to_vector(), atol, rtol, what);
}

}  // namespace tower::testing

namespace tower::testing {
namespace {

// Every test starts from the same global seed, so weights drawn by initializers (and so every finite-difference
// check) do not depend on which tests ran before or on --gtest_filter.
class SeedEachTest : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo&) override { set_random_seed(20261122); }
};

const bool seed_listener_installed = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new SeedEachTest);
  return true;
}();

}  // namespace
}  // namespace tower::testing
