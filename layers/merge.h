#pragma once
// Merge: the base of the layers that combine two or more inputs (keras.layers.Add, Subtract, Multiply, Average,
// Maximum, Minimum, Concatenate), like Keras' base_merge.Merge. The element-wise ones broadcast as Keras' do: the
// batch axes must agree, the other axes are aligned at their ends (an input of lower rank is expanded after its
// batch axis), and an axis of size 1 stretches to the others' size, so [N, C] multiplies [N, H, W, C] (a
// squeeze-and-excitation block) and [N, 1, C] adds to [N, T, C]. Concatenate requires equal shapes off its axis.
#include <span>
#include <string>
#include <vector>

#include "api/engine/layer.h"

namespace tower::backend {
enum class BinaryOp;
}

namespace tower::layers {

class Merge : public Layer {
 public:
  int num_inputs() const override { return -1; }
  // Keras' merge of masks: kept where every input that has a mask keeps the position.
  bool supports_masking() const override { return true; }
  std::vector<SymbolicTensor> compute_mask(const std::vector<SymbolicTensor>& inputs,
                                           const std::vector<SymbolicTensor>& masks) const override;
  // Keras' broadcast of the inputs. Throws ShapeError, naming the layer and every input shape, for fewer than two
  // inputs, batch sizes that differ, or axes that do not broadcast.
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;

 protected:
  using Layer::Layer;
  // Throws ShapeError for fewer than `min` inputs (or a count other than `min` when `exact`).
  void check_input_count(const std::vector<Shape>& input_shapes, int min, bool exact = false) const;
  // "[(None, 3), (None, 4)]".
  static std::string shapes_to_string(const std::vector<Shape>& shapes);

  // Whether every input has the output's shape (no broadcasting: the plain element-wise paths).
  static bool same_shapes(std::span<const Tensor> inputs, const Shape& out);
  // y = ((x0 op x1) op x2) ..., every input broadcast to y's shape.
  static void combine(backend::BinaryOp op, std::span<const Tensor> inputs, const Tensor& y);
  // dx = dy summed over the axes along which dx's input was broadcast to dy's shape (dy itself when none).
  static void reduce_to(const Tensor& dy, Tensor dx);
  // y = a op b, b of y's shape and a broadcast to it as an input of this layer.
  static void apply(backend::BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& y);
  // The backward of Maximum and Minimum (backward_needs_outputs): at each position the gradient goes to the first
  // input holding the output's value, as TensorFlow's (tf.maximum gives a tie to its first operand), summed onto
  // that input's shape.
  static void select_backward(const BackwardContext& ctx);
};

}  // namespace tower::layers
