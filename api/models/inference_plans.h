#pragma once
// InferencePlans: the plans a model's inference calls run on, shared by every thread that calls it. A plan runs
// one call at a time, so each call leases one: an idle plan of its input shapes, or a new one while that shape has
// fewer than plans_per_shape, else it waits for one to come back. Memory therefore stays bounded by
// plans_per_shape plans of each of at most max_shapes shapes (the least recently used shape without a lease is
// dropped beyond that). Plans are made by the function given to acquire(), outside the pool's lock, so threads
// with plans of their own go on while another one's plan is made.
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <vector>

#include "api/core/tensor.h"
#include "api/engine/plan.h"
#include "api/training/training_loop.h"

namespace tower {

// How a model serves inference calls from many threads (ModelImpl::set_inference_options).
struct InferenceOptions {
  // Plans per input shape, each running one call at a time; 0: one per hardware thread.
  std::size_t plans_per_shape = 0;
  // Input shapes whose plans are kept.
  std::size_t max_shapes = 16;
  // A call whose plan's activations (Plan::unshared_bytes) take at most this many bytes runs on the calling
  // thread alone: below it, starting the CPU kernels' threads costs more than they save (bench/serving.cpp).
  // Larger calls use backend::num_threads() threads. 0: every call uses them.
  std::size_t caller_thread_bytes = std::size_t{2} << 20;
};

}  // namespace tower

namespace tower::detail {

// A plan with what a call stages for it: float32 copies of inputs of another dtype or device.
struct InferencePlan {
  std::unique_ptr<Plan> plan;
  std::vector<Tensor> staged, staged_host;
  std::vector<Landing> landing;
};

class InferencePlans {
 public:
  using Make = std::function<std::unique_ptr<Plan>()>;

  class Lease {
   public:
    Lease(Lease&& other) noexcept : pool_(other.pool_), entry_(other.entry_) { other.pool_ = nullptr; }
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    InferencePlan& operator*() const { return *entry_; }
    InferencePlan* operator->() const { return entry_; }

   private:
    friend class InferencePlans;
    Lease(InferencePlans* pool, InferencePlan* entry) : pool_(pool), entry_(entry) {}
    InferencePlans* pool_;
    InferencePlan* entry_;
  };

  explicit InferencePlans(InferenceOptions options = {});
  // Throws std::invalid_argument for max_shapes 0. Drops every plan (see clear()).
  void set_options(InferenceOptions options);
  const InferenceOptions& options() const { return options_; }
  // plans_per_shape with 0 resolved.
  std::size_t plans_per_shape() const;

  // A plan for inputs of these shapes (batch dimension included), made by `make` when none is idle and the shape
  // has fewer than plans_per_shape(); otherwise waits until one is returned. What `make` throws reaches the caller
  // and leaves the pool as it was.
  [[nodiscard]] Lease acquire(const std::vector<Shape>& shapes, const Make& make);
  // Drops every plan: the graph, the device or the weights' placement changed. Requires no lease out.
  void clear();

  // Plans kept now: for these shapes, and in all.
  std::size_t plan_count(const std::vector<Shape>& shapes) const;
  std::size_t plan_count() const;
  std::size_t shape_count() const;

 private:
  struct Shapes {
    std::vector<Shape> shapes;
    std::vector<std::unique_ptr<InferencePlan>> plans;
    std::vector<InferencePlan*> idle;
    std::size_t making = 0;  // plans being made for this shape now
    std::size_t leased() const { return plans.size() + making - idle.size(); }
  };
  void give_back(InferencePlan* entry);
  std::list<Shapes>::iterator find(const std::vector<Shape>& shapes);
  void drop_unused_shapes();

  InferenceOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable returned_;
  std::list<Shapes> shapes_;  // the most recently used first
  // Plans leased when clear() dropped their shape: deleted when given back.
  std::vector<std::unique_ptr<InferencePlan>> retired_;
  std::uint64_t generation_ = 0;  // clear()s so far
};

}  // namespace tower::detail
