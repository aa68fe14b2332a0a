// The CPU backend's fused optimizer ops against naive scalar loops: apply_update for every rule and flag
// combination (with and without weight decay), two steps over a list of odd-sized tensors, one of them large
// enough for the threaded, vectorised path, compared bit for bit; clip_gradients for clipnorm, global_clipnorm
// (including a non-finite norm) and clipvalue. Then whole apply_gradients steps of every optimizer with every
// clipping option: after the first, a step allocates nothing. On a GPU (*_CUDA), the CUDA backend against the CPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "api/backend/backend.h"
#include "api/backend/math/optimizer_updates.h"
#include "api/core/allocator.h"
#include "api/core/device.h"
#include "api/core/random.h"
#include "api/core/tensor.h"
#include "api/optimizers/optimizers.h"
#include "backend/optimizer_reference.h"
#include "testing/layer_test.h"

namespace tower::backend {
namespace {

namespace reference = tower::testing::optimizer_reference;

// 40001 elements are split over the OpenMP threads and leave vector remainders.
const std::vector<Index> kSizes = {1, 7, 33, 40001};

std::vector<float> uniform(Index n, float low, float high, Generator& g) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = g.uniform(low, high);
  return v;
}

// Variables, gradients and slots of kSizes. The first slot is in [0.5, 1) and the others in [0, 0.5), so every
// square root the rules take (velocity - average^2 for centered RMSprop) is of a positive number.
struct Tensors {
  std::vector<std::vector<float>> variables, gradients;
  std::vector<std::array<std::vector<float>, 3>> slots;

  Tensors(int slot_count, std::uint64_t seed) {
    Generator g(seed);
    for (Index n : kSizes) {
      variables.push_back(uniform(n, -1.f, 1.f, g));
      gradients.push_back(uniform(n, -1.f, 1.f, g));
      slots.emplace_back();
      for (int j = 0; j < slot_count; ++j) slots.back()[j] = uniform(n, j == 0 ? 0.5f : 0.f, j == 0 ? 1.f : 0.5f, g);
    }
  }

