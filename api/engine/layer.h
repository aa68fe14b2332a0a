#pragma once
// Layer: the unit of computation, with Keras' contract.
//
//   build(input_shapes)            creates weights with add_weight(name, shape, initializer, trainable); called
//                                  once, on the first call, with the batch dimension unknown (-1).
//   compute_output_shape(shapes)   pure; validates the inputs and throws ShapeError naming the layer and the
//                                  shapes seen and expected.
//   forward(ctx)                   writes ctx.outputs (pre-allocated by the plan) from ctx.inputs.
//   backward(ctx)                  writes ctx.grad_inputs (undefined entries are not wanted) and ctx.weight_grads
//                                  (one per trainable weight, in trainable_weights() order; empty when the layer
//                                  is frozen). Both are overwritten, never accumulated.
//   get_config()                   the layer's arguments; from_config (the registry) rebuilds the layer.
//
// Per-call state that backward needs beyond inputs and outputs (a dropout mask, batch statistics, a oneDNN
// primitive) lives in ctx.state, which belongs to the graph node, so a layer called twice keeps two states.
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/core/random.h"
#include "api/core/tensor.h"
#include "api/engine/node.h"
#include "api/initializers/initializers.h"
#include "api/io/config.h"
#include "api/engine/replica_context.h"
#include "api/engine/step_values.h"
#include "api/regularizers/regularizers.h"

namespace tower {

// A weight: a named tensor owned by a layer.
struct Variable {
  std::string name;  // "kernel"
  std::string path;  // "dense/kernel"
  Tensor value;
  bool trainable = true;
  regularizers::Regularizer regularizer;
};
using VariablePtr = std::shared_ptr<Variable>;

// One group of a Keras .weights.h5 file below a layer's group (Layer::keras_weight_groups): `path` ("" for the
// layer's group itself, "cell", "forward_layer/cell"), the "name" attribute of its "vars" group, and the variables
// that group holds as datasets 0, 1, ... (none: Keras writes the group empty).
struct KerasWeightGroup {
  std::string path;
  std::string name;
  std::vector<VariablePtr> variables;
};

// Thrown when shapes do not fit a layer; the message names the layer and the shapes.
class ShapeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Base of what a layer keeps per graph node between forward and backward.
struct LayerState {
  virtual ~LayerState() = default;
};

struct ForwardContext {
  std::span<const Tensor> inputs;
  std::span<Tensor> outputs;
  // For a layer that uses_masks(): the masks of its inputs, parallel to inputs (an undefined tensor where an input
  // has none); empty when no input has one. 1 keeps a position, 0 masks it.
  std::span<const Tensor> masks;
  bool training = false;
  std::unique_ptr<LayerState>* state = nullptr;
  // The plan's per-step values. A layer whose ops take an argument that changes from step to step (a seed)
  // registers a source for it once, on its first forward, keeps the slot in its state, and hands its ops
  // step_values->device_value(slot) on every forward: never the value itself, which a captured graph would
  // keep for good. Random layers derive their values from step_values->seed() and step().
  StepValues* step_values = nullptr;
  ReplicaContext* replica = nullptr;  // the replica running this plan under a distribution strategy, else null

  // The node's state, created on first use (so steady-state steps allocate nothing).
  template <class S> S& get_state() const {
    if (!*state) *state = std::make_unique<S>();
    return static_cast<S&>(**state);
  }
};

struct BackwardContext {
  std::span<const Tensor> inputs;   // undefined unless the layer's backward_needs_inputs()
  std::span<const Tensor> outputs;  // undefined unless the layer's backward_needs_outputs()
  std::span<const Tensor> grad_outputs;
  std::span<Tensor> grad_inputs;    // an undefined entry: that gradient is not needed
  std::span<Tensor> weight_grads;   // parallel to trainable_weights(); empty when nothing is trainable
  std::span<const Tensor> masks;    // as in ForwardContext (always available)
  bool training = true;
  // Set only for layers whose softmax_output() is true: grad_outputs[0] is already the gradient with respect
  // to the softmax's input (a loss fused the softmax into its gradient), so the softmax backward is skipped.
  bool output_grad_is_logits = false;
  std::unique_ptr<LayerState>* state = nullptr;
  ReplicaContext* replica = nullptr;  // as in ForwardContext

