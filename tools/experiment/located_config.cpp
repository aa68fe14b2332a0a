#include "tools/experiment/located_config.h"

#include <cmath>

#include "api/engine/layer_options.h"

namespace tower::experiment {

namespace {
const Config& null_config() {
  static const Config null;
  return null;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}
}  // namespace

std::string describe(const Config& value) {
  std::string text = value.to_json();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return value.type_name() + " " + text;
}

LocatedConfig::LocatedConfig(const Document& doc, std::string path)
    : doc_(&doc), path_(std::move(path)), found_(doc.find(path_)) {}

const Config& LocatedConfig::value() const { return found_ ? *found_ : null_config(); }

std::vector<std::string> LocatedConfig::keys() const {
  std::vector<std::string> out;
  if (value().is_map())
    for (const auto& [k, v] : value().as_map()) out.push_back(k);
  return out;
}

void LocatedConfig::fail(const std::string& message) const {
  throw ExperimentError(mark(), (path_.empty() ? std::string() : path_ + ": ") + message);
}

void LocatedConfig::fail_key(const std::string& message) const {
  throw ExperimentError(key_mark(), (path_.empty() ? std::string() : path_ + ": ") + message);
}

void LocatedConfig::type_error(const std::string& expected) const {
  fail("expected " + expected + ", got " + describe(value()));
}

void LocatedConfig::require_map() const {
  if (!value().is_map()) type_error("a map");
}

void LocatedConfig::require_list() const {
  if (!value().is_list()) type_error("a list");
}

void LocatedConfig::require_keys(const std::vector<std::string>& known) const {
  if (is_null()) return;
  require_map();
  for (const std::string& key : keys()) {
    bool ok = false;
    for (const std::string& k : known) ok = ok || k == key;
    if (ok) continue;
    const std::string near = tower::detail::closest_key(key, known);
    throw ExperimentError((*this)[key].key_mark(),
                          (path_.empty() ? std::string() : path_ + ": ") + "unknown key '" + key + "'" +
                              (near.empty() ? "" : " (did you mean '" + near + "'?)") + "; known keys: " + join(known));
  }
}

void LocatedConfig::require(const std::string& key) const {
  if ((*this)[key].is_null()) fail("missing required key '" + key + "'");
}

bool LocatedConfig::as_bool() const {
  if (!value().is_bool()) type_error("a bool (true or false)");
  return value().as_bool();
}

std::int64_t LocatedConfig::as_int() const {
  const Config& v = value();
  if (v.is_int()) return v.as_int();
  if (v.is_number() && std::floor(v.as_double()) == v.as_double() && std::isfinite(v.as_double()))
    return locate([&] { return v.as_int(); });  // Config's own range check
  type_error("an int");
}

double LocatedConfig::as_number() const {
  if (!value().is_number()) type_error("a number");
  return value().as_double();
}

const std::string& LocatedConfig::as_string() const {
  if (!value().is_string()) type_error("a string");
  return value().as_string();
}

std::string LocatedConfig::as_choice(const std::vector<std::string>& choices) const {
  if (!value().is_string()) type_error("one of " + join(choices));
  const std::string& s = value().as_string();
  for (const std::string& c : choices)
    if (c == s) return s;
  const std::string near = tower::detail::closest_key(s, choices);
  fail("unknown value '" + s + "'" + (near.empty() ? "" : " (did you mean '" + near + "'?)") + "; expected one of " +
       join(choices));
}

std::vector<std::int64_t> LocatedConfig::as_int_list(bool allow_null) const {
  if (!value().is_list()) type_error(allow_null ? "a list of ints or nulls" : "a list of ints");
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < size(); ++i) {
    const LocatedConfig item = (*this)[i];
    if (allow_null && item.is_null())
      out.push_back(-1);
    else
      out.push_back(item.as_int());
  }
  return out;
}

std::vector<double> LocatedConfig::as_number_list() const {
  if (value().is_number()) return {value().as_double()};
  if (!value().is_list()) type_error("a number or a list of numbers");
  std::vector<double> out;
  for (std::size_t i = 0; i < size(); ++i) out.push_back((*this)[i].as_number());
  return out;
}

bool LocatedConfig::get_bool(const std::string& key, bool fallback) const {
  const LocatedConfig c = (*this)[key];
  return c.is_null() ? fallback : c.as_bool();
}

std::int64_t LocatedConfig::get_int(const std::string& key, std::int64_t fallback) const {
  const LocatedConfig c = (*this)[key];
  return c.is_null() ? fallback : c.as_int();
}

double LocatedConfig::get_number(const std::string& key, double fallback) const {
  const LocatedConfig c = (*this)[key];
  return c.is_null() ? fallback : c.as_number();
}

std::string LocatedConfig::get_string(const std::string& key, const std::string& fallback) const {
  const LocatedConfig c = (*this)[key];
  return c.is_null() ? fallback : c.as_string();
}

std::int64_t LocatedConfig::get_int_in(const std::string& key, std::int64_t fallback, std::int64_t lower,
                                       std::optional<std::int64_t> upper) const {
  const std::int64_t v = get_int(key, fallback);
  if (v < lower || (upper && v > *upper))
    (*this)[key].fail("must be " + (upper ? "in [" + std::to_string(lower) + ", " + std::to_string(*upper) + "]"
                                          : ">= " + std::to_string(lower)) +
                      ", got " + std::to_string(v));
  return v;
}

void LocatedConfig::relocate(const std::string& message) const {
  // Registries name the offending key as "argument 'k'" or "key 'k'"; point at it when it is ours.
  for (const char* marker : {"argument '", "key '"}) {
    const std::size_t at = message.find(marker);
    if (at == std::string::npos) continue;
    const std::size_t start = at + std::char_traits<char>::length(marker);
    const std::size_t end = message.find('\'', start);
    if (end == std::string::npos) continue;
    const std::string key = message.substr(start, end - start);
    const LocatedConfig child = (*this)[key];
    if (child.exists()) {
      const bool unknown = message.find("unknown") != std::string::npos;
      throw ExperimentError(unknown ? child.key_mark() : child.mark(),
                            (path_.empty() ? std::string() : path_ + ": ") + message);
    }
  }
  fail(message);
}

}  // namespace tower::experiment
