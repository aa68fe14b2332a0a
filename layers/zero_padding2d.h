#pragma once
// ZeroPadding2D (keras.layers.ZeroPadding2D): adds rows and columns of zeros around 4-D images,
// [batch, h, w, c] -> [batch, top + h + bottom, left + w + right, c] (channels_first: [batch, c, h, w]).
// No weights.
#include "api/engine/layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers {

struct ZeroPadding2DOptions {
  Padding2D padding = 1;
  std::string data_format = "channels_last";
  std::string name;
  template <class V> void visit(V&& v) {
    v("padding", padding);
    v("data_format", data_format);
    v("name", name);
  }
};

class ZeroPadding2DImpl final : public Layer {
 public:
  using Options = ZeroPadding2DOptions;
  // Throws std::invalid_argument for negative padding or an unknown data_format.
  explicit ZeroPadding2DImpl(Options options);
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

class ZeroPadding2D : public LayerHolder<ZeroPadding2DImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
