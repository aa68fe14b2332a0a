#pragma once
// Plan: a model's graph compiled for one batch size. Nested models are inlined, so the plan is one flat list
// of forward steps and, for training, their backward steps in reverse. Every intermediate buffer (activations,
// their gradients, temporaries for gradients that fan in) is sized and placed once in a single arena, with
// buffers whose lifetimes do not overlap sharing memory; the output of a layer that only renames its input's shape
// (Layer::output_is_view_of_input: Reshape, channels-last Flatten) is a view of the input's memory, and its
// forward step is skipped, unless it is one of the model's outputs, which always have memory of their own. Weight
// gradients live in one contiguous buffer, so a replica's gradients can be reduced with one all-reduce. After its
// first step a plan allocates nothing.
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "api/core/random.h"
#include "api/core/tensor.h"
#include "api/engine/layer.h"
#include "api/engine/step_values.h"

namespace tower {

struct PlanOptions {
  Index batch_size = 1;
  bool training = false;  // training behaviour of Dropout, BatchNormalization, ...
  bool backward = false;  // compile and allow backward()
  bool input_gradients = false;  // with backward: also compute gradients of the model's inputs (input_grad)
  Device device = Device::cpu();
  std::uint64_t seed = 0;  // seeds random layers (StepValues::seed); 0 draws one from the global generator
  ReplicaContext* replica = nullptr;  // handed to every layer (ForwardContext::replica); set by strategies
  // The inputs' shapes, batch dimension included, for a model with inputs of unknown sizes besides the batch
  // (Input({-1}): sequences of any length); empty for a model whose inputs' sizes are all known. With them every
  // step's output shapes come from its layer's compute_output_shape.
  std::vector<Shape> input_shapes;
};

class Plan {
 public:
  // `model` is a layer with a graph (a Model). Throws std::invalid_argument for a layer without one, and
  // ShapeError if the model has an input whose batch size is fixed to another value, an input of unknown size
  // without options.input_shapes, or input_shapes that do not fit the inputs.
  Plan(const Layer& model, PlanOptions options);
  ~Plan();
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;

  const PlanOptions& options() const { return options_; }
  Index batch_size() const { return options_.batch_size; }
  int num_inputs() const { return static_cast<int>(input_ids_.size()); }
  int num_outputs() const { return static_cast<int>(output_ids_.size()); }
  // Shape expected for input i: [batch_size, ...].
  const Shape& input_shape(int i) const;

  // Binds input i for the following runs; no copy. Throws ShapeError for a wrong shape or device.
  void set_input(int i, const Tensor& x);
  // refresh_step_values(), then run_forward().
  void forward();
  // The forward steps, with the step values as last refreshed: the part of a step a CUDA graph captures, the
  // values being refreshed outside it before each replay.
  void run_forward();
  // Draws the next step's values (Dropout's seeds) from their sources and uploads them (StepValues::refresh):
  // the draws forward() makes, in the same order.
  void refresh_step_values() { step_values_.refresh(); }
  // Its seed and steps are part of a resumable training checkpoint.
  const StepValues& step_values() const { return step_values_; }
  StepValues& step_values() { return step_values_; }
  // Valid until the next forward().
  const Tensor& output(int i) const;
  // Output i's mask (SymbolicTensor::mask: 1 keeps a position, 0 masks it), undefined when it has none; valid
  // until the next forward().
  const Tensor& output_mask(int i) const;
  // The caller writes dLoss/dOutput i here before backward().
  Tensor& output_grad(int i);
  // Requires options().backward and a preceding forward().
  void backward();
  // True when output i comes from a layer that ends in a softmax over the last axis (softmax_output()) and
  // feeds no other step, so a loss may hand backward() the gradient with respect to the softmax's input.
  bool output_is_fusable_softmax(int i) const;
  // From now on output_grad(i) holds the gradient with respect to the softmax's input (requires
  // output_is_fusable_softmax(i)).
  void set_output_grad_is_logits(int i, bool value);
  // dLoss/dInput i after backward(); requires options().input_gradients.
  const Tensor& input_grad(int i) const;

  // The model's trainable weights when the plan was made, and their gradients after backward(): views of
  // flat_grads(), in the same order.
  const std::vector<VariablePtr>& trainable_weights() const { return trainable_; }
  const std::vector<Tensor>& weight_grads() const { return weight_grads_; }
  const Tensor& flat_grads() const { return flat_grads_; }
  // During each backward(), calls ready(k) for every trainable weight k (an index into trainable_weights()) as
  // soon as its gradient is final: right after the last step that writes or adds to it, so a strategy can start
  // reducing those gradients while the rest of backward runs (DistributedDataParallel's gradient hooks).
  // Gradients no step writes (they stay zero) are reported before the first step. Each k once per backward(), in
  // the same order every time; within a step, in increasing k. An empty function (the default) turns it off.
  void set_gradient_ready_callback(std::function<void(int)> ready) { gradient_ready_ = std::move(ready); }

  std::size_t arena_bytes() const { return arena_bytes_; }
  // The bytes the same buffers would take without sharing.
  std::size_t unshared_bytes() const { return unshared_bytes_; }
  int num_steps() const { return static_cast<int>(steps_.size()); }
  // A number no other plan of this process has had: a remade plan at the same address is another plan.
  std::uint64_t serial() const { return serial_; }

 private:
  struct Step;
  struct Value;
  struct Accumulate {
    int target = -1, source = -1;  // value ids (or -1 - weight index for weight-gradient targets)
  };

  // output_mask_ids (the top-level graph only): the outputs' masks, -1 for none.
  void inline_graph(const Graph& graph, const std::vector<int>& input_ids, std::vector<int>& output_ids,
                    std::vector<int>* output_mask_ids);
  int new_value(const Shape& shape);
  void plan_backward();
  void assign_memory();
  Tensor& value_tensor(int id);
  void require_inputs_bound() const;

  PlanOptions options_;
  std::vector<std::unique_ptr<Step>> steps_;
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<int> input_ids_, output_ids_, output_mask_ids_, output_grad_ids_, input_grad_ids_;
  std::vector<Shape> input_shapes_;
  bool shapes_from_layers_ = false;  // the inputs' shapes are given (PlanOptions::input_shapes)
  std::vector<VariablePtr> trainable_;
  std::vector<Tensor> weight_grads_;
  Tensor flat_grads_;
  std::vector<int> ready_before_backward_;  // weights no step writes
  std::function<void(int)> gradient_ready_;
  std::shared_ptr<Storage> arena_;
  std::size_t arena_bytes_ = 0, unshared_bytes_ = 0;
  StepValues step_values_;
  std::uint64_t serial_;
  bool forward_done_ = false;
};

}  // namespace tower
