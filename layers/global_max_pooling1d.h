#pragma once
// GlobalMaxPooling1D (keras.layers.GlobalMaxPooling1D): the maximum over all steps of each channel. Input [batch,
// steps, channels] -> [batch, channels], or [batch, 1, channels] with keepdims. No weights. Runs on the backend's
// global pooling. Throws std::invalid_argument for data_format 'channels_first'; ShapeError for an input that is not
// rank 3 or has unknown channels. As in Keras, it does not support masks: a mask reaching it is dropped, with Keras'
// warning (GlobalAveragePooling1D averages the kept steps instead).
#include "api/engine/layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers {

struct GlobalMaxPooling1DOptions {
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

class GlobalMaxPooling1DImpl final : public Layer {
 public:
  using Options = GlobalMaxPooling1DOptions;
  explicit GlobalMaxPooling1DImpl(Options options);
  const Options& options() const { return options_; }

  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  bool backward_needs_inputs() const override { return true; }
  bool backward_needs_outputs() const override { return true; }
  Config get_config() const override { return options_to_config(options_); }

 private:
  Options options_;
};

class GlobalMaxPooling1D : public LayerHolder<GlobalMaxPooling1DImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
