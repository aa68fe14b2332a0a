#pragma once
// What Keras' recurrent layers (SimpleRNN, LSTM, GRU) share: Keras' RNN layer around a cell. Input [N, T, F], then
// optionally the initial states ([N, units] each: h, and c for an LSTM) as further inputs, as Keras'
// `initial_state`. Outputs: [N, T, units] with return_sequences, else [N, units] (the last step's); with
// return_state, each final state after it. go_backwards runs the steps from the last to the first, and the returned
// sequence is in that order (as Keras returns it). A subclass gives the recurrence itself (run()).
//
// Masks (Keras' RNN with a mask [N, T] from Embedding's mask_zero or Masking): at a masked step the states keep their
// previous values and the output is the previous step's output (zeros before the first kept step), or zeros with
// zero_output_for_mask; the output sequence keeps the input's mask, the last output and the states get none. A masked
// sequence runs the steps composed of tower::ops (as Keras falls back from cuDNN with a mask that is not right-padded).
//
// Dropout (Keras' DropoutRNNCell), in training only: `dropout` drops input features and `recurrent_dropout` the
// previous h's units, each with a mask [N, F] or [N, units] drawn once per sequence and used at every step, new for
// each training step (CustomLayer::dropout_mask, with the layer's `seed`). With recurrent_dropout > 0 a layer of
// several gates (LSTM: 4, GRU: 3) draws one mask per gate for each, as Keras' implementation 1 does, and composes
// its steps of tower::ops; with dropout alone, one mask multiplies the whole input sequence and the fused op still
// runs. Keras' masks come from TensorFlow's random generator, so the values of the masks differ from Keras'; their
// distribution and where they apply do not.
//
// stateful (Keras' stateful=True): the final states of each call in a plan (training, evaluation or prediction)
// become the initial states of the next call on the same replica, as values (no gradient flows from one batch into
// the one before), until reset_state(). Every batch must then have the batch size of the first (Keras' error
// otherwise); initial states given as inputs take precedence. unroll is accepted and changes nothing (the steps are
// computed the same way either way).
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/engine/custom_layer.h"

namespace tower::layers {

// The options every recurrent layer reads the same way (the fields of each layer's options struct of these names).
struct RecurrentSettings {
  int units = 0;
  bool return_sequences = false;
  bool return_state = false;
  bool go_backwards = false;
  bool stateful = false;
  double dropout = 0.0;
  double recurrent_dropout = 0.0;
  bool zero_output_for_mask = false;
  std::optional<std::int64_t> seed;  // the dropout masks'
};

// The settings of a layer's options struct (the fields of these names).
template <class Options>
RecurrentSettings recurrent_settings(const Options& o) {
  return {o.units,   o.return_sequences, o.return_state,      o.go_backwards,         o.stateful,
          o.dropout, o.recurrent_dropout, o.zero_output_for_mask, o.seed};
}

class RecurrentLayer : public CustomLayer {
 public:
  // Output shapes without running the recurrence. Throws ShapeError for an input that is not [N, T, F] with F
  // known, initial states that are not [N, units], or a feature size other than the one the layer was built for.
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  std::vector<Tensor> call(const std::vector<Tensor>& inputs, bool training) final;
  std::vector<Tensor> call_with_masks(const std::vector<Tensor>& inputs, const std::vector<Tensor>& masks,
                                      bool training) final;
  bool supports_masking() const override { return true; }
  bool uses_masks() const override { return true; }
  // The output sequence keeps the input's mask; the last output and the states get none.
  std::vector<SymbolicTensor> compute_mask(const std::vector<SymbolicTensor>& inputs,
                                           const std::vector<SymbolicTensor>& masks) const override;
  // What masked steps output (Bidirectional sets it to its return_sequences, as Keras' does).
  void set_zero_output_for_mask(bool zero) { settings_.zero_output_for_mask = zero; }
  int num_inputs() const override { return -1; }
  // The number of states: 1 (h), 2 for an LSTM (h, c).
  int num_states() const { return states_; }
  const RecurrentSettings& settings() const { return settings_; }
  // Keras' recurrent layers keep their weights in their cell's group of a .weights.h5 file.
  std::string keras_variables_group() const override { return "cell"; }
  // A stateful layer's carried states go back to zeros (on every replica). Nothing for a layer that is not stateful.
  void reset_state();
  void reset_states() { reset_state(); }

