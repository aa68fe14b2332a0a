#include "api/regularizers/regularizers.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

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
  double s1 = 0, s2 = 0;
  for (float v : w.to_vector()) {
    s1 += std::fabs(v);
    s2 += static_cast<double>(v) * v;
  }
  return l1 * s1 + l2 * s2;
}

void Regularizer::add_gradient(const Tensor& w, Tensor& grad) const {
  if (!active()) return;
  if (w.device().is_cpu() && grad.device().is_cpu()) {
    const float* pw = w.data<float>();
    float* pg = grad.data<float>();
    const float a = static_cast<float>(l1), b = static_cast<float>(2 * l2);
    for (Index i = 0; i < w.numel(); ++i) pg[i] += a * (pw[i] > 0.f ? 1.f : pw[i] < 0.f ? -1.f : 0.f) + b * pw[i];
    return;
  }
  std::vector<float> pw = w.to_vector(), pg = grad.to_vector();
  for (std::size_t i = 0; i < pw.size(); ++i)
    pg[i] += static_cast<float>(l1) * (pw[i] > 0.f ? 1.f : pw[i] < 0.f ? -1.f : 0.f) + static_cast<float>(2 * l2) * pw[i];
  grad.copy_from(Tensor::from_vector(pg, grad.shape()));
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
