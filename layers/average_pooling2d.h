#pragma once
// AveragePooling2D (keras.layers.AveragePooling2D): the mean over pool_size windows of an NHWC image, moved by
// strides. Input [batch, height, width, channels] -> [batch, out_height, out_width, channels], with TF's sizes:
// 'valid' out = (in - pool) / stride + 1; 'same' out = ceil(in / stride), where each window divides by its
// count of input elements, padding excluded (TF/Keras semantics). No weights.
// Throws std::invalid_argument for a non-positive pool_size or strides, a padding other than 'valid' or
// 'same', or data_format 'channels_first'.
#include <optional>

#include "api/engine/layer.h"
#include "api/engine/layer_options.h"
#include "layers/pooling_utils.h"

namespace tower::layers {

struct AveragePooling2DOptions {
  Size2 pool_size = 2;
  std::optional<Size2> strides;  // none: pool_size
  std::string padding = "valid";
  std::string data_format = "channels_last";
  std::string name;
  template <class V>
  void visit(V&& v) {
    v("pool_size", pool_size);
    v("strides", strides);
    v("padding", padding);
    v("data_format", data_format);
    v("name", name);
  }
};

class AveragePooling2DImpl final : public Layer {
 public:
  using Options = AveragePooling2DOptions;
  explicit AveragePooling2DImpl(Options options);
  const Options& options() const { return options_; }

  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  bool backward_needs_inputs() const override { return false; }
  Config get_config() const override { return options_to_config(options_); }

 private:
  Options options_;
  detail::PoolGeometry geometry_;
};

class AveragePooling2D : public LayerHolder<AveragePooling2DImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
