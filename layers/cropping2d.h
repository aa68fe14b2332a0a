#pragma once
// Cropping2D (keras.layers.Cropping2D): removes rows and columns from the edges of 4-D images,
// [batch, h, w, c] -> [batch, h - top - bottom, w - left - right, c] (channels_first: [batch, c, h, w]).
// No weights.
#include "api/engine/layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers {

struct Cropping2DOptions {
  Padding2D cropping = 0;
  std::string data_format = "channels_last";
  std::string name;
  template <class V> void visit(V&& v) {
    v("cropping", cropping);
    v("data_format", data_format);
    v("name", name);
  }
};

class Cropping2DImpl final : public Layer {
 public:
  using Options = Cropping2DOptions;
  // Throws std::invalid_argument for negative cropping or an unknown data_format.
  explicit Cropping2DImpl(Options options);
  const Options& options() const { return options_; }

  // Throws ShapeError unless the input has rank 4 and the cropping leaves at least one row and one column.
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  bool backward_needs_inputs() const override { return false; }
  Config get_config() const override { return options_to_config(options_); }

 private:
  Options options_;
};

class Cropping2D : public LayerHolder<Cropping2DImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
