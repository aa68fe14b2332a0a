#pragma once
// The training loop behind fit / evaluate / predict / train_on_batch / test_on_batch (Keras' Trainer): one epoch
// driver (batches from a dataset, the callbacks' batch hooks around each) and one step driver (a batch on every
// replica, or on the model's own plan without a strategy) serve all three modes. A batch is a data::Element whose
// first components are the model's inputs, then one target per output, then optionally one sample-weight vector
// ([N]); predict reads the inputs only.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/core/device_memory.h"
#include "api/data/dataset.h"
#include "api/engine/plan.h"
#include "api/losses/device_doubles.h"
#include "api/losses/loss.h"
#include "api/metrics/metric.h"
#include "api/models/distribution.h"
#include "api/optimizers/optimizer.h"
#include "api/training/callback.h"
#include "api/training/history.h"
#include "api/training/step_graphs.h"

namespace tower::metrics {
class MeanImpl;
}

namespace tower {

class ModelImpl;

struct FitOptions {
  int epochs = 1;
  Index batch_size = 32;  // for tensor inputs; a Dataset brings its own batches
  int verbose = 1;        // 0 silent, 1 progress bar, 2 one line per epoch
  std::vector<callbacks::CallbackPtr> callbacks;
  // For tensor inputs (Model::fit(x, y)): the examples from int(n * (1 - validation_split)) on, taken before
  // shuffling, validate (Keras' split); ignored when validation_data is given. fit throws std::invalid_argument
  // before training when the split leaves no training or no validation example, and for a Dataset.
  double validation_split = 0.0;
  std::optional<data::Dataset> validation_data;  // batched
  bool shuffle = true;           // for tensor inputs
  // Weighs the loss (and weighted_metrics) of this fit's training batches by each example's class; neither its
  // validation nor a later evaluate (Keras).
  std::map<int, double> class_weight;
  // Epochs initial_epoch .. epochs - 1 run: none when initial_epoch >= epochs (an empty History).
  int initial_epoch = 0;
  // As Keras' EpochIterator: without it every epoch is a pass over the data. With it, a pass carries over between
  // epochs: an epoch ends after steps_per_epoch batches or where the pass ends (a warning on standard error then
  // says that the input ran out), and the epoch after a pass ended starts a new one. A dataset of known
  // cardinality ends its pass after that many batches; one that repeats never ends.
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

// Where a GPU plan's host inputs are uploaded first (training_loop.cpp's land()): the buffer, and the mark after
// the copy out of it, which the next upload into it waits for.
struct Landing {
  Tensor buffer;
  std::unique_ptr<WorkMarker> free;
};

// dst = src as float32 on `device` (remade when its shape or device differs), as fit stages its inputs. Other
// dtypes are converted on the host: in `host` when the destination is a GPU. Host inputs reach a GPU through
// `landing`, whose buffer the upload reuses from step to step.
void stage_float32(const Tensor& src, Tensor& dst, Device device, Tensor& host, Landing& landing);

class TrainingLoop {
 public:
  // The loop of `model`, which outlives it. Until compile(), only predict() runs.
  explicit TrainingLoop(ModelImpl& model);

  // Per output, `metrics` are updated without sample weights and `weighted_metrics` with the batch's sample
  // weights (times fit's class weights in training), as Keras' compile. Throws std::invalid_argument naming the
  // model for a missing optimizer or loss, or counts of losses, metrics or loss weights that do not match the
  // outputs.
  void compile(optimizers::OptimizerPtr optimizer, std::vector<losses::LossPtr> losses,
               std::vector<std::vector<metrics::MetricPtr>> metrics, std::vector<double> loss_weights,
               std::vector<std::vector<metrics::MetricPtr>> weighted_metrics = {});
  bool compiled() const { return optimizer_ != nullptr; }

