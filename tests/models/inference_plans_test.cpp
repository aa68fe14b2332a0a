#include "api/models/inference_plans.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "testing/errors.h"
#include "tower/tower.h"

namespace tower::detail {
namespace {

using namespace std::chrono_literals;

// A real plan of a one-layer model, counted.
struct Maker {
  Model model = [] {
    SymbolicTensor x = Input({3});
    return Model(x, layers::Dense({.units = 2})(x));
  }();
  std::atomic<int> made{0};
  InferencePlans::Make of(Index batch) {
    return [this, batch] {
      ++made;
      PlanOptions o;
      o.batch_size = batch;
      return std::make_unique<Plan>(model.impl(), o);
    };
  }
};

std::vector<Shape> shapes(Index batch) { return {Shape{batch, 3}}; }

TEST(InferencePlans, AnIdlePlanIsReusedAndABusyOneGetsACompanionUpToTheLimit) {
  Maker m;
  InferencePlans pool({.plans_per_shape = 2});
  {
    auto a = pool.acquire(shapes(4), m.of(4));
    auto b = pool.acquire(shapes(4), m.of(4));
    EXPECT_NE(a->plan.get(), b->plan.get());
  }
  { auto c = pool.acquire(shapes(4), m.of(4)); }
  EXPECT_EQ(m.made.load(), 2);
  EXPECT_EQ(pool.plan_count(shapes(4)), 2u);
  EXPECT_EQ(pool.plan_count(shapes(5)), 0u);
}

TEST(InferencePlans, ACallFindingEveryPlanBusyWaitsForOne) {
  Maker m;
  InferencePlans pool({.plans_per_shape = 1});
  auto held = std::make_unique<InferencePlans::Lease>(pool.acquire(shapes(2), m.of(2)));
  const Plan* first = (*held)->plan.get();
  std::promise<const Plan*> got;
  std::thread waiter([&] {
    auto l = pool.acquire(shapes(2), m.of(2));
    got.set_value(l->plan.get());
  });
  std::future<const Plan*> f = got.get_future();
  EXPECT_EQ(f.wait_for(30ms), std::future_status::timeout);
  held.reset();
  ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(f.get(), first);
  waiter.join();
  EXPECT_EQ(m.made.load(), 1);
}

TEST(InferencePlans, ShapesBeyondTheLimitDropTheLeastRecentlyUsedIdleOne) {
  Maker m;
  InferencePlans pool({.plans_per_shape = 1, .max_shapes = 2});
  { auto a = pool.acquire(shapes(1), m.of(1)); }
  auto busy = pool.acquire(shapes(2), m.of(2));
  { auto c = pool.acquire(shapes(1), m.of(1)); }  // 1 is now the most recent
  { auto d = pool.acquire(shapes(3), m.of(3)); }  // drops 1, the least recent not in use: 2 is leased
  EXPECT_EQ(pool.shape_count(), 2u);
  EXPECT_EQ(pool.plan_count(shapes(1)), 0u);
  EXPECT_EQ(pool.plan_count(shapes(2)), 1u);
  { auto e = pool.acquire(shapes(4), m.of(4)); }  // drops 3
  EXPECT_EQ(pool.shape_count(), 2u);
  EXPECT_EQ(pool.plan_count(shapes(3)), 0u);
  EXPECT_EQ(pool.plan_count(shapes(2)), 1u);
}

TEST(InferencePlans, AMakerThatThrowsLeavesThePoolUsable) {
  Maker m;
  InferencePlans pool({.plans_per_shape = 1});
  EXPECT_THROW(pool.acquire(shapes(2), [] () -> std::unique_ptr<Plan> { throw std::runtime_error("no plan"); }),
               std::runtime_error);
  auto l = pool.acquire(shapes(2), m.of(2));
  EXPECT_EQ(m.made.load(), 1);
}

TEST(InferencePlans, ClearKeepsALeasedPlanAliveUntilItIsGivenBack) {
  Maker m;
  InferencePlans pool({.plans_per_shape = 1});
  auto l = std::make_unique<InferencePlans::Lease>(pool.acquire(shapes(2), m.of(2)));
  pool.clear();
  EXPECT_EQ(pool.plan_count(), 0u);
  EXPECT_EQ((*l)->plan->batch_size(), 2);  // still usable
  l.reset();
  { auto again = pool.acquire(shapes(2), m.of(2)); }
  EXPECT_EQ(m.made.load(), 2);
}

TEST(InferencePlans, ZeroShapesIsRefused) {
  EXPECT_EQ(testing::error_of([] { InferencePlans pool({.max_shapes = 0}); }),
            "InferenceOptions: max_shapes must be at least 1");
}

}  // namespace
}  // namespace tower::detail
