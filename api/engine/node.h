#pragma once
// The symbolic graph: Input() makes a SymbolicTensor; calling a layer on SymbolicTensors records a Node
// (the layer and its inputs) whose outputs are new SymbolicTensors. Nothing is computed; shapes are checked
// as each node is made, so a bad graph fails where it is written.
#include <memory>
#include <string>
#include <vector>

#include "api/core/shape.h"

namespace tower {

class Layer;
class Node;

class SymbolicTensor {
 public:
  SymbolicTensor() = default;
  SymbolicTensor(std::shared_ptr<Node> node, int index) : node_(std::move(node)), index_(index) {}

  bool defined() const { return node_ != nullptr; }
  // Shape with the batch dimension unknown (-1).
  const Shape& shape() const;
  Node* node() const { return node_.get(); }
  const std::shared_ptr<Node>& node_ptr() const { return node_; }
  int index() const { return index_; }
  // The producing layer.
  Layer& layer() const;
  // "<layer name>" for a single-output layer, "<layer name>[i]" otherwise.
  std::string name() const;
  // Keras' mask of this tensor (Layer::compute_mask): a float tensor of 1s (kept) and 0s (masked) of the shape of
  // the first dimensions of this one ([N, T] for a sequence [N, T, C]), or undefined when it has none.
  SymbolicTensor mask() const;
  bool operator==(const SymbolicTensor& o) const { return node_ == o.node_ && index_ == o.index_; }

 private:
  std::shared_ptr<Node> node_;
  int index_ = 0;
};

// What calling a layer on a list returns: the layer's outputs. A single-output result converts to its one
// tensor, so `auto y = layers::Add()({a, b}); layers::Dense({.units = 4})(y);` reads as in Keras.
class SymbolicTensors : public std::vector<SymbolicTensor> {
 public:
  using std::vector<SymbolicTensor>::vector;
  SymbolicTensors(std::vector<SymbolicTensor> v) : std::vector<SymbolicTensor>(std::move(v)) {}
  // Throws std::logic_error when there is not exactly one tensor.
  operator SymbolicTensor() const;
  const Shape& shape() const { return static_cast<SymbolicTensor>(*this).shape(); }
};

class Node {
 public:
  Node(std::shared_ptr<Layer> layer, std::vector<SymbolicTensor> inputs, std::vector<Shape> output_shapes);
  const std::shared_ptr<Layer>& layer() const { return layer_; }
  const std::vector<SymbolicTensor>& inputs() const { return inputs_; }
  const std::vector<Shape>& output_shapes() const { return output_shapes_; }
  int num_outputs() const { return static_cast<int>(output_shapes_.size()); }
  // The masks of the inputs handed to a layer that reads them (Layer::uses_masks): parallel to inputs(), undefined
  // where an input has none; empty when the layer reads none. A plan computes them before the node and hands them
  // to the layer as ForwardContext::masks.
  const std::vector<SymbolicTensor>& input_masks() const { return input_masks_; }
  void set_input_masks(std::vector<SymbolicTensor> masks) { input_masks_ = std::move(masks); }
  // The masks of the outputs (undefined: none); set once, when the layer is called.
  const SymbolicTensor& output_mask(int i) const;
  void set_output_masks(std::vector<SymbolicTensor> masks) { output_masks_ = std::move(masks); }
  // True for the nodes that compute masks (made inside Layer::compute_mask): they are part of the graph a plan
  // runs, but not of a model's layers, config or summary, and nothing is differentiated through them.
  bool computes_mask() const { return computes_mask_; }
  // Every node made on this thread while a MaskScope lives computes a mask.
  class MaskScope {
   public:
    MaskScope();
    ~MaskScope();
    MaskScope(const MaskScope&) = delete;
    MaskScope& operator=(const MaskScope&) = delete;

   private:
    bool previous_;
  };
  // Unique, increasing in creation order (so a sort by id is a topological order).
  std::uint64_t id() const { return id_; }

 private:
  std::shared_ptr<Layer> layer_;
  std::vector<SymbolicTensor> inputs_;
  std::vector<Shape> output_shapes_;
  std::vector<SymbolicTensor> input_masks_, output_masks_;
  bool computes_mask_ = false;
  std::uint64_t id_;
};

// A functional graph: its input and output tensors, and every node from the inputs to the outputs in
// topological order (the inputs' nodes included). A model is a layer that has one (Layer::graph()).
struct Graph {
  std::vector<SymbolicTensor> inputs, outputs;
  std::vector<std::shared_ptr<Node>> nodes;
};

}  // namespace tower
