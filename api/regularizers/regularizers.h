#pragma once
// Weight regularizers (Keras' L1, L2, L1L2): a penalty added to the training loss and its gradient added
// to the weight's gradient. An empty Regularizer (the default) adds nothing.
#include <string>
#include <utility>
#include <vector>

#include "api/core/tensor.h"
#include "api/io/config.h"
#include "api/io/registry.h"

namespace tower::regularizers {

struct Regularizer {
  double l1 = 0.0, l2 = 0.0;

  Regularizer() = default;
  // "l1", "l2" (Keras' default factor 0.01 each) or "l1_l2"; throws std::invalid_argument otherwise.
  Regularizer(const char* name) : Regularizer(std::string(name)) {}
  Regularizer(std::string name);

  bool active() const { return l1 != 0.0 || l2 != 0.0; }
  // l1 * sum|w| + l2 * sum w^2 (host computation; weights are small next to activations).
  double penalty(const Tensor& w) const;
  // grad += l1 * sign(w) + 2 * l2 * w.
  void add_gradient(const Tensor& w, Tensor& grad) const;
  Config to_config() const;  // null when inactive
  static Regularizer from_config(const Config& c);
};

// The regularizer classes by Keras class name, with Keras' snake_case names as aliases (io/registry.h).
Registry<Regularizer>& registry();

Regularizer L1(double l1 = 0.01);
Regularizer L2(double l2 = 0.01);
Regularizer L1L2(double l1 = 0.0, double l2 = 0.0);

}  // namespace tower::regularizers
