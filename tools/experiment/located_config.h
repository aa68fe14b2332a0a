#pragma once
// LocatedConfig: a view of one value of a Document (its path and where it is in the file), with the checks the
// schema and the builders share. Every error it raises is an ExperimentError at the value (or its key) whose
// message starts with the path:
//
//   fashion_mnist_cnn.yaml:31:11: fit.epochs: expected an int, got string "ten"
//   fashion_mnist_cnn.yaml:30:3: fit: unknown key 'epoch' (did you mean 'epochs'?); known keys: ...
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "api/io/config.h"
#include "tools/experiment/document.h"

namespace tower::experiment {

class LocatedConfig {
 public:
  LocatedConfig(const Document& doc, std::string path);

  const Document& document() const { return *doc_; }
  const std::string& path() const { return path_; }
  // The value; a null Config when the path is absent.
  const Config& value() const;
  bool exists() const { return found_ != nullptr; }
  // Absent or null.
  bool is_null() const { return !found_ || found_->is_null(); }
  Mark mark() const { return doc_->value_mark(path_); }
  Mark key_mark() const { return doc_->key_mark(path_); }

  LocatedConfig operator[](const std::string& key) const { return {*doc_, child_path(path_, key)}; }
  LocatedConfig operator[](std::size_t index) const { return {*doc_, item_path(path_, index)}; }
  // Map keys in order (empty for anything else).
  std::vector<std::string> keys() const;
  // List items (empty for anything else).
  std::size_t size() const { return value().is_list() ? value().size() : 0; }

  [[noreturn]] void fail(const std::string& message) const;      // at the value: "<path>: <message>"
  [[noreturn]] void fail_key(const std::string& message) const;  // at the key

  // Requires a map (or absent/null, read as empty) whose keys are all in `known`; an unknown key fails at the
  // key, naming the closest known key and listing them all.
  void require_keys(const std::vector<std::string>& known) const;
  // Requires the key to be present (and not null).
  void require(const std::string& key) const;

  // Typed reads of this value; a wrong type fails naming the path and the expected type.
  bool as_bool() const;
  std::int64_t as_int() const;
  double as_number() const;
  const std::string& as_string() const;
  // One of `choices`; otherwise fails listing them (and the closest).
  std::string as_choice(const std::vector<std::string>& choices) const;
  // A list of ints (e.g. a shape); `allow_null` lets items be null (an unknown dimension, read as -1).
  std::vector<std::int64_t> as_int_list(bool allow_null = false) const;
  // A number or a list of numbers, as a list.
  std::vector<double> as_number_list() const;
  void require_map() const;
  void require_list() const;

  // The typed value of child `key`, or `fallback` when absent or null.
  bool get_bool(const std::string& key, bool fallback) const;
  std::int64_t get_int(const std::string& key, std::int64_t fallback) const;
  double get_number(const std::string& key, double fallback) const;
  std::string get_string(const std::string& key, const std::string& fallback) const;
  // Checks lower <= value (and value <= upper when given); fails naming the bounds.
  std::int64_t get_int_in(const std::string& key, std::int64_t fallback, std::int64_t lower,
                          std::optional<std::int64_t> upper = {}) const;

  // Runs fn; any exception other than ExperimentError becomes one located here. When its message names a key of
  // this map ("argument 'filtres'", "key 'x'"), the error points at that key instead.
  template <class Fn>
  auto locate(Fn&& fn) const -> decltype(fn()) {
    try {
      return fn();
    } catch (const ExperimentError&) {
      throw;
    } catch (const std::exception& e) {
      relocate(e.what());
    }
  }

 private:
  [[noreturn]] void relocate(const std::string& message) const;
  [[noreturn]] void type_error(const std::string& expected) const;

  const Document* doc_;
  std::string path_;
  const Config* found_;
};

// "string \"ten\"", "list [1, 2]": a value's type and text for error messages.
std::string describe(const Config& value);

}  // namespace tower::experiment
