#include "layers/dropout.h"

#include <set>
#include <thread>

#include "api/backend/backend.h"
#include "api/engine/replica_context.h"
#include "distribute/mirrored_strategy.h"
#include "api/losses/mean_squared_error.h"
#include "api/optimizers/sgd.h"
#include "layers/dense.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

Plan make_plan(const Model& model, Index batch, bool training, bool backward = false) {
  PlanOptions o;
  o.batch_size = batch;
  o.training = training;
  o.backward = backward;
  o.input_gradients = backward;
  o.seed = 7;
  return Plan(model.impl(), o);
}

TEST(Dropout, InferenceIsTheIdentity) {
  layers::Dropout dropout({.rate = 0.5f});
  const Tensor x = testing::random_tensor({4, 5}, 1);
  testing::expect_near(testing::run_layer(dropout, {x}, false)[0], x, 0.f, 0.f);
}

TEST(Dropout, TrainingZeroesAboutRateAndScalesTheRest) {
  layers::Dropout dropout({.rate = 0.3f});
  const Tensor x = Tensor::full({100, 100}, 2.f);
  const std::vector<float> y = testing::run_layer(dropout, {x}, true)[0].to_vector();
  int zeros = 0;
  for (float v : y) {
    if (v == 0.f) ++zeros;
    else EXPECT_FLOAT_EQ(v, 2.f / 0.7f);
  }
  EXPECT_NEAR(zeros / 10000.0, 0.3, 0.02);
}

TEST(Dropout, RateZeroIsTheIdentityInTraining) {
  layers::Dropout dropout;
  const Tensor x = testing::random_tensor({3, 4}, 2);
  testing::expect_near(testing::run_layer(dropout, {x}, true)[0], x, 0.f, 0.f);
}

// The mask changes with every forward, so finite differences cannot be used: with x = 1 the output is the
// mask itself, and dx must be exactly mask * dy.
TEST(Dropout, TrainingGradientIsTheMaskTimesUpstream) {
  auto in = Input({6, 5});
  Model model(in, layers::Dropout({.rate = 0.4f})(in));
  Plan plan = make_plan(model, 3, true, true);
  const Tensor ones = Tensor::full({3, 6, 5}, 1.f);
  plan.set_input(0, ones);
  plan.forward();
  const std::vector<float> mask = plan.output(0).to_vector();
  const Tensor dy = testing::random_tensor({3, 6, 5}, 3);
  plan.output_grad(0).copy_from(dy);
  plan.backward();
  std::vector<float> expected(mask.size());
  const std::vector<float> r = dy.to_vector();
  int dropped = 0;
  for (std::size_t i = 0; i < mask.size(); ++i) {
    expected[i] = mask[i] * r[i];
    dropped += mask[i] == 0.f;
  }
  EXPECT_GT(dropped, 0);
  EXPECT_LT(dropped, static_cast<int>(mask.size()));
  testing::expect_near(plan.input_grad(0), expected, 0.f, 0.f);
}

TEST(Dropout, InferenceGradients) {
  layers::Dropout dropout({.rate = 0.5f});
  testing::GradCheckOptions o;
  o.training = false;
  testing::check_gradients(dropout, {testing::random_tensor({2, 7}, 4)}, o);
}

TEST(Dropout, EachTrainingForwardDrawsANewMask) {
  auto in = Input({50});
  Model model(in, layers::Dropout({.rate = 0.5f})(in));
  Plan plan = make_plan(model, 4, true);
  const Tensor ones = Tensor::full({4, 50}, 1.f);
  plan.set_input(0, ones);
  plan.forward();
  const std::vector<float> first = plan.output(0).to_vector();
  plan.forward();
  EXPECT_NE(plan.output(0).to_vector(), first);
}

TEST(Dropout, ASeededLayerRepeatsItsSequenceOfMasks) {
  const auto masks = [](std::optional<std::int64_t> seed, std::uint64_t plan_seed) {
    auto in = Input({50});
    Model model(in, layers::Dropout({.rate = 0.5f, .seed = seed})(in));
    PlanOptions o;
    o.batch_size = 4;
    o.training = true;
    o.seed = plan_seed;
    Plan plan(model.impl(), o);
    const Tensor ones = Tensor::full({4, 50}, 1.f);
    plan.set_input(0, ones);
    std::vector<std::vector<float>> out;
    for (int i = 0; i < 2; ++i) {
      plan.forward();
      out.push_back(plan.output(0).to_vector());
    }
    return out;
  };
  // The layer's own seed decides the masks, whatever the plan's generator.
  const auto a = masks(1234, 1), b = masks(1234, 2);
  EXPECT_EQ(a, b);
  EXPECT_NE(a[0], a[1]);
  EXPECT_NE(masks(99, 1)[0], a[0]);
  // Unseeded layers follow the plan's seed.
  EXPECT_NE(masks(std::nullopt, 1)[0], masks(std::nullopt, 2)[0]);
}

