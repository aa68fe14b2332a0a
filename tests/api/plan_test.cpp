#include "api/engine/plan.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "api/core/alignment.h"
#include "api/core/allocator.h"
#include "layers/activation.h"
#include "layers/add.h"
#include "layers/flatten.h"
#include "layers/reshape.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

using layers::Dense;
using testing::random_tensor;

// x -> h = Dense(x) -> two heads (fan-out: h's gradient sums both), and a Dense shared by both inputs
// (its kernel gradient sums both calls).
Model two_input_model() {
  auto a = Input({4}, "a");
  auto b = Input({4}, "b");
  Dense shared({.units = 3, .activation = "tanh", .name = "shared"});
  auto ha = shared(a);
  auto hb = shared(b);
  Dense mix({.units = 5, .activation = "gelu", .name = "mix"});
  auto h = mix(ha);
  auto out1 = Dense({.units = 2, .name = "head1"})(h);
  auto out2 = Dense({.units = 3, .activation = "sigmoid", .name = "head2"})(h);
  auto out3 = Dense({.units = 2, .name = "head3"})(hb);
  return Model({a, b}, {out1, out2, out3});
}

TEST(Plan, GradientsThroughFanOutAndSharedLayers) {
  Model m = two_input_model();
  testing::check_gradients(m, {random_tensor({3, 4}, 1), random_tensor({3, 4}, 2)});
}

TEST(Plan, NestedModelIsInlinedAndDifferentiated) {
  auto x = Input({6});
  auto inner_out = Dense({.units = 4, .activation = "swish"})(Dense({.units = 5, .activation = "tanh"})(x));
  Model inner(x, inner_out, "inner");
  auto y = Input({6});
  auto z = Dense({.units = 2})(inner(y));
  Model outer(y, z, "outer");
  EXPECT_EQ(outer.count_params(), (6 * 5 + 5) + (5 * 4 + 4) + (4 * 2 + 2));
  testing::check_gradients(outer, {random_tensor({2, 6}, 3)});
}

TEST(Plan, SteadyStateTrainingStepAllocatesNothing) {
  Model m = two_input_model();
  PlanOptions o;
  o.batch_size = 8;
  o.training = true;
  o.backward = true;
  Plan plan(m.impl(), o);
  Tensor a = random_tensor({8, 4}, 4), b = random_tensor({8, 4}, 5);
  plan.set_input(0, a);
  plan.set_input(1, b);
  const auto step = [&] {
    plan.forward();
    for (int i = 0; i < plan.num_outputs(); ++i) plan.output_grad(i).fill(1.f);
    plan.backward();
  };
  step();  // the first step may create per-node state
  const AllocatorStats before = allocator_for(Device::cpu()).stats();
  for (int i = 0; i < 5; ++i) step();
  const AllocatorStats after = allocator_for(Device::cpu()).stats();
  EXPECT_EQ(after.allocations, before.allocations);
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
}

TEST(Plan, BuffersWithDisjointLifetimesShareMemory) {
  auto x = Input({64});
  SymbolicTensor h = x;
  for (int i = 0; i < 10; ++i) h = Dense({.units = 64, .activation = "relu"})(h);
  Model m(x, h);
  PlanOptions o;
  o.batch_size = 32;
  Plan inference(m.impl(), o);
  // Ten 32x64 activations in a chain: at most two are alive at once, plus the kept output.
  EXPECT_LE(inference.arena_bytes(), 3u * 32 * 64 * 4);
  EXPECT_GE(inference.unshared_bytes(), 10u * 32 * 64 * 4);
  o.backward = true;
  o.training = true;
  Plan training(m.impl(), o);
  EXPECT_LT(training.arena_bytes(), training.unshared_bytes());
}

TEST(Plan, FlatGradientsAreOneContiguousBufferInWeightOrder) {
  Model m = two_input_model();
  PlanOptions o;
  o.batch_size = 2;
  o.backward = true;
  Plan plan(m.impl(), o);
  EXPECT_EQ(plan.trainable_weights().size(), m.trainable_weights().size());
  ASSERT_EQ(plan.weight_grads().size(), plan.trainable_weights().size());
  // In weight order, each after the one before (the padding between them keeps each on 256 bytes), all inside.
  const auto* flat = static_cast<const char*>(plan.flat_grads().raw_data());
  const char* end = flat;
  for (const Tensor& g : plan.weight_grads()) {
    EXPECT_TRUE(g.same_storage(plan.flat_grads()));
    const auto* p = static_cast<const char*>(g.raw_data());
    EXPECT_GE(p, end);
    end = p + g.nbytes();
  }
  EXPECT_LE(end, flat + plan.flat_grads().nbytes());
}

