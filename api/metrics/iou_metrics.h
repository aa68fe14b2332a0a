#pragma once
// Keras' intersection-over-union metrics (keras/src/metrics/iou_metrics.py). Each position of a batch has a true and
// a predicted class; a confusion matrix [num_classes, num_classes] on the device adds each position's weight
// (sample_weight per example [N] or per position; truncated to a whole number, as Keras' int64 matrix does) at
// [true, predicted]. A position whose true class is ignore_class adds nothing. Then, for each target class c,
//   IoU(c) = tp / (tp + fp + fn) = cm[c, c] / (row c + column c - cm[c, c]),
// and result() is the mean of IoU(c) over the target classes whose denominator is not 0 (Keras adds 1e-7 to both
// divisors of that mean).
//
//   IoU             target_class_ids; classes are labels (sparse_y_true / sparse_y_pred, default) or the argmax of
//                   scores over the last axis
//   MeanIoU         every class a target
//   OneHotIoU       IoU with one-hot y_true (argmax) and, by default, scores for y_pred
//   OneHotMeanIoU   MeanIoU likewise
//   BinaryIoU       num_classes 2, y_pred a score: class 1 where y_pred >= threshold; y_true truncated to an integer;
//                   target_class_ids default {0, 1}
//
// Sparse labels are int32, int64 or float32 (truncated toward zero, as Keras' int64 cast). A label outside
// [0, num_classes) (other than ignore_class) throws std::invalid_argument naming the metric, the label, its index
// and num_classes when the labels are in host memory (read there before they go to the device); on a GPU it adds
// nothing (Keras 3 drops it silently everywhere). `axis` must be the last axis (-1); another throws.
// The constructors throw std::invalid_argument for num_classes < 1 or missing, a target class outside
// [0, num_classes), no target classes, or a threshold outside [0, 1].
#include <optional>
#include <vector>

#include "api/metrics/metric.h"

namespace tower::metrics {

struct IoUOptions {
  std::optional<int> num_classes;
  std::vector<int> target_class_ids;
  std::optional<int> ignore_class;
  bool sparse_y_true = true, sparse_y_pred = true;
  int axis = -1;
  std::string name = "io_u";
  template <class V> void visit(V&& v) {
    v("num_classes", num_classes);
    v("target_class_ids", target_class_ids);
    v("ignore_class", ignore_class);
    v("sparse_y_true", sparse_y_true);
    v("sparse_y_pred", sparse_y_pred);
    v("axis", axis);
    v("name", name);
  }
};

struct MeanIoUOptions {
  std::optional<int> num_classes;
  std::optional<int> ignore_class;
  bool sparse_y_true = true, sparse_y_pred = true;
  int axis = -1;
  std::string name = "mean_io_u";
  template <class V> void visit(V&& v) {
    v("num_classes", num_classes);
    v("ignore_class", ignore_class);
    v("sparse_y_true", sparse_y_true);
    v("sparse_y_pred", sparse_y_pred);
    v("axis", axis);
    v("name", name);
  }
};

struct OneHotIoUOptions {
  std::optional<int> num_classes;
  std::vector<int> target_class_ids;
  std::optional<int> ignore_class;
  bool sparse_y_pred = false;
  int axis = -1;
  std::string name = "one_hot_io_u";
  template <class V> void visit(V&& v) {
    v("num_classes", num_classes);
    v("target_class_ids", target_class_ids);
    v("ignore_class", ignore_class);
    v("sparse_y_pred", sparse_y_pred);
    v("axis", axis);
    v("name", name);
  }
};

struct OneHotMeanIoUOptions {
  std::optional<int> num_classes;
  std::optional<int> ignore_class;
  bool sparse_y_pred = false;
  int axis = -1;
  std::string name = "one_hot_mean_io_u";
  template <class V> void visit(V&& v) {
    v("num_classes", num_classes);
    v("ignore_class", ignore_class);
    v("sparse_y_pred", sparse_y_pred);
    v("axis", axis);
    v("name", name);
  }
};

struct BinaryIoUOptions {
  std::vector<int> target_class_ids = {0, 1};
  double threshold = 0.5;
  std::string name = "binary_io_u";
  template <class V> void visit(V&& v) {
    v("target_class_ids", target_class_ids);
    v("threshold", threshold);
    v("name", name);
  }
};

namespace detail {

// The confusion matrix and IoU of every IoU metric.
class IoUBase : public Metric {
 public:
  using Metric::Metric;
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = Tensor()) override;
  double result() const override;
  void reset_state() override { state_.zero(); }
  void merge_state(const Metric& other) override;
  // The matrix [num_classes, num_classes], row-major, read from the device.
  std::vector<double> confusion_matrix() const;

