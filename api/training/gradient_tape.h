#pragma once
// GradientTape: gradients by hand, tf.GradientTape's counterpart. A tape records, in order, calls of models in
// training mode and the differentiable ops applied to their results, then gradient(target, variables) returns
// d target / d variable for any variables the target depends on:
//
//   GradientTape tape;
//   Tensor probs = tape.call(model, x);                                   // forward through the model's plan
//   Tensor loss = tape.loss(losses::SparseCategoricalCrossentropy(), y, probs);
//   loss = tape.add(loss, tape.scale(tape.l2_loss(kernel), 1e-4));        // a variable used directly
//   std::vector<Tensor> grads = tape.gradient(loss, model.trainable_weights());
//   model.optimizer()->apply_gradients(optimizers::zip(grads, model.trainable_weights()));
//
// The ops of tower::ops (api/ops/ops.h) run on this thread while the tape lives are recorded too, as TensorFlow's
// tape records what runs inside its `with` block: with broadcasting, on any tensors, and differentiable with
// respect to tensors given to watch(Tensor) as well as variables:
//
//   GradientTape tape;
//   tape.watch(image);
//   Tensor score = ops::sum(ops::square(ops::matmul(image, w)));
//   Tensor saliency = tape.gradient(score, std::vector<Tensor>{image})[0];
//
// Model calls run the model's static Plan for the batch size (Model::plan_for(n, true), the plan fit trains
// with), so the forward and backward of a custom step are fit's own. A model may be called more than once on a
// tape (a siamese network; a GAN's discriminator on real and on generated images): each further call at a batch
// size runs a plan of its own (ModelImpl::tape_plan), and the weights' gradients of every call add up. Inputs
// that are values of the tape (watched, or computed on it: a generator's output) receive gradients: such a call
// runs a plan that computes its inputs' gradients (saliency maps; a generator trained through its
// discriminator). gradient() writes the plan's output_grad
// and runs plan.backward(), handing a softmax output's gradient to a cross-entropy loss as the gradient of the
// logits (the fused path fit takes) when the loss is that output's only use. Ops run as backend ops on the
// device of their operands: nothing on the path reads values back to the host.
//
// Values. Every op returns a float32 tensor the tape keeps alive until it is destroyed (a model call returns
// the plan's output buffers, valid until the model's plan runs again). Operands are matched to the tape by
// their memory: a tensor an earlier call or op of this tape returned, the value of a watched variable (watch(),
// or a trainable weight of a model called on the tape, which are watched automatically, as TensorFlow watches
// trainable variables), or else a constant that receives no gradient. Binary ops take operands of one shape,
// or one operand of one element that is broadcast over the other.
//
// Gradients. gradient() requires a target of one element (a scalar loss) that this tape produced, and returns
// one tensor per variable, of the variable's shape and device. A variable the target does not depend on gets
// an undefined Tensor (defined() false), Keras' None; with UnconnectedGradients::zero it gets zeros instead.
// Optimizer::apply_gradients leaves variables with undefined gradients alone, as Keras skips None. Gradients of
// a model's weights may be views of its plan's gradient buffer (on a non-persistent tape), valid until that
// plan runs backward again; clone() them to keep them longer.
//
// Errors (std::invalid_argument or std::logic_error, naming the tape, op or model and the shapes): a target with
// more than one element or not produced here; operands of different devices or of shapes that do not broadcast;
// one Plan given to call(Plan&, ...) twice on one tape (its buffers hold one call); gradient() called a second
// time on a tape made without
// `persistent`; a model call on a tape whose gradient() has already run (record a new tape per step).
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "api/core/tensor.h"
#include "api/engine/layer.h"
#include "api/engine/plan.h"
#include "api/losses/loss.h"
#include "api/ops/recorder.h"

namespace tower {

class ModelImpl;
class Model;

enum class UnconnectedGradients { none, zero };

// Keras' loss reductions: sum_over_batch_size (sum(w * l) / number of per-example values; the default), sum,
// and none (the weighted per-example values, not a scalar).
enum class LossReduction { sum_over_batch_size, sum, none };

struct TapeLossOptions {
  Tensor sample_weight;  // [N] float32, or undefined for weights of 1
  LossReduction reduction = LossReduction::sum_over_batch_size;
  // With sum_over_batch_size: the batch the mean is taken over, when it is larger than this call's (under a
  // strategy, each replica divides its loss sum by the global batch, tf.nn.compute_average_loss's
  // global_batch_size); 0 means this call's batch.
  Index global_batch_size = 0;
};

class GradientTape final : public ops::Recorder {
 public:
  // persistent: gradient() may be called more than once (every gradient is then a fresh tensor).
  explicit GradientTape(bool persistent = false);
  ~GradientTape() override;
  GradientTape(const GradientTape&) = delete;
  GradientTape& operator=(const GradientTape&) = delete;

