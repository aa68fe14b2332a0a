#pragma once
// An experiment file read into a Config that remembers where every key and value came from, so that every
// error can point at file:line:column.
//
// YAML scalars follow the YAML 1.2 core schema: plain `~`, `null` or nothing is null; `true`/`false` a bool;
// `12`, `-3`, `0x1F` an int; `0.5`, `1e-3`, `.inf`, `.nan` a float; anything quoted, or plain text that is
// none of these, a string. Map keys are strings (`0: 1.5` has the key "0"). A duplicate key is an error.
//
// A value is addressed by a path: keys joined by dots, list items by [index]: "model.layers[2].filters".
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/io/config.h"

namespace tower::experiment {

// A position in an experiment file, or a command-line override.
struct Mark {
  std::string file;          // the file, or "--set key=value" for an override
  int line = 0, column = 0;  // 1-based; 0 when there is no position (an override, a missing file)
  // "file:line:column", or the file alone without a position.
  std::string to_string() const;
};

// Everything wrong with an experiment: what() is "<mark>: <message>".
class ExperimentError : public std::runtime_error {
 public:
  ExperimentError(Mark mark, const std::string& message);
  const Mark& mark() const { return mark_; }
  const std::string& message() const { return message_; }

 private:
  Mark mark_;
  std::string message_;
};

// Path helpers: child_path("data", "train") == "data.train", item_path("model.layers", 2) ==
// "model.layers[2]".
std::string child_path(const std::string& path, const std::string& key);
std::string item_path(const std::string& path, std::size_t index);

class Document {
 public:
  Document() = default;
  // Reads and parses a YAML file. Throws ExperimentError naming the path when it cannot be read, and at the
  // position of a syntax error or a duplicate key.
  static Document load_file(const std::string& path);
  // Parses YAML text; `file` names it in marks. The top level must be a map (an empty text gives an empty
  // map).
  static Document parse(const std::string& text, const std::string& file);

  const Config& root() const { return root_; }
  const std::string& file() const { return file_; }

  // The Config at `path`, or nullptr when there is none.
  const Config* find(const std::string& path) const;
  // Where the value at `path` starts. A path not in the document gives its nearest ancestor's mark.
  Mark value_mark(const std::string& path) const;
  // Where the key of a map entry is (the item itself for list items); falls back as value_mark does.
  Mark key_mark(const std::string& path) const;

  // Applies a command-line override "a.b.c=value" (also "a.b.2.c" for list items). The value is parsed as
  // YAML, so `--set fit.epochs=1`, `--set data.preprocessing=[]` and `--set model.name=cnn` all work. Missing
  // maps on the path are created; an index past the end of a list, or a path through a scalar, throws
  // ExperimentError at the override.
  void apply_override(const std::string& assignment);
  // Sets the value at `path` (whose parent must exist), marking it with `mark`.
  void set(const std::string& path, Config value, const Mark& mark);
  // Removes a map entry (no-op when absent).
  void erase(const std::string& path);

  // The document as YAML, in key order (for the run directory's config.yaml).
  std::string to_yaml() const;

 private:
  struct Marks {
    Mark key, value;
  };
  Config* find_mutable(const std::string& path);
  void mark_tree(const std::string& path, const Config& value, const Mark& mark);
  void drop_marks(const std::string& path);
  Mark mark_for(const std::string& path, bool key) const;

  std::string file_;
  Config root_ = Config::map();
  std::map<std::string, Marks> marks_;

  friend class YamlReader;
};

// Converts one YAML scalar, as the document parser does (plain: the core schema; quoted: a string).
Config yaml_scalar(const std::string& text, bool quoted);
// A Config as YAML text (block style; short lists of scalars in flow style).
std::string to_yaml(const Config& value);

}  // namespace tower::experiment
