// The policy of captured training steps (api/training/step_graphs.h), driven by a fake capturer whose "graph"
// records the body's ops and runs them on replay, as a CUDA graph would: ops read their per-step values from
// memory, which the caller rewrites before each step.
#include "api/training/step_graphs.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <vector>

namespace tower::detail {
namespace {

using Ran = StepGraphs::Ran;

// A step of a fake device: reads *value (its "device memory") and adds it to *total. While a capture records,
// the op is appended to the recording instead of running.
struct FakeDevice {
  std::vector<std::function<void()>>* recording = nullptr;
  void queue(const std::function<void()>& op) {
    if (recording) recording->push_back(op);
    else op();
  }
};

class FakeGraph final : public backend::StepGraph {
 public:
  FakeGraph(std::vector<std::function<void()>> ops, int& replays) : ops_(std::move(ops)), replays_(replays) {}
  void replay() override {
    ++replays_;
    for (const auto& op : ops_) op();
  }

 private:
  std::vector<std::function<void()>> ops_;
  int& replays_;
};

class FakeCapturer final : public StepCapturer {
 public:
  explicit FakeCapturer(FakeDevice& device) : device_(device) {}
  std::unique_ptr<backend::StepGraph> capture(const std::function<void()>& body) override {
    ++captures;
    std::vector<std::function<void()>> ops;
    device_.recording = &ops;
    try {
      body();
    } catch (const std::exception&) {
      device_.recording = nullptr;
      return nullptr;
    }
    device_.recording = nullptr;
    if (fail) return nullptr;
    return std::make_unique<FakeGraph>(std::move(ops), replays);
  }
  bool fail = false;
  int captures = 0, replays = 0;

 private:
  FakeDevice& device_;
};

struct Harness {
  FakeDevice device;
  FakeCapturer capturer{device};
  StepGraphs graphs;
  double value = 0, total = 0;  // the step value in "device memory", and what the steps added up
  int bodies = 0;               // times the body was called (eager runs and captures)
  std::function<void()> body = [this] {
    ++bodies;
    device.queue([this] { total += value; });
  };
  Ran step(const void* key, double v, StepGraphs::Fingerprint fp = {1}) {
    value = v;  // the caller writes the step's value before running it
    return graphs.run(capturer, key, fp, body);
  }
};

const char plan_a = 'a', plan_b = 'b';

TEST(StepGraphs, TwoEagerStepsThenOneCaptureThenReplays) {
  Harness h;
  std::vector<Ran> ran;
  for (int s = 1; s <= 6; ++s) ran.push_back(h.step(&plan_a, s));
  EXPECT_EQ(ran, (std::vector<Ran>{Ran::eager, Ran::eager, Ran::captured, Ran::replayed, Ran::replayed,
                                   Ran::replayed}));
  EXPECT_EQ(h.capturer.captures, 1);
  EXPECT_EQ(h.bodies, 3);            // two eager steps and the capture; replays do not call the body
  EXPECT_EQ(h.capturer.replays, 4);  // the captured step itself is replayed once
  // Every step added its own value, read from memory at replay: 1 + 2 + ... + 6.
  EXPECT_DOUBLE_EQ(h.total, 21.0);
  EXPECT_EQ(h.graphs.graphs(), 1u);
}

TEST(StepGraphs, APlanThatAlternatesWithAnotherIsNeverCaptured) {
  Harness h;
  // Three full batches on plan a, then a short last batch on plan b, for three epochs.
  std::vector<Ran> a_ran;
  for (int epoch = 0; epoch < 3; ++epoch) {
    for (int s = 0; s < 3; ++s) a_ran.push_back(h.step(&plan_a, 1));
    EXPECT_EQ(h.step(&plan_b, 1), Ran::eager);
  }
  EXPECT_EQ(a_ran[2], Ran::captured);
  EXPECT_EQ(a_ran.back(), Ran::replayed);
  EXPECT_EQ(h.capturer.captures, 1);
  EXPECT_EQ(h.graphs.graphs(), 1u);
  EXPECT_DOUBLE_EQ(h.total, 12.0);
}

TEST(StepGraphs, AFailedCaptureRunsTheStepAndIsNotRetried) {
  Harness h;
  h.capturer.fail = true;
  std::vector<Ran> ran;
  for (int s = 1; s <= 5; ++s) ran.push_back(h.step(&plan_a, s));
  EXPECT_EQ(ran, std::vector<Ran>(5, Ran::eager));
  EXPECT_EQ(h.capturer.captures, 1);
  EXPECT_DOUBLE_EQ(h.total, 15.0);  // the failed capture's step ran op by op, once
  EXPECT_EQ(h.graphs.graphs(), 0u);
}

TEST(StepGraphs, AnExceptionWhileCapturingRunsTheStepEagerly) {
  Harness h;
  int calls = 0;
  h.body = [&] {
    ++calls;
    if (h.device.recording) throw std::runtime_error("cannot be captured");
    h.total += h.value;
  };
  for (int s = 1; s <= 4; ++s) EXPECT_EQ(h.step(&plan_a, s), Ran::eager);
  EXPECT_EQ(calls, 5);  // the capture that threw, then the same step op by op
  EXPECT_DOUBLE_EQ(h.total, 10.0);
}

TEST(StepGraphs, NewAddressesDropTheGraphAndCountAgain) {
  Harness h;
  for (int s = 0; s < 4; ++s) h.step(&plan_a, 1, {1, 2});
  EXPECT_EQ(h.graphs.graphs(), 1u);
  // The plan was remade (another serial) or a weight moved: the old graph would use stale addresses.
  std::vector<Ran> ran;
  for (int s = 0; s < 4; ++s) ran.push_back(h.step(&plan_a, 1, {1, 3}));
  EXPECT_EQ(ran, (std::vector<Ran>{Ran::eager, Ran::eager, Ran::captured, Ran::replayed}));
  EXPECT_EQ(h.capturer.captures, 2);
  EXPECT_DOUBLE_EQ(h.total, 8.0);
}

TEST(StepGraphs, ClearDropsEveryGraph) {
  Harness h;
  for (int s = 0; s < 3; ++s) h.step(&plan_a, 1);
  for (int s = 0; s < 3; ++s) h.step(&plan_b, 1);
  EXPECT_EQ(h.graphs.graphs(), 2u);
  h.graphs.clear();
  EXPECT_EQ(h.graphs.graphs(), 0u);
  EXPECT_EQ(h.step(&plan_a, 1), Ran::eager);
  EXPECT_EQ(h.step(&plan_a, 1), Ran::eager);
  EXPECT_EQ(h.step(&plan_a, 1), Ran::captured);
}

}  // namespace
}  // namespace tower::detail
