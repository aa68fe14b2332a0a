#include "api/regularizers/regularizers.h"

#include <cmath>
#include <stdexcept>
#include <vector>

namespace tower::regularizers {

Regularizer::Regularizer(std::string name) {
  if (name == "l1" || name == "L1") l1 = 0.01;
  else if (name == "l2" || name == "L2") l2 = 0.01;
  else if (name == "l1_l2" || name == "L1L2") l1 = l2 = 0.01;
  else throw std::invalid_argument("unknown regularizer '" + name + "' (known: l1, l2, l1_l2)");
}

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
  if (c.is_string()) return Regularizer(c.as_string());
  if (!c.is_map() || !c.contains("class_name"))
    throw ConfigError("a regularizer is null, a name or {class_name, config}, got " + c.to_json());
  Regularizer r;
  const std::string& cls = c.at("class_name").as_string();
  if (cls != "L1" && cls != "L2" && cls != "L1L2")
    throw ConfigError("unknown regularizer class '" + cls + "' (known: L1, L2, L1L2)");
  if (c.contains("config")) {
    for (const auto& [k, v] : c.at("config").as_map()) {
      if (k == "l1") r.l1 = v.as_double();
      else if (k == "l2") r.l2 = v.as_double();
      else throw ConfigError("regularizer " + cls + ": unknown argument '" + k + "'");
    }
  }
  return r;
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
