#pragma once
// Models: the functional Model(inputs, outputs) and Sequential. Both are handles (copies share one model,
// as Python references do) over a ModelImpl, which is itself a Layer, so a model can be called on symbolic
// tensors inside another model.
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "api/models/input_layer.h"
#include "api/models/layer.h"

namespace tower {

class ModelImpl : public Layer {
 public:
  // Validates the graph: every output must be computable from `inputs` alone (else "graph disconnected",
  // naming the missing input), inputs must be Input() tensors, and no model may contain itself.
  ModelImpl(std::vector<SymbolicTensor> inputs, std::vector<SymbolicTensor> outputs, std::string name);

  const std::vector<SymbolicTensor>& inputs() const { return inputs_; }
  const std::vector<SymbolicTensor>& outputs() const { return outputs_; }
  // Every node from the inputs to the outputs, in topological order (input nodes included).
  const std::vector<std::shared_ptr<Node>>& nodes() const { return nodes_; }
  // Distinct layers in graph order; Keras lists a functional model's InputLayers, not a Sequential's.
  virtual std::vector<LayerPtr> layers() const;
  // Throws std::invalid_argument listing the layer names when there is none of that name.
  LayerPtr get_layer(const std::string& name) const;

  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  int num_inputs() const override { return static_cast<int>(inputs_.size()); }
  // A nested model never runs as one step: the plan inlines its graph.
  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  bool has_training_behavior() const override;
  std::vector<VariablePtr> weights() const override;
  std::vector<VariablePtr> trainable_weights() const override;
  std::vector<VariablePtr> non_trainable_weights() const override;
  void set_trainable(bool trainable) override;
  Config get_config() const override;

  // Keras' summary table.
  void summary(std::ostream& os, int line_length = 0) const;

 protected:
  // For subclasses that make their graph later (Sequential).
  ModelImpl(std::string type, std::string name);
  void set_graph(std::vector<SymbolicTensor> inputs, std::vector<SymbolicTensor> outputs);
  bool has_graph() const { return !outputs_.empty(); }
  void require_graph(const char* what) const;

 private:
  std::vector<SymbolicTensor> inputs_, outputs_;
  std::vector<std::shared_ptr<Node>> nodes_;
};

class SequentialImpl final : public ModelImpl {
 public:
  // Layers may start with an InputLayer, which fixes the input shape; otherwise the model is built by
  // build() (or by the first data it sees).
  SequentialImpl(std::vector<LayerPtr> layers, std::string name);
  // Appends a layer; if the input shape is known it is called at once, so a mismatch throws here and the
  // layer is not added.
  void add(LayerPtr layer);
  // Removes the last layer.
  void pop();
  // Fixes the input shape (batch dimension excluded) and builds every layer.
  void build_for(const Shape& input_shape);
  std::vector<LayerPtr> layers() const override { return layers_; }
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
  std::vector<SymbolicTensor> operator()(const std::vector<SymbolicTensor>& xs) const { return (*impl_)(xs); }
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
