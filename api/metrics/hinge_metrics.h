#pragma once
// Keras' hinge metrics (keras/src/metrics/hinge_metrics.py): the per-example values of the losses of the same names
// (tower::losses; hinge.h documents the 0/1 labels each batch may turn into -1/1), averaged over examples weighted by
// sample_weight ([N]). Shapes as the losses take them. Lower is better.
#include "api/metrics/regression_metrics.h"

namespace tower::metrics {

struct HingeOptions {
  std::string name = "hinge";
  template <class V> void visit(V&& v) { v("name", name); }
};

struct SquaredHingeOptions {
  std::string name = "squared_hinge";
  template <class V> void visit(V&& v) { v("name", name); }
};

struct CategoricalHingeOptions {
  std::string name = "categorical_hinge";
  template <class V> void visit(V&& v) { v("name", name); }
};

class HingeImpl final : public detail::MetricWithOptions<HingeImpl, HingeOptions, detail::LossMean> {
 public:
  explicit HingeImpl(Options options = {});
  static const char* type_name() { return "Hinge"; }
};

class Hinge : public MetricHolder<HingeImpl> {
 public:
  using MetricHolder::MetricHolder;
};

class SquaredHingeImpl final
    : public detail::MetricWithOptions<SquaredHingeImpl, SquaredHingeOptions, detail::LossMean> {
 public:
  explicit SquaredHingeImpl(Options options = {});
  static const char* type_name() { return "SquaredHinge"; }
};

class SquaredHinge : public MetricHolder<SquaredHingeImpl> {
 public:
  using MetricHolder::MetricHolder;
};

class CategoricalHingeImpl final
    : public detail::MetricWithOptions<CategoricalHingeImpl, CategoricalHingeOptions, detail::LossMean> {
 public:
  explicit CategoricalHingeImpl(Options options = {});
  static const char* type_name() { return "CategoricalHinge"; }
};

class CategoricalHinge : public MetricHolder<CategoricalHingeImpl> {
 public:
  using MetricHolder::MetricHolder;
};

}  // namespace tower::metrics
