#pragma once
// Loss: Keras' losses, split so the training loop owns the reduction. A loss computes one value per example
// (Keras reduces the last axis: y_pred [N, ..., C] -> per_example [N, ...]); the loop applies sample and class
// weights and the reduction (sum_over_batch_size: sum(w * l) / number of per-example values, where under a
// distribution strategy the denominator is the global batch), then asks the loss for the gradient of
// sum(scale * per_example) with scale = w / denominator.
//
// Labels: "sparse" losses take y_true without the class axis ([N, ...] or [N, ..., 1]), as int32, int64 or
// float32 holding whole numbers; the others take y_true of y_pred's shape (float32 or int32), where Keras'
// squeeze-or-expand rule also accepts a trailing axis of 1 on either side ([N] against [N, 1]). A rank-1
// y_pred [N] is N examples of one value. Bad labels and shapes throw std::invalid_argument naming them.
//
// Tensors: float32 y_pred, per_example, scale and grad, the last three on y_pred's device (std::invalid_argument
// otherwise). The backend of y_pred's device computes (backend.h, "losses and metrics"); y_true is read there,
// copied there first when it lives elsewhere (the training loop stages it once per batch).
//
// Sparse labels on the CPU are checked as they are read: a bad one throws std::invalid_argument. A GPU does not
// stop the step to read them back: there a bad label makes its example's loss and gradient NaN, as TensorFlow's
// GPU kernels do, which TerminateOnNaN and the logs show.
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "api/backend/backend.h"
#include "api/core/tensor.h"
#include "api/io/config.h"
#include "api/io/registry.h"
#include "api/engine/layer_options.h"

namespace tower::losses {

class Loss {
 public:
  Loss(std::string type, std::string name) : type_(std::move(type)), name_(std::move(name)) {}
  virtual ~Loss() = default;
  const std::string& type() const { return type_; }
  const std::string& name() const { return name_; }

  // The shape of per_example for predictions of this shape: y_pred without its last axis ([N] for a rank-1
  // y_pred). Throws std::invalid_argument for a scalar y_pred.
  virtual Shape per_example_shape(const Shape& y_pred) const;
  // Throws std::invalid_argument when y_true does not fit y_pred (naming the loss and both shapes).
  // The default accepts y_true of y_pred's shape, up to a trailing axis of 1.
  virtual void check_shapes(const Shape& y_true, const Shape& y_pred) const;
  // What can be checked of targets still in host memory before they go to y_pred's device, where checking
  // them would make the step wait (sparse labels that are not class indices): throws std::invalid_argument as
  // forward() on the CPU does. The default checks nothing.
  virtual void check_host_targets(const Tensor& y_true, const Shape& y_pred) const;
  // Requires per_example of per_example_shape(y_pred) (any shape with that many elements). Overwrites it.
  virtual void forward(const Tensor& y_true, const Tensor& y_pred, Tensor& per_example) = 0;
  // grad = d(sum(scale * per_example)) / d(y_pred); overwrites grad. scale has per_example's element count,
  // grad y_pred's shape.
  virtual void backward(const Tensor& y_true, const Tensor& y_pred, const Tensor& scale, Tensor& grad) = 0;

  // Fused softmax + cross-entropy: when the model ends in a softmax over the last axis and this loss takes
  // probabilities, the loop asks for the gradient with respect to the softmax's input (the logits) directly,
  // given the softmax output `probs`: scale * (probs - target). Losses that cannot do this return false;
  // their backward_through_softmax throws std::logic_error.
  virtual bool can_fuse_softmax() const { return false; }
  virtual void backward_through_softmax(const Tensor& y_true, const Tensor& probs, const Tensor& scale,
                                        Tensor& grad_logits);

  // {"class_name": type, "config": {"name": ..., "reduction": "sum_over_batch_size", <arguments>}}, the keys
  // Keras writes, so Keras reads it back.
  virtual Config get_config() const = 0;

