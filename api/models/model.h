#pragma once
// Models: the functional Model(inputs, outputs) and Sequential. Both are handles (copies share one model,
// as Python references do) over a ModelImpl, which is itself a Layer, so a model can be called on symbolic
// tensors inside another model.
#include <atomic>
#include <iosfwd>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "api/training/history.h"
#include "api/data/dataset.h"
#include "api/engine/plan.h"
#include "api/io/weights_file.h"
#include "api/engine/input_layer.h"
#include "api/models/distribution.h"
#include "api/models/inference_plans.h"
#include "api/models/model_use.h"
#include "api/engine/layer.h"
#include "api/training/training_loop.h"

namespace tower {

class ModelImpl : public Layer {
 public:
  // Validates the graph: outputs computable from `inputs` alone (else "graph disconnected", naming the missing
  // input), inputs Input() tensors, no model containing itself, no two of its own layers of one name (as Keras).
  ModelImpl(std::vector<SymbolicTensor> inputs, std::vector<SymbolicTensor> outputs, std::string name);

  const std::vector<SymbolicTensor>& inputs() const { return graph_.inputs; }
  const std::vector<SymbolicTensor>& outputs() const { return graph_.outputs; }
  // Every node from the inputs to the outputs, in topological order (input nodes included).
  const std::vector<std::shared_ptr<Node>>& nodes() const { return graph_.nodes; }
  // A model is a layer with a graph: the plan inlines a nested model's graph.
  const Graph* graph() const override { return has_graph() ? &graph_ : nullptr; }
  // Distinct layers in Keras' order, which model.layers, summary(), weights() and the weight files follow
  // (keras/src/ops/function.py map_graph) and which depends on the graph alone, never on the order its layers
  // were made or called in: deepest first, where a node's depth is the length of the longest path from it to an
  // output and a layer's the greatest depth of its calls; layers of one depth in the order a depth-first walk
  // from the outputs (each node's inputs in order) first meets them; an input no output depends on at depth 0,
  // first among that depth. Keras lists a functional model's InputLayers, not a Sequential's (its layers in the
  // order added).
  virtual std::vector<LayerPtr> layers() const { return layer_order_; }
  // Throws std::invalid_argument listing the layer names when there is none of that name.
  LayerPtr get_layer(const std::string& name) const;

  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  int num_inputs() const override { return static_cast<int>(graph_.inputs.size()); }
  // The names the logs give the outputs: each output's layer name (Keras' output_names).
  virtual std::vector<std::string> output_names() const;
  // A Sequential without an input shape is built by the first data it sees, as in Keras: from the first
  // element of `data` (its components' first is the input; the dataset's random orders are left as they were,
  // so its next pass is the one it would have been) or from a batch. A built model is left as it is.
  void build_from(const data::Dataset& data);
  void build_from(const data::Element& batch);
  // Fixes the input shape (batch dimension excluded) of a model that is built by its first data (Sequential);
  // a functional model has its inputs already and does nothing.
  virtual void build_for(const Shape& input_shape) { (void)input_shape; }
  // A nested model never runs as one step: the plan inlines its graph.
  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  bool has_training_behavior() const override;
  std::vector<VariablePtr> weights() const override;
  std::vector<VariablePtr> trainable_weights() const override;  // each layer's own flag decides, as in Keras
  std::vector<VariablePtr> non_trainable_weights() const override;
  void set_trainable(bool trainable) override;
  Config get_config() const override;

  // Keras' summary table.
  void summary(std::ostream& os, int line_length = 0) const;

