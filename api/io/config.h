#pragma once
// Config: a JSON-like value (null, bool, int, float, string, list, ordered map) used by get_config /
// from_config, model files and YAML experiments. Keys keep their insertion order, like Keras' dicts.
#include <cstdint>
#include <map>
#include <stdexcept>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace tower {

class Config {
 public:
  using List = std::vector<Config>;
  using Map = std::vector<std::pair<std::string, Config>>;

  Config() = default;  // null
  Config(std::nullptr_t) {}
  Config(bool v) : value_(v) {}
  Config(int v) : value_(static_cast<std::int64_t>(v)) {}
  Config(std::int64_t v) : value_(v) {}
  Config(float v) : value_(static_cast<double>(v)) {}
  Config(double v) : value_(v) {}
  Config(const char* v) : value_(std::string(v)) {}
  Config(std::string v) : value_(std::move(v)) {}
  Config(List v) : value_(std::move(v)) {}
  Config(Map v) : value_(std::move(v)) {}
  static Config map() { return Config(Map{}); }
  static Config list() { return Config(List{}); }

  bool is_null() const { return std::holds_alternative<std::monostate>(value_); }
  bool is_bool() const { return std::holds_alternative<bool>(value_); }
  bool is_int() const { return std::holds_alternative<std::int64_t>(value_); }
  bool is_number() const { return is_int() || std::holds_alternative<double>(value_); }
  bool is_string() const { return std::holds_alternative<std::string>(value_); }
  bool is_list() const { return std::holds_alternative<List>(value_); }
  bool is_map() const { return std::holds_alternative<Map>(value_); }
  // "null", "bool", "int", "float", "string", "list" or "map".
  std::string type_name() const;

  // Typed reads; each throws ConfigError naming the expected and the actual type. as_int takes a whole float in
  // the int64 range and throws for one outside it, naming the value.
  bool as_bool() const;
  std::int64_t as_int() const;
  double as_double() const;
  const std::string& as_string() const;
  const List& as_list() const;
  List& as_list();
  const Map& as_map() const;
  Map& as_map();

  // Map access. contains() is false for non-maps; at() throws ConfigError for a missing key.
  bool contains(const std::string& key) const;
  const Config& at(const std::string& key) const;
  // Inserts or replaces, keeping the position of an existing key.
  Config& set(const std::string& key, Config value);
  // List append.
  Config& push_back(Config value);
  std::size_t size() const;

  bool operator==(const Config& other) const;
  // Compact JSON (floats printed so that they read back exactly).
  std::string to_json(int indent = -1) const;
  // Parses JSON; throws ConfigError with line and column.
  static Config parse_json(const std::string& text);

 private:
  std::variant<std::monostate, bool, std::int64_t, double, std::string, List, Map> value_;
};

// Thrown for a config that does not fit what reads it: the message names the key and what was expected.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tower
