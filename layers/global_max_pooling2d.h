#pragma once
// GlobalMaxPooling2D (keras.layers.GlobalMaxPooling2D): the maximum over all spatial positions of each channel.
// Input [batch, height, width, channels] -> [batch, channels], or [batch, 1, 1, channels] with keepdims.
// No weights. Throws std::invalid_argument for data_format 'channels_first'.
#include "api/engine/layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers {

struct GlobalMaxPooling2DOptions {
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

class GlobalMaxPooling2DImpl final : public Layer {
 public:
  using Options = GlobalMaxPooling2DOptions;
  explicit GlobalMaxPooling2DImpl(Options options);
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

class GlobalMaxPooling2D : public LayerHolder<GlobalMaxPooling2DImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
