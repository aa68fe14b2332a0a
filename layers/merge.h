#pragma once
// Merge: the base of the layers that combine two or more inputs (keras.layers.Add, Subtract, Multiply,
// Average, Concatenate), like Keras' base_merge.Merge. Inputs must have exactly the same shape (no
// broadcasting); Concatenate relaxes that along its axis.
#include <string>
#include <vector>

#include "api/engine/layer.h"

namespace tower::layers {

class Merge : public Layer {
 public:
  int num_inputs() const override { return -1; }
  // Throws ShapeError, naming the layer and every input shape, for fewer than two inputs or shapes that differ.
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;

 protected:
  using Layer::Layer;
  // Throws ShapeError for fewer than `min` inputs (or a count other than `min` when `exact`).
  void check_input_count(const std::vector<Shape>& input_shapes, int min, bool exact = false) const;
  // "[(None, 3), (None, 4)]".
  static std::string shapes_to_string(const std::vector<Shape>& shapes);
};

}  // namespace tower::layers
