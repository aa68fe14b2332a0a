#include "api/losses/loss.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "api/backend/math/losses.h"
#include "api/engine/layer_options.h"
#include "api/losses/losses.h"

namespace tower::losses {

namespace {

bool dims_match(Index a, Index b) { return a == b || a < 0 || b < 0; }

bool shapes_match(const Shape& a, const Shape& b) {
  if (a.rank() != b.rank()) return false;
  for (int i = 0; i < a.rank(); ++i)
    if (!dims_match(a[i], b[i])) return false;
  return true;
}

Shape drop_last(const Shape& s) { return Shape(std::vector<Index>(s.begin(), s.end() - 1)); }

std::string format_number(double v) {
  std::ostringstream os;
  os.precision(9);
  os << v;
  return os.str();
}

}  // namespace

Shape Loss::per_example_shape(const Shape& y_pred) const {
  if (y_pred.rank() == 0) throw std::invalid_argument(name_ + ": y_pred must have a batch axis, got shape ()");
  if (y_pred.rank() == 1) return y_pred;
  return drop_last(y_pred);
}

void Loss::check_shapes(const Shape& y_true, const Shape& y_pred) const {
  detail::check_matching_shapes(name_, y_true, y_pred);
}

void Loss::backward_through_softmax(const Tensor&, const Tensor&, const Tensor&, Tensor&) {
  throw std::logic_error(name_ + ": " + type_ + " cannot fuse a softmax; check can_fuse_softmax() first");
}

Registry<LossPtr>& registry() {
  // Keras' class names, with its function names and aliases (keras.losses.ALL_OBJECTS_DICT).
  static Registry<LossPtr> r("loss");
  static const bool populated = [] {
    r.add("BinaryCrossentropy", &BinaryCrossentropyImpl::from_config, {"binary_crossentropy", "bce", "BCE"});
    r.add("CategoricalCrossentropy", &CategoricalCrossentropyImpl::from_config, {"categorical_crossentropy"});
    r.add("Huber", &HuberImpl::from_config, {"huber"});
    r.add("KLDivergence", &KLDivergenceImpl::from_config, {"kl_divergence", "kld", "KLD"});
    r.add("MeanAbsoluteError", &MeanAbsoluteErrorImpl::from_config, {"mean_absolute_error", "mae", "MAE"});
    r.add("MeanSquaredError", &MeanSquaredErrorImpl::from_config, {"mean_squared_error", "mse", "MSE"});
    r.add("SparseCategoricalCrossentropy", &SparseCategoricalCrossentropyImpl::from_config,
          {"sparse_categorical_crossentropy"});
    r.add("BinaryFocalCrossentropy", &BinaryFocalCrossentropyImpl::from_config, {"binary_focal_crossentropy"});
    r.add("CategoricalFocalCrossentropy", &CategoricalFocalCrossentropyImpl::from_config,
          {"categorical_focal_crossentropy"});
    r.add("CategoricalHinge", &CategoricalHingeImpl::from_config, {"categorical_hinge"});
    r.add("CosineSimilarity", &CosineSimilarityImpl::from_config, {"cosine_similarity"});
    r.add("Dice", &DiceImpl::from_config, {"dice"});
    r.add("Hinge", &HingeImpl::from_config, {"hinge"});
    r.add("LogCosh", &LogCoshImpl::from_config, {"log_cosh"});
    r.add("MeanAbsolutePercentageError", &MeanAbsolutePercentageErrorImpl::from_config,
          {"mean_absolute_percentage_error", "mape", "MAPE"});
    r.add("MeanSquaredLogarithmicError", &MeanSquaredLogarithmicErrorImpl::from_config,
          {"mean_squared_logarithmic_error", "msle", "MSLE"});
    r.add("Poisson", &PoissonImpl::from_config, {"poisson"});
    r.add("SquaredHinge", &SquaredHingeImpl::from_config, {"squared_hinge"});
    r.add("Tversky", &TverskyImpl::from_config, {"tversky"});
    return true;
  }();
  (void)populated;
  return r;
}

std::vector<std::string> loss_types() { return registry().class_names(); }

LossPtr loss_from_config(const Config& c) { return registry().from_config(c); }

void Loss::check_host_targets(const Tensor&, const Shape&) const {}

namespace detail {

backend::AnyValues any_values(const Tensor& t) {
  if (!t.defined()) return {};
  return {t.raw_data(), t.dtype()};
}

void check_class_labels(const Tensor& labels, Index num_classes, const std::string& who, double ignore_class) {
  if (labels.dtype() != DType::float32 && labels.dtype() != DType::int32 && labels.dtype() != DType::int64)
    throw std::invalid_argument(who + ": labels must be int32, int64 or float32, got " + dtype_name(labels.dtype()));
  // On a GPU the check would stop the step to read the labels back; there a bad label gives NaN instead.
  if (!labels.device().is_cpu()) return;
  std::int64_t first = 0;
  const backend::AnyValues values = any_values(labels);
  backend::get(labels.device()).find_invalid_class(values, labels.numel(), num_classes, ignore_class, &first);
  if (first == labels.numel()) return;
  const double v = backend::math::value_at(values, first);
  throw std::invalid_argument(who + ": label " + format_number(v) + " at index " + std::to_string(first) +
                              " is not a class index in [0, " + std::to_string(num_classes) + ") for " +
                              std::to_string(num_classes) + " classes" +
                              (std::isnan(ignore_class) ? std::string() : " (nor ignore_class " +
                                                                              format_number(ignore_class) + ")"));
}

bool same_up_to_trailing_one(const Shape& a, const Shape& b) {
  if (a.rank() == b.rank()) return shapes_match(a, b);
  if (a.rank() == b.rank() + 1 && a[-1] == 1) return shapes_match(drop_last(a), b);
  if (b.rank() == a.rank() + 1 && b[-1] == 1) return shapes_match(a, drop_last(b));
  return false;
}

namespace {
void shape_error(const std::string& who, const Shape& y_true, const Shape& y_pred, const std::string& expected) {
  throw std::invalid_argument(who + ": y_true of shape " + y_true.to_string() + " does not fit y_pred of shape " +
                              y_pred.to_string() + " (expected " + expected + ")");
}

void require_classes(const std::string& who, const Shape& y_pred) {
  if (y_pred.rank() < 2)
    throw std::invalid_argument(who + ": y_pred must be [batch, ..., classes], got shape " + y_pred.to_string());
}
}  // namespace

void check_matching_shapes(const std::string& who, const Shape& y_true, const Shape& y_pred) {
  if (y_pred.rank() == 0) throw std::invalid_argument(who + ": y_pred must have a batch axis, got shape ()");
  if (!same_up_to_trailing_one(y_true, y_pred)) shape_error(who, y_true, y_pred, "the same shape");
}

void check_categorical_shapes(const std::string& who, const Shape& y_true, const Shape& y_pred) {
  require_classes(who, y_pred);
  if (!shapes_match(y_true, y_pred)) shape_error(who, y_true, y_pred, "labels of y_pred's shape");
}

void check_sparse_shapes(const std::string& who, const Shape& y_true, const Shape& y_pred) {
  require_classes(who, y_pred);
  const Shape expected = drop_last(y_pred);
  const bool fits = shapes_match(y_true, expected) ||
                    (y_true.rank() == y_pred.rank() && y_true[-1] == 1 && shapes_match(drop_last(y_true), expected));
  if (!fits) shape_error(who, y_true, y_pred, "class indices of shape " + expected.to_string());
}

void check_focal_arguments(const std::string& who, double alpha, double gamma, double label_smoothing) {
  if (!(gamma >= 0)) throw std::invalid_argument(who + ": gamma must be >= 0, got " + format_number(gamma));
  if (!(alpha >= 0 && alpha <= 1))
    throw std::invalid_argument(who + ": alpha must be in [0, 1], got " + format_number(alpha));
  if (!(label_smoothing >= 0 && label_smoothing <= 1))
    throw std::invalid_argument(who + ": label_smoothing must be in [0, 1], got " + format_number(label_smoothing));
}

void require_float32(const Tensor& t, const std::string& who, const std::string& what) {
  if (!t.defined()) throw std::invalid_argument(who + ": " + what + " is undefined");
  if (t.dtype() != DType::float32)
    throw std::invalid_argument(who + ": " + what + " must be float32, got " + dtype_name(t.dtype()));
}

void require_numel(const Tensor& t, Index numel, const std::string& who, const std::string& what) {
  if (!t.defined() || t.numel() != numel)
    throw std::invalid_argument(who + ": " + what + " must have " + std::to_string(numel) + " elements, got " +
                                (t.defined() ? t.shape().to_string() : std::string("an undefined tensor")));
}

void require_device(const Tensor& t, Device device, const std::string& who, const std::string& what) {
  if (t.device() != device)
    throw std::invalid_argument(who + ": " + what + " is on " + t.device().to_string() + ", expected " +
                                device.to_string() + " with y_pred");
}

Config without_fixed_arguments(const Config& args, const Config::Map& fixed, const std::string& what) {
  if (!args.is_map()) return args;
  Config rest = Config::map();
  for (const auto& [key, value] : args.as_map()) {
    const Config* supported = nullptr;
    for (const auto& [k, v] : fixed)
      if (k == key) supported = &v;
    if (!supported) {
      rest.set(key, value);
      continue;
    }
    const bool same = value == *supported || (value.is_number() && supported->is_number() &&
                                              value.as_double() == supported->as_double());
    if (!same)
      throw ConfigError(what + ": argument '" + key + "' = " + value.to_json() + " is not supported; Tower takes " +
                        supported->to_json());
  }
  return rest;
}

Config serialize(const std::string& type, const Config& arguments, const Config::Map& fixed) {
  Config config = Config::map();
  if (arguments.contains("name")) config.set("name", arguments.at("name"));
  for (const auto& [key, value] : arguments.as_map()) config.set(key, value);
  for (const auto& [key, value] : fixed) config.set(key, value);
  Config out = Config::map();
  out.set("class_name", type);
  out.set("config", config);
  return out;
}

void BackendLoss::check_host_targets(const Tensor& y_true, const Shape& y_pred) const {
  if (params().kind != backend::LossKind::sparse_categorical_crossentropy || !y_true.device().is_cpu()) return;
  check_shapes(y_true.shape(), y_pred);
  const Index rows = per_example_shape(y_pred).numel();
  check_class_labels(y_true, y_pred.numel() / std::max<Index>(rows, 1), name(), params().ignore_class);
}

Tensor BackendLoss::labels_for(const Tensor& y_true, const Tensor& y_pred, Index& rows, Index& cols) const {
  check_shapes(y_true.shape(), y_pred.shape());
  require_float32(y_pred, name(), "y_pred");
  rows = per_example_shape(y_pred.shape()).numel();
  cols = y_pred.numel() / std::max<Index>(rows, 1);
  Tensor labels = y_true.to(y_pred.device());
  if (params().kind == backend::LossKind::sparse_categorical_crossentropy)
    check_class_labels(labels, cols, name(), params().ignore_class);
  return labels;
}

namespace {
// A float32 tensor of numel elements on y_pred's device, else std::invalid_argument naming `what`.
void require_operand(const Tensor& t, Index numel, const Tensor& y_pred, const std::string& who,
                     const std::string& what) {
  require_float32(t, who, what);
  require_numel(t, numel, who, what);
  require_device(t, y_pred.device(), who, what);
}
}  // namespace

void BackendLoss::forward(const Tensor& y_true, const Tensor& y_pred, Tensor& per_example) {
  Index rows = 0, cols = 0;
  const Tensor labels = labels_for(y_true, y_pred, rows, cols);
  require_operand(per_example, rows, y_pred, name(), "per_example");
  backend::get(y_pred.device())
      .loss_forward(params(), any_values(labels), y_pred.data<float>(), per_example.data<float>(), rows, cols);
}

void BackendLoss::backward(const Tensor& y_true, const Tensor& y_pred, const Tensor& scale, Tensor& grad) {
  Index rows = 0, cols = 0;
  const Tensor labels = labels_for(y_true, y_pred, rows, cols);
  require_operand(scale, rows, y_pred, name(), "scale");
  require_operand(grad, y_pred.numel(), y_pred, name(), "grad");
  backend::get(y_pred.device())
      .loss_backward(params(), any_values(labels), y_pred.data<float>(), scale.data<float>(), grad.data<float>(), rows,
                     cols);
}

void BackendLoss::backward_through_softmax(const Tensor& y_true, const Tensor& probs, const Tensor& scale,
                                           Tensor& grad_logits) {
  if (!can_fuse_softmax()) Loss::backward_through_softmax(y_true, probs, scale, grad_logits);
  Index rows = 0, cols = 0;
  const Tensor labels = labels_for(y_true, probs, rows, cols);
  require_operand(scale, rows, probs, name(), "scale");
  require_operand(grad_logits, probs.numel(), probs, name(), "grad");
  backend::get(probs.device())
      .loss_backward_through_softmax(params(), any_values(labels), probs.data<float>(), scale.data<float>(),
                                     grad_logits.data<float>(), rows, cols);
}

}  // namespace detail
}  // namespace tower::losses