  std::vector<UpdateTensors> update_list() {
    std::vector<UpdateTensors> list;
    for (std::size_t k = 0; k < variables.size(); ++k) {
      UpdateTensors t{variables[k].data(), gradients[k].data(), {}, static_cast<Index>(variables[k].size())};
      for (std::size_t j = 0; j < 3; ++j) t.slots[j] = slots[k][j].empty() ? nullptr : slots[k][j].data();
      list.push_back(t);
    }
    return list;
  }
};

void reference_step(const OptimizerUpdate& u, Tensors& t) {
  for (std::size_t k = 0; k < t.variables.size(); ++k)
    for (std::size_t i = 0; i < t.variables[k].size(); ++i) {
      std::array<float*, 3> s{};
      for (std::size_t j = 0; j < 3; ++j) s[j] = t.slots[k][j].empty() ? nullptr : &t.slots[k][j][i];
      reference::update(u, t.variables[k][i], t.gradients[k][i], s);
    }
}

// Every element bit for bit, reporting the first few differences.
void expect_same_bits(const std::vector<float>& actual, const std::vector<float>& expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  int bad = 0;
  for (std::size_t i = 0; i < actual.size(); ++i)
    if (std::bit_cast<std::uint32_t>(actual[i]) != std::bit_cast<std::uint32_t>(expected[i]) && ++bad <= 3)
      ADD_FAILURE() << what << "[" << i << "]: " << actual[i] << ", expected " << expected[i];
  EXPECT_EQ(bad, 0) << what;
}

struct UpdateCase {
  std::string name;
  OptimizerUpdate update;
  int slots;
};

std::vector<UpdateCase> update_cases() {
  const AdamStep adam{0.01f, 0.1f, 0.001f, 1e-7f, false};
  AdamStep amsgrad = adam;
  amsgrad.amsgrad = true;
  const RMSpropStep rmsprop{0.01f, 0.9f, 0.1f, 0.f, 1e-7f, false};
  RMSpropStep centered = rmsprop, with_momentum = rmsprop, both = rmsprop;
  centered.centered = both.centered = true;
  with_momentum.momentum = both.momentum = 0.5f;
  return {
      {"SGD", {SGDStep{0.1f, 0.f, false}}, 0},
      {"SGD momentum", {SGDStep{0.1f, 0.9f, false}}, 1},
      {"SGD nesterov, weight decay", {SGDStep{0.1f, 0.9f, true}, 0.01f}, 1},
      {"Adam", {adam}, 2},
      {"Adam amsgrad, weight decay", {amsgrad, 0.004f}, 3},
      {"Adamax", {AdamaxStep{0.02f, 0.1f, 0.999f, 0.19f, 1e-7f}}, 2},
      {"Nadam", {NadamStep{0.002f, 0.1f, 0.001f, 1e-7f, 0.8f, 0.6f, 1.5f}}, 2},
      {"RMSprop", {rmsprop}, 1},
      {"RMSprop momentum", {with_momentum}, 2},
      {"RMSprop centered", {centered}, 2},
      {"RMSprop centered momentum, weight decay", {both, 0.1f}, 3},
      {"Adagrad", {AdagradStep{0.01f, 1e-7f}}, 1},
      {"Adadelta", {AdadeltaStep{1.f, 0.95f, 0.05f, 1e-7f}}, 2},
      {"Lion", {LionStep{0.01f, 0.9f, 0.1f, 0.99f, 0.01f}}, 1},
      {"Ftrl, weight decay", {FtrlStep{0.1f, 0.5f, 0.01f, 0.1f, 0.04f}, 0.01f}, 2},
      {"Ftrl power 0.7", {FtrlStep{0.2f, 0.7f, 0.f, 0.f, 0.f}}, 2},
  };
}

// The rules that reduce over each tensor, on tensors of these shapes (Adafactor factors those of rank >= 2); the
// last is large enough for the threaded sums.
const std::vector<Shape> kReducingShapes = {Shape{1}, Shape{5}, Shape{3, 7}, Shape{2, 3, 5}, Shape{201, 199}};

std::vector<UpdateCase> reducing_cases() {
  return {
      {"Lamb", {LambStep{0.01f, 0.1f, 0.001f, 0.1f, 0.001f, 1e-6f}}, 2},
      {"Lamb, weight decay", {LambStep{0.02f, 0.2f, 0.05f, 0.2f, 0.05f, 1e-3f}, 0.01f}, 2},
      {"Adafactor", {AdafactorStep{0.2f, 0.8f, 1e-30f, 1e-3f, 0.01f, 1.f}}, 3},
      {"Adafactor, clipping, weight decay", {AdafactorStep{0.5f, 0.5f, 1e-20f, 1e-2f, 0.1f, 0.05f}, 0.02f}, 3},
  };
}

// The rows and columns Adafactor factors a shape into (0, 0 below rank 2).
std::pair<Index, Index> matrix_of(const Shape& shape) {
  if (shape.rank() < 2) return {0, 0};
  return {shape.dims()[shape.dims().size() - 2], shape.dims().back()};
}

// |got - want| <= 1e-6 + 1e-5 |want| for every element.
void expect_close(const std::vector<float>& got, const std::vector<float>& want, const std::string& what);

TEST(OptimizerUpdates, EveryRuleMatchesTheScalarReferenceBitForBit) {
  Backend& cpu = get(Device::cpu());
  for (const UpdateCase& c : update_cases()) {
    SCOPED_TRACE(c.name);
    Tensors fused(c.slots, 5), naive(c.slots, 5);
    const std::vector<UpdateTensors> list = fused.update_list();
    for (int step = 0; step < 2; ++step) {
      cpu.apply_update(c.update, list);
      reference_step(c.update, naive);
    }
    for (std::size_t k = 0; k < kSizes.size(); ++k) {
      const std::string tensor = "tensor " + std::to_string(k);
      expect_same_bits(fused.variables[k], naive.variables[k], tensor + " variable");
      for (int j = 0; j < c.slots; ++j)
        expect_same_bits(fused.slots[k][j], naive.slots[k][j], tensor + " slot " + std::to_string(j));
      expect_same_bits(fused.gradients[k], naive.gradients[k], tensor + " gradient (unchanged)");
    }
  }
}

// OptimizerUpdate::scalars: the update as a captured graph runs it, its scalars read from memory. `how` runs it:
// through the CPU backend (which reads the scalars once) or element by element through math::with_update's
// functor (ScalarsFrom, which reads them per element as the CUDA kernels do).
enum class ScalarsPath { cpu_backend, functor };

void apply_reading_scalars(const OptimizerUpdate& update, const std::vector<UpdateTensors>& list, ScalarsPath how) {
  if (how == ScalarsPath::cpu_backend) {
    get(Device::cpu()).apply_update(update, list);
    return;
  }
  for (const UpdateTensors& t : list)
    math::with_update(update, t, [&](const auto& f) {
      for (Index i = 0; i < t.n; ++i) f(i);
    });
}

// Tensors of kReducingShapes for a reducing rule, with the scratch each needs.
struct ReducingTensors {
  std::vector<std::vector<float>> variables, gradients, scratch;
  std::vector<std::array<std::vector<float>, 3>> slots;