 protected:
  // Checks the settings (throws std::invalid_argument naming the layer: units <= 0, a dropout rate outside [0, 1)).
  // `gates`: the blocks of units a step computes (SimpleRNN 1, LSTM 4, GRU 3), one dropout mask each under
  // recurrent_dropout.
  RecurrentLayer(std::string type, std::string name, int states, int gates, RecurrentSettings settings);

  // The dropout masks of one call (see the top of this file): empty when nothing is dropped. `input` is left empty
  // when one mask was applied to the whole sequence before run().
  struct StepDropout {
    std::vector<Tensor> input;      // one [N, F] mask per gate
    std::vector<Tensor> recurrent;  // one [N, units] mask per gate (one in all for a single-gate layer)
    bool active() const { return !input.empty() || !recurrent.empty(); }
  };

  // Every step's output [N, T, units] (in the order the steps ran) and the final states.
  struct Result {
    Tensor sequence;  // may be left undefined when !return_sequences
    std::vector<Tensor> states;
  };
  // The recurrence over x [N, T, F] (already reversed for go_backwards) from `states`. `need_sequence`: whether
  // the caller uses Result::sequence. `masking` (StepMasking below) applies the mask to each step when there is one;
  // `dropout` holds the masks a step's input and h are multiplied by (gate_matmul applies them).
  class StepMasking;
  virtual Result run(const Tensor& x, const std::vector<Tensor>& states, bool need_sequence,
                     const StepDropout& dropout, StepMasking& masking) = 0;

  // The feature size the layer was built for (after build), for shape checks.
  Index built_features() const { return features_; }
  void set_built_features(Index f) { features_ = f; }

 private:
  StepDropout draw_dropout(Tensor& x, Index units);
  // A stateful layer's initial states for this call, or none; keeps `states` for the next call.
  std::vector<Tensor> carried_states(Index batch);
  void carry(const std::vector<Tensor>& states);

  int states_, gates_;
  RecurrentSettings settings_;
  Index features_ = -1;
  std::mutex carried_mutex_;
  std::map<int, std::vector<Tensor>> carried_;  // a stateful layer's final states, by replica
};

// x [..., F] times a kernel [F, gates * u]; with masks (one per gate, [N, F], x [N, F] or [N, T, F]), gate g's
// columns are those of (x * masks[g]) times the kernel (Keras' implementation 1); without, x times the kernel.
Tensor gate_matmul(const Tensor& x, const Tensor& kernel, const std::vector<Tensor>& masks);

// The steps of x [N, T, ...] along axis 1, each [N, ...]; and their inverse, [N, T, ...] from T tensors [N, ...].
// Keras' masked recurrence, one step at a time: where step t's mask is 0, the states keep their previous values and
// the output is the previous output (zeros at first, or always zeros with zero_output_for_mask). Without a mask it
// changes nothing.
class RecurrentLayer::StepMasking {
 public:
  // mask: [N, T] in the order the steps run, or undefined.
  StepMasking(const Tensor& mask, bool zero_output);
  bool active() const { return !steps_.empty(); }
  // Step t: `next` (the states the step computed, the output first) becomes the states to carry on; returns the
  // step's output.
  Tensor apply(std::size_t t, std::vector<Tensor>& next, const std::vector<Tensor>& previous);
  // The last step's output, after the last apply().
  const Tensor& last_output() const { return previous_output_; }

 private:
  std::vector<Tensor> steps_;  // [N, 1] per step
  bool zero_output_;
  Tensor previous_output_;
};

std::vector<Tensor> unstack_steps(const Tensor& x);
Tensor stack_steps(const std::vector<Tensor>& steps);
// x [N, T, ...] with its steps in reverse order.
Tensor reverse_steps(const Tensor& x);

}  // namespace tower::layers
