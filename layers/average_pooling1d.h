#pragma once
// AveragePooling1D (keras.layers.AveragePooling1D): the mean over pool_size windows of a sequence, moved by strides.
// Input [batch, steps, channels] -> [batch, out_steps, channels], with TF's sizes: 'valid' out = (steps - pool) /
// stride + 1; 'same' out = ceil(steps / stride), each window's mean taken over its steps inside the sequence (the
// padding not counted). An unknown (-1) number of steps stays unknown. No weights; the gradient is spread evenly over
// each window's steps. Runs on the backend's 2-D pooling over [batch, 1, steps, channels] views of the same memory.
// Throws std::invalid_argument for a non-positive pool_size or strides, a padding other than 'valid' or 'same', or
// data_format 'channels_first'; ShapeError for an input that is not rank 3, has unknown channels, or (padding 'valid')
// is shorter than pool_size.
#include <optional>

#include "api/engine/layer.h"
#include "api/engine/layer_options.h"
#include "layers/pooling_utils.h"

namespace tower::layers {

struct AveragePooling1DOptions {
  Size1 pool_size = 0;           // required, as in Keras
  std::optional<Size1> strides;  // none: pool_size
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

class AveragePooling1DImpl final : public Layer {
 public:
  using Options = AveragePooling1DOptions;
  explicit AveragePooling1DImpl(Options options);
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

class AveragePooling1D : public LayerHolder<AveragePooling1DImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