  // fit, evaluate, train_on_batch and test_on_batch throw std::logic_error ("... call compile() first") before
  // compile(). on_train_end receives the last epoch's logs (empty when no epoch ran). A model without trainable
  // weights trains as in Keras: a warning on standard error, then the losses, the metrics and the layers'
  // statistics (BatchNormalization's) as usual, and no optimizer step.
  callbacks::History fit(const data::Dataset& train, const FitOptions& options);
  // With fit_callbacks (validation inside fit), those callbacks see the test hooks and no progress bar is added.
  callbacks::Logs evaluate(const data::Dataset& data, const EvaluateOptions& options,
                           const std::vector<callbacks::CallbackPtr>* fit_callbacks = nullptr);
  // Outputs for every batch of `data` (its first components, one per model input), concatenated along axis 0.
  std::vector<Tensor> predict(const data::Dataset& data, const PredictOptions& options);
  // One optimizer step on one batch; returns the batch's loss and metrics (metrics are reset first).
  callbacks::Logs train_on_batch(const data::Element& batch);
  callbacks::Logs test_on_batch(const data::Element& batch);

  // The default ModelImpl::train_step / test_step: fit's and evaluate's own step on one batch (the loss, the
  // metrics and, for training, one optimizer update), on the strategy's replicas when there are any.
  void default_train_step(const data::Element& batch);
  void default_test_step(const data::Element& batch);
  // For custom steps: adds a loss value (one float32 element on any device, the mean over `examples` examples)
  // to the running "loss" the logs report, weighted by `examples`, without reading it back; and updates the
  // compiled metrics with per-output targets and predictions, sample_weight going to the weighted_metrics only
  // (targets are copied to the predictions' device when they live elsewhere). Throws std::invalid_argument for a loss of more than one element or a count of outputs
  // that differs from the model's.
  void track_loss(const Tensor& loss, Index examples);
  // For custom steps: a running mean of `value` (one float32 element on any device, not read back) logged as
  // `name` after the compiled metrics, as a Keras model's own keras.metrics.Mean trackers log (a GAN's "d_loss"
  // and "g_loss"); reset with the metrics each epoch. A step that tracks such values and no loss logs no "loss".
  // Throws std::invalid_argument for another value or an empty name or one the logs already have.
  void track_metric(const std::string& name, const Tensor& value);
  void update_metrics(const std::vector<Tensor>& y_true, const std::vector<Tensor>& y_pred,
                      const Tensor& sample_weight = Tensor());

  // During fit: its callbacks (the user's, then the progress bar and History) and its training data, for the
  // callbacks that save what a resumed fit needs (BackupAndRestore). Empty and null outside fit.
  const std::vector<callbacks::CallbackPtr>& callbacks() const { return fit_callbacks_; }
  const data::Dataset* train_data() const { return train_data_; }

  // The random states of the training plans, which Dropout derives its masks from (StepValues::seed and steps):
  // one per global batch size trained so far (under a strategy, one per local replica with rows of such a batch).
  // restore_plan_rngs makes the plans and sets their steps and, on the chief (which wrote them), their seeds; the
  // plans of other workers keep the seeds derived from their global replicas (as the steps are the same on every
  // worker), so each worker of a multi-worker strategy resumes its own replicas' masks from the chief's backup.
  // It throws std::runtime_error when a state belongs to a replica this strategy has not.
  struct PlanRng {
    Index batch_size = 0;
    int replica = -1;  // -1: the model's own plan
    std::uint64_t seed = 0;
    std::uint64_t steps = 0;
  };
  std::vector<PlanRng> plan_rngs();
  void restore_plan_rngs(const std::vector<PlanRng>& rngs);

  // Captured training steps. fit's and train_on_batch's steps on one device without a strategy run through
  // StepGraphs (step_graphs.h) when the model's device is a GPU and TOWER_CUDA_GRAPHS is not "0": inputs and
  // targets are copied into fixed buffers and the plan's step values refreshed, outside the graph; the plan's
  // forward, the losses and the plan's backward are captured after two eager steps of a plan and replayed for
  // the following ones; regularizer gradients, clipping and the optimizer run op by op after it.
  // set_step_capturer makes those steps use `capturer` on any device, the CPU included (null: the GPU's own).
  void set_step_capturer(std::shared_ptr<StepCapturer> capturer);
  const StepGraphs& step_graphs() const { return step_graphs_; }
  // Drops the captured steps; the model calls it when its plans are remade or it moves to another device.
  void invalidate_step_graphs() { step_graphs_.clear(); }

