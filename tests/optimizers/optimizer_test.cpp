// The base optimizer: argument and gradient checks, clipping, weight decay, learning rate and iterations, slots,
// steady-state allocation, and the registry behind optimizer_from_config.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "optimizers/optimizer_testing.h"

namespace tower::optimizers {
namespace {

using testing::make_problem;
using testing::make_variable;
using tower::testing::expect_near;

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

double l2(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += static_cast<double>(x) * x;
  return std::sqrt(s);
}

TEST(Optimizer, RejectsMismatchedLists) {
  auto p = make_problem(1);
  const OptimizerPtr opt = SGD(0.1);
  const std::string msg = message_of([&] { opt->apply_gradients(p.variables, {p.gradients[0][0]}); });
  EXPECT_TRUE(contains(msg, "2 variables but 1 gradients")) << msg;
}

TEST(Optimizer, GradientShapeMismatchNamesTheVariable) {
  auto p = make_problem(1);
  const OptimizerPtr opt = Adam(0.1);
  const Tensor wrong = Tensor::zeros({4, 3});
  const std::string msg = message_of([&] { opt->apply_gradients(p.variables, {wrong, p.gradients[0][1]}); });
  EXPECT_TRUE(contains(msg, "'w/kernel'")) << msg;
  EXPECT_TRUE(contains(msg, Shape({4, 3}).to_string())) << msg;
  EXPECT_TRUE(contains(msg, Shape({3, 4}).to_string())) << msg;
  EXPECT_FALSE(opt->built());
  EXPECT_EQ(opt->iterations(), 0);
}

TEST(Optimizer, RejectsInvalidLearningRates) {
  EXPECT_THROW(SGD(-0.1), std::invalid_argument);
  EXPECT_THROW(Adam({.learning_rate = -1e-3}), std::invalid_argument);
  EXPECT_THROW(RMSprop(std::nan("")), std::invalid_argument);
  const std::string msg = message_of([] { Nadam(-2.0); });
  EXPECT_TRUE(contains(msg, "Nadam")) << msg;
  EXPECT_TRUE(contains(msg, "learning_rate")) << msg;
  const OptimizerPtr opt = Adagrad(0.1);
  EXPECT_THROW(opt->set_learning_rate(-0.5), std::invalid_argument);
  EXPECT_THROW(opt->set_learning_rate(INFINITY), std::invalid_argument);
  EXPECT_EQ(opt->learning_rate(), 0.1);
}

TEST(Optimizer, RejectsInvalidBaseOptions) {
  EXPECT_THROW(SGD({.clipnorm = 1.0, .clipvalue = 0.5}), std::invalid_argument);
  EXPECT_THROW(Adam({.clipnorm = 1.0, .global_clipnorm = 1.0}), std::invalid_argument);
  EXPECT_THROW(Adam({.clipvalue = 1.0, .global_clipnorm = 1.0}), std::invalid_argument);
  EXPECT_THROW(Adam({.clipnorm = 0.0}), std::invalid_argument);
  EXPECT_THROW(Adam({.clipvalue = -1.0}), std::invalid_argument);
  EXPECT_THROW(Adam({.weight_decay = -0.1}), std::invalid_argument);
  EXPECT_THROW(AdamW({.weight_decay = -0.1}), std::invalid_argument);
}

TEST(Optimizer, UnknownVariableAfterTheFirstStep) {
  auto p = make_problem(2);
  const OptimizerPtr opt = Adam(0.1);
  opt->apply_gradients(p.variables, p.gradients[0]);
  const VariablePtr stranger = make_variable("other/kernel", Tensor::zeros({3, 4}));
  const std::string msg =
      message_of([&] { opt->apply_gradients({stranger, p.variables[1]}, p.gradients[1]); });
  EXPECT_TRUE(contains(msg, "'other/kernel'")) << msg;
  EXPECT_EQ(opt->iterations(), 1);
  // A subset of the known variables, in any order, is fine.
  opt->apply_gradients({p.variables[1], p.variables[0]}, {p.gradients[1][1], p.gradients[1][0]});
  EXPECT_EQ(opt->iterations(), 2);
}

// A variable the model no longer holds (a layer popped, a graph changed without a new compile()) stays the
// optimizer's: a new variable cannot be made at its address and so take its slots. Keras' optimizer keeps its
// variables too, and refuses a new one ("Unknown variable ... recreate a new optimizer instance").
TEST(Optimizer, ANewVariableNeverTakesTheStateOfOneTheModelDropped) {
  const OptimizerPtr opt = SGD({.learning_rate = 0.1, .momentum = 0.9});
  VariablePtr old = make_variable("gone/kernel", Tensor::zeros({3, 4}));
  const Tensor gradient = Tensor::full({3, 4}, 1.f);
  opt->apply_gradients({old}, {gradient});
  std::weak_ptr<Variable> watch = old;
  old.reset();
  EXPECT_FALSE(watch.expired()) << "the optimizer lets go of a variable it holds state for";
  // Made now, the new variable would often reuse the freed one's memory, and with it the momentum.
  const VariablePtr fresh = make_variable("new/kernel", Tensor::zeros({3, 4}));
  const std::string msg = message_of([&] { opt->apply_gradients({fresh}, {gradient}); });
  EXPECT_TRUE(contains(msg, "'new/kernel'")) << msg;
  expect_near(fresh->value, std::vector<float>(12, 0.f), 0.f, 0.f, "the new variable, untouched");
}

TEST(Optimizer, RejectsAVariableListedTwiceInALaterStep) {
  auto p = make_problem(2);
  const OptimizerPtr opt = Adam({.clipnorm = 0.5});
  opt->apply_gradients(p.variables, p.gradients[0]);
  const std::vector<float> kernel = p.variables[0]->value.to_vector();
  const std::string msg = message_of(
      [&] { opt->apply_gradients({p.variables[0], p.variables[0]}, {p.gradients[1][0], p.gradients[1][0]}); });
  EXPECT_TRUE(contains(msg, "'w/kernel' is listed twice")) << msg;
  expect_near(p.variables[0]->value, kernel, 0.f, 0.f, "kernel");
  EXPECT_EQ(opt->iterations(), 1);
  opt->apply_gradients(p.variables, p.gradients[1]);
  EXPECT_EQ(opt->iterations(), 2);
}

TEST(Optimizer, UndefinedGradientLeavesItsVariableAlone) {
  auto p = make_problem(1);
  const std::vector<float> bias_before = p.variables[1]->value.to_vector();
  const std::vector<float> kernel_before = p.variables[0]->value.to_vector();
  const OptimizerPtr opt = SGD({.learning_rate = 0.1, .weight_decay = 0.5});
  opt->apply_gradients(p.variables, {p.gradients[0][0], Tensor()});
  expect_near(p.variables[1]->value, bias_before, 0.f, 0.f, "bias");
  EXPECT_NE(p.variables[0]->value.to_vector(), kernel_before);
  EXPECT_TRUE(contains(message_of([&] { opt->apply_gradients(p.variables, {Tensor(), Tensor()}); }),
                       "no gradients"));
}

TEST(Optimizer, ClipnormScalesEachGradientByItsOwnNorm) {
  auto p = make_problem(1);
  // The bias gradient gets a norm below the limit, so only the kernel gradient is scaled.
  const Tensor small = Tensor::full({5}, 0.01f);
  const std::vector<float> w0 = p.variables[0]->value.to_vector(), b0 = p.variables[1]->value.to_vector();
  const std::vector<float> g0 = p.gradients[0][0].to_vector();
  const double c = 0.5;
  ASSERT_GT(l2(g0), c);
  const OptimizerPtr opt = SGD({.learning_rate = 1.0, .clipnorm = c});
  opt->apply_gradients(p.variables, {p.gradients[0][0], small});
  std::vector<float> want_w(w0.size()), want_b(b0.size());
  for (std::size_t i = 0; i < w0.size(); ++i) want_w[i] = static_cast<float>(w0[i] - g0[i] * c / l2(g0));
  for (std::size_t i = 0; i < b0.size(); ++i) want_b[i] = b0[i] - 0.01f;
  expect_near(p.variables[0]->value, want_w, 1e-6f, 1e-6f, "kernel");
  expect_near(p.variables[1]->value, want_b, 1e-7f, 1e-6f, "bias");
  expect_near(p.gradients[0][0], g0, 0.f, 0.f, "the caller's gradient");
}

TEST(Optimizer, GlobalClipnormScalesAllGradientsTogether) {
  auto p = make_problem(1);
  const std::vector<float> w0 = p.variables[0]->value.to_vector(), b0 = p.variables[1]->value.to_vector();
  const std::vector<float> gw = p.gradients[0][0].to_vector(), gb = p.gradients[0][1].to_vector();
  const double norm = std::hypot(l2(gw), l2(gb));
  const double c = 0.7;
  ASSERT_GT(norm, c);
  const OptimizerPtr opt = SGD({.learning_rate = 1.0, .global_clipnorm = c});
  opt->apply_gradients(p.variables, p.gradients[0]);
  std::vector<float> want_w(w0.size()), want_b(b0.size());
  for (std::size_t i = 0; i < w0.size(); ++i) want_w[i] = static_cast<float>(w0[i] - gw[i] * c / norm);
  for (std::size_t i = 0; i < b0.size(); ++i) want_b[i] = static_cast<float>(b0[i] - gb[i] * c / norm);
  expect_near(p.variables[0]->value, want_w, 1e-6f, 1e-6f, "kernel");
  expect_near(p.variables[1]->value, want_b, 1e-6f, 1e-6f, "bias");
  expect_near(p.gradients[0][0], gw, 0.f, 0.f, "the caller's gradient");
}

TEST(Optimizer, ClipvalueClampsElements) {
  auto p = make_problem(1);
  const std::vector<float> w0 = p.variables[0]->value.to_vector();
  const std::vector<float> g0 = p.gradients[0][0].to_vector();
  const OptimizerPtr opt = SGD({.learning_rate = 1.0, .clipvalue = 0.25});
  opt->apply_gradients(p.variables, p.gradients[0]);
  std::vector<float> want(w0.size());
  for (std::size_t i = 0; i < w0.size(); ++i) want[i] = w0[i] - std::clamp(g0[i], -0.25f, 0.25f);
  expect_near(p.variables[0]->value, want, 1e-7f, 1e-6f, "kernel");
  expect_near(p.gradients[0][0], g0, 0.f, 0.f, "the caller's gradient");
}

TEST(Optimizer, WeightDecayComesBeforeTheUpdateAndUsesTheCurrentRate) {
  auto p = make_problem(2);
  const auto schedule =
      schedules::PiecewiseConstantDecay({.boundaries = {0}, .values = {0.1, 0.05}});  // 0.1 at step 0, then 0.05
  const OptimizerPtr opt = SGD({.learning_rate = schedule, .weight_decay = 0.5});
  for (int step = 0; step < 2; ++step) {
    const double lr = step == 0 ? 0.1 : 0.05;
    EXPECT_DOUBLE_EQ(opt->learning_rate(), lr);
    const std::vector<float> w = p.variables[0]->value.to_vector(), g = p.gradients[step][0].to_vector();
    opt->apply_gradients(p.variables, p.gradients[step]);
    std::vector<float> want(w.size());
    for (std::size_t i = 0; i < w.size(); ++i) want[i] = static_cast<float>(w[i] - w[i] * 0.5 * lr - lr * g[i]);
    expect_near(p.variables[0]->value, want, 1e-7f, 1e-6f, "kernel, step " + std::to_string(step + 1));
  }
}

TEST(Optimizer, LearningRateScheduleAndIterations) {
  auto p = make_problem(3);
  const OptimizerPtr opt =
      Adam(schedules::ExponentialDecay({.initial_learning_rate = 0.8, .decay_steps = 1, .decay_rate = 0.5}));
  EXPECT_DOUBLE_EQ(opt->learning_rate(), 0.8);
  opt->apply_gradients(p.variables, p.gradients[0]);
  EXPECT_EQ(opt->iterations(), 1);
  EXPECT_DOUBLE_EQ(opt->learning_rate(), 0.4);
  EXPECT_TRUE(opt->get_config().at("learning_rate").is_map());
  opt->set_iterations(3);
  EXPECT_DOUBLE_EQ(opt->learning_rate(), 0.1);
  // set_learning_rate turns the schedule into a constant (ReduceLROnPlateau).
  opt->set_learning_rate(0.02);
  opt->apply_gradients(p.variables, p.gradients[1]);
  EXPECT_EQ(opt->iterations(), 4);
  EXPECT_EQ(opt->learning_rate(), 0.02);
  EXPECT_EQ(opt->get_config().at("learning_rate"), Config(0.02));
}

// prepare_step / run_step / finish_step, the parts of a step that fit captures as a CUDA graph.
TEST(Optimizer, ASplitStepEqualsApplyGradients) {
  auto whole = make_problem(3), split = make_problem(3);
  const auto schedule = [] {
    return schedules::ExponentialDecay({.initial_learning_rate = 0.1, .decay_steps = 1, .decay_rate = 0.5});
  };
  const OptimizerPtr a = Adam({.learning_rate = schedule(), .weight_decay = 0.1, .clipnorm = 0.5});
  const OptimizerPtr b = Adam({.learning_rate = schedule(), .weight_decay = 0.1, .clipnorm = 0.5});
  for (int step = 0; step < 3; ++step) {
    a->apply_gradients(whole.variables, whole.gradients[step]);
    b->prepare_step(split.variables, split.gradients[step]);
    EXPECT_EQ(b->iterations(), step);
    b->run_step();
    b->finish_step();
    EXPECT_EQ(b->iterations(), step + 1);
  }
  for (std::size_t k = 0; k < whole.variables.size(); ++k)
    EXPECT_EQ(split.variables[k]->value.to_vector(), whole.variables[k]->value.to_vector()) << "variable " << k;
}

TEST(Optimizer, RunStepReadsTheStepsScalarsFromDeviceMemory) {
  // A graph that captured run_step replays it with whatever prepare_step wrote last: the scalars are read from
  // step_scalars() when the update runs. Zeroed there, Adam's step changes nothing (alpha and 1 - beta are 0).
  auto p = make_problem(2);
  const OptimizerPtr opt = Adam(0.1);
  opt->apply_gradients(p.variables, p.gradients[0]);
  const std::vector<float> before = p.variables[0]->value.to_vector();
  opt->prepare_step(p.variables, p.gradients[1]);
  ASSERT_TRUE(opt->step_scalars().defined());
  Tensor zeros = Tensor::zeros(opt->step_scalars().shape(), opt->step_scalars().dtype());
  Tensor scalars = opt->step_scalars();
  scalars.copy_from(zeros);
  opt->run_step();
  opt->finish_step();
  EXPECT_EQ(p.variables[0]->value.to_vector(), before);
  EXPECT_EQ(opt->iterations(), 2);
}

TEST(Optimizer, RunStepAndFinishStepNeedAPreparedStep) {
  auto p = make_problem(2);
  const OptimizerPtr opt = SGD(0.1);
  EXPECT_TRUE(contains(message_of([&] { opt->run_step(); }), "SGD.run_step: no prepared step"));
  opt->prepare_step(p.variables, p.gradients[0]);
  EXPECT_TRUE(contains(message_of([&] { opt->finish_step(); }), "has not run"));
  opt->run_step();
  opt->finish_step();
  EXPECT_TRUE(contains(message_of([&] { opt->finish_step(); }), "no prepared step"));
}

TEST(Optimizer, SlotsAreNamedAfterTheirVariables) {
  auto p = make_problem(1);
  const OptimizerPtr opt = Adam({.amsgrad = true});
  EXPECT_TRUE(opt->variables().empty());
  opt->build(p.variables);
  EXPECT_TRUE(opt->built());
  const std::vector<std::string> want = {"w/kernel/momentum", "w/kernel/velocity", "w/kernel/velocity_hat",
                                         "w/bias/momentum",   "w/bias/velocity",   "w/bias/velocity_hat"};
  ASSERT_EQ(opt->variables().size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    const Variable& s = *opt->variables()[i];
    EXPECT_EQ(s.path, want[i]);
    EXPECT_EQ(s.name, want[i]);
    EXPECT_FALSE(s.trainable);
    EXPECT_EQ(s.value.shape(), p.variables[i / 3]->value.shape());
    expect_near(s.value, std::vector<float>(static_cast<std::size_t>(s.value.numel()), 0.f), 0.f, 0.f, s.path);
  }
  // build is idempotent; the first step uses the slots made by build.
  const Variable* first = opt->variables()[0].get();
  opt->build(p.variables);
  opt->apply_gradients(p.variables, p.gradients[0]);
  EXPECT_EQ(opt->variables().size(), want.size());
  EXPECT_EQ(opt->variables()[0].get(), first);
}

TEST(Optimizer, BuildRejectsRepeatedVariablesAndStaysUnbuilt) {
  auto p = make_problem(1);
  const OptimizerPtr opt = Adam();
  EXPECT_THROW(opt->build({p.variables[0], p.variables[0]}), std::invalid_argument);
  EXPECT_FALSE(opt->built());
  EXPECT_TRUE(opt->variables().empty());
  opt->apply_gradients(p.variables, p.gradients[0]);
  EXPECT_EQ(opt->variables().size(), 4u);
}

TEST(Optimizer, SteadyStateStepsDoNotAllocate) {
  const std::vector<std::pair<std::string, std::function<OptimizerPtr()>>> cases = {
      {"SGD", [] { return OptimizerPtr(SGD(0.1)); }},
      {"SGD nesterov clipnorm", [] { return OptimizerPtr(SGD({.momentum = 0.9, .nesterov = true, .clipnorm = 0.5})); }},
      {"Adam amsgrad global_clipnorm",
       [] { return OptimizerPtr(Adam({.amsgrad = true, .weight_decay = 0.1, .global_clipnorm = 0.5})); }},
      {"AdamW clipvalue", [] { return OptimizerPtr(AdamW({.clipvalue = 0.1})); }},
      {"RMSprop centered momentum", [] { return OptimizerPtr(RMSprop({.momentum = 0.5, .centered = true})); }},
      {"Adagrad", [] { return OptimizerPtr(Adagrad()); }},
      {"Adadelta", [] { return OptimizerPtr(Adadelta()); }},
      {"Adamax", [] { return OptimizerPtr(Adamax()); }},
      {"Nadam schedule", [] {
         return OptimizerPtr(Nadam(schedules::CosineDecay({.initial_learning_rate = 0.1, .decay_steps = 3})));
       }},
  };
  Allocator& allocator = allocator_for(Device::cpu());
  for (const auto& [name, make] : cases) {
    auto p = make_problem(5);
    const OptimizerPtr opt = make();
    opt->apply_gradients(p.variables, p.gradients[0]);
    const std::uint64_t after_first = allocator.stats().allocations;
    for (int step = 1; step < 5; ++step) opt->apply_gradients(p.variables, p.gradients[step]);
    EXPECT_EQ(allocator.stats().allocations, after_first) << name;
  }
}

// The CPU update loops split variables above 32768 elements over threads and run vector code with scalar
// remainders; per element they must compute exactly what the small-variable path does.
TEST(Optimizer, LargeVariablesUpdateExactlyLikeSmallOnes) {
  const std::vector<std::pair<std::string, std::function<OptimizerPtr()>>> cases = {
      {"SGD nesterov", [] { return OptimizerPtr(SGD({.momentum = 0.9, .nesterov = true})); }},
      {"Adam", [] { return OptimizerPtr(Adam({.weight_decay = 0.1})); }},
      {"Adam amsgrad clipvalue", [] { return OptimizerPtr(Adam({.amsgrad = true, .clipvalue = 0.5})); }},
      {"RMSprop", [] { return OptimizerPtr(RMSprop()); }},
      {"RMSprop centered momentum", [] { return OptimizerPtr(RMSprop({.momentum = 0.5, .centered = true})); }},
      {"Adagrad", [] { return OptimizerPtr(Adagrad()); }},
      {"Adadelta", [] { return OptimizerPtr(Adadelta()); }},
      {"Adamax", [] { return OptimizerPtr(Adamax()); }},
      {"Nadam", [] { return OptimizerPtr(Nadam()); }},
  };
  const Index n = 100003, piece = 1000;
  // Elements [b, b + piece) of t (fewer at the end) as a tensor of their own.
  const auto slice = [&](const Tensor& t, Index b) {
    const float* p = t.data<float>() + b;
    const Index len = std::min(piece, n - b);
    return Tensor::from_vector(std::vector<float>(p, p + len), {len});
  };
  for (const auto& [name, make] : cases) {
    SCOPED_TRACE(name);
    const Tensor start = tower::testing::random_tensor({n}, 11);
    const VariablePtr large = make_variable("large", Tensor(Shape{n}));
    large->value.copy_from(start);
    std::vector<VariablePtr> small;
    for (Index b = 0; b < n; b += piece) small.push_back(make_variable("small" + std::to_string(b), slice(start, b)));
    const OptimizerPtr large_opt = make(), small_opt = make();
    for (int step = 0; step < 3; ++step) {
      const Tensor g = tower::testing::random_tensor({n}, 20 + static_cast<std::uint64_t>(step));
      std::vector<Tensor> pieces;
      for (Index b = 0; b < n; b += piece) pieces.push_back(slice(g, b));
      large_opt->apply_gradients({large}, {g});
      small_opt->apply_gradients(small, pieces);
    }
    int bad = 0;
    for (Index i = 0; i < n; ++i)
      if (large->value.data<float>()[i] != small[static_cast<std::size_t>(i / piece)]->value.data<float>()[i % piece] &&
          ++bad <= 3)
        ADD_FAILURE() << "element " << i;
    EXPECT_EQ(bad, 0);
  }
}

TEST(OptimizerFromConfig, BareNames) {
  const std::vector<std::pair<std::string, std::string>> names = {
      {"sgd", "SGD"},         {"adam", "Adam"},       {"adamw", "AdamW"}, {"rmsprop", "RMSprop"},
      {"adagrad", "Adagrad"}, {"adadelta", "Adadelta"}, {"adamax", "Adamax"}, {"nadam", "Nadam"},
      {"Adam", "Adam"},       {"RMSprop", "RMSprop"}};
  for (const auto& [name, type] : names) {
    const OptimizerPtr opt = optimizer_from_config(Config(name));
    EXPECT_EQ(opt->type(), type) << name;
  }
  EXPECT_DOUBLE_EQ(optimizer_from_config(Config("sgd"))->learning_rate(), 0.01);
  EXPECT_DOUBLE_EQ(optimizer_from_config(Config("adam"))->learning_rate(), 0.001);
}

TEST(OptimizerFromConfig, UnknownNameListsTheKnownOnes) {
  const std::string msg = message_of([] { optimizer_from_config(Config("adamm")); });
  EXPECT_TRUE(contains(msg, "'adamm'")) << msg;
  EXPECT_TRUE(contains(msg, "did you mean 'adam'")) << msg;
  for (const char* known : {"sgd", "adam", "adamw", "rmsprop", "adagrad", "adadelta", "adamax", "nadam", "lion", "ftrl",
                            "lamb", "adafactor"})
    EXPECT_TRUE(contains(msg, known)) << msg;
  EXPECT_THROW(optimizer_from_config(Config::parse_json(R"({"class_name": "Muon"})")), ConfigError);
  EXPECT_THROW(optimizer_from_config(Config(3)), ConfigError);
}

TEST(OptimizerFromConfig, UnknownArgumentSuggestsTheClosest) {
  const std::string msg = message_of(
      [] { optimizer_from_config(Config::parse_json(R"({"class_name": "Adam", "config": {"beta1": 0.8}})")); });
  EXPECT_TRUE(contains(msg, "'beta1'")) << msg;
  EXPECT_TRUE(contains(msg, "did you mean 'beta_1'")) << msg;
  const std::string type_msg = message_of([] {
    optimizer_from_config(Config::parse_json(R"({"class_name": "SGD", "config": {"momentum": "lots"}})"));
  });
  EXPECT_TRUE(contains(type_msg, "momentum")) << type_msg;
  EXPECT_THROW(optimizer_from_config(Config::parse_json(R"({"class_name": "SGD", "config": {"momentum": 2.0}})")),
               std::invalid_argument);
}

TEST(OptimizerFromConfig, RejectsKerasOptionsTowerLacks) {
  EXPECT_THROW(optimizer_from_config(Config::parse_json(R"({"class_name": "Adam", "config": {"loss_scale_factor": 8}})")),
               ConfigError);
  const OptimizerPtr ok = optimizer_from_config(Config::parse_json(
      R"({"class_name": "Adam", "config": {"use_ema": false, "ema_momentum": 0.99, "loss_scale_factor": null}})"));
  EXPECT_EQ(ok->type(), "Adam");
}

TEST(OptimizerFromConfig, ReadsAndWritesTheBaseOptions) {
  const OptimizerPtr opt = optimizer_from_config(Config::parse_json(
      R"({"class_name": "Lion", "config": {"use_ema": true, "ema_momentum": 0.5, "ema_overwrite_frequency": 3,
          "gradient_accumulation_steps": 4}})"));
  EXPECT_TRUE(opt->base_options().use_ema);
  EXPECT_EQ(opt->base_options().ema_momentum, 0.5);
  EXPECT_EQ(opt->base_options().ema_overwrite_frequency, 3);
  EXPECT_EQ(opt->base_options().gradient_accumulation_steps, 4);
  const Config c = opt->get_config();
  EXPECT_EQ(c.at("use_ema"), Config(true));
  EXPECT_EQ(c.at("ema_momentum"), Config(0.5));
  EXPECT_EQ(c.at("ema_overwrite_frequency"), Config(3));
  EXPECT_EQ(c.at("gradient_accumulation_steps"), Config(4));
  EXPECT_TRUE(c.at("loss_scale_factor").is_null());
}

TEST(OptimizerBaseOptions, RejectBadValuesNamingTheOptimizerAndTheValue) {
  const auto message = [](const char* json) {
    return message_of([&] { optimizer_from_config(Config::parse_json(json)); });
  };
  EXPECT_EQ(message(R"({"class_name": "Adam", "config": {"gradient_accumulation_steps": 1}})"),
            "Adam: argument 'gradient_accumulation_steps' must be an integer >= 2, got 1.0");
  EXPECT_EQ(message(R"({"class_name": "SGD", "config": {"gradient_accumulation_steps": -3}})"),
            "SGD: argument 'gradient_accumulation_steps' must be an integer >= 2, got -3.0");
  EXPECT_EQ(message(R"({"class_name": "Lamb", "config": {"use_ema": true, "ema_momentum": 1.5}})"),
            "Lamb: argument 'ema_momentum' must be in [0, 1], got 1.5");
  EXPECT_EQ(message(R"({"class_name": "Nadam", "config": {"use_ema": true, "ema_momentum": -0.25}})"),
            "Nadam: argument 'ema_momentum' must be in [0, 1], got -0.25");
  EXPECT_EQ(message(R"({"class_name": "Ftrl", "config": {"use_ema": true, "ema_overwrite_frequency": -2}})"),
            "Ftrl: argument 'ema_overwrite_frequency' must be an integer >= 1, got -2.0");
  // As Keras: 0 switches accumulation and overwriting off, and ema_momentum is not read without use_ema.
  EXPECT_NO_THROW(optimizer_from_config(Config::parse_json(
      R"({"class_name": "Adam", "config": {"gradient_accumulation_steps": 0, "ema_momentum": 7}})")));
}

TEST(OptimizerBaseOptions, ExcludeFromWeightDecayOnlyBeforeTheFirstStep) {
  const OptimizerPtr opt = AdamW({.learning_rate = 0.1, .weight_decay = 0.5});
  opt->exclude_from_weight_decay({"bias"});
  EXPECT_EQ(opt->excluded_from_weight_decay(), std::vector<std::string>{"bias"});
  testing::Problem p = testing::make_problem(1);
  const std::vector<float> bias_before = p.variables[1]->value.to_vector();
  opt->apply_gradients(p.variables, {p.gradients[0][0], Tensor()});
  EXPECT_EQ(p.variables[1]->value.to_vector(), bias_before);
  const std::string msg = message_of([&] { opt->exclude_from_weight_decay({"kernel"}); });
  EXPECT_TRUE(contains(msg, "AdamW.exclude_from_weight_decay")) << msg;
  EXPECT_THROW(opt->exclude_from_weight_decay({"kernel"}), std::logic_error);
}

TEST(OptimizerBaseOptions, GradientAccumulationUpdatesEveryNthStepWithTheMean) {
  testing::Problem accumulated = testing::make_problem(3), once = testing::make_problem(1);
  const OptimizerPtr a = SGD({.learning_rate = 0.1, .gradient_accumulation_steps = 3});
  const OptimizerPtr b = SGD({.learning_rate = 0.1});
  std::vector<Tensor> mean;
  for (std::size_t k = 0; k < 2; ++k) {
    std::vector<float> sum(static_cast<std::size_t>(accumulated.gradients[0][k].numel()), 0.f);
    for (int s = 0; s < 3; ++s) {
      const std::vector<float> g = accumulated.gradients[static_cast<std::size_t>(s)][k].to_vector();
      for (std::size_t i = 0; i < sum.size(); ++i) sum[i] = g[i] + sum[i];
    }
    for (float& x : sum) x /= 3.f;
    mean.push_back(Tensor::from_vector(sum, accumulated.gradients[0][k].shape()));
  }
  const std::vector<float> start = accumulated.variables[0]->value.to_vector();
  for (int s = 0; s < 2; ++s) {
    a->apply_gradients(accumulated.variables, accumulated.gradients[static_cast<std::size_t>(s)]);
    EXPECT_EQ(accumulated.variables[0]->value.to_vector(), start) << "step " << s;
  }
  a->apply_gradients(accumulated.variables, accumulated.gradients[2]);
  b->apply_gradients(once.variables, mean);
  for (std::size_t k = 0; k < 2; ++k)
    tower::testing::expect_near(accumulated.variables[k]->value, once.variables[k]->value, 1e-6f, 1e-6f, "variable");
  EXPECT_EQ(a->iterations(), 3);
}

TEST(OptimizerFromConfig, SerializeRoundTripsEveryOptimizer) {
  const auto schedule = schedules::PolynomialDecay({.initial_learning_rate = 0.1, .decay_steps = 10});
  const std::vector<OptimizerPtr> all = {
      SGD({.learning_rate = 0.2, .momentum = 0.5, .nesterov = true, .clipvalue = 1.0}),
      Adam({.learning_rate = schedule, .beta_1 = 0.8, .amsgrad = true, .weight_decay = 0.01}),
      AdamW({.learning_rate = 0.01, .weight_decay = 0.1, .global_clipnorm = 2.0}),
      RMSprop({.rho = 0.8, .momentum = 0.1, .centered = true, .clipnorm = 1.0}),
      Adagrad({.initial_accumulator_value = 0.3, .epsilon = 1e-5}),
      Adadelta({.learning_rate = 1.0, .rho = 0.9}),
      Adamax({.beta_2 = 0.99}),
      Nadam({.learning_rate = 0.002, .epsilon = 1e-6}),
      Lion({.learning_rate = 0.01, .beta_2 = 0.9, .use_ema = true, .ema_overwrite_frequency = 4}),
      Ftrl({.learning_rate_power = -0.7, .l1_regularization_strength = 0.1, .beta = 0.2}),
      Lamb({.epsilon = 1e-5, .gradient_accumulation_steps = 2}),
      Adafactor({.beta_2_decay = -0.6, .relative_step = false, .use_ema = true, .ema_momentum = 0.5}),
  };
  for (const OptimizerPtr& opt : all) {
    const Config c = opt->serialize();
    SCOPED_TRACE(c.to_json());
    const OptimizerPtr back = optimizer_from_config(Config::parse_json(c.to_json()));
    EXPECT_EQ(back->type(), opt->type());
    EXPECT_EQ(back->serialize(), c);
  }
}

}  // namespace
}  // namespace tower::optimizers