 protected:
  struct Setup {
    std::optional<int> num_classes;
    std::vector<int> target_class_ids;  // empty: every class
    std::optional<int> ignore_class;
    bool sparse_y_true = true, sparse_y_pred = true;
    int axis = -1;
    std::optional<double> binary_threshold;
  };
  void configure(const Setup& setup);

 private:
  // Throws for a label outside [0, num_classes) in host memory (ignore_class aside).
  void check_host_labels(const Tensor& labels, const char* what, bool skip_ignored) const;
  Setup setup_;
  losses::detail::DeviceDoubles state_;  // [num_classes, num_classes]
};

}  // namespace detail

class IoUImpl final : public detail::MetricWithOptions<IoUImpl, IoUOptions, detail::IoUBase> {
 public:
  explicit IoUImpl(Options options = {});
  static const char* type_name() { return "IoU"; }
  static Config::Map fixed_arguments() { return {{"dtype", "int64"}}; }
};

class MeanIoUImpl final : public detail::MetricWithOptions<MeanIoUImpl, MeanIoUOptions, detail::IoUBase> {
 public:
  explicit MeanIoUImpl(Options options = {});
  static const char* type_name() { return "MeanIoU"; }
  static Config::Map fixed_arguments() { return {{"dtype", "int64"}}; }
};

class OneHotIoUImpl final : public detail::MetricWithOptions<OneHotIoUImpl, OneHotIoUOptions, detail::IoUBase> {
 public:
  explicit OneHotIoUImpl(Options options = {});
  static const char* type_name() { return "OneHotIoU"; }
  static Config::Map fixed_arguments() { return {{"dtype", "int64"}}; }
};

class OneHotMeanIoUImpl final
    : public detail::MetricWithOptions<OneHotMeanIoUImpl, OneHotMeanIoUOptions, detail::IoUBase> {
 public:
  explicit OneHotMeanIoUImpl(Options options = {});
  static const char* type_name() { return "OneHotMeanIoU"; }
  static Config::Map fixed_arguments() { return {{"dtype", "int64"}}; }
};

class BinaryIoUImpl final : public detail::MetricWithOptions<BinaryIoUImpl, BinaryIoUOptions, detail::IoUBase> {
 public:
  explicit BinaryIoUImpl(Options options = {});
  static const char* type_name() { return "BinaryIoU"; }
  static Config::Map fixed_arguments() { return {{"dtype", "int64"}}; }
};

class IoU : public MetricHolder<IoUImpl> {
 public:
  using MetricHolder::MetricHolder;
};
class MeanIoU : public MetricHolder<MeanIoUImpl> {
 public:
  using MetricHolder::MetricHolder;
};
class OneHotIoU : public MetricHolder<OneHotIoUImpl> {
 public:
  using MetricHolder::MetricHolder;
};
class OneHotMeanIoU : public MetricHolder<OneHotMeanIoUImpl> {
 public:
  using MetricHolder::MetricHolder;
};
class BinaryIoU : public MetricHolder<BinaryIoUImpl> {
 public:
  using MetricHolder::MetricHolder;
};

}  // namespace tower::metrics