  ReducingTensors(const OptimizerStep& step, int slot_count, std::uint64_t seed) {
    Generator g(seed);
    for (const Shape& shape : kReducingShapes) {
      const Index n = shape.numel();
      const auto [rows, cols] = matrix_of(shape);
      variables.push_back(uniform(n, -1.f, 1.f, g));
      gradients.push_back(uniform(n, -1.f, 1.f, g));
      slots.emplace_back();
      for (int j = 0; j < slot_count; ++j) slots.back()[j] = uniform(n, j == 0 ? 0.5f : 0.f, j == 0 ? 1.f : 0.5f, g);
      scratch.emplace_back(static_cast<std::size_t>(std::max<Index>(update_scratch_floats(step, n, rows, cols), 1)));
    }
  }

  std::vector<UpdateTensors> update_list() {
    std::vector<UpdateTensors> list;
    for (std::size_t k = 0; k < variables.size(); ++k) {
      UpdateTensors t{variables[k].data(), gradients[k].data(), {}, static_cast<Index>(variables[k].size())};
      for (std::size_t j = 0; j < 3; ++j) t.slots[j] = slots[k][j].empty() ? nullptr : slots[k][j].data();
      t.scratch = scratch[k].data();
      std::tie(t.rows, t.cols) = matrix_of(kReducingShapes[k]);
      list.push_back(t);
    }
    return list;
  }

  void reference_step(const OptimizerUpdate& u) {
    for (std::size_t k = 0; k < variables.size(); ++k) {
      std::array<float*, 3> s{};
      for (std::size_t j = 0; j < 3; ++j) s[j] = slots[k][j].empty() ? nullptr : slots[k][j].data();
      const auto [rows, cols] = matrix_of(kReducingShapes[k]);
      reference::update_tensor(u, variables[k].data(), gradients[k].data(), s,
                               static_cast<Index>(variables[k].size()), rows, cols);
    }
  }

