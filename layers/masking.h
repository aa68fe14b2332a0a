#pragma once
// Masking (keras.layers.Masking): marks the steps of a sequence [N, T, ...] whose features all equal mask_value as
// masked. The output is the input with those steps zeroed, and its mask (Layer::compute_mask) is 1 where some feature
// differs from mask_value, [N, T]; the layers after it (recurrent layers, attention, GlobalAveragePooling1D) and the
// losses and metrics skip the masked steps. No weights. Computed with tower::ops.
#include "api/engine/custom_layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers {

struct MaskingOptions {
  float mask_value = 0.0f;
  std::string name;
  template <class V>
  void visit(V&& v) {
    v("mask_value", mask_value);
    v("name", name);
  }
};

class MaskingImpl final : public CustomLayer {
 public:
  using Options = MaskingOptions;
  explicit MaskingImpl(Options options);
  const Options& options() const { return options_; }

  // Throws ShapeError for an input of rank below 2.
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  std::vector<Tensor> call(const std::vector<Tensor>& inputs, bool training) override;
  int num_inputs() const override { return 1; }
  bool supports_masking() const override { return true; }
  std::vector<SymbolicTensor> compute_mask(const std::vector<SymbolicTensor>& inputs,
                                           const std::vector<SymbolicTensor>& masks) const override;
  Config get_config() const override { return options_to_config(options_); }

 private:
  Options options_;
};

class Masking : public LayerHolder<MaskingImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