  // ---- training (see training/training_loop.h) ----
  // Per output, `metrics` ignore sample weights and `weighted_metrics` take them (Keras; see TrainingLoop::compile).
  void compile(optimizers::OptimizerPtr optimizer, std::vector<losses::LossPtr> losses,
               std::vector<std::vector<metrics::MetricPtr>> metrics, std::vector<double> loss_weights,
               std::vector<std::vector<metrics::MetricPtr>> weighted_metrics = {});
  bool compiled() const { return training_loop_->compiled(); }
  // The model's fit / evaluate / predict loop; fit and evaluate throw std::logic_error before compile().
  detail::TrainingLoop& training_loop() const { return *training_loop_; }
  // The optimizer given to compile(); null before (Keras' model.optimizer).
  const optimizers::OptimizerPtr& optimizer() const { return training_loop_->optimizer(); }
  // Set by callbacks (EarlyStopping, TerminateOnNaN) to end fit() after the current batch.
  bool stop_training = false;
  // Set by a callback in on_train_begin (BackupAndRestore) to resume fit() at this epoch; -1: no resume.
  int resume_epoch = -1;
  // A plan for batches of `batch_size`, made on first use and kept; `training` plans run backward. Plans are
  // remade when the trainable weights change; a graph change (Sequential add / pop) drops plans and replicas.
  Plan& plan_for(Index batch_size, bool training);
  // The plan for a batch whose inputs have these shapes (batch dimension included): plan_for(batch, training) when
  // the model's inputs have no unknown sizes besides the batch; otherwise a plan for these shapes, one of the last
  // kShapePlans made (a batch of another length makes its own plan, as Keras traces a function per input shape; the
  // least recently used is dropped beyond that, so lengths that vary without end keep memory bounded).
  Plan& plan_for(const std::vector<Shape>& input_shapes, bool training);
  static constexpr std::size_t kShapePlans = 8;
  // How many plans plan_for(input_shapes, training) keeps now (at most kShapePlans).
  std::size_t shape_plan_count() const { return shape_plans_.size(); }
  // Whether an input has a size besides the batch known only from the data (Input({-1})).
  bool has_unknown_input_sizes() const;
  // The training plan a GradientTape runs the model's `call`-th call (0, 1, ...) on one tape through, at this batch
  // size: plan_for(batch_size, true) for a first call that needs no input gradients, else a plan of its own (kept,
  // and remade as plan_for's are), computing its inputs' gradients when `input_gradients`. A model called twice on
  // one tape (a siamese network, a GAN's discriminator on real and generated images) thus keeps both calls'
  // activations.
  Plan& tape_plan(Index batch_size, int call, bool input_gradients);
  // Outputs for every batch of `data` (its first num_inputs() components), concatenated along axis 0.
  std::vector<Tensor> predict(const data::Dataset& data, const PredictOptions& options);

  // ---- inference from any number of threads ----
  // The outputs for one batch of inputs ([N, ...] each, N >= 1, on any device; other dtypes are converted to
  // float32 as fit converts them) in inference mode (Dropout off, BatchNormalization's moving statistics): copies
  // on the host (Keras' predict_on_batch), or on the model's device for call() (Keras' model(x, training=False);
  // not recorded by a GradientTape: tape.call is the training call). predict() runs its batches the same way.
  //
  // Thread safety: predict, predict_on_batch and call may be called from any number of threads at once, beside one
  // evaluate / test_on_batch at a time (model_use.h). Each call leases a plan for its inputs' shapes from the
  // model's InferencePlans (at most plans_per_shape per shape: a call finding them all busy waits for one) and
  // only reads the weights; every answer equals the one the same call gives alone. On a GPU the calls take turns
  // (one at a time per device, on its stream). A call while another thread trains the model (fit,
  // train_on_batch) throws std::logic_error; set_weights, load_weights, to() and compile wait for the calls in
  // flight, and calls that come meanwhile wait for them. Under a distribution strategy predict runs on the
  // replicas, one call at a time. Layers that carry state from call to call (stateful recurrent layers) carry it in
  // the order the calls come.
  //
  // Throws ShapeError naming the model, the input and both shapes for an input that does not fit the model, and
  // std::invalid_argument for a wrong number of inputs, a batch of 0 examples or inputs of different batch sizes.
  std::vector<Tensor> predict_on_batch(const std::vector<Tensor>& inputs);
  std::vector<Tensor> call(const std::vector<Tensor>& inputs);
  // Drops the inference plans made so far; waits for the calls in flight.
  void set_inference_options(const InferenceOptions& options);
  const InferenceOptions& inference_options() const { return inference_plans_.options(); }
  const detail::InferencePlans& inference_plans() const { return inference_plans_; }
  // Who uses the model now (model_use.h): the training loop's calls take their turns through it.
  detail::ModelUse& use() const { return use_; }