  void expect_close_to(const ReducingTensors& want, int slot_count) const {
    for (std::size_t k = 0; k < variables.size(); ++k) {
      const std::string tensor = "tensor " + kReducingShapes[k].to_string();
      expect_close(variables[k], want.variables[k], tensor + " variable");
      for (int j = 0; j < slot_count; ++j)
        expect_close(slots[k][j], want.slots[k][j], tensor + " slot " + std::to_string(j));
    }
  }
};

TEST(OptimizerUpdates, EveryReducingRuleMatchesTheTensorReference) {
  for (const UpdateCase& c : reducing_cases()) {
    SCOPED_TRACE(c.name);
    ReducingTensors fused(c.update.step, c.slots, 6), naive(c.update.step, c.slots, 6);
    const std::vector<UpdateTensors> list = fused.update_list();
    for (int step = 0; step < 2; ++step) {
      get(Device::cpu()).apply_update(c.update, list);
      naive.reference_step(c.update);
    }
    fused.expect_close_to(naive, c.slots);
  }
}

// math::run_reducing's passes one element after another.
struct SerialPasses {
  void each(Index n, const auto& f) const {
    for (Index i = 0; i < n; ++i) f(i);
  }
  void loop(Index n, const auto& f) const { each(n, f); }
  void sum(Index n, const auto& f, float* out) const {
    double s = 0.0;
    for (Index i = 0; i < n; ++i) s += f(i);
    *out = static_cast<float>(s);
  }
};

TEST(OptimizerUpdates, ReducingRulesReadingTheirScalarsFromMemoryMatchTheCpu) {
  // math::run_reducing's functors reading the scalars per element, as the CUDA kernels do.
  for (const UpdateCase& c : reducing_cases()) {
    SCOPED_TRACE(c.name);
    alignas(8) std::array<unsigned char, kUpdateScalarsBytes> memory{};
    write_update_scalars(c.update, memory.data());
    OptimizerUpdate reading = c.update;
    reading.scalars = memory.data();
    ReducingTensors functor(c.update.step, c.slots, 7), cpu(c.update.step, c.slots, 7);
    const std::vector<UpdateTensors> list = functor.update_list(), cpu_list = cpu.update_list();
    const SerialPasses serial;
    for (int step = 0; step < 2; ++step) {
      for (const UpdateTensors& t : list) math::run_reducing(reading, t, serial);
      get(Device::cpu()).apply_update(c.update, cpu_list);
    }
    functor.expect_close_to(cpu, c.slots);
  }
}

// Gradient accumulation and the moving average (OptimizerUpdate's base options) around a rule: three steps of
// two accumulated gradients each, the third overwriting the variables with their averages.
TEST(OptimizerUpdates, AccumulationAndMovingAverageFollowTheBaseOptions) {
  for (const ScalarsPath how : {ScalarsPath::cpu_backend, ScalarsPath::functor}) {
    SCOPED_TRACE(how == ScalarsPath::functor ? "functor" : "CPU backend");
    Tensors fused(1, 11), naive(1, 11);
    std::vector<std::vector<float>> accumulators, averages;
    for (const std::vector<float>& v : fused.variables) {
      accumulators.emplace_back(v.size(), 0.f);
      averages.emplace_back(v.size(), 0.f);
    }
    std::vector<std::vector<float>> naive_accumulators = accumulators, naive_averages = averages;
    std::vector<UpdateTensors> list = fused.update_list();
    for (std::size_t k = 0; k < list.size(); ++k) {
      list[k].accumulator = accumulators[k].data();
      list[k].average = averages[k].data();
    }
    std::vector<UpdateTensors> accumulate = list;
    for (std::size_t k = 0; k < list.size(); ++k) list[k].gradient = accumulators[k].data();
    for (int call = 0; call < 6; ++call) {
      OptimizerUpdate u{SGDStep{0.1f, 0.9f, false}, 0.05f};
      u.gradient_accumulation_steps = 2;
      u.apply_step = call % 2 == 1;
      u.use_ema = true;
      u.ema_momentum = call / 2 == 0 ? 0.f : 0.7f;
      u.overwrite_with_ema = call / 2 == 2;
      alignas(8) std::array<unsigned char, kUpdateScalarsBytes> memory{};
      write_update_scalars(u, memory.data());
      OptimizerUpdate reading = u;
      reading.scalars = memory.data();
      if (how == ScalarsPath::cpu_backend) {
        get(Device::cpu()).accumulate_gradients(reading, accumulate);
      } else {
        for (const UpdateTensors& t : accumulate)
          math::with_accumulation(reading, t, [&](const auto& f) {
            for (Index i = 0; i < t.n; ++i) f(i);
          });
      }
      apply_reading_scalars(reading, list, how);
      for (std::size_t k = 0; k < naive.variables.size(); ++k)
        for (std::size_t i = 0; i < naive.variables[k].size(); ++i) {
          float& acc = naive_accumulators[k][i];
          float& var = naive.variables[k][i];
          acc = naive.gradients[k][i] + acc;
          if (u.apply_step) {
            acc = acc / 2.f;
            var = var - u.weight_decay * var;
            std::array<float*, 3> s{&naive.slots[k][0][i], nullptr, nullptr};
            reference::update(OptimizerUpdate{u.step}, var, acc, s);
            acc = 0.f;
          }
          float& average = naive_averages[k][i];
          average = u.ema_momentum * average + (1.f - u.ema_momentum) * var;
          if (u.overwrite_with_ema) var = average;
        }
    }
    for (std::size_t k = 0; k < kSizes.size(); ++k) {
      const std::string tensor = "tensor " + std::to_string(k);
      expect_same_bits(fused.variables[k], naive.variables[k], tensor + " variable");
      expect_same_bits(fused.slots[k][0], naive.slots[k][0], tensor + " momentum");
      expect_same_bits(accumulators[k], naive_accumulators[k], tensor + " accumulator");
      expect_same_bits(averages[k], naive_averages[k], tensor + " average");
    }
  }
}

TEST(OptimizerUpdates, EveryRuleReadingItsScalarsFromMemoryMatchesTheReference) {
  for (const ScalarsPath how : {ScalarsPath::cpu_backend, ScalarsPath::functor}) {
    for (const UpdateCase& c : update_cases()) {
      SCOPED_TRACE(c.name + (how == ScalarsPath::functor ? " (functor)" : " (CPU backend)"));
      alignas(8) std::array<unsigned char, kUpdateScalarsBytes> memory{};
      write_update_scalars(c.update, memory.data());
      OptimizerUpdate reading = c.update;
      reading.scalars = memory.data();
      Tensors fused(c.slots, 5), naive(c.slots, 5);
      const std::vector<UpdateTensors> list = fused.update_list();
      for (int step = 0; step < 2; ++step) {
        apply_reading_scalars(reading, list, how);
        reference_step(c.update, naive);
      }
      for (std::size_t k = 0; k < kSizes.size(); ++k) {
        expect_same_bits(fused.variables[k], naive.variables[k], "tensor " + std::to_string(k) + " variable");
        for (int j = 0; j < c.slots; ++j)
          expect_same_bits(fused.slots[k][j], naive.slots[k][j], "tensor " + std::to_string(k) + " slot " + std::to_string(j));
      }
    }
  }
}

TEST(OptimizerUpdates, AnUpdateReadingMemoryUsesTheValuesThereNotItsOwn) {
  // What a replayed graph does: the update was set up (captured) with one step's values and runs with those
  // written to memory since.
  const OptimizerUpdate captured{AdamStep{0.01f, 0.1f, 0.001f, 1e-7f, false}, 0.004f};
  const OptimizerUpdate later{AdamStep{0.03f, 0.1f, 0.001f, 1e-7f, false}, 0.012f};
  for (const ScalarsPath how : {ScalarsPath::cpu_backend, ScalarsPath::functor}) {
    SCOPED_TRACE(how == ScalarsPath::functor ? "functor" : "CPU backend");
    alignas(8) std::array<unsigned char, kUpdateScalarsBytes> memory{};
    OptimizerUpdate reading = captured;
    reading.scalars = memory.data();
    write_update_scalars(later, memory.data());
    Tensors fused(2, 8), naive(2, 8);
    apply_reading_scalars(reading, fused.update_list(), how);
    reference_step(later, naive);
    for (std::size_t k = 0; k < kSizes.size(); ++k)
      expect_same_bits(fused.variables[k], naive.variables[k], "tensor " + std::to_string(k) + " variable");
  }
}

TEST(OptimizerUpdates, AnUpdateWithoutWeightDecayReadingMemoryDecaysNothing) {
  // The variables excluded from weight decay are updated by a second call whose weight_decay is 0, reading the
  // same memory, which holds the step's weight decay for the others.
  const OptimizerUpdate decayed{AdamStep{0.01f, 0.1f, 0.001f, 1e-7f, false}, 0.05f};
  OptimizerUpdate undecayed = decayed;
  undecayed.weight_decay = 0.f;
  for (const ScalarsPath how : {ScalarsPath::cpu_backend, ScalarsPath::functor}) {
    SCOPED_TRACE(how == ScalarsPath::functor ? "functor" : "CPU backend");
    alignas(8) std::array<unsigned char, kUpdateScalarsBytes> memory{};
    write_update_scalars(decayed, memory.data());
    OptimizerUpdate reading = undecayed;
    reading.scalars = memory.data();
    Tensors fused(2, 9), naive(2, 9);
    apply_reading_scalars(reading, fused.update_list(), how);
    reference_step(undecayed, naive);
    for (std::size_t k = 0; k < kSizes.size(); ++k)
      expect_same_bits(fused.variables[k], naive.variables[k], "tensor " + std::to_string(k) + " variable");
  }
}

// Clipped copies of `gradients` by the backend, with the gradients checked unchanged.
std::vector<std::vector<float>> clip(const GradientClip& clip, const std::vector<std::vector<float>>& gradients) {
  const std::vector<std::vector<float>> before = gradients;
  std::vector<std::vector<float>> out;
  std::vector<ClipTensors> list;
  for (const std::vector<float>& g : gradients) out.emplace_back(g.size(), -7.f);
  for (std::size_t k = 0; k < gradients.size(); ++k)
    list.push_back({gradients[k].data(), out[k].data(), static_cast<Index>(gradients[k].size())});
  std::vector<float> scratch(static_cast<std::size_t>(clip_scratch_floats(static_cast<Index>(list.size()))));
  get(Device::cpu()).clip_gradients(clip, list, scratch.data());
  for (std::size_t k = 0; k < gradients.size(); ++k)
    expect_same_bits(gradients[k], before[k], "gradient " + std::to_string(k) + " (unchanged)");
  return out;
}

double squared_norm(const std::vector<float>& g) {
  return reference::squared_norm(g.data(), static_cast<Index>(g.size()));
}

void expect_scaled(const std::vector<float>& actual, const std::vector<float>& g, double scale, const std::string& what) {
  ASSERT_EQ(actual.size(), g.size());
  int bad = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double want = scale * g[i];
    if (!(std::fabs(actual[i] - want) <= 1e-6 * std::fabs(want) + 1e-12) && ++bad <= 3)
      ADD_FAILURE() << what << "[" << i << "]: " << actual[i] << ", expected " << want;
  }
  EXPECT_EQ(bad, 0) << what;
}

