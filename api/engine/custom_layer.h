#pragma once
// CustomLayer: a layer written as Keras users write one. Subclass it, create weights in build() with add_weight,
// and write call() with tower::ops (api/ops/ops.h) on concrete tensors; there is no backward to write: forward runs
// call() while recording its ops, and backward differentiates that recording. It goes into a model's static plan
// like any layer (strategies, save and load); get_config and TOWER_REGISTER_LAYER make it load by name.
//
//   class SqueezeExcite : public CustomLayer {
//    public:
//     explicit SqueezeExcite(Index ratio = 4) : CustomLayer("SqueezeExcite", ""), ratio_(ratio) {}
//     void build(const std::vector<Shape>& in) override {
//       const Index c = in[0][-1];
//       w1_ = add_weight("w1", {c, c / ratio_});
//       w2_ = add_weight("w2", {c / ratio_, c});
//     }
//     std::vector<Tensor> call(const std::vector<Tensor>& x, bool) override {
//       Tensor s = ops::mean(x[0], {1, 2});                              // [N, C]
//       s = ops::sigmoid(ops::matmul(ops::relu(ops::matmul(s, w1_->value)), w2_->value));
//       return {x[0] * ops::reshape(s, {s.shape()[0], 1, 1, s.shape()[1]})};
//     }
//     Config get_config() const override { ... }
//    private:
//     Index ratio_;
//     VariablePtr w1_, w2_;
//   };
//
// Output shapes come from running call() once on zeros with a batch of 1, unrecorded; with inputs of unknown sizes
// besides the batch (Input({-1})), twice, those sizes taken as 1 and as 2, an output size that changes being unknown.
// A call() that returns other shapes on real data than it did then, or fails, throws naming the layer. The ops
// allocate their results, so a step with such a layer is not captured as a CUDA graph (fit runs it op by op).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "api/core/tensor.h"
#include "api/engine/layer.h"

namespace tower {

class CustomLayer : public Layer {
 public:
  using Layer::Layer;

  // The layer's computation: one tensor per input ([N, ...], float32, on the model's device), one per output.
  virtual std::vector<Tensor> call(const std::vector<Tensor>& inputs, bool training) = 0;
  // What forward() runs: for a layer that uses_masks(), call() given its inputs' masks too (ForwardContext::masks:
  // parallel to inputs, undefined where an input has none; empty when none has one). Masks are constants: nothing
  // is differentiated with respect to them. The default ignores them.
  virtual std::vector<Tensor> call_with_masks(const std::vector<Tensor>& inputs, const std::vector<Tensor>& masks,
                                              bool training) {
    (void)masks;
    return call(inputs, training);
  }

  // Builds the layer (its weights) if it is not built, then runs call() on zeros of these shapes (batch 1). A
  // first call that fails leaves the layer unbuilt, so it can be called on other shapes.
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  void forward(const ForwardContext& ctx) final;
  void backward(const BackwardContext& ctx) final;
  int num_inputs() const override { return -1; }

 protected:
  // For call() in a plan's training forward: a mask of `shape` on `device`, each element 0 with probability `rate`
  // and 1 / (1 - rate) otherwise (keras.random.dropout of ones), drawn anew for every training step as Dropout's
  // masks are (StepValues::add_seed: from `seed`, else the plan's seed; the step; the replica); `stream` tells a
  // call's masks apart (the same stream draws the same mask within one step). A constant to the recording: nothing
  // is differentiated through it. Throws std::logic_error outside a plan's forward.
  Tensor dropout_mask(const Shape& shape, Device device, double rate, std::optional<std::int64_t> seed,
                      int stream) const;
  // Whether call() runs in a plan's forward (false in compute_output_shape's calls and direct calls).
  bool in_plan_forward() const;
  // The index in sync of the replica whose plan runs call() (0 without a strategy or outside a plan).
  int replica_id() const;

 private:
  std::vector<Shape> shapes_from_call(const std::vector<Shape>& input_shapes) const;
  std::vector<Shape> shapes_from_call(const std::vector<Shape>& input_shapes, Index unknown_size) const;
};

// A CustomLayer whose call() is a given function of its inputs (layers::Lambda, and the nodes tower::ops adds to a
// functional graph when called on symbolic tensors: api/engine/symbolic_ops.h). `type` names it in summaries and
// errors. Its function is C++ code, which a config cannot hold: get_config throws, naming the layer.
class FunctionLayer : public CustomLayer {
 public:
  using Function = std::function<Tensor(const std::vector<Tensor>&)>;
  FunctionLayer(std::string type, std::string name, int inputs, Function function);
  std::vector<Tensor> call(const std::vector<Tensor>& inputs, bool training) override;
  int num_inputs() const override { return inputs_; }
  Config get_config() const override;

 private:
  int inputs_;
  Function function_;
};

// A mask computed from symbolic tensors by a function of their values (Layer::compute_mask): a FunctionLayer node
// named after `type` ("EmbeddingMask"), which the graph marks as computing a mask when called inside compute_mask.
SymbolicTensor mask_op(const std::string& type, const std::vector<SymbolicTensor>& inputs,
                       FunctionLayer::Function function);

}  // namespace tower