  // ---- custom steps (Keras 3's overridable train_step / test_step) ----
  // fit, train_on_batch, evaluate and test_on_batch run their batches through these; fit and evaluate keep their
  // callbacks, progress bar, History and logs around whichever step runs. A batch is (inputs..., targets...,
  // [sample_weight]) as fit takes it. The defaults are fit's own step (on the strategy's replicas, or captured as
  // a CUDA graph where fit captures it). A subclass overrides them with a step of its own, usually a
  // GradientTape (training/gradient_tape.h), the compiled optimizer and losses, and the loop's trackers, which
  // keep the logs on the device until a log point reads them:
  //
  //   class MyModel : public ModelImpl {
  //    public:
  //     using ModelImpl::ModelImpl;
  //     void train_step(const data::Element& batch) override {
  //       GradientTape tape;
  //       Tensor probs = tape.call(*this, batch[0]);
  //       Tensor loss = tape.loss(training_loop().losses()[0], batch[1], probs);
  //       std::vector<VariablePtr> vars = trainable_weights();
  //       optimizer()->apply_gradients(optimizers::zip(tape.gradient(loss, vars), vars));
  //       training_loop().track_loss(loss, batch[0].dim(0));      // "loss" in the logs and History
  //       training_loop().update_metrics({batch[1]}, {probs});    // the compiled metrics
  //     }
  //   };
  //   Model model(std::make_shared<MyModel>(inputs, outputs, "my_model"));
  //   model.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(), {metrics::SparseCategoricalAccuracy()});
  //   model.fit(data, 5);
  //
  // A custom step runs where the model's own plans run (the model's device): under a distribution strategy, only
  // the default step runs on the replicas; custom loops on replicas use distribute/custom_loop.h.
  virtual void train_step(const data::Element& batch);
  virtual void test_step(const data::Element& batch);

  // ---- device ----
  // Where the weights live and the plans run: the device given to to(), else default_device() (TOWER_DEVICE,
  // else GPU 0 when one is visible, else the CPU), chosen when first asked and kept. Under a distribution
  // strategy the replicas run on the strategy's devices instead.
  Device device() const;
  // Moves every weight, and the optimizer's slots once it has made them, to `device`; the following steps run
  // there. Weights saved on one device load on any other. Throws std::invalid_argument naming a device this
  // build or this machine does not have.
  void to(Device device);

  // ---- distribution (see distribution.h) ----
  // The strategy whose scope was active when the model was made, or when it was last compiled inside a scope;
  // null when neither happened inside a scope.
  const detail::DistributionPtr& distribution() const { return distribution_; }
  // The model's replicas under that strategy, made on first use; null without a strategy or under one that
  // runs the model unreplicated (the default strategy).
  detail::Replicas* replicas();
  // False on the workers of a multi-worker strategy other than the chief, which alone writes files and logs.
  bool is_chief() const { return !distribution_ || distribution_->is_chief(); }

  // ---- weights ----
  // Copies of every weight's value, in weights() order.
  std::vector<Tensor> get_weights() const;
  // Requires one tensor per weight with matching shapes; throws std::invalid_argument naming the weight.
  void set_weights(const std::vector<Tensor>& values);
  // Written atomically. A path ending in ".weights.h5" gets Keras 3's layout (io/keras_weights.h), which
  // Keras' model.load_weights reads; other ".h5" / ".hdf5" paths throw std::invalid_argument (Keras 3 writes
  // no legacy files either); any other path gets a Tower weights file (io/weights_file.h).
  void save_weights(const std::string& path) const;
  // ".weights.h5" (Keras 3) and ".h5" / ".hdf5" (Keras' legacy layout, e.g. Keras' applications weights)
  // files are matched to the model by structure as Keras does, whatever the layers are called
  // (io/keras_weights.h); any other path is a Tower weights file, matched by weight path when the file names
  // each of the model's weights once, else by position. A missing layer or a count or shape mismatch throws,
  // naming the file, the layer or weight and both counts or shapes, and leaves the model's weights unchanged.
  void load_weights(const std::string& path);
  // load_weights from an already read file (`path` names it in errors).
  void assign_weights(const io::WeightsFile& file, const std::string& path);

 protected:
  // For subclasses that make their graph later (Sequential).
  ModelImpl(std::string type, std::string name);
  void set_graph(std::vector<SymbolicTensor> inputs, std::vector<SymbolicTensor> outputs);
  // Read by inference calls on any thread while another may build the model (a Sequential's first data).
  bool has_graph() const { return graph_set_.load(std::memory_order_acquire); }
  void require_graph(const char* what) const;
  // After set_weights / load_weights: replicas holding their own copies of the variables take the new values.
  void weights_written();
  // An inference call's outputs, on the host or on the model's device; `what` names the call in errors.
  std::vector<Tensor> infer(const std::vector<Tensor>& inputs, bool on_host, const char* what);
  void check_inference_inputs(const std::vector<Tensor>& inputs, const char* what) const;
  friend class detail::TrainingLoop;