std::vector<std::vector<float>> clip_gradients_problem() {
  Generator g(9);
  std::vector<std::vector<float>> gradients;
  for (Index n : kSizes) gradients.push_back(uniform(n, -1.f, 1.f, g));
  return gradients;
}

TEST(OptimizerUpdates, ClipnormScalesEachGradientByItsOwnNorm) {
  const auto gradients = clip_gradients_problem();
  const double limit = 1.0;
  const auto out = clip({ClipKind::norm, limit}, gradients);
  int clipped = 0;
  for (std::size_t k = 0; k < gradients.size(); ++k) {
    const double squares = squared_norm(gradients[k]);
    clipped += std::sqrt(squares) > limit;
    expect_scaled(out[k], gradients[k], reference::clip_scale(ClipKind::norm, limit, squares), std::to_string(k));
  }
  EXPECT_EQ(clipped, 3) << "the one-element gradient stays below the limit, the others above";
}

TEST(OptimizerUpdates, GlobalClipnormScalesAllGradientsTogether) {
  const auto gradients = clip_gradients_problem();
  double total = 0.0;
  for (const auto& g : gradients) total += squared_norm(g);
  for (const double limit : {2.0, 1e3}) {
    SCOPED_TRACE(limit);
    const auto out = clip({ClipKind::global_norm, limit}, gradients);
    const double scale = reference::clip_scale(ClipKind::global_norm, limit, total);
    for (std::size_t k = 0; k < gradients.size(); ++k) expect_scaled(out[k], gradients[k], scale, std::to_string(k));
  }
}