 private:
  std::string type_, name_;
};

using LossPtr = std::shared_ptr<Loss>;

// From {"class_name", "config"} or a Keras name: a class name ("SparseCategoricalCrossentropy") or a function
// name or alias ("sparse_categorical_crossentropy", "categorical_crossentropy", "binary_crossentropy"/"bce",
// "mean_squared_error"/"mse", "mean_absolute_error"/"mae", "huber", "kl_divergence"/"kld", "hinge",
// "squared_hinge", "categorical_hinge", "log_cosh", "poisson", "mean_squared_logarithmic_error"/"msle",
// "mean_absolute_percentage_error"/"mape", "cosine_similarity", "binary_focal_crossentropy",
// "categorical_focal_crossentropy", "dice", "tversky"). Throws ConfigError for an unknown name (listing the known
// ones) or a bad argument (naming the loss and the key).
LossPtr loss_from_config(const Config& c);
// The class names loss_from_config knows.
std::vector<std::string> loss_types();
// The loss classes by Keras class name, with Keras' function names as aliases (io/registry.h).
Registry<LossPtr>& registry();

// A typed, shared handle to a loss: `losses::MeanSquaredError` is a LossHolder<MeanSquaredErrorImpl>. It
// converts to LossPtr and -> reaches the loss's own members.
template <class Impl>
class LossHolder {
 public:
  using Options = typename Impl::Options;
  LossHolder() : impl_(std::make_shared<Impl>(Options{})) {}
  LossHolder(Options options) : impl_(std::make_shared<Impl>(std::move(options))) {}
  explicit LossHolder(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

  Impl* operator->() const { return impl_.get(); }
  Impl& operator*() const { return *impl_; }
  const std::shared_ptr<Impl>& ptr() const { return impl_; }
  operator LossPtr() const { return impl_; }

 private:
  std::shared_ptr<Impl> impl_;
};

namespace detail {

// A loss that a backend op computes (backend::LossParams): forward, backward and, where can_fuse_softmax(), the
// fused softmax gradient, on y_pred's device, with the shapes, dtypes and devices checked first. y_pred is taken
// as [rows, cols], rows = per_example_shape(y_pred).numel().
class BackendLoss : public Loss {
 public:
  using Loss::Loss;
  void forward(const Tensor& y_true, const Tensor& y_pred, Tensor& per_example) final;
  void backward(const Tensor& y_true, const Tensor& y_pred, const Tensor& scale, Tensor& grad) final;
  void backward_through_softmax(const Tensor& y_true, const Tensor& probs, const Tensor& scale,
                                Tensor& grad_logits) final;
  void check_host_targets(const Tensor& y_true, const Shape& y_pred) const override;

 protected:
  virtual backend::LossParams params() const = 0;

 private:
  // y_true on y_pred's device, sparse labels checked; rows and cols of y_pred.
  Tensor labels_for(const Tensor& y_true, const Tensor& y_pred, Index& rows, Index& cols) const;
};

// A tensor's memory as a backend op reads it (absent for an undefined tensor).
backend::AnyValues any_values(const Tensor& t);

// Sparse labels (int32, int64 or whole-number float32) for num_classes classes, labels equal to ignore_class (NaN:
// none) allowed too. Throws std::invalid_argument naming `who` for another dtype and, for labels on the CPU, for the
// first negative, out-of-range or non-integer label (its value, flat index, the class count and ignore_class).
// Labels on a GPU are not read back (see above).
void check_class_labels(const Tensor& labels, Index num_classes, const std::string& who,
                        double ignore_class = std::numeric_limits<double>::quiet_NaN());

// y_true fits y_pred as Keras' squeeze_or_expand_to_same_rank lets it: equal shapes, or equal up to one trailing
// axis of 1 on either side. Unknown dimensions (-1) match any.
bool same_up_to_trailing_one(const Shape& a, const Shape& b);

// The shape rules shared by losses and metrics; each throws std::invalid_argument naming `who` and both shapes.
//   check_matching_shapes:     y_pred of rank >= 1, y_true of its shape up to a trailing axis of 1;
//   check_categorical_shapes:  y_pred [N, ..., C], y_true of the same shape (one-hot or a distribution);
//   check_sparse_shapes:       y_pred [N, ..., C], y_true class indices [N, ...] or [N, ..., 1].
void check_matching_shapes(const std::string& who, const Shape& y_true, const Shape& y_pred);
void check_categorical_shapes(const std::string& who, const Shape& y_true, const Shape& y_pred);
void check_sparse_shapes(const std::string& who, const Shape& y_true, const Shape& y_pred);

// The focal crossentropies' arguments: throws std::invalid_argument naming `who` and the value for gamma < 0, alpha
// outside [0, 1] or label_smoothing outside [0, 1] (NaN included).
void check_focal_arguments(const std::string& who, double alpha, double gamma, double label_smoothing);

// Throws std::invalid_argument("<who>: <what> must be float32, got ...") for another dtype.
void require_float32(const Tensor& t, const std::string& who, const std::string& what);
// Throws std::invalid_argument when t does not have `numel` elements, naming who, what and both counts.
void require_numel(const Tensor& t, Index numel, const std::string& who, const std::string& what);
// Throws std::invalid_argument unless t is on `device`, naming who, what and both devices.
void require_device(const Tensor& t, Device device, const std::string& who, const std::string& what);

// Arguments Keras serialises that Tower takes only at one value (the training loop owns the reduction; the class
// axis is the last). Each key of `fixed` present in `args` must hold its value, else ConfigError naming `what`,
// the key, the value given and the one supported. Returns `args` without those keys, for options_from_config.
Config without_fixed_arguments(const Config& args, const Config::Map& fixed, const std::string& what);

// {"class_name": type, "config": {"name", the rest of `arguments`, then `fixed`}}.
Config serialize(const std::string& type, const Config& arguments, const Config::Map& fixed);

// An Impl from the "config" map of a serialized loss or metric: the `fixed` arguments accepted at their values, the
// rest read into Impl::Options (errors name `type` and the key).
template <class Impl>
std::shared_ptr<Impl> make_from_arguments(const Config& arguments, const Config::Map& fixed, const std::string& type) {
  return std::make_shared<Impl>(
      options_from_config<typename Impl::Options>(without_fixed_arguments(arguments, fixed, type), type));
}

}  // namespace detail
}  // namespace tower::losses