  template <class S> S& get_state() const {
    if (!*state) *state = std::make_unique<S>();
    return static_cast<S&>(**state);
  }
};

class Layer : public std::enable_shared_from_this<Layer> {
 public:
  // `type` is the Keras class name ("Dense"); an empty `name` gets a unique one from the type ("dense_1").
  Layer(std::string type, std::string name);
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  const std::string& name() const { return name_; }
  const std::string& type() const { return type_; }

  // Records a node; builds the layer on its first call. Throws ShapeError for inputs that do not fit.
  SymbolicTensor operator()(const SymbolicTensor& input);
  SymbolicTensors operator()(const std::vector<SymbolicTensor>& inputs);

  // Builds the layer for inputs of these shapes (batch dimension -1) unless it is built already. A build that
  // throws leaves the layer unbuilt, without the weights it made, so it can be built again.
  void ensure_built(const std::vector<Shape>& input_shapes);
  bool built() const { return built_; }
  virtual void build(const std::vector<Shape>& input_shapes) { (void)input_shapes; }
  virtual std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const = 0;
  virtual void forward(const ForwardContext& ctx) = 0;
  virtual void backward(const BackwardContext& ctx) = 0;
  // What backward reads, so the plan can free the rest early.
  virtual bool backward_needs_inputs() const { return true; }
  virtual bool backward_needs_outputs() const { return false; }
  // True when, for inputs of these shapes, the layer's only output is its only input's values in the same order
  // under another shape (Reshape; Flatten of channels-last data): a plan then makes the output a view of the
  // input's memory and skips forward() (but for a model's outputs, which it copies), so forward() must work as
  // well. backward() runs as usual.
  virtual bool output_is_view_of_input(const std::vector<Shape>& input_shapes) const {
    (void)input_shapes;
    return false;
  }
  // Layers whose forward differs between training and inference (Dropout, BatchNormalization).
  virtual bool has_training_behavior() const { return false; }
  // True when the layer's only output is a softmax over the last axis of an internal value and backward()
  // honours BackwardContext::output_grad_is_logits (fused softmax + cross-entropy).
  virtual bool softmax_output() const { return false; }
  // The number of inputs the layer takes, or -1 for any number >= 1 (merge layers).
  virtual int num_inputs() const { return 1; }
  // A layer made of other layers (a model) returns its graph, which a plan inlines; other layers return null.
  virtual const Graph* graph() const { return nullptr; }

  // Keras' masks (Embedding's mask_zero, Masking), a float tensor per sequence of 1s (kept) and 0s (masked steps)
  // that follows the tensors it belongs to (SymbolicTensor::mask) and reaches the losses and metrics, which skip the
  // masked steps. A layer that supports_masking() gives its outputs the masks compute_mask() returns; one that does
  // not drops a mask that reaches it, with Keras' warning.
  virtual bool supports_masking() const { return false; }
  // The outputs' masks (undefined: none), given the inputs and their masks (undefined where none); made of symbolic
  // ops (api/engine/symbolic_ops.h) or mask_op (custom_layer.h), whose nodes the graph marks as computing masks. Default (Keras'
  // Layer.compute_mask): the first input's mask for every output.
  virtual std::vector<SymbolicTensor> compute_mask(const std::vector<SymbolicTensor>& inputs,
                                                   const std::vector<SymbolicTensor>& masks) const;
  // True when forward() (and backward()) read ctx.masks: the plan computes the masks of the layer's inputs first.
  virtual bool uses_masks() const { return false; }

