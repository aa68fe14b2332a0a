#include "api/engine/layer_options.h"

#include <algorithm>

namespace tower::detail {

Config to_value(bool v) { return Config(v); }
Config to_value(int v) { return Config(v); }
Config to_value(std::int64_t v) { return Config(v); }
Config to_value(float v) { return Config(static_cast<double>(v)); }
Config to_value(double v) { return Config(v); }
Config to_value(const std::string& v) { return Config(v); }
Config to_value(const Size1& v) { return Config(Config::List{Config(v.value)}); }
Config to_value(const Padding1D& v) { return Config(Config::List{Config(v.left), Config(v.right)}); }
Config to_value(const Size2& v) { return Config(Config::List{Config(v.h), Config(v.w)}); }
Config to_value(const Padding2D& v) {
  return Config(Config::List{Config(Config::List{Config(v.top), Config(v.bottom)}),
                             Config(Config::List{Config(v.left), Config(v.right)})});
}
Config to_value(const std::vector<int>& v) {
  Config c = Config::list();
  for (int x : v) c.push_back(x);
  return c;
}
Config to_value(const Shape& v) {
  Config c = Config::list();
  for (Index x : v) c.push_back(x < 0 ? Config() : Config(x));
  return c;
}
Config to_value(const initializers::Initializer& v) { return v.to_config(); }
Config to_value(const regularizers::Regularizer& v) { return v.to_config(); }
Config to_value(const activations::Activation& v) { return Config(v.name()); }

void from_value(const Config& c, bool& v) { v = c.as_bool(); }
void from_value(const Config& c, int& v) { v = static_cast<int>(c.as_int()); }
void from_value(const Config& c, std::int64_t& v) { v = c.as_int(); }
void from_value(const Config& c, float& v) { v = static_cast<float>(c.as_double()); }
void from_value(const Config& c, double& v) { v = c.as_double(); }
void from_value(const Config& c, std::string& v) { v = c.is_null() ? std::string() : c.as_string(); }

void from_value(const Config& c, Size1& v) {
  if (!c.is_list()) {
    v = Size1(static_cast<int>(c.as_int()));
    return;
  }
  const auto& l = c.as_list();
  if (l.size() != 1) throw ConfigError("expected an int or a list of 1 int, got " + c.to_json());
  v = Size1(static_cast<int>(l[0].as_int()));
}

void from_value(const Config& c, Padding1D& v) {
  if (!c.is_list()) {
    v = Padding1D(static_cast<int>(c.as_int()));
    return;
  }
  const auto& l = c.as_list();
  if (l.size() != 2) throw ConfigError("expected an int or a list of 2 ints (start, end), got " + c.to_json());
  v = Padding1D(static_cast<int>(l[0].as_int()), static_cast<int>(l[1].as_int()));
}

void from_value(const Config& c, Size2& v) {
  if (c.is_list()) {
    const auto& l = c.as_list();
    if (l.size() != 2) throw ConfigError("expected an int or a list of 2 ints, got " + c.to_json());
    v = Size2(static_cast<int>(l[0].as_int()), static_cast<int>(l[1].as_int()));
  } else {
    v = Size2(static_cast<int>(c.as_int()));
  }
}

void from_value(const Config& c, Padding2D& v) {
  if (!c.is_list()) {
    v = Padding2D(static_cast<int>(c.as_int()));
    return;
  }
  const auto& l = c.as_list();
  if (l.size() != 2) throw ConfigError("expected an int, [h, w] or [[top, bottom], [left, right]], got " + c.to_json());
  if (l[0].is_list() && l[1].is_list() && l[0].size() == 2 && l[1].size() == 2) {
    v = Padding2D({static_cast<int>(l[0].as_list()[0].as_int()), static_cast<int>(l[0].as_list()[1].as_int())},
                  {static_cast<int>(l[1].as_list()[0].as_int()), static_cast<int>(l[1].as_list()[1].as_int())});
  } else {
    v = Padding2D(static_cast<int>(l[0].as_int()), static_cast<int>(l[1].as_int()));
  }
}

void from_value(const Config& c, std::vector<int>& v) {
  v.clear();
  if (!c.is_list()) {
    v.push_back(static_cast<int>(c.as_int()));
    return;
  }
  for (const Config& x : c.as_list()) v.push_back(static_cast<int>(x.as_int()));
}

void from_value(const Config& c, Shape& v) {
  std::vector<Index> dims;
  for (const Config& x : c.as_list()) dims.push_back(x.is_null() ? -1 : x.as_int());
  v = Shape(dims);
}

void from_value(const Config& c, initializers::Initializer& v) { v = initializers::Initializer::from_config(c); }
void from_value(const Config& c, regularizers::Regularizer& v) { v = regularizers::Regularizer::from_config(c); }
void from_value(const Config& c, activations::Activation& v) {
  v = activations::Activation(c.is_null() ? std::string("linear") : c.as_string());
}

Config to_value(const std::vector<std::int64_t>& v) {
  Config c = Config::list();
  for (std::int64_t x : v) c.push_back(x);
  return c;
}

Config to_value(const std::vector<double>& v) {
  Config c = Config::list();
  for (double x : v) c.push_back(x);
  return c;
}

void from_value(const Config& c, std::vector<std::int64_t>& v) {
  v.clear();
  for (const Config& x : c.as_list()) v.push_back(x.as_int());
}

void from_value(const Config& c, std::vector<double>& v) {
  v.clear();
  for (const Config& x : c.as_list()) v.push_back(x.as_double());
}

}  // namespace tower::detail
