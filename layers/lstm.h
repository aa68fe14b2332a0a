#pragma once
// LSTM (keras.layers.LSTM): Hochreiter & Schmidhuber's long short-term memory over a sequence [N, T, F], with Keras'
// options, defaults and weights: kernel [F, 4 * units], recurrent_kernel [units, 4 * units] and bias [4 * units], the
// gates in Keras' order i, f, c, o; unit_forget_bias starts the forget gate's bias at 1. The states are h and c (the
// initial states, when given, are the second and third inputs; return_state returns the final h and c after the
// output). What the sequence options do: layers/recurrent.h.
//
// With Keras' default activations (tanh, sigmoid) the whole sequence is one fused op (ops::lstm: a gemm per step and
// one fused kernel for the gates, forward and backward), as Keras uses cuDNN for them; with any others, or
// `fused = false`, the steps are composed of tower::ops (the fused op's reference).
#include <cstdint>
#include <optional>

#include "api/engine/layer_options.h"
#include "layers/recurrent.h"

namespace tower::layers {

struct LSTMOptions {
  int units = 0;
  activations::Activation activation = "tanh";
  activations::Activation recurrent_activation = "sigmoid";
  bool use_bias = true;
  initializers::Initializer kernel_initializer = "glorot_uniform";
  initializers::Initializer recurrent_initializer = "orthogonal";
  initializers::Initializer bias_initializer = "zeros";
  bool unit_forget_bias = true;
  regularizers::Regularizer kernel_regularizer;
  regularizers::Regularizer recurrent_regularizer;
  regularizers::Regularizer bias_regularizer;
  double dropout = 0.0;
  double recurrent_dropout = 0.0;
  bool return_sequences = false;
  bool return_state = false;
  bool go_backwards = false;
  bool stateful = false;
  bool unroll = false;
  bool zero_output_for_mask = false;  // what masked steps output (layers/recurrent.h)
  std::optional<std::int64_t> seed;   // the dropout masks' seed
  std::string name;
  // C++ only, like Keras' use_cudnn (not in the config): false composes the steps of ops even where the fused op
  // applies.
  bool fused = true;
  template <class V> void visit(V&& v) {
    v("units", units);
    v("activation", activation);
    v("recurrent_activation", recurrent_activation);
    v("use_bias", use_bias);
    v("kernel_initializer", kernel_initializer);
    v("recurrent_initializer", recurrent_initializer);
    v("bias_initializer", bias_initializer);
    v("unit_forget_bias", unit_forget_bias);
    v("kernel_regularizer", kernel_regularizer);
    v("recurrent_regularizer", recurrent_regularizer);
    v("bias_regularizer", bias_regularizer);
    v("dropout", dropout);
    v("recurrent_dropout", recurrent_dropout);
    v("return_sequences", return_sequences);
    v("return_state", return_state);
    v("go_backwards", go_backwards);
    v("stateful", stateful);
    v("unroll", unroll);
    v("zero_output_for_mask", zero_output_for_mask);
    v("seed", seed);
    v("name", name);
  }
};

class LSTMImpl final : public RecurrentLayer {
 public:
  using Options = LSTMOptions;
  // Throws std::invalid_argument for units <= 0 and what layers/recurrent.h refuses.
  explicit LSTMImpl(Options options);
  const Options& options() const { return options_; }
  const VariablePtr& kernel() const { return kernel_; }
  const VariablePtr& recurrent_kernel() const { return recurrent_kernel_; }
  const VariablePtr& bias() const { return bias_; }
  // Whether the fused op runs the recurrence (Keras' default activations and `fused`).
  bool uses_fused_op() const;

  void build(const std::vector<Shape>& input_shapes) override;
  Config get_config() const override { return options_to_config(options_); }

 private:
  Result run(const Tensor& x, const std::vector<Tensor>& states, bool need_sequence,
             const StepDropout& dropout, StepMasking& masking) override;
  Result run_composed(const Tensor& x, const std::vector<Tensor>& states, const StepDropout& dropout,
                      StepMasking& masking) const;

  Options options_;
  VariablePtr kernel_, recurrent_kernel_, bias_;
};

class LSTM : public LayerHolder<LSTMImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
