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
  // l1 * sum|w| + l2 * sum w^2 (summed in double), computed by the backend of w's device and read back to the host.
  double penalty(const Tensor& w) const;
  // *total += factor * penalty(w) without leaving the device: total points to a double in the memory of w's device
  // (the training loop's loss sum). Nothing when inactive.
  void add_penalty(const Tensor& w, double factor, double* total) const;
  // grad += float(l1) * sign(w) + float(2 * l2) * w on their device. Requires float32 w and grad of the same size on
  // the same device (std::invalid_argument otherwise).
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
