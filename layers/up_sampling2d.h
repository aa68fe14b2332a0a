#pragma once
// UpSampling2D (keras.layers.UpSampling2D): repeats each row `size.h` times and each column `size.w` times,
// [batch, h, w, c] -> [batch, h * size.h, w * size.w, c] (channels_first: [batch, c, h, w]). Nearest-neighbour
// interpolation only. No weights.
#include "api/engine/layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers {

struct UpSampling2DOptions {
  Size2 size = 2;
  std::string data_format = "channels_last";
  std::string interpolation = "nearest";
  std::string name;
  template <class V> void visit(V&& v) {
    v("size", size);
    v("data_format", data_format);
    v("interpolation", interpolation);
    v("name", name);
  }
};

class UpSampling2DImpl final : public Layer {
 public:
  using Options = UpSampling2DOptions;
  // Throws std::invalid_argument for a non-positive size, an unknown data_format, or an interpolation other
  // than "nearest".
  explicit UpSampling2DImpl(Options options);
  const Options& options() const { return options_; }

  // Throws ShapeError unless the input has rank 4.
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  bool backward_needs_inputs() const override { return false; }
  Config get_config() const override { return options_to_config(options_); }

 private:
  Options options_;
};

class UpSampling2D : public LayerHolder<UpSampling2DImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
