#pragma once
// ZeroPadding1D (keras.layers.ZeroPadding1D): adds zeros at the start and end of the steps of a sequence,
// [batch, steps, features] -> [batch, left + steps + right, features] (channels_first: [batch, features, steps]
// padded along its last axis). `padding`: an int (both ends) or (start, end). No weights. Runs on the backend's
// 2-D padding over a view of the same memory.
#include "api/engine/layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers {

struct ZeroPadding1DOptions {
  Padding1D padding = 1;
  std::string data_format = "channels_last";
  std::string name;
  template <class V>
  void visit(V&& v) {
    v("padding", padding);
    v("data_format", data_format);
    v("name", name);
  }
};

class ZeroPadding1DImpl final : public Layer {
 public:
  using Options = ZeroPadding1DOptions;
  // Throws std::invalid_argument for negative padding or an unknown data_format.
  explicit ZeroPadding1DImpl(Options options);
  const Options& options() const { return options_; }

  // Throws ShapeError unless the input has rank 3.
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  bool backward_needs_inputs() const override { return false; }
  Config get_config() const override { return options_to_config(options_); }

 private:
  Options options_;
};

class ZeroPadding1D : public LayerHolder<ZeroPadding1DImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