TEST(OptimizerUpdates, GlobalClipnormOfANonFiniteNormIsNaN) {
  auto gradients = clip_gradients_problem();
  gradients[1][3] = INFINITY;
  const auto out = clip({ClipKind::global_norm, 1.0}, gradients);
  for (std::size_t k = 0; k < out.size(); ++k)
    for (float x : out[k]) ASSERT_TRUE(std::isnan(x)) << "tensor " << k;
}

TEST(OptimizerUpdates, ClipvalueClampsElements) {
  const auto gradients = clip_gradients_problem();
  const auto out = clip({ClipKind::value, 0.3}, gradients);
  for (std::size_t k = 0; k < gradients.size(); ++k) {
    std::vector<float> want = gradients[k];
    for (float& x : want) x = std::clamp(x, -0.3f, 0.3f);
    expect_same_bits(out[k], want, "tensor " + std::to_string(k));
  }
}

// Every optimizer with every clipping option (and weight decay) over odd-sized variables: after the first step
// builds the slots and scratch, whole apply_gradients steps allocate no tensor memory, so neither the clipping
// norms nor anything else is staged through a host copy.
TEST(OptimizerUpdates, WholeStepsAllocateNothingAfterTheFirst) {
  Allocator& allocator = allocator_for(Device::cpu());
  for (const std::string& type : optimizers::optimizer_types())
    for (const char* option : {"", "clipnorm", "global_clipnorm", "clipvalue", "weight_decay", "use_ema",
                               "gradient_accumulation_steps"}) {
      SCOPED_TRACE(type + " " + option);
      Config config = Config::map();
      if (std::string(option) == "use_ema")
        config.set(option, true);
      else if (std::string(option) == "gradient_accumulation_steps")
        config.set(option, 2);
      else if (*option)
        config.set(option, 0.5);
      Config c = Config::map();
      c.set("class_name", type);
      c.set("config", config);
      const optimizers::OptimizerPtr opt = optimizers::optimizer_from_config(c);
      std::vector<VariablePtr> variables;
      std::vector<Tensor> gradients;
      for (const Shape& shape : {Shape{1}, Shape{7}, Shape{3, 11}, Shape{7, 11, 13}}) {
        const auto seed = static_cast<std::uint64_t>(shape.numel());
        auto v = std::make_shared<Variable>();
        v->name = v->path = "v" + std::to_string(shape.numel());
        v->value = tower::testing::random_tensor(shape, 30 + seed);
        variables.push_back(v);
        gradients.push_back(tower::testing::random_tensor(shape, 40 + seed));
      }
      opt->apply_gradients(variables, gradients);
      const std::uint64_t after_first = allocator.stats().allocations;
      for (int step = 0; step < 3; ++step) opt->apply_gradients(variables, gradients);
      EXPECT_EQ(allocator.stats().allocations, after_first);
      EXPECT_EQ(opt->iterations(), 4);
    }
}

