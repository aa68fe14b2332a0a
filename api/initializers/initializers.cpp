#include "api/initializers/initializers.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "api/core/random.h"

namespace tower::initializers {
namespace {

struct Known {
  const char* snake;
  const char* camel;
};
constexpr Known kKnown[] = {
    {"glorot_uniform", "GlorotUniform"}, {"glorot_normal", "GlorotNormal"},   {"he_normal", "HeNormal"},
    {"he_uniform", "HeUniform"},         {"lecun_normal", "LecunNormal"},     {"lecun_uniform", "LecunUniform"},
    {"zeros", "Zeros"},                  {"ones", "Ones"},                    {"constant", "Constant"},
    {"random_normal", "RandomNormal"},   {"random_uniform", "RandomUniform"}, {"truncated_normal", "TruncatedNormal"},
    {"orthogonal", "Orthogonal"},
};

// Keras' compute_fans.
void fans(const Shape& s, double& fan_in, double& fan_out) {
  if (s.rank() == 0) {
    fan_in = fan_out = 1;
  } else if (s.rank() == 1) {
    fan_in = fan_out = static_cast<double>(s[0]);
  } else if (s.rank() == 2) {
    fan_in = static_cast<double>(s[0]);
    fan_out = static_cast<double>(s[1]);
  } else {
    double receptive = 1;
    for (int i = 0; i < s.rank() - 2; ++i) receptive *= static_cast<double>(s[i]);
    fan_in = static_cast<double>(s[-2]) * receptive;
    fan_out = static_cast<double>(s[-1]) * receptive;
  }
}

// Keras' Orthogonal: the [rows, cols] matrix of `shape` (rows: the product of all axes but the last) with orthonormal
// columns, or rows when there are fewer rows than columns, times `gain`: the Q of a QR decomposition of a standard
// normal matrix, its columns' signs those of R's diagonal (Gram-Schmidt gives R a positive diagonal, so Q as is).
void fill_orthogonal(const Shape& shape, double gain, Generator& g, std::vector<float>& v) {
  if (shape.rank() < 2)
    throw std::invalid_argument("initializer Orthogonal needs a shape of rank 2 or more, got " + shape.to_string());
  const Index cols = shape[-1], rows = shape.numel() / std::max<Index>(cols, 1);
  const Index m = std::max(rows, cols), k = std::min(rows, cols);
  std::vector<double> a(static_cast<std::size_t>(m * k));  // column j: a[j * m .. j * m + m)
  for (double& x : a) x = g.normal(0.f, 1.f);
  for (Index j = 0; j < k; ++j) {
    double* col = a.data() + j * m;
    for (Index p = 0; p < j; ++p) {  // modified Gram-Schmidt: remove the earlier columns' components
      const double* q = a.data() + p * m;
      double dot = 0;
      for (Index i = 0; i < m; ++i) dot += q[i] * col[i];
      for (Index i = 0; i < m; ++i) col[i] -= dot * q[i];
    }
    double norm = 0;
    for (Index i = 0; i < m; ++i) norm += col[i] * col[i];
    norm = std::sqrt(norm);
    for (Index i = 0; i < m; ++i) col[i] = norm > 0 ? col[i] / norm : 0.0;
  }
  // Q is [m, k]; the result is Q when rows >= cols, else Q^T.
  for (Index r = 0; r < rows; ++r)
    for (Index c = 0; c < cols; ++c) {
      const double q = rows >= cols ? a[static_cast<std::size_t>(c * m + r)] : a[static_cast<std::size_t>(r * m + c)];
      v[static_cast<std::size_t>(r * cols + c)] = static_cast<float>(gain * q);
    }
}

// The Keras arguments of an initializer class.
std::vector<std::string> arguments_of(const std::string& snake) {
  if (snake == "zeros" || snake == "ones") return {};
  if (snake == "constant") return {"value"};
  if (snake == "random_normal" || snake == "truncated_normal") return {"mean", "stddev", "seed"};
  if (snake == "random_uniform") return {"minval", "maxval", "seed"};
  if (snake == "orthogonal") return {"gain", "seed"};
  return {"seed"};
}

Initializer read_arguments(const Known& k, const Config& args) {
  Initializer init;
  init.name = k.snake;
  tower::detail::check_arguments(args, arguments_of(k.snake), "initializer " + std::string(k.camel));
  for (const auto& [key, v] : args.as_map()) {
    if (key == "mean") init.mean = v.as_double();
    else if (key == "stddev") init.stddev = v.as_double();
    else if (key == "minval") init.minval = v.as_double();
    else if (key == "maxval") init.maxval = v.as_double();
    else if (key == "value") init.value = v.as_double();
    else if (key == "gain") init.gain = v.as_double();
    else if (key == "seed") init.seed = v.is_null() ? std::nullopt : std::optional<std::uint64_t>(v.as_int());
  }
  return init;
}

}  // namespace

Registry<Initializer>& registry() {
  // Keras' class names, with its snake_case names (and "zero", "one", "uniform", "normal") as aliases.
  static Registry<Initializer> r("initializer");
  static const bool populated = [] {
    for (const Known& k : kKnown) {
      std::vector<std::string> aliases = {k.snake};
      if (std::string(k.snake) == "zeros") aliases.push_back("zero");
      if (std::string(k.snake) == "ones") aliases.push_back("one");
      if (std::string(k.snake) == "random_uniform") aliases.push_back("uniform");
      if (std::string(k.snake) == "random_normal") aliases.push_back("normal");
      r.add(k.camel, [&k](const Config& args) { return read_arguments(k, args); }, aliases);
    }
    return true;
  }();
  (void)populated;
  return r;
}

Initializer::Initializer(std::string n) { *this = registry().from_name(n); }

void Initializer::operator()(Tensor& t) const {
  const Index n = t.numel();
  std::vector<float> v(static_cast<std::size_t>(n));
  Generator g(seed ? *seed : next_global_seed());
  double fan_in = 1, fan_out = 1;
  fans(t.shape(), fan_in, fan_out);
  const auto variance_scaling = [&](double scale, double fan, bool uniform) {
    const double var = scale / std::max(1.0, fan);
    if (uniform) {
      const float limit = static_cast<float>(std::sqrt(3.0 * var));
      for (float& x : v) x = g.uniform(-limit, limit);
    } else {
      // Keras' truncated normal: stddev of the untruncated normal so the truncated one has variance `var`.
      const float stddev = static_cast<float>(std::sqrt(var) / 0.87962566103423978);
      for (float& x : v) x = g.truncated_normal(0.f, stddev);
    }
  };
  if (name == "zeros" || name == "ones" || name == "constant") {
    const float c = name == "zeros" ? 0.f : name == "ones" ? 1.f : static_cast<float>(value);
    for (float& x : v) x = c;
  } else if (name == "random_normal") {
    for (float& x : v) x = g.normal(static_cast<float>(mean), static_cast<float>(stddev));
  } else if (name == "truncated_normal") {
    for (float& x : v) x = g.truncated_normal(static_cast<float>(mean), static_cast<float>(stddev));
  } else if (name == "random_uniform") {
    for (float& x : v) x = g.uniform(static_cast<float>(minval), static_cast<float>(maxval));
  } else if (name == "orthogonal") {
    fill_orthogonal(t.shape(), gain, g, v);
  } else if (name == "glorot_uniform") {
    variance_scaling(1.0, (fan_in + fan_out) / 2, true);
  } else if (name == "glorot_normal") {
    variance_scaling(1.0, (fan_in + fan_out) / 2, false);
  } else if (name == "he_normal") {
    variance_scaling(2.0, fan_in, false);
  } else if (name == "he_uniform") {
    variance_scaling(2.0, fan_in, true);
  } else if (name == "lecun_normal") {
    variance_scaling(1.0, fan_in, false);
  } else if (name == "lecun_uniform") {
    variance_scaling(1.0, fan_in, true);
  } else {
    throw std::logic_error("initializer '" + name + "' has no fill rule");
  }
  t.copy_from(Tensor::from_vector(v, t.shape()));
}

Config Initializer::to_config() const {
  Config c = Config::map();
  std::string camel = name;
  for (const Known& k : kKnown)
    if (name == k.snake) camel = k.camel;
  c.set("class_name", camel);
  Config cfg = Config::map();
  if (name == "constant") cfg.set("value", value);
  if (name == "random_normal" || name == "truncated_normal") {
    cfg.set("mean", mean);
    cfg.set("stddev", stddev);
  }
  if (name == "random_uniform") {
    cfg.set("minval", minval);
    cfg.set("maxval", maxval);
  }
  if (name == "orthogonal") cfg.set("gain", gain);
  if (name != "zeros" && name != "ones" && name != "constant")
    cfg.set("seed", seed ? Config(static_cast<std::int64_t>(*seed)) : Config());
  c.set("config", cfg);
  return c;
}

Initializer Initializer::from_config(const Config& c) { return registry().from_config(c); }

Initializer Zeros() { return Initializer("zeros"); }
Initializer Ones() { return Initializer("ones"); }
Initializer Constant(double value) {
  Initializer i("constant");
  i.value = value;
  return i;
}
Initializer RandomNormal(RandomOptions o) {
  Initializer i("random_normal");
  i.mean = o.mean;
  i.stddev = o.stddev;
  i.seed = o.seed;
  return i;
}
Initializer TruncatedNormal(RandomOptions o) {
  Initializer i = RandomNormal(o);
  i.name = "truncated_normal";
  return i;
}
Initializer RandomUniform(UniformOptions o) {
  Initializer i("random_uniform");
  i.minval = o.minval;
  i.maxval = o.maxval;
  i.seed = o.seed;
  return i;
}
static Initializer seeded(const char* name, std::optional<std::uint64_t> seed) {
  Initializer i(name);
  i.seed = seed;
  return i;
}
Initializer GlorotUniform(std::optional<std::uint64_t> seed) { return seeded("glorot_uniform", seed); }
Initializer GlorotNormal(std::optional<std::uint64_t> seed) { return seeded("glorot_normal", seed); }
Initializer HeNormal(std::optional<std::uint64_t> seed) { return seeded("he_normal", seed); }
Initializer HeUniform(std::optional<std::uint64_t> seed) { return seeded("he_uniform", seed); }
Initializer LecunNormal(std::optional<std::uint64_t> seed) { return seeded("lecun_normal", seed); }
Initializer LecunUniform(std::optional<std::uint64_t> seed) { return seeded("lecun_uniform", seed); }
Initializer Orthogonal(double gain, std::optional<std::uint64_t> seed) {
  Initializer i = seeded("orthogonal", seed);
  i.gain = gain;
  return i;
}

}  // namespace tower::initializers
