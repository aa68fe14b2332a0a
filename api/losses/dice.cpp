#include "api/losses/dice.h"

#include <algorithm>
#include <stdexcept>

namespace tower::losses {

namespace {
const Config::Map kFixed = {{"reduction", "sum_over_batch_size"}};

std::string axes_text(const std::vector<int>& axes) {
  std::string s = "(";
  for (std::size_t i = 0; i < axes.size(); ++i) s += (i ? ", " : "") + std::to_string(axes[i]);
  return s + ")";
}
}  // namespace

namespace detail {

OverlapLoss::OverlapLoss(std::string type, std::string name, std::optional<std::vector<int>> axis)
    : BackendLoss(std::move(type), std::move(name)), axis_(std::move(axis)) {}

Shape OverlapLoss::per_example_shape(const Shape& y_pred) const {
  if (y_pred.rank() == 0) throw std::invalid_argument(name() + ": y_pred must have a batch axis, got shape ()");
  if (axis_) {
    std::vector<bool> seen(static_cast<std::size_t>(y_pred.rank()), false);
    for (int a : *axis_) {
      const int k = a < 0 ? a + y_pred.rank() : a;
      if (k >= 1 && k < y_pred.rank()) seen[static_cast<std::size_t>(k)] = true;
      else seen[0] = true;  // the batch axis or none: not supported
    }
    const bool every_other = y_pred.rank() > 1 && !seen[0] && std::all_of(seen.begin() + 1, seen.end(), [](bool b) {
      return b;
    });
    if (!every_other)
      throw std::invalid_argument(name() + ": axis " + axes_text(*axis_) + " for y_pred of shape " +
                                  y_pred.to_string() +
                                  " is neither null (the whole batch) nor every non-batch axis, the sets Tower takes");
  }
  return Shape{y_pred[0]};
}

}  // namespace detail

DiceImpl::DiceImpl(Options options) : OverlapLoss("Dice", options.name, options.axis), options_(std::move(options)) {}

LossPtr DiceImpl::from_config(const Config& arguments) {
  return detail::make_from_arguments<DiceImpl>(arguments, kFixed, "Dice");
}

Config DiceImpl::get_config() const { return detail::serialize(type(), options_to_config(options_), kFixed); }

backend::LossParams DiceImpl::params() const {
  return {.kind = backend::LossKind::dice, .over_batch = over_batch()};
}

}  // namespace tower::losses