  // Null before compile().
  const optimizers::OptimizerPtr& optimizer() const { return optimizer_; }
  const std::vector<losses::LossPtr>& losses() const { return losses_; }
  void reset_metrics();
  // Current running values: "loss", then per output "<output>_loss" (several outputs), then the metrics, then the
  // weighted metrics, named as Keras names them: "<output>_<name>" with several outputs, a repeated name gets
  // "_1", "_2", ..., and a weighted metric whose name is taken gets "weighted_<name>".
  callbacks::Logs logs() const;
  // The keys logs() gives, each with which way it improves: the losses down, each metric its own direction()
  // (for the monitoring callbacks' mode "auto").
  std::vector<std::pair<std::string, metrics::Direction>> log_directions() const;

 private:
  enum class Mode { train, test, predict };
  // The compiled and weighted metrics with their keys in logs(), in logs() order.
  std::vector<std::pair<std::string, const metrics::Metric*>> named_metrics() const;
  // Rows of a batch as the losses and metrics read them on one device: the targets and sample weights (copied
  // there when they live elsewhere) and, per output, every example's weight (sample weight times class weight,
  // the class weights of a training batch only) and, where class weights apply and the output has weighted
  // metrics, those weights as float32 [N] for the metrics (else undefined: they read sample_weight).
  struct LossInputs {
    std::vector<Tensor> targets, staged_targets;
    Tensor sample_weight, staged_sample_weight;
    std::vector<losses::detail::DeviceDoubles> weights;
    std::vector<Tensor> metric_weights;
    // Per output with a mask (Plan::output_mask), else undefined: one loss weight per loss value (Keras' apply_mask,
    // plus the kept count) and one weight per value for its metrics and its weighted metrics.
    std::vector<losses::detail::DeviceDoubles> masked_weights;
    std::vector<Tensor> masked_metric_weights, masked_weighted_metric_weights;
    Tensor class_ids;  // class_weight_ on the device, as of class_weight_version
    losses::detail::DeviceDoubles class_weights;
    int class_weight_version = -1;
  };
  // Per batch size (of one replica), on its plan's device: loss values, gradient scales, the loss inputs, float32
  // copies of inputs of other dtypes or devices.
  struct StepBuffers {
    std::vector<Tensor> per_example, scale;
    LossInputs loss_inputs;
    std::vector<Tensor> staged_inputs;
    std::vector<Tensor> staged_host_inputs;  // inputs of another dtype converted on the host, for a GPU plan
    std::vector<Landing> landing_inputs;     // where host inputs of a GPU plan are uploaded first
  };
  using BufferCache = std::map<Index, std::unique_ptr<StepBuffers>>;
  // One replica's share of a step: rows [begin, end) of the batch, its plan and buffers (null without rows).
  struct ReplicaSlot {
    Index begin = 0, end = 0;
    Plan* plan = nullptr;
    StepBuffers* buffers = nullptr;
  };
  // Per global batch size: every example's loss values and predictions, per output, gathered from the replicas,
  // and the whole batch's loss inputs beside them.
  struct Gathered {
    std::vector<Tensor> per_example, y_pred, masks;
    LossInputs loss_inputs;
  };

  void require_compiled(const char* what) const;
  // Batches per epoch: `steps` when given, else the dataset's cardinality, else -1 (unknown).
  static std::int64_t steps_of(const data::Dataset& data, std::optional<std::int64_t> steps);
  // Keras' EpochIterator: the batches of each epoch of `data`, as FitOptions::steps_per_epoch describes (evaluate
  // and predict make one per call, so their `steps` are one epoch's). `who` names the model in the warning.
  class EpochBatches {
   public:
    EpochBatches(const data::Dataset& data, std::optional<std::int64_t> steps, std::string who);
    // Starts an epoch; returns whether it starts a new pass over the data.
    bool begin_epoch();
    // The epoch's next batch, or nullopt when the epoch is over.
    std::optional<data::Element> next();

