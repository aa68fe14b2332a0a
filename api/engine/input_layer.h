#pragma once
// InputLayer and Input(): the entry points of a graph (keras.Input / keras.layers.InputLayer).
#include <optional>

#include "api/engine/layer.h"

namespace tower {

struct InputLayerOptions {
  Shape shape;  // without the batch dimension, e.g. {28, 28, 1}; -1 for a size known only from the data ({-1}: any length)
  std::optional<Index> batch_size;  // none: any batch size
  std::string name;
  template <class V> void visit(V&& v) {
    v("shape", shape);
    v("batch_size", batch_size);
    v("name", name);
  }
};

class InputLayerImpl final : public Layer {
 public:
  using Options = InputLayerOptions;
  explicit InputLayerImpl(Options options);
  // The graph's input tensor (the same one on every call while it is referenced).
  SymbolicTensor output();
  Shape batch_shape() const;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  int num_inputs() const override { return 0; }
  Config get_config() const override;

 private:
  Options options_;
  std::weak_ptr<Node> node_;  // weak: the node owns this layer
};

class InputLayer : public LayerHolder<InputLayerImpl> {
 public:
  using LayerHolder::LayerHolder;
};

// A symbolic graph input of `shape` (batch dimension excluded): Input({28, 28, 1}).
SymbolicTensor Input(Shape shape, std::string name = "");

}  // namespace tower
