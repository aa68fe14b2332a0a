#pragma once
// The glue between layer options structs and Config. Each options struct lists its fields once, with the
// Keras/YAML key, in a `visit` member:
//
//   struct DenseOptions {
//     int units = 0;
//     std::string name;
//     template <class V> void visit(V&& v) { v("units", units); v("name", name); }
//   };
//
// and options_to_config / options_from_config do the rest, with errors that name the key.
#include <array>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "api/activations/activations.h"
#include "api/core/shape.h"
#include "api/initializers/initializers.h"
#include "api/io/config.h"
#include "api/io/registry.h"
#include "api/regularizers/regularizers.h"

namespace tower {

// A pair of sizes (kernel_size, strides, pool_size, dilation_rate, ...): `3` means {3, 3}.
struct Size2 {
  int h = 1, w = 1;
  Size2() = default;
  Size2(int v) : h(v), w(v) {}
  Size2(int h_, int w_) : h(h_), w(w_) {}
  bool operator==(const Size2&) const = default;
};

// A size along one axis (the 1-D layers' kernel_size, strides, pool_size, dilation_rate): `3` or Keras' `(3,)`.
struct Size1 {
  int value = 1;
  Size1() = default;
  Size1(int v) : value(v) {}
  bool operator==(const Size1&) const = default;
};

// Padding or cropping of one axis (the 1-D layers'): `1` is 1 at each end, {1, 2} is 1 at the start, 2 at the end.
struct Padding1D {
  int left = 0, right = 0;
  Padding1D() = default;
  Padding1D(int v) : left(v), right(v) {}
  Padding1D(int l, int r) : left(l), right(r) {}
  bool operator==(const Padding1D&) const = default;
};

// Spatial padding or cropping amounts: `1` is 1 on every side, {1, 2} is 1 top/bottom and 2 left/right,
// {{t, b}, {l, r}} is each side.
struct Padding2D {
  int top = 0, bottom = 0, left = 0, right = 0;
  Padding2D() = default;
  Padding2D(int v) : top(v), bottom(v), left(v), right(v) {}
  Padding2D(int h, int w) : top(h), bottom(h), left(w), right(w) {}
  Padding2D(std::array<int, 2> h, std::array<int, 2> w) : top(h[0]), bottom(h[1]), left(w[0]), right(w[1]) {}
  bool operator==(const Padding2D&) const = default;
};

namespace detail {

Config to_value(bool v);
Config to_value(int v);
Config to_value(std::int64_t v);
Config to_value(float v);
Config to_value(double v);
Config to_value(const std::string& v);
Config to_value(const Size1& v);
Config to_value(const Size2& v);
Config to_value(const Padding1D& v);
Config to_value(const Padding2D& v);
Config to_value(const std::vector<int>& v);
Config to_value(const std::vector<std::int64_t>& v);
Config to_value(const std::vector<double>& v);
Config to_value(const Shape& v);
Config to_value(const initializers::Initializer& v);
Config to_value(const regularizers::Regularizer& v);
Config to_value(const activations::Activation& v);
template <class T> Config to_value(const std::optional<T>& v) { return v ? to_value(*v) : Config(); }

// Each throws ConfigError("<key>: expected ..., got ...").
void from_value(const Config& c, bool& v);
void from_value(const Config& c, int& v);
void from_value(const Config& c, std::int64_t& v);
void from_value(const Config& c, float& v);
void from_value(const Config& c, double& v);
void from_value(const Config& c, std::string& v);
void from_value(const Config& c, Size1& v);
void from_value(const Config& c, Size2& v);
void from_value(const Config& c, Padding1D& v);
void from_value(const Config& c, Padding2D& v);
void from_value(const Config& c, std::vector<int>& v);
void from_value(const Config& c, std::vector<std::int64_t>& v);
void from_value(const Config& c, std::vector<double>& v);
void from_value(const Config& c, Shape& v);
void from_value(const Config& c, initializers::Initializer& v);
void from_value(const Config& c, regularizers::Regularizer& v);
void from_value(const Config& c, activations::Activation& v);
template <class T> void from_value(const Config& c, std::optional<T>& v) {
  if (c.is_null()) {
    v.reset();
  } else {
    T t{};
    from_value(c, t);
    v = t;
  }
}

}  // namespace detail

// Field types of other modules (LearningRate) bring their own to_value / from_value, found by argument-dependent
// lookup.
template <class Options>
Config options_to_config(const Options& options) {
  using detail::to_value;
  Config c = Config::map();
  const_cast<Options&>(options).visit([&](const char* key, const auto& value) { c.set(key, to_value(value)); });
  return c;
}

// Reads every key of `c` into a default-constructed Options. Keys in `ignored` are skipped, and so are Keras'
// trainable, dtype and autocast (Tower keeps float32). Unknown keys throw ConfigError naming `what` (the layer
// type), the key and the closest known key; wrong types name the key and the expected type.
template <class Options>
Options options_from_config(const Config& c, const std::string& what, std::initializer_list<const char*> ignored = {}) {
  using detail::from_value;
  Options options;
  if (c.is_null()) return options;
  if (!c.is_map()) throw ConfigError(what + ": expected a map of arguments, got " + c.type_name());
  std::vector<std::string> known;
  options.visit([&](const char* key, auto&) { known.emplace_back(key); });
  for (const auto& entry : c.as_map()) {
    // Named references, not a structured binding: Clang 14 cannot capture bindings in the lambda below.
    const std::string& key = entry.first;
    const Config& value = entry.second;
    bool found = false;
    options.visit([&](const char* k, auto& field) {
      if (found || key != k) return;
      found = true;
      try {
        from_value(value, field);
      } catch (const std::exception& e) {
        throw ConfigError(what + ": argument '" + key + "': " + e.what());
      }
    });
    if (!found) {
      // Keras serializes these for every layer; Tower keeps float32 only.
      if (key == "trainable" || key == "dtype" || key == "autocast") continue;
      bool skip = false;
      for (const char* i : ignored) skip = skip || key == i;
      if (skip) continue;
      const std::string near = detail::closest_key(key, known);
      throw ConfigError(what + ": unknown argument '" + key + "'" +
                        (near.empty() ? std::string() : " (did you mean '" + near + "'?)"));
    }
  }
  return options;
}

}  // namespace tower
