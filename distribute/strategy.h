#pragma once
// Strategy: tf.distribute.Strategy. A strategy is a handle (copies share it) to a set of replicas: one per device
// (OneDeviceStrategy, MirroredStrategy), or per device of every worker process (MultiWorkerMirroredStrategy).
//
//   distribute::MirroredStrategy strategy({"cpu:0", "cpu:1"});
//   auto data = dataset.batch(64 * strategy.num_replicas_in_sync());   // the global batch
//   Model model = [&] {
//     auto scope = strategy.scope();      // models, optimizers and metrics made here belong to the strategy
//     Model m = make_model();
//     m.compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy(),
//               {metrics::SparseCategoricalAccuracy()});
//     return m;
//   }();
//   model.fit(data, 5);                   // runs on the strategy's replicas, inside the scope or not
//
// Semantics (tf.distribute's): every global batch from the one input pipeline is split into consecutive chunks
// of ceil(n / num_replicas_in_sync()) rows, one per replica (so a short last batch leaves the last replicas fewer
// rows, or none); replicas run forward and backward in parallel, each dividing its loss sum by the global
// batch's size; their gradients are summed (not averaged) and one optimizer update is applied to the weights
// every replica uses (or the same update to each replica's own copy, on several GPUs). N replicas on a batch thus compute what one replica computes on it, up to the order of
// float additions. The loss shown is the global batch's mean; metrics are computed over all replicas' outputs.
// BatchNormalization statistics are per replica unless synchronized (see layers/batch_normalization.h).
#include <memory>
#include <string>
#include <vector>

#include "api/models/distribution.h"
#include "distribute/logical_device.h"

namespace tower::distribute {

namespace detail {

// What every strategy implements: the api's Distribution plus what Strategy reports.
class StrategyImpl : public tower::detail::Distribution {
 public:
  virtual std::string type() const = 0;
  // The devices of this worker's replicas.
  virtual const std::vector<LogicalDevice>& devices() const = 0;
  virtual int num_workers() const { return 1; }
  virtual int worker_index() const { return 0; }
  bool is_chief() const override { return worker_index() == 0; }
};

}  // namespace detail

// While it lives, models, optimizers and metrics made on this thread belong to its strategy, and get_strategy()
// returns it. Scopes nest like blocks: destroy them in reverse order of creation, on the thread that made them.
class StrategyScope {
 public:
  explicit StrategyScope(std::shared_ptr<detail::StrategyImpl> strategy);
  ~StrategyScope();
  StrategyScope(StrategyScope&& other) noexcept;
  StrategyScope(const StrategyScope&) = delete;
  StrategyScope& operator=(const StrategyScope&) = delete;
  StrategyScope& operator=(StrategyScope&&) = delete;

 private:
  bool active_ = false;
};

class Strategy {
 public:
  explicit Strategy(std::shared_ptr<detail::StrategyImpl> impl) : impl_(std::move(impl)) {}

  // Replicas over all workers; the global batch is batch_size_per_replica * num_replicas_in_sync().
  int num_replicas_in_sync() const { return impl_->num_replicas_in_sync(); }
  // Throws std::logic_error when another strategy's scope is active on this thread (strategies do not mix).
  [[nodiscard]] StrategyScope scope() const;
  // "MirroredStrategy", "OneDeviceStrategy", "MultiWorkerMirroredStrategy", or "DefaultStrategy".
  std::string type() const { return impl_->type(); }
  // The devices of this worker's replicas ("cpu:0", "gpu:1").
  std::vector<std::string> devices() const;
  int num_workers() const { return impl_->num_workers(); }
  int worker_index() const { return impl_->worker_index(); }
  // The first worker, which alone writes checkpoints and logs.
  bool is_chief() const { return impl_->is_chief(); }
  const std::shared_ptr<detail::StrategyImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<detail::StrategyImpl> impl_;
};

// The strategy of the innermost scope active on this thread; outside any scope, the default strategy: one
// replica, models run as they do without a strategy.
Strategy get_strategy();

}  // namespace tower::distribute
