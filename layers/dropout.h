#pragma once
// Dropout (keras.layers.Dropout): in training, each element is zeroed with probability `rate` and the rest
// are scaled by 1 / (1 - rate); in inference the layer is the identity. Any input shape; no weights.
// Masks come from the plan's generator, or, when `seed` is given, from the seed and a count of the layer's
// training calls, so a seeded layer draws the same sequence of masks in every run. The seed of each training
// forward is one of the plan's step values (engine/step_values.h): the plan draws it before the step and the
// mask op reads it from device memory, so a step captured as a CUDA graph draws new masks on every replay.
#include <atomic>
#include <cstdint>
#include <optional>

#include "api/engine/layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers {

struct DropoutOptions {
  float rate = 0.f;
  std::optional<std::int64_t> seed;
  std::string name;
  template <class V> void visit(V&& v) {
    v("rate", rate);
    v("seed", seed);
    v("name", name);
  }
};

class DropoutImpl final : public Layer {
 public:
  using Options = DropoutOptions;
  // Throws std::invalid_argument unless 0 <= rate < 1.
  explicit DropoutImpl(Options options);
  const Options& options() const { return options_; }

  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  bool backward_needs_inputs() const override { return false; }
  bool has_training_behavior() const override { return true; }
  Config get_config() const override { return options_to_config(options_); }

 private:
  // The seed of the next mask: from `rng` (the plan's generator), or from options().seed and the call count.
  std::uint64_t next_seed(Generator* rng);

  Options options_;
  std::atomic<std::uint64_t> calls_{0};
};

class Dropout : public LayerHolder<DropoutImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