  bool persistent() const { return persistent_; }

  // Forward of `model` in training mode on a batch (one tensor per model input, any dtype or device: inputs not
  // float32 on the model's device are converted, and then receive no gradient). Returns the outputs, [N, ...]
  // each, valid until the tape is destroyed or the same call of the model runs on another tape.
  std::vector<Tensor> call(ModelImpl& model, const std::vector<Tensor>& inputs);
  Tensor call(ModelImpl& model, const Tensor& x);
  Tensor call(const Model& model, const Tensor& x);
  std::vector<Tensor> call(const Model& model, const std::vector<Tensor>& inputs);
  // The same on a given training plan (made with backward), as a strategy's replica runs: the tape writes its
  // inputs and runs its forward and backward; inputs get gradients when the plan computes them
  // (PlanOptions::input_gradients). Throws for a plan this tape has already run.
  std::vector<Tensor> call(Plan& plan, const std::vector<Tensor>& inputs);

  // Marks `variable` as a source: its value, used as an operand, receives gradients. Returns the value.
  const Tensor& watch(const VariablePtr& variable);
  // Marks a tensor as a source (an input of a computation in tower::ops: a saliency map's image). Returns it.
  const Tensor& watch(const Tensor& tensor);

  // Element-wise ops (same shapes, or one operand of one element, broadcast).
  Tensor add(const Tensor& a, const Tensor& b);
  Tensor subtract(const Tensor& a, const Tensor& b);
  Tensor multiply(const Tensor& a, const Tensor& b);
  // a / divisor, divisor a number (loss / global batch size).
  Tensor divide(const Tensor& a, double divisor);
  Tensor scale(const Tensor& a, double factor);
  Tensor square(const Tensor& a);
  // Reductions to one element ([1]).
  Tensor sum(const Tensor& a);
  Tensor mean(const Tensor& a);
  // sum(a^2) / 2, tf.nn.l2_loss; the variable form watches it.
  Tensor l2_loss(const Tensor& a);
  Tensor l2_loss(const VariablePtr& variable);
  // A Keras loss object on (y_true, y_pred) with its reduction, computed by the loss's own backend ops (as fit
  // computes it; sample weights as fit's). y_true is staged on y_pred's device when it lives elsewhere. Returns
  // [1], or [N, ...] (the per-example values times their weights) with LossReduction::none.
  Tensor loss(const losses::LossPtr& loss, const Tensor& y_true, const Tensor& y_pred,
              const TapeLossOptions& options = {});

  // d target / d variables (see above). Throws std::logic_error when called again on a non-persistent tape.
  std::vector<Tensor> gradient(const Tensor& target, const std::vector<VariablePtr>& variables,
                               UnconnectedGradients unconnected = UnconnectedGradients::none);
  // d target / d sources, each a tensor watch() was given; one tensor of its shape per source.
  std::vector<Tensor> gradient(const Tensor& target, const std::vector<Tensor>& sources,
                               UnconnectedGradients unconnected = UnconnectedGradients::none);

  // tower::ops run on this thread while the tape lives are recorded here (ops::Recorder).
  void record(const ops::Record& record) override;

 private:
  struct Value;
  struct Node;
  struct ModelCall;
  struct Grads;

  int value_of(const Tensor& t);  // -1: a constant
  int add_value(Tensor t, int producer, const VariablePtr& variable = nullptr);
  int record(std::unique_ptr<Node> node);
  void check_recording(const char* op) const;
  Tensor binary(const char* op, const Tensor& a, const Tensor& b);
  Tensor unary(const char* op, const Tensor& a, double factor);
  void backward_node(const Node& node, Grads& grads);
  void backward_loss(const Node& node, const Tensor& g, Grads& grads);
  void backward_model(const ModelCall& call, Grads& grads);
  // Seeds the target and runs every node back to it; returns the model calls that ran backward.
  std::vector<const ModelCall*> backward_from(const Tensor& target, Grads& grads);
  void release();  // a non-persistent tape's recording, after its gradient

  bool persistent_;
  bool gradient_done_ = false;
  std::vector<Value> values_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::map<const void*, int> by_address_;  // tensor memory -> value id
  std::map<const Variable*, int> variable_values_;
  std::vector<Plan*> called_plans_;
  std::map<std::pair<const ModelImpl*, Index>, int> model_calls_;  // calls of a model at a batch size
  std::unique_ptr<ops::RecordingScope> scope_;  // last: closed first
};

}  // namespace tower