  // Where Keras' .weights.h5 files keep this layer's variables: groups below the layer's own group, each with a
  // "vars" group holding its variables as datasets 0, 1, ... (KerasWeightGroup). The default: a weight named
  // "<sublayer>/<name>" (MultiHeadAttention's "query/kernel") in the group keras_sublayer_group(sublayer) (default:
  // the sublayer's name), named after the sublayer; the others in keras_variables_group(): "" (the layer's own "vars"),
  // or the group of the sublayer that owns them in Keras ("cell" for the recurrent layers, named "<class>_cell"),
  // beside an empty "vars" of the layer's own. Variables in Keras' order: trainable ones, then the others, each in
  // creation order. Wrappers (TimeDistributed, Bidirectional) put their layers' groups below their own.
  virtual std::vector<KerasWeightGroup> keras_weight_groups() const;
  virtual std::string keras_variables_group() const { return ""; }
  virtual std::string keras_sublayer_group(const std::string& sublayer) const { return sublayer; }

  virtual Config get_config() const = 0;
  // {"class_name": type(), "config": get_config() + trainable}.
  Config serialize() const;

  // Weights in creation order (a model: its layers' weights, each once, in layer order).
  virtual std::vector<VariablePtr> weights() const { return weights_; }
  virtual std::vector<VariablePtr> trainable_weights() const;
  virtual std::vector<VariablePtr> non_trainable_weights() const;
  Index count_params() const;
  // A frozen layer (trainable = false) gets no weight gradients; BatchNormalization also runs in inference mode.
  bool trainable() const { return trainable_; }
  virtual void set_trainable(bool trainable) { trainable_ = trainable; }

  // "Layer 'dense_1' (Dense): " for error messages.
  std::string where() const;

 protected:
  VariablePtr add_weight(const std::string& name, const Shape& shape,
                         const initializers::Initializer& initializer = "glorot_uniform", bool trainable = true,
                         const regularizers::Regularizer& regularizer = {});
  // Throws ShapeError with where() prefixed.
  [[noreturn]] void shape_error(const std::string& what) const;
  void check_num_inputs(const std::vector<Shape>& shapes, int expected) const;
  // The name actually used (for options structs whose name field was empty).
  void set_name(std::string name) { name_ = std::move(name); }
  // Back to unbuilt, without weights: for a layer whose first call failed after its build (a CustomLayer whose
  // call() does not fit the shapes it was built for), so a call on other shapes builds it afresh.
  void unbuild();

 private:
  std::string type_;
  std::string name_;
  bool built_ = false;
  bool trainable_ = true;
  std::vector<VariablePtr> weights_;
};

using LayerPtr = std::shared_ptr<Layer>;

// `inner`'s Keras weight groups below `path` of a wrapper's group (TimeDistributed's "layer", Bidirectional's
// "forward_layer"): the paths prefixed, the names and variables as they are.
std::vector<KerasWeightGroup> keras_weight_groups_below(const std::string& path, const Layer& inner);

// Returns a name unique in this process for a layer of this Keras type: "Conv2D" -> conv2d, conv2d_1, ...
std::string unique_layer_name(const std::string& type);
// Resets the name counters (Keras' clear_session).
void clear_session();
// Keras' snake_case of a class name: "BatchNormalization" -> "batch_normalization", "Conv2D" -> "conv2d".
std::string to_snake_case(const std::string& type);

// A typed, shared handle to a layer: `layers::Dense` is a LayerHolder<layers::DenseImpl>. It converts to
// LayerPtr, calls like the layer, and -> reaches the layer's own members.
template <class Impl>
class LayerHolder {
 public:
  using Options = typename Impl::Options;
  LayerHolder() : impl_(std::make_shared<Impl>(Options{})) {}
  LayerHolder(Options options) : impl_(std::make_shared<Impl>(std::move(options))) {}
  explicit LayerHolder(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

  SymbolicTensor operator()(const SymbolicTensor& x) const { return (*impl_)(x); }
  SymbolicTensors operator()(const std::vector<SymbolicTensor>& xs) const { return (*impl_)(xs); }
  Impl* operator->() const { return impl_.get(); }
  Impl& operator*() const { return *impl_; }
  const std::shared_ptr<Impl>& ptr() const { return impl_; }
  operator LayerPtr() const { return impl_; }

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace tower
