#include "api/regularizers/regularizers.h"

#include <stdexcept>
#include <vector>

#include "api/backend/backend.h"
#include "api/core/device_memory.h"

namespace tower::regularizers {

namespace {

// A regularizer class: its factors, each read from the config or at its default.
Registry<Regularizer>::Factory factors(const std::string& type, std::vector<std::pair<std::string, double>> keys) {
  return [type, keys](const Config& args) {
    std::vector<std::string> names;
    for (const auto& [key, fallback] : keys) names.push_back(key);
    tower::detail::check_arguments(args, names, "regularizer " + type);
    Regularizer r;
    for (const auto& [key, fallback] : keys) {
      const double f = args.contains(key) ? args.at(key).as_double() : fallback;
      (key == "l1" ? r.l1 : r.l2) = f;
    }
    return r;
  };
}

}  // namespace

Registry<Regularizer>& registry() {
  // Keras' class names, with its snake_case names as aliases. L1 and L2 default to 0.01; L1L2 to 0.01 each when
  // named alone (Keras' l1_l2()), to 0 for a factor its config leaves out (Keras' L1L2(l1=...)).
  static Registry<Regularizer> r("regularizer");
  static const bool populated = [] {
    r.add("L1", factors("L1", {{"l1", 0.01}}), {"l1"});
    r.add("L2", factors("L2", {{"l2", 0.01}}), {"l2"});
    r.add("L1L2", [](const Config& args) {
      return args.as_map().empty() ? L1L2(0.01, 0.01) : factors("L1L2", {{"l1", 0.0}, {"l2", 0.0}})(args);
    }, {"l1_l2"});
    return true;
  }();
  (void)populated;
  return r;
}

Regularizer::Regularizer(std::string name) { *this = registry().from_name(name); }

double Regularizer::penalty(const Tensor& w) const {
  if (!active()) return 0.0;
  // One double in w's device memory (Tensor has no float64 dtype: an int64 cell holds it).
  Tensor cell(Shape{1}, DType::int64, w.device());
  cell.zero();
  add_penalty(w, 1.0, static_cast<double*>(cell.raw_data()));
  double value = 0;
  copy_bytes(&value, Device::cpu(), cell.raw_data(), w.device(), sizeof value);
  return value;
}

void Regularizer::add_penalty(const Tensor& w, double factor, double* total) const {
  if (!active()) return;
  backend::get(w.device()).accumulate_penalty(w.data<float>(), w.numel(), l1, l2, factor, total);
}

void Regularizer::add_gradient(const Tensor& w, Tensor& grad) const {
  if (!active()) return;
  if (grad.numel() != w.numel() || grad.device() != w.device())
    throw std::invalid_argument("regularizer gradient of " + grad.shape().to_string() + " on " +
                                grad.device().to_string() + " for a weight of " + w.shape().to_string() + " on " +
                                w.device().to_string());
  backend::get(w.device()).add_penalty_gradient(w.data<float>(), grad.data<float>(), w.numel(), l1, l2);
}

Config Regularizer::to_config() const {
  if (!active()) return Config();
  Config c = Config::map();
  Config cfg = Config::map();
  if (l1 != 0.0 && l2 != 0.0) {
    c.set("class_name", "L1L2");
    cfg.set("l1", l1);
    cfg.set("l2", l2);
  } else if (l1 != 0.0) {
    c.set("class_name", "L1");
    cfg.set("l1", l1);
  } else {
    c.set("class_name", "L2");
    cfg.set("l2", l2);
  }
  c.set("config", cfg);
  return c;
}

Regularizer Regularizer::from_config(const Config& c) {
  if (c.is_null()) return {};
  return registry().from_config(c);
}

Regularizer L1(double l1) { return L1L2(l1, 0.0); }
Regularizer L2(double l2) { return L1L2(0.0, l2); }
Regularizer L1L2(double l1, double l2) {
  Regularizer r;
  r.l1 = l1;
  r.l2 = l2;
  return r;
}

}  // namespace tower::regularizers
