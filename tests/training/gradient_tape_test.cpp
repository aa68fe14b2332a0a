// GradientTape: gradients against central differences of the tape's own forward values (every op, a model call,
// a loss with sample weights, a variable used directly), against the update fit's step makes from the same
// weights (the fused softmax/cross-entropy path), unconnected variables, the errors, and apply_gradients with
// (gradient, variable) pairs.
#include <gtest/gtest.h>

#include <cmath>

#include "testing/layer_test.h"
#include "tower/tower.h"

namespace tower {
namespace {

using testing::random_tensor;

Model small_mlp() {
  SymbolicTensor in = Input({3});
  SymbolicTensor h = layers::Dense({.units = 5, .activation = "tanh"})(in);
  return Model(in, layers::Dense({.units = 4, .activation = "softmax"})(h));
}

struct Batch {
  Tensor x, y, w, t;
};

Batch batch(Index n) {
  std::vector<std::int32_t> labels;
  std::vector<float> weights;
  for (Index i = 0; i < n; ++i) {
    labels.push_back(static_cast<std::int32_t>((i * 7) % 4));
    weights.push_back(0.5f + 0.25f * static_cast<float>(i % 3));
  }
  return {random_tensor({n, 3}, 5), Tensor::from_vector(labels, {n}), Tensor::from_vector(weights, {n}),
          random_tensor({n, 4}, 9)};
}

// Targets that together use every op: a weighted cross-entropy (alone on the softmax output: the fused path;
// beside other uses of it: the softmax's own backward), an L2 term on the first kernel (a variable used
// directly), add, subtract, multiply (elementwise and by a broadcast scalar), divide, scale, square, sum, mean,
// and the reductions sum and none.
using Target = Tensor (*)(GradientTape&, Model&, const Batch&);

Tensor fused_cross_entropy(GradientTape& tape, Model& model, const Batch& b) {
  return tape.loss(losses::SparseCategoricalCrossentropy(), b.y, tape.call(model, b.x), {.sample_weight = b.w});
}

Tensor cross_entropy_with_l2(GradientTape& tape, Model& model, const Batch& b) {
  Tensor probs = tape.call(model, b.x);
  Tensor ce = tape.loss(losses::SparseCategoricalCrossentropy(), b.y, probs, {.sample_weight = b.w});
  return tape.add(tape.add(ce, tape.scale(tape.l2_loss(model.trainable_weights()[0]), 0.5)), tape.sum(probs));
}

Tensor mean_square(GradientTape& tape, Model& model, const Batch& b) {
  return tape.scale(tape.mean(tape.square(tape.call(model, b.x))), 10.0);
}

Tensor products(GradientTape& tape, Model& model, const Batch& b) {
  Tensor probs = tape.call(model, b.x);
  return tape.sum(tape.multiply(probs, tape.subtract(tape.divide(probs, 4.0), b.t)));
}

Tensor scalar_products(GradientTape& tape, Model& model, const Batch& b) {
  Tensor probs = tape.call(model, b.x);
  Tensor mse = tape.loss(losses::MeanSquaredError(), b.t, probs, {.reduction = LossReduction::sum});
  Tensor ce = tape.loss(losses::SparseCategoricalCrossentropy(), b.y, probs);
  return tape.subtract(tape.multiply(mse, ce), tape.mean(tape.multiply(probs, ce)));
}

Tensor per_example_losses(GradientTape& tape, Model& model, const Batch& b) {
  Tensor probs = tape.call(model, b.x);
  return tape.sum(tape.loss(losses::CategoricalCrossentropy(), b.t, probs,
                            {.sample_weight = b.w, .reduction = LossReduction::none}));
}

TEST(GradientTape, MatchesCentralDifferences) {
  const std::vector<std::pair<const char*, Target>> targets = {
      {"fused cross-entropy", fused_cross_entropy}, {"cross-entropy + l2 + sum", cross_entropy_with_l2},
      {"mean square", mean_square},                 {"products", products},
      {"scalar products", scalar_products},         {"per-example losses", per_example_losses}};
  set_random_seed(3);
  Model model = small_mlp();
  Batch b = batch(6);
  b.t = testing::random_tensor({6, 4}, 9, 0.f, 1.f);
  const std::vector<VariablePtr> vars = model.trainable_weights();
  const double eps = 1e-2;
  for (const auto& [name, target] : targets) {
    GradientTape tape;
    Tensor t = target(tape, model, b);
    ASSERT_EQ(t.numel(), 1) << name;
    const std::vector<Tensor> grads = tape.gradient(t, vars);
    for (std::size_t k = 0; k < vars.size(); ++k) {
      ASSERT_TRUE(grads[k].defined()) << name << " " << vars[k]->path;
      const std::vector<float> g = grads[k].to_vector();
      float* w = vars[k]->value.data<float>();
      for (Index i = 0; i < vars[k]->value.numel(); ++i) {
        const float saved = w[i];
        const auto value = [&](double delta) {
          w[i] = static_cast<float>(saved + delta);
          GradientTape probe;
          return static_cast<double>(target(probe, model, b).item());
        };
        const double numeric = (value(eps) - value(-eps)) / (2 * eps);
        w[i] = saved;
        EXPECT_NEAR(g[static_cast<std::size_t>(i)], numeric, 5e-4 + 5e-3 * std::fabs(numeric))
            << name << ": " << vars[k]->path << " [" << i << "]";
      }
    }
  }
}

// One SGD step with learning rate 1 from the same weights: fit's update is w - g, with g the gradient of the
// batch's sum_over_batch_size loss.
TEST(GradientTape, MatchesFitsGradients) {
  set_random_seed(4);
  Model a = small_mlp(), b = small_mlp();
  b.set_weights(a.get_weights());
  const Batch data = batch(8);
  a.compile(optimizers::SGD(1.0), losses::SparseCategoricalCrossentropy());
  a.train_on_batch(data.x, data.y);
  GradientTape tape;
  Tensor loss = tape.loss(losses::SparseCategoricalCrossentropy(), data.y, tape.call(b, data.x));
  const std::vector<Tensor> grads = tape.gradient(loss, b.trainable_weights());
  const std::vector<VariablePtr> fitted = a.trainable_weights(), own = b.trainable_weights();
  for (std::size_t k = 0; k < own.size(); ++k) {
    const std::vector<float> w = own[k]->value.to_vector(), g = grads[k].to_vector(),
                             want = fitted[k]->value.to_vector();
    for (std::size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(w[i] - g[i], want[i], 1e-6) << own[k]->path;
  }
}

TEST(GradientTape, UnconnectedVariablesGetNoneOrZeros) {
  set_random_seed(5);
  Model model = small_mlp();
  auto other = std::make_shared<Variable>(Variable{"v", "free/v", Tensor::full({2, 2}, 1.f)});
  const Batch b = batch(4);
  for (UnconnectedGradients mode : {UnconnectedGradients::none, UnconnectedGradients::zero}) {
    GradientTape tape;
    Tensor loss = tape.mean(tape.call(model, b.x));
    const std::vector<Tensor> g = tape.gradient(loss, {model.trainable_weights()[0], other}, mode);
    EXPECT_TRUE(g[0].defined());
    if (mode == UnconnectedGradients::none) {
      EXPECT_FALSE(g[1].defined());
    } else {
      ASSERT_TRUE(g[1].defined());
      EXPECT_EQ(g[1].shape(), (Shape{2, 2}));
      for (float v : g[1].to_vector()) EXPECT_EQ(v, 0.f);
    }
  }
  // A variable used only directly gets its gradient: d sum(v^2)/2 = v.
  GradientTape tape;
  Tensor l2 = tape.l2_loss(other);
  const std::vector<Tensor> g = tape.gradient(l2, {other});
  for (float v : g[0].to_vector()) EXPECT_FLOAT_EQ(v, 1.f);
}

template <class Fn>
void expect_error(Fn fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no exception; expected one mentioning \"" << needle << "\"";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(GradientTape, ErrorsNameTheProblem) {
  set_random_seed(6);
  Model model = small_mlp();
  const Batch b = batch(4);
  expect_error(
      [&] {
        GradientTape tape;
        Tensor probs = tape.call(model, b.x);
        tape.gradient(probs, model.trainable_weights());
      },
      "must be a scalar");
  expect_error(
      [&] {
        GradientTape tape;
        tape.gradient(Tensor::full({1}, 2.f), model.trainable_weights());
      },
      "was not computed on this tape");
  expect_error(
      [&] {
        GradientTape tape;
        Plan& plan = model.impl().plan_for(4, true);
        tape.call(plan, {b.x});
        tape.call(plan, {b.x});
      },
      "this plan (batch of 4) already ran on this tape");
  expect_error(
      [&] {
        GradientTape tape;
        Tensor loss = tape.mean(tape.call(model, b.x));
        tape.gradient(loss, model.trainable_weights());
        tape.gradient(loss, model.trainable_weights());
      },
      "non-persistent tape");
  expect_error(
      [&] {
        GradientTape tape;
        tape.add(Tensor::full({2, 3}, 1.f), Tensor::full({3, 2}, 1.f));
      },
      "do not broadcast");
  // Two batch sizes are two plans: one tape may call the model on both.
  GradientTape two;
  Tensor l = two.add(two.mean(two.call(model, b.x)), two.mean(two.call(model, batch(3).x)));
  EXPECT_TRUE(two.gradient(l, model.trainable_weights())[0].defined());
}

// Inputs of another dtype are converted to float32, as fit converts them: an int32 batch gives the outputs and
// gradients of the same values as float32.
TEST(GradientTape, IntegerInputsAreConvertedLikeFit) {
  set_random_seed(8);
  Model model = small_mlp();
  const std::vector<std::int32_t> ints = {1, -2, 3, 0, 4, -1, 2, 2, -3, 1, 0, 5};
  const std::vector<float> floats(ints.begin(), ints.end());
  std::vector<std::vector<float>> outputs, grads;
  for (const Tensor& x : {Tensor::from_vector(ints, {4, 3}), Tensor::from_vector(floats, {4, 3})}) {
    GradientTape tape;
    const Tensor probs = tape.call(model, x);
    outputs.push_back(probs.to_vector());
    grads.push_back(tape.gradient(tape.mean(probs), model.trainable_weights())[0].to_vector());
  }
  EXPECT_EQ(outputs[0], outputs[1]);
  EXPECT_EQ(grads[0], grads[1]);
}

TEST(GradientTape, PersistentTapeGivesTheSameGradientsTwice) {
  set_random_seed(7);
  Model model = small_mlp();
  const Batch b = batch(5);
  GradientTape tape(/*persistent=*/true);
  Tensor loss = tape.loss(losses::SparseCategoricalCrossentropy(), b.y, tape.call(model, b.x));
  const std::vector<Tensor> first = tape.gradient(loss, model.trainable_weights());
  const std::vector<Tensor> second = tape.gradient(loss, model.trainable_weights());
  for (std::size_t k = 0; k < first.size(); ++k) EXPECT_EQ(first[k].to_vector(), second[k].to_vector());
}

// d target / d each element of `params` (variables' values or watched tensors, written in place) by central
// differences of `target`, recorded on a fresh tape each time, against `grads`.
template <class Target>
void expect_central_differences(const char* name, const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                                Target target) {
  const double eps = 1e-2;
  for (std::size_t k = 0; k < params.size(); ++k) {
    ASSERT_TRUE(grads[k].defined()) << name << " parameter " << k;
    ASSERT_EQ(grads[k].shape(), params[k].shape()) << name << " parameter " << k;
    const std::vector<float> g = grads[k].to_vector();
    float* w = params[k].data<float>();
    for (Index i = 0; i < params[k].numel(); ++i) {
      const float saved = w[i];
      const auto value = [&](double delta) {
        w[i] = static_cast<float>(saved + delta);
        GradientTape probe;
        return static_cast<double>(target(probe).item());
      };
      const double numeric = (value(eps) - value(-eps)) / (2 * eps);
      w[i] = saved;
      EXPECT_NEAR(g[static_cast<std::size_t>(i)], numeric, 5e-4 + 5e-3 * std::fabs(numeric))
          << name << ": parameter " << k << " [" << i << "]";
    }
  }
}

std::vector<Tensor> values_of(const std::vector<VariablePtr>& vars) {
  std::vector<Tensor> out;
  for (const VariablePtr& v : vars) out.push_back(v->value);
  return out;
}

// A saliency map: the gradient of a score with respect to the model's input, through the model's plan.
TEST(GradientTape, GradientsReachAModelsInputs) {
  set_random_seed(11);
  Model model = small_mlp();
  Batch b = batch(5);
  const auto score = [&](GradientTape& tape) {
    tape.watch(b.x);
    return ops::sum(ops::multiply(tape.call(model, b.x), b.t));
  };
  GradientTape tape;
  const Tensor s = score(tape);
  const std::vector<Tensor> dx = tape.gradient(s, std::vector<Tensor>{b.x});
  expect_central_differences("saliency", {b.x}, dx, score);
  // An input that is not a value of the tape costs no input gradient: the call runs fit's own plan.
  GradientTape plain;
  const Tensor p = plain.call(model, b.x);
  EXPECT_EQ(p.raw_data(), model.impl().plan_for(5, true).output(0).raw_data());
  EXPECT_FALSE(model.impl().plan_for(5, true).options().input_gradients);
}

// A siamese network: one model called on two batches of one size on one tape. Each call keeps its activations
// (a plan of its own), and the weights' gradients of both calls add up.
TEST(GradientTape, AModelCalledTwiceOnATapeAddsBothCallsGradients) {
  set_random_seed(12);
  Model model = small_mlp();
  Batch left = batch(4), right = batch(4);
  right.x = random_tensor({4, 3}, 21);
  const auto similarity = [&](GradientTape& tape) {
    tape.watch(left.x);
    const Tensor a = tape.call(model, left.x), b = tape.call(model, right.x);
    return ops::sum(ops::square(a - b)) + ops::sum(a * b);
  };
  GradientTape tape;
  const Tensor s = similarity(tape);
  const std::vector<VariablePtr> vars = model.trainable_weights();
  std::vector<Tensor> grads = tape.gradient(s, vars);
  expect_central_differences("siamese weights", values_of(vars), grads, similarity);
  GradientTape again;
  const Tensor s2 = similarity(again);
  expect_central_differences("siamese input", {left.x}, again.gradient(s2, std::vector<Tensor>{left.x}), similarity);
}

// A GAN's generator step: the generator's output goes through the discriminator, twice (the same batch size), and
// the generator's weights get their gradient through the discriminator's input gradients.
TEST(GradientTape, AGeneratorTrainsThroughItsDiscriminator) {
  set_random_seed(13);
  SymbolicTensor z_in = Input({2});
  Model generator(z_in, layers::Dense({.units = 3, .activation = "tanh"})(z_in));
  Model discriminator = small_mlp();
  const Tensor z = random_tensor({4, 2}, 31), z2 = random_tensor({4, 2}, 32);
  const Batch b = batch(4);
  const auto generator_loss = [&](GradientTape& tape) {
    const Tensor fake = tape.call(generator, z), fake2 = tape.call(generator, z2);
    const Tensor p = tape.call(discriminator, fake), p2 = tape.call(discriminator, fake2);
    return tape.add(tape.loss(losses::CategoricalCrossentropy(), b.t, p), ops::mean(ops::log(p2)));
  };
  GradientTape tape;
  const Tensor loss = generator_loss(tape);
  const std::vector<VariablePtr> vars = generator.trainable_weights();
  const std::vector<Tensor> grads = tape.gradient(loss, vars);
  expect_central_differences("generator", values_of(vars), grads, generator_loss);
  // The discriminator's weights are connected too (both of its calls).
  GradientTape d_tape;
  const Tensor d_loss = generator_loss(d_tape);
  const std::vector<VariablePtr> d_vars = discriminator.trainable_weights();
  expect_central_differences("discriminator", values_of(d_vars), d_tape.gradient(d_loss, d_vars), generator_loss);
}

TEST(GradientTape, ApplyGradientsPairsMatchTheListForm) {
  set_random_seed(8);
  Model a = small_mlp(), b = small_mlp();
  b.set_weights(a.get_weights());
  const Batch data = batch(6);
  auto step = [&](Model& m, optimizers::OptimizerPtr opt, bool pairs) {
    GradientTape tape;
    Tensor loss = tape.loss(losses::SparseCategoricalCrossentropy(), data.y, tape.call(m, data.x));
    const std::vector<VariablePtr> vars = m.trainable_weights();
    const std::vector<Tensor> grads = tape.gradient(loss, vars);
    if (pairs) opt->apply_gradients(optimizers::zip(grads, vars));
    else opt->apply_gradients(vars, grads);
  };
  optimizers::OptimizerPtr oa = optimizers::Adam({.learning_rate = 0.01, .clipnorm = 0.05});
  optimizers::OptimizerPtr ob = optimizers::Adam({.learning_rate = 0.01, .clipnorm = 0.05});
  for (int s = 0; s < 3; ++s) {
    step(a, oa, true);
    step(b, ob, false);
  }
  EXPECT_EQ(oa->iterations(), 3);
  const std::vector<Tensor> wa = a.get_weights(), wb = b.get_weights();
  for (std::size_t k = 0; k < wa.size(); ++k) EXPECT_EQ(wa[k].to_vector(), wb[k].to_vector());
  // A subset of the variables with their gradients, Keras' partial updates.
  const std::vector<Tensor> before = a.get_weights();
  GradientTape tape;
  Tensor loss = tape.mean(tape.call(a, data.x));
  const VariablePtr last = a.trainable_weights().back();
  optimizers::SGD(0.5)->apply_gradients({{tape.gradient(loss, {last})[0], last}});
  EXPECT_EQ(a.get_weights()[0].to_vector(), before[0].to_vector());
  EXPECT_NE(a.get_weights().back().to_vector(), before.back().to_vector());
  expect_error([&] { optimizers::zip({Tensor()}, {}); }, "1 gradients for 0 variables");
}

}  // namespace
}  // namespace tower