 private:
  Graph graph_;
  std::atomic<bool> graph_set_{false};  // graph_ has outputs
  std::vector<LayerPtr> layer_order_;  // layers() of graph_, in Keras' order
  std::unique_ptr<detail::TrainingLoop> training_loop_ = std::make_unique<detail::TrainingLoop>(*this);
  std::map<std::pair<Index, bool>, std::unique_ptr<Plan>> plans_;
  std::map<std::tuple<Index, int, bool>, std::unique_ptr<Plan>> tape_plans_;
  // plan_for(input_shapes, training)'s plans, the most recently used first.
  std::list<std::pair<std::pair<std::vector<Shape>, bool>, std::unique_ptr<Plan>>> shape_plans_;
  // The plan in `slot` for `options`, made when empty and remade when stale (the trainable weights changed).
  Plan& cached_plan(std::unique_ptr<Plan>& slot, PlanOptions options);
  mutable std::mutex device_mutex_;  // device_ is chosen by the first call that asks, from any thread
  mutable std::optional<Device> device_;
  mutable detail::ModelUse use_;
  detail::InferencePlans inference_plans_;
  detail::DistributionPtr distribution_ = detail::current_distribution();
  std::unique_ptr<detail::Replicas> replicas_;  // after plans_ and the graph: destroyed first
  bool replicas_made_ = false;
};

// Rebuilds a model from get_config() output (Functional, with its own trainable flag; Sequential), fresh weights.
std::shared_ptr<ModelImpl> model_from_config(const Config& serialized);

class SequentialImpl final : public ModelImpl {
 public:
  // Layers may start with an InputLayer, which fixes the input shape; otherwise the model is built by
  // build(), by a call on a symbolic tensor, or by the first data it sees (fit, evaluate, predict,
  // train_on_batch, test_on_batch); it may be compiled before.
  SequentialImpl(std::vector<LayerPtr> layers, std::string name);
  // Appends a layer; if the input shape is known it is called at once, so a mismatch throws here and the
  // layer is not added; a layer named like one of the model's throws std::invalid_argument, as in Keras.
  void add(LayerPtr layer);
  // Removes the last layer.
  void pop();
  // Fixes the input shape (batch dimension excluded) and builds every layer.
  void build_for(const Shape& input_shape) override;
  std::vector<LayerPtr> layers() const override { return layers_; }
  std::vector<std::string> output_names() const override;
  // Called on a symbolic tensor before it has an input shape, a Sequential is built for that tensor's shape.
  int num_inputs() const override { return 1; }
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  void build(const std::vector<Shape>& input_shapes) override;
  Config get_config() const override;

 private:
  void rebuild();
  std::shared_ptr<InputLayerImpl> input_layer_;
  std::vector<LayerPtr> layers_;
};

class Model {
 public:
  Model(std::vector<SymbolicTensor> inputs, std::vector<SymbolicTensor> outputs, std::string name = "");
  Model(const SymbolicTensor& input, const SymbolicTensor& output, std::string name = "");
  explicit Model(std::shared_ptr<ModelImpl> impl);

  ModelImpl& impl() const { return *impl_; }
  ModelImpl* operator->() const { return impl_.get(); }
  const std::shared_ptr<ModelImpl>& ptr() const { return impl_; }
  operator LayerPtr() const { return impl_; }

  const std::string& name() const { return impl_->name(); }
  SymbolicTensor operator()(const SymbolicTensor& x) const { return (*impl_)(x); }
  SymbolicTensors operator()(const std::vector<SymbolicTensor>& xs) const { return (*impl_)(xs); }
  const std::vector<SymbolicTensor>& inputs() const { return impl_->inputs(); }
  const std::vector<SymbolicTensor>& outputs() const { return impl_->outputs(); }
  std::vector<LayerPtr> layers() const { return impl_->layers(); }
  LayerPtr get_layer(const std::string& name) const { return impl_->get_layer(name); }
  std::vector<VariablePtr> weights() const { return impl_->weights(); }
  std::vector<VariablePtr> trainable_weights() const { return impl_->trainable_weights(); }
  std::vector<VariablePtr> non_trainable_weights() const { return impl_->non_trainable_weights(); }
  Index count_params() const { return impl_->count_params(); }
  bool trainable() const { return impl_->trainable(); }
  void set_trainable(bool trainable) { impl_->set_trainable(trainable); }