   private:
    void ran_out();
    const data::Dataset& data_;
    std::optional<std::int64_t> steps_;
    Index cardinality_;
    std::string who_;
    std::unique_ptr<data::Iterator> it_;
    std::int64_t seen_ = 0;  // batches taken from it_
    std::int64_t step_ = 0;  // batches of this epoch
    bool warned_ = false;
  };
  // Readies the callbacks of a fit, evaluate or predict: a progress bar on the chief when `verbose`, then `last`
  // (fit's History), and every callback given the model and the run's params.
  void start_callbacks(std::vector<callbacks::CallbackPtr>& cbs, int verbose, int epochs, std::int64_t steps,
                       callbacks::CallbackPtr last = nullptr);
  // The epoch driver: runs `mode` on the epoch's batches (begin_epoch() called), calling the mode's batch hooks of
  // `cbs` around each. Returns the number of batches run.
  // predict appends each batch's outputs to `predictions` (per output).
  using Predictions = std::vector<std::vector<Tensor>>;
  std::int64_t run_epoch(Mode mode, EpochBatches& batches, const std::vector<callbacks::CallbackPtr>& cbs,
                         Predictions* predictions = nullptr);
  // The step driver: forward on every replica (or the model's own plan) and, but for predict, the loss, the
  // metrics and, for training, backward and one optimizer update. predict appends the outputs to `predictions`:
  // from the model's inference plans (ModelImpl::infer, any number of threads at once) or, under a strategy, from
  // the replicas.
  void step(const data::Element& batch, Mode mode, Predictions* predictions = nullptr);
  // One replica's forward on its rows of a global batch of n examples, their per-example losses and, for
  // training, the gradient of its part of the loss (sum over its rows / the global count) and backward.
  void replica_step(ReplicaSlot& slot, const data::Element& batch, Index n, Mode mode);
  // Binds the slot's rows of the batch's inputs to its plan: copied into the slot's staged inputs when `copy`
  // (a captured step reads fixed addresses) or when they are not float32 on the plan's device.
  void stage_inputs(ReplicaSlot& slot, const data::Element& batch, Index n, bool copy);
  // Targets still on the host are checked there (Loss::check_host_targets) when the plan runs on a GPU, where the
  // loss would not stop the step to read them back.
  void check_host_targets(const ReplicaSlot& slot, const data::Element& batch, Index n) const;
  // After the plan's forward: the per-example losses and, for training, the loss gradients and backward.
  void losses_and_backward(ReplicaSlot& slot, Index n, Mode mode);
  // A whole training step of the model's own plan that StepGraphs may capture or replay (see set_step_capturer):
  // replica_step, the regularizers' penalties, and the update (regularizer gradients, the optimizer's step). The
  // host's parts (staging, step values, the optimizer's scalars) run before the graph, the iteration count after.
  void graphed_train_step(ReplicaSlot& slot, const data::Element& batch, Index n, StepCapturer& capturer);
  // Adds the regularizers' penalties of these variables (their values before this step's update) to the loss sums.
  void add_penalties(const std::vector<VariablePtr>& variables, double examples);
  // Adds each active regularizer's gradient to its variable's gradient, then queues the optimizer's step
  // (prepared by Optimizer::prepare_step).
  static void run_update(const std::vector<VariablePtr>& variables, const std::vector<Tensor>& gradients,
                         optimizers::Optimizer& optimizer);
  // What a captured step of `slot` reads and writes: the plan's serial and the addresses of the model's weights,
  // the staged inputs and targets, the loss buffers and the optimizer's state.
  StepGraphs::Fingerprint step_fingerprint(const ReplicaSlot& slot) const;
  // The capturer for a training step of `plan`, or null when the step runs op by op.
  StepCapturer* step_capturer(const Plan& plan);
  // Runs every replica of the model's strategy on the batch; returns the gathered per-example losses and
  // predictions (every output's predictions for predict, those metrics need otherwise).
  Gathered& distributed_step(Replicas& replicas, const data::Element& batch, Mode mode);
  // Replicas holding their own copies of the variables take the model's (Replicas::sync_from_model).
  void sync_replicas();
  // fit under a strategy whose steps run in other processes (remote_fit.cpp): the coordinator schedules
  // steps_per_epoch steps per epoch on the workers and runs the callbacks on their logs; a worker runs the steps
  // it is given on batches of `train`; a parameter server serves its variables.
  callbacks::History remote_fit(RemoteTraining& remote, const data::Dataset& train, const FitOptions& options);
  // What the callbacks may reach of a fit (callbacks(), the training data) until the scope ends.
  struct FitScope {
    TrainingLoop& loop;
    ~FitScope() {
      loop.fit_callbacks_.clear();
      loop.train_data_ = nullptr;
    }
  };
  // Starts a fit with these callbacks on `train`: what the callbacks may reach, and stop_training and
  // resume_epoch cleared.
  [[nodiscard]] FitScope begin_fit(const std::vector<callbacks::CallbackPtr>& cbs, const data::Dataset& train);
  callbacks::History coordinate_fit(RemoteTraining& remote, const data::Dataset& train, const FitOptions& options);
  void serve_steps(RemoteTraining& remote, const data::Dataset& train);
  StepBuffers& step_buffers(BufferCache& cache, Plan& plan, Mode mode);
  // Stages rows [begin, end) of the batch's targets and sample weights on `device` (copied into the staged
  // buffers when they live elsewhere, or always with `copy`) and computes each output's example weights there,
  // with fit's class weights when `training`.
  void stage_loss_inputs(LossInputs& in, const data::Element& batch, Index begin, Index end, Device device,
                         bool training, bool copy = false) const;
  // class_weight_ in `in`, on `device`: copied there when fit() has set new class weights since the last copy.
  void stage_class_weights(LossInputs& in, Device device) const;
  // Output o's masked weights in `in` from its mask (values loss values, of examples examples), or none without one.
  void apply_output_mask(LossInputs& in, std::size_t o, const Tensor& mask, Index values, Index examples) const;
  // The loss sums kept on `device`: {sum of the weighted loss, then per output its own} over the examples so far.
  losses::detail::DeviceDoubles& loss_sums(Device device);
  void check_batch(const data::Element& batch, Mode mode) const;

