#pragma once
// Metric: Keras' stateful metrics: update_state accumulates over batches, result() reads, reset_state()
// clears; merge_state adds another instance's state (one per replica) into this one. State is kept in double, in
// the memory of the device of the predictions it is updated with: the backend of that device updates it (y_true
// and sample weights on another device are copied there first), and result() is the one read back to the host.
#include <memory>
#include <string>
#include <vector>

#include "api/core/tensor.h"
#include "api/io/config.h"
#include "api/losses/device_doubles.h"
#include "api/losses/loss.h"
#include "api/engine/layer_options.h"

namespace tower::metrics {

// Which way a metric improves (Keras' Metric._direction): up for accuracies, precision, recall and AUC, down for
// errors; unknown where Keras gives none (Mean), so a monitoring callback's mode "auto" cannot tell.
enum class Direction { unknown, up, down };

class Metric {
 public:
  Metric(std::string type, std::string name) : type_(std::move(type)), name_(std::move(name)) {}
  virtual ~Metric() = default;
  const std::string& type() const { return type_; }
  // The key in logs and History ("sparse_categorical_accuracy", or the name given).
  const std::string& name() const { return name_; }

  // sample_weight: undefined, or one weight per example ([N], any shape with N elements). Shapes and labels as
  // the matching loss takes them; a mismatch throws std::invalid_argument naming both shapes.
  virtual void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = Tensor()) = 0;
  // 0 before any update (Keras' divide_no_nan).
  virtual double result() const = 0;
  // Every value Keras' result() gives: {result()}, or one per class where Keras gives a vector (FBetaScore with
  // average null, R2Score with class_aggregation null).
  virtual std::vector<double> results() const { return {result()}; }
  virtual void reset_state() = 0;
  // Requires `other` to be of the same type and configuration; throws std::invalid_argument otherwise.
  virtual void merge_state(const Metric& other) = 0;
  // A fresh instance with the same configuration (one per replica).
  virtual std::shared_ptr<Metric> clone() const = 0;
  // {"class_name": type, "config": {"name": ..., "dtype": "float32", <arguments>}}, the keys Keras writes.
  virtual Config get_config() const = 0;
  // Tower's metrics give Keras' direction of their type (one table, in metric.cpp); a metric of another type is
  // unknown unless it overrides this.
  virtual Direction direction() const;

 private:
  std::string type_, name_;
};

using MetricPtr = std::shared_ptr<Metric>;

// From {"class_name", "config"} or a Keras name: a class name ("SparseCategoricalAccuracy"), its snake_case form
// ("sparse_categorical_accuracy", "auc", "precision", ...) or an alias ("mse", "mae"). "accuracy" gives Accuracy,
// as keras.metrics.get does; compile's "accuracy" / "acc" is resolved by the training loop from the loss first,
// as Keras does. Throws ConfigError for an unknown name (listing the known ones) or a bad argument.
MetricPtr metric_from_config(const Config& c);
// The class names metric_from_config knows.
std::vector<std::string> metric_types();
// The metric classes by Keras class name, with Keras' snake_case names as aliases (io/registry.h).
Registry<MetricPtr>& registry();

// A typed, shared handle to a metric: `metrics::AUC` is a MetricHolder<AUCImpl>. It converts to MetricPtr and ->
// reaches the metric's own members.
template <class Impl>
class MetricHolder {
 public:
  using Options = typename Impl::Options;
  MetricHolder() : impl_(std::make_shared<Impl>(Options{})) {}
  MetricHolder(Options options) : impl_(std::make_shared<Impl>(std::move(options))) {}
  explicit MetricHolder(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

  Impl* operator->() const { return impl_.get(); }
  Impl& operator*() const { return *impl_; }
  const std::shared_ptr<Impl>& ptr() const { return impl_; }
  operator MetricPtr() const { return impl_; }

 private:
  std::shared_ptr<Impl> impl_;
};

namespace detail {

// Throws std::invalid_argument unless `other` has self's dynamic type and configuration (apart from the name).
void check_mergeable(const Metric& self, const Metric& other);

// A metric state of n doubles on `device`: made there (zeros) on the first update, moved there when the predictions
// move. Returns `state`.
losses::detail::DeviceDoubles& state_on(losses::detail::DeviceDoubles& state, Index n, Device device);
// into += from, wherever each lives; nothing when `from` was never updated.
void merge_states(losses::detail::DeviceDoubles& into, const losses::detail::DeviceDoubles& from);
// Whether sample_weight (defined) has one weight per element of a batch of `numel` elements rather than one per
// example; throws std::invalid_argument naming `who` for another count.
bool weight_per_element(const std::string& who, const Tensor& sample_weight, Index examples, Index numel);

// The options-based plumbing every metric shares: construction from its options struct, clone, get_config.
// Derived provides `static const char* type_name()` and may hide `fixed_arguments()` to add the arguments Keras
// serialises that Tower accepts at one value.
template <class Derived, class OptionsT, class Base = Metric>
class MetricWithOptions : public Base {
 public:
  using Options = OptionsT;
  explicit MetricWithOptions(Options options)
      : Base(Derived::type_name(), options.name), options_(std::move(options)) {}
  const Options& options() const { return options_; }
  std::shared_ptr<Metric> clone() const override { return std::make_shared<Derived>(options_); }
  Config get_config() const override;
  static Config::Map fixed_arguments() { return {{"dtype", "float32"}}; }
  // From the "config" map of a serialized metric (Keras' keys).
  static MetricPtr from_config(const Config& arguments);

 protected:
  Options options_;
};

template <class Derived, class OptionsT, class Base>
Config MetricWithOptions<Derived, OptionsT, Base>::get_config() const {
  return losses::detail::serialize(Derived::type_name(), options_to_config(options_), Derived::fixed_arguments());
}

template <class Derived, class OptionsT, class Base>
MetricPtr MetricWithOptions<Derived, OptionsT, Base>::from_config(const Config& arguments) {
  return losses::detail::make_from_arguments<Derived>(arguments, Derived::fixed_arguments(), Derived::type_name());
}

}  // namespace detail
}  // namespace tower::metrics
