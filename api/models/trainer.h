#pragma once
// The training loop behind compile / fit / evaluate / train_on_batch (Keras' Trainer). A batch is a
// data::Element whose first components are the model's inputs, then one target per output, then optionally
// one sample-weight vector ([N]).
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "api/callbacks/callback.h"
#include "api/callbacks/history.h"
#include "api/data/dataset.h"
#include "api/graph/plan.h"
#include "api/losses/loss.h"
#include "api/metrics/metric.h"
#include "api/models/distribution.h"
#include "api/optimizers/optimizer.h"

namespace tower {

class ModelImpl;

struct FitOptions {
  int epochs = 1;
  Index batch_size = 32;  // for tensor inputs; a Dataset brings its own batches
  int verbose = 1;        // 0 silent, 1 progress bar, 2 one line per epoch
  std::vector<callbacks::CallbackPtr> callbacks;
  double validation_split = 0.0;  // for tensor inputs: the last fraction, taken before shuffling
  std::optional<data::Dataset> validation_data;  // batched
  bool shuffle = true;           // for tensor inputs
  std::map<int, double> class_weight;
  int initial_epoch = 0;
  std::optional<std::int64_t> steps_per_epoch;
  std::optional<std::int64_t> validation_steps;
  int validation_freq = 1;
};

struct EvaluateOptions {
  Index batch_size = 32;
  int verbose = 1;
  std::optional<std::int64_t> steps;
  std::vector<callbacks::CallbackPtr> callbacks;
};

struct PredictOptions {
  Index batch_size = 32;
  int verbose = 0;
  std::optional<std::int64_t> steps;
  std::vector<callbacks::CallbackPtr> callbacks;
};

namespace detail {

class Trainer {
 public:
  Trainer(ModelImpl& model, optimizers::OptimizerPtr optimizer, std::vector<losses::LossPtr> losses,
          std::vector<std::vector<metrics::MetricPtr>> metrics, std::vector<double> loss_weights);

  callbacks::History fit(const data::Dataset& train, const FitOptions& options);
  callbacks::Logs evaluate(const data::Dataset& data, const EvaluateOptions& options,
                           const std::vector<callbacks::CallbackPtr>* fit_callbacks = nullptr);
  // One optimizer step on one batch; returns the batch's loss and metrics (metrics are reset first).
  callbacks::Logs train_on_batch(const data::Element& batch);
  callbacks::Logs test_on_batch(const data::Element& batch);

  const optimizers::OptimizerPtr& optimizer() const { return optimizer_; }
  const std::vector<losses::LossPtr>& losses() const { return losses_; }
  void reset_metrics();
  // Current running values: "loss", then per output "<output>_loss" (several outputs), then metrics.
  callbacks::Logs logs() const;

 private:
  // Per batch size (of one replica): loss values, gradient scales, per-example weights, float32 copies of
  // other inputs.
  struct LossBuffers {
    std::vector<Tensor> per_example, scale;
    std::vector<std::vector<double>> weights;
    std::vector<Tensor> staged_inputs;
  };
  using BufferCache = std::map<Index, std::unique_ptr<LossBuffers>>;
  // One replica's share of a step: rows [begin, end) of the batch, its plan and buffers (null without rows).
  struct ReplicaSlot {
    Index begin = 0, end = 0;
    Plan* plan = nullptr;
    LossBuffers* buffers = nullptr;
  };
  // Under a strategy, per global batch size: every replica's per-example losses and predictions, per output.
  struct Gathered {
    std::vector<Tensor> per_example, y_pred;
  };
  // Forward, loss, and for training backward + optimizer step. Returns the loss value of this batch.
  double step(const data::Element& batch, bool training);
  // One replica's forward on its rows of a global batch of n examples, their per-example losses and, for
  // training, the gradient of its part of the loss (sum over its rows / the global count) and backward.
  void replica_step(ReplicaSlot& slot, const data::Element& batch, Index n, bool training);
  // Runs every replica of the model's strategy on the batch; returns the gathered per-example losses and
  // predictions.
  Gathered& distributed_step(detail::Replicas& replicas, const data::Element& batch, bool training);
  LossBuffers& loss_buffers(BufferCache& cache, Plan& plan);
  // Sample weight times class weight of rows [begin, end) of output o's targets, into w.
  void example_weights(const data::Element& batch, std::size_t o, Index begin, Index end,
                       std::vector<double>& w) const;
  void check_batch(const data::Element& batch) const;

  ModelImpl& model_;
  optimizers::OptimizerPtr optimizer_;
  std::vector<losses::LossPtr> losses_;
  std::vector<std::vector<metrics::MetricPtr>> metrics_;
  std::vector<double> loss_weights_;
  std::vector<std::string> output_names_;
  std::map<int, double> class_weight_;
  double loss_sum_ = 0, loss_count_ = 0;
  std::vector<double> output_loss_sum_;
  BufferCache buffers_;
  std::vector<BufferCache> replica_buffers_;  // under a strategy: per local replica
  std::vector<ReplicaSlot> slots_;
  std::map<Index, Gathered> gathered_;
  std::vector<Tensor> parts_;
  std::vector<double> weights_;  // per-example weights of the whole batch
};

}  // namespace detail
}  // namespace tower
