#pragma once
// GlobalAveragePooling1D (keras.layers.GlobalAveragePooling1D): the mean over all steps of each channel. Input [batch,
// steps, channels] -> [batch, channels], or [batch, 1, channels] with keepdims. No weights. Runs on the backend's
// global pooling. Throws std::invalid_argument for data_format 'channels_first'; ShapeError for an input that is not
// rank 3 or has unknown channels. With a mask [batch, steps] the mean is over the kept steps only (Keras'); the output
// has no mask.
#include "api/engine/layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers {

struct GlobalAveragePooling1DOptions {
  std::string data_format = "channels_last";
  bool keepdims = false;
  std::string name;
  template <class V>
  void visit(V&& v) {
    v("data_format", data_format);
    v("keepdims", keepdims);
    v("name", name);
  }
};

class GlobalAveragePooling1DImpl final : public Layer {
 public:
  using Options = GlobalAveragePooling1DOptions;
  explicit GlobalAveragePooling1DImpl(Options options);
  const Options& options() const { return options_; }

  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  bool backward_needs_inputs() const override { return false; }
  bool backward_needs_outputs() const override { return false; }
  bool supports_masking() const override { return true; }
  bool uses_masks() const override { return true; }
  std::vector<SymbolicTensor> compute_mask(const std::vector<SymbolicTensor>&,
                                           const std::vector<SymbolicTensor>&) const override {
    return {SymbolicTensor()};
  }
  Config get_config() const override { return options_to_config(options_); }

 private:
  Options options_;
};

class GlobalAveragePooling1D : public LayerHolder<GlobalAveragePooling1DImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
