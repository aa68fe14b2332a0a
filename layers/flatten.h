#pragma once
// Flatten (keras.layers.Flatten): [batch, d1, ..., dk] -> [batch, d1 * ... * dk] ([batch] -> [batch, 1]).
// With data_format "channels_first" an input of rank >= 3 is first moved to channels-last order, as Keras
// does, so the flattened features match a channels-last model's. No weights.
#include "api/engine/layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers {

struct FlattenOptions {
  std::string data_format = "channels_last";
  std::string name;
  template <class V> void visit(V&& v) {
    v("data_format", data_format);
    v("name", name);
  }
};

class FlattenImpl final : public Layer {
 public:
  using Options = FlattenOptions;
  // Throws std::invalid_argument for a data_format other than channels_last / channels_first.
  explicit FlattenImpl(Options options);
  const Options& options() const { return options_; }

  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  bool backward_needs_inputs() const override { return false; }
  bool output_is_view_of_input(const std::vector<Shape>& input_shapes) const override {
    return input_shapes.size() == 1 && !moves_channels(input_shapes[0].rank());
  }
  Config get_config() const override { return options_to_config(options_); }

 private:
  bool moves_channels(int rank) const { return options_.data_format == "channels_first" && rank > 2; }

  Options options_;
};

class Flatten : public LayerHolder<FlattenImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