// |got - want| <= 1e-6 + 1e-5 |want| for every element: the GPU contracts multiply-adds into FMAs, so it rounds a
// little differently from the CPU.
void expect_close(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= 1e-6f + 1e-5f * std::fabs(want[i])) && ++bad <= 3)
      ADD_FAILURE() << what << "[" << i << "]: " << got[i] << ", expected " << want[i];
  EXPECT_EQ(bad, 0) << what;
}

// Two apply_update steps of `c` on `device`, the arrays of t copied there and the results back; with
// `scalars_in_memory`, the update reads its scalars from memory of the device (OptimizerUpdate::scalars).
void run_update_on(Device device, const UpdateCase& c, Tensors& t, bool scalars_in_memory = false) {
  const auto on_device = [&](const std::vector<float>& v) {
    return Tensor::from_vector(v, {static_cast<Index>(v.size())}).to(device);
  };
  std::vector<Tensor> variables, gradients;
  std::vector<std::array<Tensor, 3>> slots(t.variables.size());
  std::vector<UpdateTensors> list;
  for (std::size_t k = 0; k < t.variables.size(); ++k) {
    variables.push_back(on_device(t.variables[k]));
    gradients.push_back(on_device(t.gradients[k]));
    UpdateTensors u{variables[k].data<float>(), gradients[k].data<float>(), {}, variables[k].numel()};
    for (int j = 0; j < c.slots; ++j) {
      slots[k][j] = on_device(t.slots[k][j]);
      u.slots[j] = slots[k][j].data<float>();
    }
    list.push_back(u);
  }
  OptimizerUpdate update = c.update;
  Tensor scalars;
  if (scalars_in_memory) {
    Tensor host(Shape{static_cast<Index>(kUpdateScalarsBytes / 8)}, DType::int64);
    write_update_scalars(c.update, host.raw_data());
    scalars = host.to(device);
    update.scalars = scalars.raw_data();
  }
  for (int step = 0; step < 2; ++step) get(device).apply_update(update, list);
  for (std::size_t k = 0; k < t.variables.size(); ++k) {
    t.variables[k] = variables[k].to_vector();
    for (int j = 0; j < c.slots; ++j) t.slots[k][j] = slots[k][j].to_vector();
  }
}

TEST(OptimizerUpdates, GpuUpdatesMatchTheCpu_CUDA) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU";
  for (const UpdateCase& c : update_cases()) {
    SCOPED_TRACE(c.name);
    Tensors gpu(c.slots, 5), cpu(c.slots, 5);
    run_update_on(Device::cuda(0), c, gpu);
    run_update_on(Device::cpu(), c, cpu);
    for (std::size_t k = 0; k < kSizes.size(); ++k) {
      expect_close(gpu.variables[k], cpu.variables[k], "tensor " + std::to_string(k) + " variable");
      for (int j = 0; j < c.slots; ++j)
        expect_close(gpu.slots[k][j], cpu.slots[k][j], "tensor " + std::to_string(k) + " slot " + std::to_string(j));
    }
  }
}

