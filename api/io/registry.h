#pragma once
// Registry: the one way Tower builds things from a name. Layers, losses, metrics, optimizers, learning-rate
// schedules, callbacks, initializers and regularizers each keep one (layer_registry(), losses::registry(), ...),
// and their from_config functions read Keras' serialized forms through it:
//
//   "Adam", "adam", "sparse_categorical_crossentropy"   a name: a class name or an alias (Keras' other names for
//                                                        it: function names, snake_case)
//   {"class_name": "Adam", "config": {...}}             Keras' serialized form; "module" and "registered_name"
//                                                        (Keras 3) are accepted and ignored
//
// Errors are ConfigError: "unknown <what> '<name>' (did you mean '<closest>'?); known: <class names and aliases>"
// for an unknown name, "a <what> is a name or {class_name, config}, got <json>" for another shape, and
// "<what> '<class>': unknown key '<key>' (expected class_name and config)" for a misspelt key of the serialized
// form. A class is added with add(); a program adds its own classes the same way, at any time (thread-safe).
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "api/io/config.h"

namespace tower {

namespace detail {
// The closest of `candidates` to `key` by edit distance, or "" when none is close.
std::string closest_key(const std::string& key, const std::vector<std::string>& candidates);
// The name and arguments (the "config" map; an empty map when absent) of a serialized object; throws as above.
// `extra_keys` are further keys the serialized form may carry (a functional model's layers: name,
// inbound_nodes, build_config).
std::pair<std::string, Config> read_serialized(const Config& serialized, const std::string& what,
                                               const std::vector<std::string>& extra_keys = {});
// Throws ConfigError("<what>: unknown argument '<key>' (did you mean '<closest>'?); its arguments: <known>") for
// a key of `arguments` (a map) that is not in `known`.
void check_arguments(const Config& arguments, const std::vector<std::string>& known, const std::string& what);
[[noreturn]] void unknown_name(const std::string& name, const std::vector<std::string>& known,
                               const std::string& what);
}  // namespace detail

template <class T>
class Registry {
 public:
  // Builds an object from the arguments of its serialized form (the "config" map; empty when there is none).
  using Factory = std::function<T(const Config& arguments)>;

  // `what` names the kind of object in errors ("loss", "layer type").
  explicit Registry(std::string what, std::vector<std::string> extra_keys = {})
      : what_(std::move(what)), extra_keys_(std::move(extra_keys)) {}

  // Adds `class_name` (replacing one of that name), with `aliases` as further names for it.
  void add(const std::string& class_name, Factory factory, const std::vector<std::string>& aliases = {}) {
    std::lock_guard<std::mutex> lock(mutex_);
    factories_[class_name] = std::move(factory);
    for (const std::string& a : aliases) aliases_[a] = class_name;
  }

  // The class `name` stands for (a class name or an alias; names are case-sensitive, as Keras' are), or "" for
  // none.
  std::string find(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (factories_.count(name)) return name;
    if (auto a = aliases_.find(name); a != aliases_.end()) return a->second;
    return "";
  }

  // The class name and arguments of a serialized object.
  std::pair<std::string, Config> resolve(const Config& serialized) const {
    auto [name, arguments] = detail::read_serialized(serialized, what_, extra_keys_);
    const std::string class_name = find(name);
    if (class_name.empty()) detail::unknown_name(name, names(), what_);
    return {class_name, arguments};
  }

  // For a name given in C++ (Activation("relu")): as from_config, but a bad name is std::invalid_argument.
  T from_name(const std::string& name) const {
    try {
      return from_config(Config(name));
    } catch (const ConfigError& e) {
      throw std::invalid_argument(e.what());
    }
  }

  T from_config(const Config& serialized) const {
    const auto [class_name, arguments] = resolve(serialized);
    Factory factory;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      factory = factories_.at(class_name);
    }
    return factory(arguments);
  }

  // The class names, sorted.
  std::vector<std::string> class_names() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> out;
    for (const auto& [class_name, factory] : factories_) out.push_back(class_name);
    return out;
  }

  // Class names, then aliases: every name find() knows exactly.
  std::vector<std::string> names() const {
    std::vector<std::string> out = class_names();
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [alias, class_name] : aliases_) out.push_back(alias);
    return out;
  }

  const std::string& what() const { return what_; }

 private:
  mutable std::mutex mutex_;
  std::string what_;
  std::vector<std::string> extra_keys_;
  std::map<std::string, Factory> factories_;
  std::map<std::string, std::string> aliases_;
};

}  // namespace tower