TEST(Dropout, SteadyStateTrainingStepAllocatesNothing) {
  auto in = Input({8});
  Model model(in, layers::Dropout({.rate = 0.5f})(in));
  Plan plan = make_plan(model, 4, true, true);
  const Tensor x = testing::random_tensor({4, 8}, 5);
  plan.set_input(0, x);
  const auto step = [&] {
    plan.forward();
    plan.output_grad(0).fill(1.f);
    plan.backward();
  };
  step();
  const AllocatorStats before = allocator_for(Device::cpu()).stats();
  for (int i = 0; i < 3; ++i) step();
  EXPECT_EQ(allocator_for(Device::cpu()).stats().allocations, before.allocations);
}

TEST(Dropout, HasTrainingBehaviorAndReadsNoInputsInBackward) {
  layers::Dropout dropout({.rate = 0.1f});
  EXPECT_TRUE(dropout->has_training_behavior());
  EXPECT_FALSE(dropout->backward_needs_inputs());
  EXPECT_FALSE(dropout->backward_needs_outputs());
}

TEST(Dropout, ConfigRoundTrip) {
  layers::Dropout dropout({.rate = 0.25f, .seed = 17, .name = "drop"});
  testing::check_config_roundtrip(dropout);
  const Config c = dropout->get_config();
  EXPECT_DOUBLE_EQ(c.at("rate").as_double(), 0.25);
  EXPECT_EQ(c.at("seed").as_int(), 17);
  layers::Dropout unseeded({.rate = 0.5f});
  EXPECT_TRUE(unseeded->get_config().at("seed").is_null());
  testing::check_config_roundtrip(unseeded);
}

TEST(Dropout, RejectsRateOutsideZeroToOne) {
  EXPECT_THROW(layers::Dropout({.rate = 1.f}), std::invalid_argument);
  EXPECT_THROW(layers::Dropout({.rate = -0.1f}), std::invalid_argument);
  EXPECT_NO_THROW(layers::Dropout({.rate = 0.f}));
}

TEST(Dropout, TwoInputsNameTheLayer) {
  layers::Dropout dropout({.rate = 0.5f, .name = "d"});
  try {
    dropout(std::vector<SymbolicTensor>{Input({3}), Input({3})});
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("'d' (Dropout)"), std::string::npos) << e.what();
  }
}

// The mask the CPU backend draws for `seed`.
std::vector<float> mask_of(std::uint64_t seed, Index n, float rate) {
  Tensor mask({n});
  backend::get(Device::cpu()).dropout_mask(mask.data<float>(), n, rate, &seed);
  return mask.to_vector();
}

// Two Dropout layers, each fed ones, so the outputs are the masks.
struct TwoDropouts {
  Model model;
  Plan plan;
  Tensor ones = Tensor::full({4, 50}, 1.f);
  TwoDropouts() : model(build()), plan(make_plan(model, 4, true)) { plan.set_input(0, ones); }
  static Model build() {
    auto in = Input({50});
    auto a = layers::Dropout({.rate = 0.5f})(in);
    auto b = layers::Dropout({.rate = 0.3f})(in);
    return Model(std::vector<SymbolicTensor>{in}, std::vector<SymbolicTensor>{a, b});
  }
};

// The seeds are the plan's step values, derived from the plan's seed and step (and the layer's position): the
// op reads them from the uploaded buffer, each step and each layer draws its own.
TEST(Dropout, SeedsAreStepValuesDerivedFromTheStep) {
  TwoDropouts t;
  std::vector<std::uint64_t> seen;
  for (int step = 0; step < 2; ++step) {
    t.plan.forward();
    EXPECT_EQ(t.plan.step_values().step(), static_cast<std::uint64_t>(step));
    ASSERT_EQ(t.plan.step_values().size(), 2);
    const std::uint64_t first = t.plan.step_values().host_value(0), second = t.plan.step_values().host_value(1);
    EXPECT_EQ(t.plan.output(0).to_vector(), mask_of(first, 200, 0.5f)) << "step " << step;
    EXPECT_EQ(t.plan.output(1).to_vector(), mask_of(second, 200, 0.3f)) << "step " << step;
    seen.insert(seen.end(), {first, second});
  }
  EXPECT_EQ(std::set<std::uint64_t>(seen.begin(), seen.end()).size(), 4u);
}

TEST(Dropout, TheMaskComesFromTheSeedInDeviceMemory) {
  TwoDropouts t;
  t.plan.forward();
  const std::vector<float> drawn = t.plan.output(0).to_vector();
  // Rewriting the uploaded seed (and not the host mirror) changes what the next run of the steps draws.
  *const_cast<std::uint64_t*>(t.plan.step_values().device_value(0)) = 12345;
  t.plan.run_forward();
  EXPECT_EQ(t.plan.output(0).to_vector(), mask_of(12345, 200, 0.5f));
  EXPECT_NE(t.plan.output(0).to_vector(), drawn);
}

