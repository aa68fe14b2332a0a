#include "tools/experiment/document.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace tower::experiment {

std::string Mark::to_string() const {
  if (line <= 0) return file;
  return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

ExperimentError::ExperimentError(Mark mark, const std::string& message)
    : std::runtime_error(mark.to_string() + ": " + message), mark_(std::move(mark)), message_(message) {}

std::string child_path(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

std::string item_path(const std::string& path, std::size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

namespace {

// One step of a path: a map key, or a list index.
struct Segment {
  std::string key;
  long index = -1;  // >= 0 for "[i]"
};

// "a.b[2].c" -> a, b, [2], c. With digits_are_indices, "a.2" reads as a, [2] too (for overrides, resolved
// against the document's lists by the caller).
std::vector<Segment> split_path(const std::string& path) {
  std::vector<Segment> out;
  std::string key;
  for (std::size_t i = 0; i <= path.size(); ++i) {
    const char c = i < path.size() ? path[i] : '.';
    if (c == '.' || c == '[') {
      if (!key.empty()) out.push_back({key, -1});
      key.clear();
      if (c == '[') {
        const std::size_t close = path.find(']', i);
        if (close == std::string::npos) throw std::invalid_argument("unclosed '[' in path '" + path + "'");
        const std::string digits = path.substr(i + 1, close - i - 1);
        if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos)
          throw std::invalid_argument("bad list index '" + digits + "' in path '" + path + "'");
        out.push_back({"", std::stol(digits)});
        i = close;
      }
    } else {
      key += c;
    }
  }
  return out;
}

bool all_digits(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

std::string format_double(double d) {
  if (std::isnan(d)) return ".nan";
  if (std::isinf(d)) return d > 0 ? ".inf" : "-.inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, d);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

Config yaml_scalar(const std::string& text, bool quoted) {
  if (quoted) return Config(text);
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") return Config();
  if (text == "true" || text == "True" || text == "TRUE") return Config(true);
  if (text == "false" || text == "False" || text == "FALSE") return Config(false);
  static const std::regex int_re("[-+]?[0-9]+");
  static const std::regex hex_re("0x[0-9a-fA-F]+");
  static const std::regex oct_re("0o[0-7]+");
  static const std::regex float_re(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  try {
    if (std::regex_match(text, int_re)) return Config(static_cast<std::int64_t>(std::stoll(text)));
    if (std::regex_match(text, hex_re)) return Config(static_cast<std::int64_t>(std::stoll(text.substr(2), nullptr, 16)));
    if (std::regex_match(text, oct_re)) return Config(static_cast<std::int64_t>(std::stoll(text.substr(2), nullptr, 8)));
    if (std::regex_match(text, float_re)) return Config(std::stod(text));
  } catch (const std::out_of_range&) {
    return Config(text);
  }
  if (text == ".inf" || text == ".Inf" || text == ".INF" || text == "+.inf") return Config(INFINITY);
  if (text == "-.inf" || text == "-.Inf" || text == "-.INF") return Config(-INFINITY);
  if (text == ".nan" || text == ".NaN" || text == ".NAN") return Config(std::nan(""));
  return Config(text);
}

class YamlReader {
 public:
  static constexpr int kMaxDepth = 64;
  // Aliases share yaml-cpp's nodes but are copied here: nine levels of nine aliases each would be 9^9 values.
  static constexpr std::size_t kMaxValues = 100000;

  YamlReader(Document& doc) : doc_(doc) {}

  Mark mark_of(const YAML::Node& node, const Mark& fallback) const {
    const YAML::Mark m = node.Mark();
    if (m.is_null() || m.line < 0) return fallback;
    return Mark{doc_.file_, m.line + 1, m.column + 1};
  }

  Config convert(const YAML::Node& node, const std::string& path, const Mark& key_mark, int depth = 0) {
    const Mark here = mark_of(node, key_mark);
    // Also stops an alias that contains itself (&a [*a]), which yaml-cpp turns into a cycle.
    if (depth > kMaxDepth)
      throw ExperimentError(here, "values nest deeper than " + std::to_string(kMaxDepth) + " levels (a recursive alias?)");
    if (++values_ > kMaxValues)
      throw ExperimentError(here, "more than " + std::to_string(kMaxValues) +
                                      " values once aliases are expanded (aliases of aliases?)");
    doc_.marks_[path] = {key_mark, here};
    switch (node.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        return Config();
      case YAML::NodeType::Scalar: return scalar(node, here);
      case YAML::NodeType::Sequence: {
        Config out = Config::list();
        std::size_t i = 0;
        for (const YAML::Node& item : node) {
          const std::string p = item_path(path, i++);
          out.push_back(convert(item, p, mark_of(item, here), depth + 1));
        }
        return out;
      }
      case YAML::NodeType::Map: {
        Config out = Config::map();
        for (const auto& entry : node) {
          const Mark km = mark_of(entry.first, here);
          if (!entry.first.IsScalar())
            throw ExperimentError(km, "a map key must be a plain value, not a list or a map");
          const std::string key = entry.first.Scalar();
          if (key.find_first_of(".[]") != std::string::npos)
            throw ExperimentError(km, "a key cannot hold '.', '[' or ']' (they address values, as in "
                                      "model.layers[0].units): '" + key + "'");
          if (out.contains(key))
            throw ExperimentError(km, "duplicate key '" + key + "' (first at " +
                                          doc_.key_mark(child_path(path, key)).to_string() + ")");
          const std::string p = child_path(path, key);
          out.set(key, convert(entry.second, p, km, depth + 1));
        }
        return out;
      }
    }
    return Config();
  }

 private:
  Config scalar(const YAML::Node& node, const Mark& here) const {
    const std::string& tag = node.Tag();
    const std::string& text = node.Scalar();
    if (tag == "!" || tag == "tag:yaml.org,2002:str") return Config(text);
    if (tag == "?" || tag.empty()) return yaml_scalar(text, false);
    const Config c = yaml_scalar(text, false);
    if (tag == "tag:yaml.org,2002:int" && c.is_int()) return c;
    if (tag == "tag:yaml.org,2002:float" && c.is_number()) return Config(c.as_double());
    if (tag == "tag:yaml.org,2002:bool" && c.is_bool()) return c;
    if (tag == "tag:yaml.org,2002:null" && c.is_null()) return c;
    throw ExperimentError(here, "unsupported tag '" + tag + "' on '" + text + "'");
  }

  Document& doc_;
  std::size_t values_ = 0;
};

Document Document::parse(const std::string& text, const std::string& file) {
  Document doc;
  doc.file_ = file;
  const Mark start{file, 1, 1};
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    Mark m{file, e.mark.is_null() ? 0 : e.mark.line + 1, e.mark.is_null() ? 0 : e.mark.column + 1};
    throw ExperimentError(m, "YAML syntax error: " + e.msg);
  }
  if (root.IsNull() || !root.IsDefined()) {
    doc.marks_[""] = {start, start};
    return doc;
  }
  if (!root.IsMap())
    throw ExperimentError(YamlReader(doc).mark_of(root, start),
                          "an experiment file is a map of sections (seed, data, model, compile, fit, ...)");
  try {
    doc.root_ = YamlReader(doc).convert(root, "", start);
  } catch (const YAML::Exception& e) {
    Mark m{file, e.mark.is_null() ? 0 : e.mark.line + 1, e.mark.is_null() ? 0 : e.mark.column + 1};
    throw ExperimentError(m, "YAML error: " + e.msg);
  }
  doc.marks_[""] = {start, start};
  return doc;
}

Document Document::load_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ExperimentError(Mark{path}, "cannot open the experiment file (" + std::string(std::strerror(errno)) + ")");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw ExperimentError(Mark{path}, "cannot read the experiment file");
  return parse(ss.str(), path);
}

const Config* Document::find(const std::string& path) const {
  return const_cast<Document*>(this)->find_mutable(path);
}

Config* Document::find_mutable(const std::string& path) {
  Config* c = &root_;
  for (const Segment& s : split_path(path)) {
    if (s.index >= 0) {
      if (!c->is_list() || static_cast<std::size_t>(s.index) >= c->size()) return nullptr;
      c = &c->as_list()[static_cast<std::size_t>(s.index)];
    } else {
      if (!c->is_map()) return nullptr;
      Config* next = nullptr;
      for (auto& [k, v] : c->as_map())
        if (k == s.key) next = &v;
      if (!next) return nullptr;
      c = next;
    }
  }
  return c;
}

Mark Document::mark_for(const std::string& path, bool key) const {
  std::string p = path;
  for (;;) {
    auto it = marks_.find(p);
    if (it != marks_.end()) return key ? it->second.key : it->second.value;
    if (p.empty()) return Mark{file_};
    const std::size_t cut = p.find_last_of(".[");
    p = cut == std::string::npos ? std::string() : p.substr(0, cut);
  }
}

Mark Document::value_mark(const std::string& path) const { return mark_for(path, false); }
Mark Document::key_mark(const std::string& path) const { return mark_for(path, true); }

void Document::drop_marks(const std::string& path) {
  for (auto it = marks_.begin(); it != marks_.end();) {
    const std::string& k = it->first;
    const bool under = k == path || (k.size() > path.size() && k.compare(0, path.size(), path) == 0 &&
                                     (k[path.size()] == '.' || k[path.size()] == '['));
    it = under && !path.empty() ? marks_.erase(it) : std::next(it);
  }
}

void Document::mark_tree(const std::string& path, const Config& value, const Mark& mark) {
  marks_[path] = {mark, mark};
  if (value.is_map())
    for (const auto& [k, v] : value.as_map()) mark_tree(child_path(path, k), v, mark);
  if (value.is_list())
    for (std::size_t i = 0; i < value.size(); ++i) mark_tree(item_path(path, i), value.as_list()[i], mark);
}

void Document::set(const std::string& path, Config value, const Mark& mark) {
  const std::vector<Segment> segs = split_path(path);
  if (segs.empty()) throw ExperimentError(mark, "empty key");
  Config* parent = &root_;
  std::string p;
  for (std::size_t i = 0; i + 1 < segs.size(); ++i) {
    p = segs[i].index >= 0 ? item_path(p, static_cast<std::size_t>(segs[i].index)) : child_path(p, segs[i].key);
    Config* next = find_mutable(p);
    if (!next) throw ExperimentError(mark, "'" + p + "' does not exist");
    parent = next;
  }
  const Segment& last = segs.back();
  const std::string full =
      last.index >= 0 ? item_path(p, static_cast<std::size_t>(last.index)) : child_path(p, last.key);
  drop_marks(full);
  if (last.index >= 0) {
    if (!parent->is_list() || static_cast<std::size_t>(last.index) >= parent->size())
      throw ExperimentError(mark, "'" + full + "': no such list item");
    parent->as_list()[static_cast<std::size_t>(last.index)] = value;
  } else {
    if (parent->is_null()) *parent = Config::map();
    if (!parent->is_map())
      throw ExperimentError(mark, "'" + (p.empty() ? std::string("the top level") : p) + "' is a " +
                                      parent->type_name() + ", not a map; cannot set '" + last.key + "'");
    parent->set(last.key, value);
  }
  mark_tree(full, value, mark);
}

void Document::erase(const std::string& path) {
  const std::size_t cut = path.find_last_of('.');
  Config* parent = cut == std::string::npos ? &root_ : find_mutable(path.substr(0, cut));
  const std::string key = cut == std::string::npos ? path : path.substr(cut + 1);
  if (!parent || !parent->is_map()) return;
  auto& m = parent->as_map();
  for (auto it = m.begin(); it != m.end(); ++it)
    if (it->first == key) {
      m.erase(it);
      drop_marks(path);
      return;
    }
}

void Document::apply_override(const std::string& assignment) {
  const Mark mark{"--set " + assignment};
  const std::size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ExperimentError(mark, "an override is key.path=value, e.g. fit.epochs=1");
  const std::string dotted = assignment.substr(0, eq);
  Config value;
  try {
    const YAML::Node node = YAML::Load(assignment.substr(eq + 1));
    Document tmp;
    tmp.file_ = mark.file;
    value = YamlReader(tmp).convert(node, "", mark);
  } catch (const YAML::Exception& e) {
    throw ExperimentError(mark, "the value is not valid YAML: " + e.msg);
  }
  // Resolve "a.2.b" against the document: a digit segment under a list is an index.
  std::string path;
  std::vector<Segment> segs;
  try {
    segs = split_path(dotted);
  } catch (const std::invalid_argument& e) {
    throw ExperimentError(mark, e.what());
  }
  for (std::size_t i = 0; i < segs.size(); ++i) {
    const Segment& s = segs[i];
    const Config* here = find(path);
    const bool index = s.index >= 0 || (here && here->is_list() && all_digits(s.key));
    const std::string next =
        index ? item_path(path, static_cast<std::size_t>(s.index >= 0 ? s.index : std::stol(s.key)))
              : child_path(path, s.key);
    if (i + 1 < segs.size() && !find(next)) set(next, Config::map(), mark);
    path = next;
  }
  set(path, std::move(value), mark);
}

namespace {

bool is_flow_list(const Config& c) {
  if (!c.is_list() || c.size() > 16) return false;
  for (const Config& x : c.as_list())
    if (x.is_list() || x.is_map()) return false;
  return true;
}

void emit(YAML::Emitter& out, const Config& c) {
  if (c.is_null()) {
    out << YAML::Null;
  } else if (c.is_bool()) {
    out << (c.as_bool() ? "true" : "false");
  } else if (c.is_int()) {
    out << c.as_int();
  } else if (c.is_number()) {
    out << format_double(c.as_double());
  } else if (c.is_string()) {
    const std::string& s = c.as_string();
    const Config back = yaml_scalar(s, false);
    if (!back.is_string() || s.empty()) out << YAML::DoubleQuoted << s;
    else out << s;
  } else if (c.is_list()) {
    if (is_flow_list(c)) out << YAML::Flow;
    out << YAML::BeginSeq;
    for (const Config& x : c.as_list()) emit(out, x);
    out << YAML::EndSeq;
  } else {
    out << YAML::BeginMap;
    for (const auto& [k, v] : c.as_map()) {
      out << YAML::Key << k << YAML::Value;
      emit(out, v);
    }
    out << YAML::EndMap;
  }
}

}  // namespace

std::string to_yaml(const Config& value) {
  YAML::Emitter out;
  out.SetIndent(2);
  emit(out, value);
  return std::string(out.c_str()) + "\n";
}

std::string Document::to_yaml() const { return experiment::to_yaml(root_); }

}  // namespace tower::experiment