  // ---- training ----
  // Keras' compile: `metrics` are updated without sample weights, `weighted_metrics` with the batch's sample
  // weights (and fit's class weights); a weighted metric named like a metric is logged as "weighted_<name>".
  void compile(optimizers::OptimizerPtr optimizer, losses::LossPtr loss, std::vector<metrics::MetricPtr> metrics = {},
               std::vector<metrics::MetricPtr> weighted_metrics = {});
  void compile(optimizers::OptimizerPtr optimizer, std::vector<losses::LossPtr> losses,
               std::vector<std::vector<metrics::MetricPtr>> metrics = {}, std::vector<double> loss_weights = {},
               std::vector<std::vector<metrics::MetricPtr>> weighted_metrics = {});
  // A batched Dataset whose elements are (inputs..., targets..., [sample_weight]).
  callbacks::History fit(const data::Dataset& data, int epochs);
  callbacks::History fit(const data::Dataset& data, FitOptions options = {});
  // Tensors: batched by options.batch_size, shuffled each epoch unless options.shuffle is false; options.
  // validation_split as FitOptions describes.
  callbacks::History fit(const Tensor& x, const Tensor& y, FitOptions options = {});
  callbacks::Logs evaluate(const data::Dataset& data, EvaluateOptions options = {});
  callbacks::Logs evaluate(const Tensor& x, const Tensor& y, EvaluateOptions options = {});
  // Single-output models; see ModelImpl::predict for several outputs. Thread-safe (ModelImpl::predict_on_batch).
  Tensor predict(const Tensor& x, PredictOptions options = {});
  std::vector<Tensor> predict(const data::Dataset& data, PredictOptions options = {});
  // One batch's outputs on the host, from any thread (ModelImpl::predict_on_batch); the Tensor form for a model of
  // one input and one output.
  Tensor predict_on_batch(const Tensor& x) const;
  std::vector<Tensor> predict_on_batch(const std::vector<Tensor>& inputs) const { return impl_->predict_on_batch(inputs); }
  // model(x): Keras' model(x, training=False) on concrete tensors, the outputs on the model's device, from any
  // thread (ModelImpl::call).
  Tensor operator()(const Tensor& x) const;
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const { return impl_->call(inputs); }
  callbacks::Logs train_on_batch(const Tensor& x, const Tensor& y, const Tensor& sample_weight = Tensor());
  callbacks::Logs test_on_batch(const Tensor& x, const Tensor& y, const Tensor& sample_weight = Tensor());
  // The optimizer given to compile(); null before.
  optimizers::OptimizerPtr optimizer() const { return impl_->optimizer(); }

  // ---- weights and files ----
  std::vector<Tensor> get_weights() const { return impl_->get_weights(); }
  void set_weights(const std::vector<Tensor>& values) { impl_->set_weights(values); }
  void save_weights(const std::string& path) const { impl_->save_weights(path); }
  void load_weights(const std::string& path) { impl_->load_weights(path); }
  // The architecture (get_config) and the weights in one file, written atomically.
  void save(const std::string& path) const;
  // Rebuilds a model saved by save(); throws naming the file and the problem.
  static Model load(const std::string& path);

  // ---- device ----
  Device device() const { return impl_->device(); }
  // model.to(Device::cuda(0)), like PyTorch's module.to(device); see ModelImpl::to.
  void to(Device device) { impl_->to(device); }

  // Prints Keras' summary table to `os` (standard output by default).
  void summary(std::ostream& os) const { impl_->summary(os); }
  void summary() const;
  std::string summary_string() const;

 protected:
  std::shared_ptr<ModelImpl> impl_;
};

class Sequential : public Model {
 public:
  Sequential(std::vector<LayerPtr> layers = {}, std::string name = "");
  void add(LayerPtr layer) { seq().add(std::move(layer)); }
  void pop() { seq().pop(); }
  // Input shape without the batch dimension: model.build({28, 28, 1}).
  void build(const Shape& input_shape) { seq().build_for(input_shape); }

 private:
  SequentialImpl& seq() const { return static_cast<SequentialImpl&>(*impl_); }
};

}  // namespace tower