TEST(Dropout, RefreshingTheStepValuesAdvancesTheDrawsAsAForwardWould) {
  TwoDropouts forwards, refreshed;
  for (int i = 0; i < 3; ++i) forwards.plan.forward();
  refreshed.plan.forward();
  refreshed.plan.refresh_step_values();
  refreshed.plan.forward();
  EXPECT_EQ(refreshed.plan.output(0).to_vector(), forwards.plan.output(0).to_vector());
  EXPECT_EQ(refreshed.plan.output(1).to_vector(), forwards.plan.output(1).to_vector());
  EXPECT_EQ(refreshed.plan.step_values().steps(), 3u);
  // run_forward draws nothing: the same seeds give the same masks.
  refreshed.plan.run_forward();
  EXPECT_EQ(refreshed.plan.output(0).to_vector(), forwards.plan.output(0).to_vector());
  EXPECT_EQ(refreshed.plan.step_values().steps(), 3u);
}

TEST(Dropout, ASeededLayersMasksFollowThePlansSteps) {
  const auto run = [](bool refresh_between) {
    auto in = Input({50});
    Model model(in, layers::Dropout({.rate = 0.5f, .seed = 3})(in));
    Plan plan = make_plan(model, 2, true);
    const Tensor ones = Tensor::full({2, 50}, 1.f);
    plan.set_input(0, ones);
    plan.forward();
    if (refresh_between) plan.refresh_step_values();
    plan.forward();
    return plan.output(0).to_vector();
  };
  const std::vector<float> third = [] {
    auto in = Input({50});
    Model model(in, layers::Dropout({.rate = 0.5f, .seed = 3})(in));
    Plan plan = make_plan(model, 2, true);
    const Tensor ones = Tensor::full({2, 50}, 1.f);
    plan.set_input(0, ones);
    for (int i = 0; i < 3; ++i) plan.forward();
    return plan.output(0).to_vector();
  }();
  EXPECT_EQ(run(true), third);
  EXPECT_NE(run(false), third);
}

// A replica of a strategy as a layer sees it: only its index matters to Dropout.
class ReplicaAt final : public ReplicaContext {
 public:
  explicit ReplicaAt(int id) : id_(id) {}
  int num_replicas_in_sync() const override { return 2; }
  int replica_id_in_sync_group() const override { return id_; }
  void all_reduce_sum(double*, std::size_t) override {}
  void all_reduce_sum(double*, std::size_t, Device) override {}
  void all_reduce_sum(float*, std::size_t, Device) override {}
  void merge_call(const std::function<void()>& fn) override { fn(); }
  int local_replica_id() const override { return id_; }
  bool mirrored_variables() const override { return true; }
  void to_model_variables(std::vector<VariablePtr>&) const override {}
  void own_copies_diverged() override {}

 private:
  int id_;
};

// Mirrored copies of a seeded layer (one model per replica, as replicas holding their own variables have) draw
// one mask per replica, as tf.distribute's per-replica seeds do, and the same one in every run.
TEST(Dropout, EachReplicaDrawsItsOwnMaskFromTheSameSeed) {
  const auto masks = [](int replica) {
    auto in = Input({50});
    Model model(in, layers::Dropout({.rate = 0.5f, .seed = 21})(in));
    ReplicaAt context(replica);
    PlanOptions o;
    o.batch_size = 4;
    o.training = true;
    o.seed = 1;
    o.replica = &context;
    Plan plan(model.impl(), o);
    const Tensor ones = Tensor::full({4, 50}, 1.f);
    plan.set_input(0, ones);
    std::vector<std::vector<float>> out;
    for (int i = 0; i < 2; ++i) {
      plan.forward();
      out.push_back(plan.output(0).to_vector());
    }
    return out;
  };
  const auto r0 = masks(0), r1 = masks(1);
  EXPECT_NE(r0[0], r1[0]);
  EXPECT_NE(r0[1], r1[1]);
  EXPECT_EQ(masks(1), r1);
}

// A seeded Dropout trained by replicas that share the model's layers (CPU replicas, one thread each): every run
// ends with the same weights, bit for bit, whatever order the replica threads reach the layer in.
TEST(Dropout, SeededMasksRepeatBitExactlyUnderASharedReplicaStrategy) {
  Generator g(3);
  std::vector<float> xs(48 * 6), ys(48 * 2);
  for (float& v : xs) v = g.uniform(-1.f, 1.f);
  for (float& v : ys) v = g.uniform(-1.f, 1.f);
  const Tensor x = Tensor::from_vector(xs, {48, 6}), y = Tensor::from_vector(ys, {48, 2});
  const auto train = [&] {
    distribute::MirroredStrategy strategy({"cpu:0", "cpu:1", "cpu:2"});
    auto scope = strategy.scope();
    set_random_seed(8);
    Sequential m({InputLayer({.shape = {6}}), layers::Dense({.units = 32, .activation = "relu"}),
                  layers::Dropout({.rate = 0.5f, .seed = 5}), layers::Dense({.units = 2})});
    m.compile(optimizers::SGD({.learning_rate = 0.1}), losses::MeanSquaredError());
    m.fit(x, y, {.epochs = 4, .batch_size = 12, .verbose = 0, .shuffle = false});
    std::vector<std::vector<float>> w;
    for (const Tensor& t : m.get_weights()) w.push_back(t.to_vector());
    return w;
  };
  const auto first = train();
  for (int run = 0; run < 3; ++run) EXPECT_EQ(train(), first) << "run " << run + 2;
}

}  // namespace
}  // namespace tower