// cuDNN's bias gradient wrote 16 bytes at an 8-byte-aligned address inside the flat gradient buffer on an H200
// (cudaErrorMisalignedAddress): every buffer a library may touch starts on 256 bytes.
TEST(Plan, EveryBufferALibraryMayTouchStartsOn256Bytes) {
  Model m = two_input_model();
  PlanOptions o;
  o.batch_size = 3;
  o.backward = true;
  o.training = true;
  o.input_gradients = true;
  Plan plan(m.impl(), o);
  const auto aligned = [](const Tensor& t) { return reinterpret_cast<std::uintptr_t>(t.raw_data()) % 256 == 0; };
  for (std::size_t k = 0; k < plan.weight_grads().size(); ++k) {
    EXPECT_TRUE(aligned(plan.weight_grads()[k])) << "the gradient of " << plan.trainable_weights()[k]->path;
    EXPECT_TRUE(aligned(plan.trainable_weights()[k]->value)) << plan.trainable_weights()[k]->path;
  }
  EXPECT_TRUE(aligned(plan.output(0)));
  EXPECT_TRUE(aligned(plan.output_grad(0)));
  EXPECT_TRUE(aligned(plan.input_grad(0)));
  EXPECT_TRUE(aligned(plan.input_grad(1)));
}

TEST(Plan, RequireAlignedNamesTheBufferAndPackBuffersAlignsEach) {
  const Tensor t({8});
  EXPECT_NO_THROW(require_aligned(t, "t"));
  try {
    require_aligned(t.slice(1, 3), "the bias's gradient");
    ADD_FAILURE() << "no exception";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("the bias's gradient starts at 0x"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not on a 256-byte boundary (4 bytes past one)"), std::string::npos)
        << e.what();
  }
  const PackedBuffers p = pack_buffers({Shape{3, 2}, Shape{3}, Shape{65}, Shape{1}}, Device::cpu(), true);
  EXPECT_EQ(p.rooms, (std::vector<Index>{64, 64, 128, 1}));
  EXPECT_EQ(p.flat.numel(), 257);
  ASSERT_EQ(p.views.size(), 4u);
  EXPECT_EQ(p.views[2].shape(), (Shape{65}));
  for (const Tensor& v : p.views) EXPECT_EQ(reinterpret_cast<std::uintptr_t>(v.raw_data()) % 256, 0u);
  EXPECT_EQ(p.flat.to_vector(), std::vector<float>(257, 0.f));
}

// A strategy reduces a gradient as soon as the plan reports it ready, so at that moment it must hold its final
// value: the shared layer's kernel, written by two steps, only after the second.
TEST(Plan, ReportsEachGradientOnceWhenItIsFinal) {
  Model m = two_input_model();
  PlanOptions o;
  o.batch_size = 3;
  o.training = true;
  o.backward = true;
  Plan plan(m.impl(), o);
  plan.set_input(0, random_tensor({3, 4}, 6));
  plan.set_input(1, random_tensor({3, 4}, 7));
  std::vector<int> order;
  std::vector<Tensor> at_report(plan.weight_grads().size());
  plan.set_gradient_ready_callback([&](int k) {
    order.push_back(k);
    at_report[static_cast<std::size_t>(k)] = plan.weight_grads()[static_cast<std::size_t>(k)].clone();
  });
  for (int pass = 0; pass < 2; ++pass) {
    order.clear();
    plan.forward();
    for (int i = 0; i < plan.num_outputs(); ++i) plan.output_grad(i).fill(1.f);
    plan.backward();
    std::vector<int> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_EQ(sorted.size(), plan.weight_grads().size());
    for (std::size_t k = 0; k < sorted.size(); ++k) EXPECT_EQ(sorted[k], static_cast<int>(k));
    for (std::size_t k = 0; k < at_report.size(); ++k)
      EXPECT_EQ(std::memcmp(at_report[k].data<float>(), plan.weight_grads()[k].data<float>(), at_report[k].nbytes()), 0)
          << plan.trainable_weights()[k]->name << " changed after it was reported ready";
  }
  // The shared Dense's kernel (weight 0) gets its second contribution from the step that feeds head3 last in
  // backward order, so it cannot be the first weight reported; the last Dense's weights come first.
  EXPECT_NE(order.front(), 0);
  plan.set_gradient_ready_callback({});
  order.clear();
  plan.forward();
  plan.backward();
  EXPECT_TRUE(order.empty());
}

TEST(Plan, FrozenLayerGetsNoGradientButPassesOne) {
  auto x = Input({3});
  Dense first({.units = 4, .activation = "tanh"});
  Dense frozen({.units = 4, .activation = "tanh"});
  auto y = Dense({.units = 2})(frozen(first(x)));
  Model m(x, y);
  frozen->set_trainable(false);
  EXPECT_EQ(m.trainable_weights().size(), 4u);
  EXPECT_EQ(m.non_trainable_weights().size(), 2u);
  testing::check_gradients(m, {random_tensor({2, 3}, 6)});
}

// Flatten (channels-last) and Reshape only rename their input's shape: inside a model their outputs are views of
// their inputs' memory (no buffer of their own, bound again with each set_input), with the values copies would
// hold. A model's own outputs keep memory of their own, never an input's or another output's.
TEST(Plan, FlattenAndReshapeOutputsAreViewsOfTheirInputs) {
  auto x = Input({4, 3});
  Dense first({.units = 5}), second({.units = 2});
  // x -> Flatten (an output) -> first -> Reshape (5, 1) -> Flatten -> second, and the same without the inner two.
  auto flat = layers::Flatten()(x);
  auto out = second(layers::Flatten()(layers::Reshape({.target_shape = {5, 1}})(first(flat))));
  Model viewed_model(SymbolicTensors{x}, SymbolicTensors{flat, out});
  auto flat_plain = layers::Flatten()(x);
  Model plain_model(SymbolicTensors{x}, SymbolicTensors{flat_plain, second(first(flat_plain))});
  PlanOptions o;
  o.batch_size = 2;
  Plan viewed(viewed_model.impl(), o), plain(plain_model.impl(), o);
  // The inner Reshape and Flatten take no memory: as much as the model without them.
  EXPECT_EQ(viewed.unshared_bytes(), plain.unshared_bytes());
  for (std::uint64_t seed : {1, 2}) {
    const Tensor input = random_tensor({2, 4, 3}, seed);
    for (Plan* p : {&viewed, &plain}) {
      p->set_input(0, input);
      p->forward();
    }
    EXPECT_NE(viewed.output(0).raw_data(), input.raw_data());
    EXPECT_EQ(viewed.output(0).shape(), Shape({2, 12}));
    EXPECT_EQ(viewed.output(0).to_vector(), input.to_vector());
    EXPECT_EQ(viewed.output(1).to_vector(), plain.output(1).to_vector()) << "seed " << seed;
  }
  testing::check_gradients(viewed_model, {random_tensor({2, 4, 3}, 3)});
}

// A view reads its source's memory until the view's own last use: a source whose last direct use is early must
// not hand its memory to later values while the view is still to be read.
TEST(Plan, ViewKeepsItsSourceMemoryUntilItsLastUse) {
  auto x = Input({64});
  Dense first({.units = 64, .activation = "tanh"});
  std::vector<Dense> chain;
  for (int i = 0; i < 4; ++i) chain.push_back(Dense({.units = 64, .activation = "tanh"}));
  const auto build = [&](bool view) {
    auto a = first(x);
    auto late = view ? layers::Reshape({.target_shape = {64}})(a) : layers::Activation({.activation = "linear"})(a);
    SymbolicTensor h = x;
    for (Dense& d : chain) h = d(h);
    return Model(x, layers::Add()({late, h}));
  };
  Model with_view = build(true), with_copy = build(false);
  PlanOptions o;
  o.batch_size = 16;
  Plan viewed(with_view.impl(), o), copied(with_copy.impl(), o);
  const Tensor input = random_tensor({16, 64}, 9);
  viewed.set_input(0, input);
  copied.set_input(0, input);
  viewed.forward();
  copied.forward();
  EXPECT_EQ(viewed.output(0).to_vector(), copied.output(0).to_vector());
}

TEST(Plan, RejectsInputsOfTheWrongShape) {
  Model m = two_input_model();
  PlanOptions o;
  o.batch_size = 4;
  Plan plan(m.impl(), o);
  EXPECT_THROW(plan.set_input(0, random_tensor({4, 5}, 1)), ShapeError);
  EXPECT_THROW(plan.set_input(0, random_tensor({3, 4}, 1)), ShapeError);
  EXPECT_THROW(plan.forward(), std::logic_error);  // inputs not bound
}

}  // namespace
}  // namespace tower
