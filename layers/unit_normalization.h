#pragma once
// UnitNormalization (keras.layers.UnitNormalization): each example scaled to unit L2 norm over `axis`:
//   y = x * min(rsqrt(sum(x^2 over axis)), 1e12)        (Keras' ops.normalize with epsilon 1e-12)
// Any input [N, ...]; the output has the input's shape. `axis` counts the batch axis as 0 (negative from the end),
// one axis or several, never the batch axis. No weights. Computed with tower::ops.
#include "api/engine/custom_layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers {

struct UnitNormalizationOptions {
  std::vector<int> axis = {-1};  // Keras' int or list
  std::string name;
  template <class V>
  void visit(V&& v) {
    v("axis", axis);
    v("name", name);
  }
};

class UnitNormalizationImpl final : public CustomLayer {
 public:
  using Options = UnitNormalizationOptions;
  // Keeps the mask of its input (Keras' supports_masking).
  bool supports_masking() const override { return true; }
  // Throws std::invalid_argument if axis is empty.
  explicit UnitNormalizationImpl(Options options);
  const Options& options() const { return options_; }

  // Throws ShapeError for an axis out of range or the batch axis.
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  std::vector<Tensor> call(const std::vector<Tensor>& inputs, bool training) override;
  int num_inputs() const override { return 1; }
  Config get_config() const override { return options_to_config(options_); }

 private:
  std::vector<int> axes_for(const Shape& shape) const;

  Options options_;
};

class UnitNormalization : public LayerHolder<UnitNormalizationImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