TEST(OptimizerUpdates, GpuUpdatesReadingScalarsFromDeviceMemoryMatchTheCpu_CUDA) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU";
  for (const UpdateCase& c : update_cases()) {
    SCOPED_TRACE(c.name);
    Tensors gpu(c.slots, 5), cpu(c.slots, 5);
    run_update_on(Device::cuda(0), c, gpu, true);
    run_update_on(Device::cpu(), c, cpu);
    for (std::size_t k = 0; k < kSizes.size(); ++k) {
      expect_close(gpu.variables[k], cpu.variables[k], "tensor " + std::to_string(k) + " variable");
      for (int j = 0; j < c.slots; ++j)
        expect_close(gpu.slots[k][j], cpu.slots[k][j], "tensor " + std::to_string(k) + " slot " + std::to_string(j));
    }
  }
}

TEST(OptimizerUpdates, GpuReducingUpdatesMatchTheCpu_CUDA) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU";
  const Device gpu = Device::cuda(0);
  for (const UpdateCase& c : reducing_cases()) {
    SCOPED_TRACE(c.name);
    ReducingTensors on_gpu(c.update.step, c.slots, 12), cpu(c.update.step, c.slots, 12);
    const auto to_gpu = [&](const std::vector<float>& v) {
      return Tensor::from_vector(v, {static_cast<Index>(v.size())}).to(gpu);
    };
    std::vector<UpdateTensors> list = on_gpu.update_list();
    std::vector<Tensor> held;
    for (std::size_t k = 0; k < list.size(); ++k) {
      held.push_back(to_gpu(on_gpu.variables[k]));
      list[k].variable = held.back().data<float>();
      held.push_back(to_gpu(on_gpu.gradients[k]));
      list[k].gradient = held.back().data<float>();
      held.push_back(to_gpu(on_gpu.scratch[k]));
      list[k].scratch = held.back().data<float>();
      for (int j = 0; j < c.slots; ++j) {
        held.push_back(to_gpu(on_gpu.slots[k][j]));
        list[k].slots[j] = held.back().data<float>();
      }
    }
    for (int step = 0; step < 2; ++step) {
      get(gpu).apply_update(c.update, list);
      get(Device::cpu()).apply_update(c.update, cpu.update_list());
    }
    const std::size_t per = 3 + static_cast<std::size_t>(c.slots);
    for (std::size_t k = 0; k < list.size(); ++k) {
      on_gpu.variables[k] = held[k * per].to_vector();
      for (int j = 0; j < c.slots; ++j) on_gpu.slots[k][j] = held[k * per + 3 + static_cast<std::size_t>(j)].to_vector();
    }
    on_gpu.expect_close_to(cpu, c.slots);
  }
}

TEST(OptimizerUpdates, GpuClippingMatchesTheCpu_CUDA) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU";
  const Device gpu = Device::cuda(0);
  const auto gradients = clip_gradients_problem();
  for (const GradientClip& c : {GradientClip{ClipKind::norm, 1.0}, GradientClip{ClipKind::global_norm, 2.0},
                                GradientClip{ClipKind::global_norm, 1e3}, GradientClip{ClipKind::value, 0.3}}) {
    SCOPED_TRACE(static_cast<int>(c.kind));
    const auto want = clip(c, gradients);
    std::vector<Tensor> in, out;
    std::vector<ClipTensors> list;
    for (const std::vector<float>& g : gradients) {
      const Index n = static_cast<Index>(g.size());
      in.push_back(Tensor::from_vector(g, {n}).to(gpu));
      out.emplace_back(Shape{n}, DType::float32, gpu);
    }
    for (std::size_t k = 0; k < in.size(); ++k) list.push_back({in[k].data<float>(), out[k].data<float>(), in[k].numel()});
    Tensor scratch(Shape{clip_scratch_floats(static_cast<Index>(list.size()))}, DType::float32, gpu);
    get(gpu).clip_gradients(c, list, scratch.data<float>());
    for (std::size_t k = 0; k < out.size(); ++k) expect_close(out[k].to_vector(), want[k], "tensor " + std::to_string(k));
  }
}

}  // namespace
}  // namespace tower::backend