  ModelImpl& model_;
  optimizers::OptimizerPtr optimizer_;
  std::vector<losses::LossPtr> losses_;
  std::vector<std::vector<metrics::MetricPtr>> metrics_, weighted_metrics_;
  std::vector<std::pair<std::string, std::shared_ptr<metrics::MeanImpl>>> tracked_;  // track_metric's, in order
  std::vector<double> loss_weights_;
  std::vector<std::string> output_names_;
  std::map<int, double> class_weight_;  // during fit: its class_weight
  int class_weight_version_ = 0;
  bool warned_no_trainable_ = false;  // the warning for training a model without trainable weights, given once
  // Every device's loss sums (backend ops add into them each step; logs() reads them), and the examples counted.
  std::vector<std::pair<Device, losses::detail::DeviceDoubles>> loss_sums_;
  double loss_count_ = 0;
  BufferCache buffers_;
  std::vector<BufferCache> replica_buffers_;  // under a strategy: per local replica
  std::vector<ReplicaSlot> slots_;
  std::map<Index, Gathered> gathered_;
  std::vector<Tensor> parts_;
  std::vector<callbacks::CallbackPtr> fit_callbacks_;
  const data::Dataset* train_data_ = nullptr;
  std::vector<Index> trained_batch_sizes_;  // global batch sizes with a training plan (made or restored)
  StepGraphs step_graphs_;
  std::shared_ptr<StepCapturer> injected_capturer_;
  std::unique_ptr<BackendCapturer> gpu_capturer_;
};

}  // namespace detail
}  // namespace tower
