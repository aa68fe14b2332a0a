#include "api/io/config.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace tower {

std::string Config::type_name() const {
  switch (value_.index()) {
    case 0: return "null";
    case 1: return "bool";
    case 2: return "int";
    case 3: return "float";
    case 4: return "string";
    case 5: return "list";
    default: return "map";
  }
}

namespace {
[[noreturn]] void type_error(const char* expected, const Config& c) {
  throw ConfigError(std::string("expected ") + expected + ", got " + c.type_name() + " " + c.to_json());
}
}  // namespace

bool Config::as_bool() const {
  if (!is_bool()) type_error("a bool", *this);
  return std::get<bool>(value_);
}

std::int64_t Config::as_int() const {
  if (is_int()) return std::get<std::int64_t>(value_);
  if (std::holds_alternative<double>(value_)) {
    const double d = std::get<double>(value_);
    // [-2^63, 2^63): a cast of anything outside is undefined (and gives -2^63 on x86).
    if (std::floor(d) == d && !(d >= -0x1p63 && d < 0x1p63))
      throw ConfigError("expected an int, got float " + to_json() + ", outside the 64-bit integer range");
    if (std::floor(d) == d) return static_cast<std::int64_t>(d);
  }
  type_error("an int", *this);
}

double Config::as_double() const {
  if (is_int()) return static_cast<double>(std::get<std::int64_t>(value_));
  if (std::holds_alternative<double>(value_)) return std::get<double>(value_);
  type_error("a number", *this);
}

const std::string& Config::as_string() const {
  if (!is_string()) type_error("a string", *this);
  return std::get<std::string>(value_);
}

const Config::List& Config::as_list() const {
  if (!is_list()) type_error("a list", *this);
  return std::get<List>(value_);
}
Config::List& Config::as_list() {
  if (!is_list()) type_error("a list", *this);
  return std::get<List>(value_);
}
const Config::Map& Config::as_map() const {
  if (!is_map()) type_error("a map", *this);
  return std::get<Map>(value_);
}
Config::Map& Config::as_map() {
  if (!is_map()) type_error("a map", *this);
  return std::get<Map>(value_);
}

bool Config::contains(const std::string& key) const {
  if (!is_map()) return false;
  for (const auto& [k, v] : std::get<Map>(value_))
    if (k == key) return true;
  return false;
}

const Config& Config::at(const std::string& key) const {
  for (const auto& [k, v] : as_map())
    if (k == key) return v;
  throw ConfigError("missing key '" + key + "'");
}

Config& Config::set(const std::string& key, Config value) {
  if (is_null()) value_ = Map{};
  Map& m = as_map();
  for (auto& [k, v] : m)
    if (k == key) {
      v = std::move(value);
      return v;
    }
  m.emplace_back(key, std::move(value));
  return m.back().second;
}

Config& Config::push_back(Config value) {
  if (is_null()) value_ = List{};
  List& l = as_list();
  l.push_back(std::move(value));
  return l.back();
}

std::size_t Config::size() const {
  if (is_list()) return std::get<List>(value_).size();
  if (is_map()) return std::get<Map>(value_).size();
  return 0;
}

bool Config::operator==(const Config& other) const {
  if (is_number() && other.is_number() && (!is_int() || !other.is_int())) return as_double() == other.as_double();
  return value_ == other.value_;
}

namespace {
void escape(std::ostringstream& os, const std::string& s) {
  os << '"';
  for (char c : s) {
    switch (c) {
      case '"': os << "\\\""; break;
      case '\\': os << "\\\\"; break;
      case '\n': os << "\\n"; break;
      case '\t': os << "\\t"; break;
      case '\r': os << "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          os << buf;
        } else {
          os << c;
        }
    }
  }
  os << '"';
}

void write(std::ostringstream& os, const Config& c, int indent, int depth) {
  const auto newline = [&](int d) {
    if (indent >= 0) os << '\n' << std::string(static_cast<std::size_t>(indent * d), ' ');
  };
  if (c.is_null()) {
    os << "null";
  } else if (c.is_bool()) {
    os << (c.as_bool() ? "true" : "false");
  } else if (c.is_int()) {
    os << c.as_int();
  } else if (c.is_number()) {
    const double d = c.as_double();
    if (!std::isfinite(d)) {
      os << (std::isnan(d) ? "NaN" : d > 0 ? "Infinity" : "-Infinity");
    } else {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", d);
      std::string s = buf;
      if (s.find_first_of(".eE") == std::string::npos) s += ".0";
      os << s;
    }
  } else if (c.is_string()) {
    escape(os, c.as_string());
  } else if (c.is_list()) {
    os << '[';
    bool first = true;
    for (const Config& v : c.as_list()) {
      if (!first) os << (indent >= 0 ? "," : ", ");
      newline(depth + 1);
      write(os, v, indent, depth + 1);
      first = false;
    }
    if (!c.as_list().empty()) newline(depth);
    os << ']';
  } else {
    os << '{';
    bool first = true;
    for (const auto& [k, v] : c.as_map()) {
      if (!first) os << (indent >= 0 ? "," : ", ");
      newline(depth + 1);
      escape(os, k);
      os << ": ";
      write(os, v, indent, depth + 1);
      first = false;
    }
    if (!c.as_map().empty()) newline(depth);
    os << '}';
  }
}

class JsonParser {
 public:
  explicit JsonParser(const std::string& text) : s_(text) {}
  Config parse() {
    Config v = value();
    skip_ws();
    if (pos_ != s_.size()) fail("unexpected trailing characters");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    int line = 1, col = 1;
    for (std::size_t i = 0; i < pos_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw ConfigError("JSON " + what + " at line " + std::to_string(line) + ", column " + std::to_string(col));
  }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
  }
  bool consume(const char* word) {
    const std::size_t n = std::char_traits<char>::length(word);
    if (s_.compare(pos_, n, word) == 0) {
      pos_ += n;
      return true;
    }
    return false;
  }
  Config value() {
    skip_ws();
    if (pos_ >= s_.size()) fail("unexpected end of input");
    const char c = s_[pos_];
    if (c == '{') return object();
    if (c == '[') return array();
    if (c == '"') return Config(string());
    if (consume("true")) return Config(true);
    if (consume("false")) return Config(false);
    if (consume("null")) return Config();
    if (consume("NaN")) return Config(std::nan(""));
    if (consume("Infinity")) return Config(INFINITY);
    if (consume("-Infinity")) return Config(-INFINITY);
    return number();
  }
  Config number() {
    const std::size_t start = pos_;
    if (pos_ < s_.size() && (s_[pos_] == '-' || s_[pos_] == '+')) ++pos_;
    bool is_float = false;
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c >= '0' && c <= '9') {
        ++pos_;
      } else if (c == '.' || c == 'e' || c == 'E' || ((c == '-' || c == '+') && (s_[pos_ - 1] == 'e' || s_[pos_ - 1] == 'E'))) {
        is_float = true;
        ++pos_;
      } else {
        break;
      }
    }
    const std::string tok = s_.substr(start, pos_ - start);
    if (tok.empty() || tok == "-" || tok == "+") fail("unexpected character '" + std::string(1, s_[start]) + "'");
    try {
      if (is_float) return Config(std::stod(tok));
      return Config(static_cast<std::int64_t>(std::stoll(tok)));
    } catch (const std::exception&) {
      fail("bad number '" + tok + "'");
    }
  }
  std::string string() {
    ++pos_;
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c == '\\') {
        if (pos_ >= s_.size()) fail("unterminated string");
        const char e = s_[pos_++];
        switch (e) {
          case 'n': out += '\n'; break;
          case 't': out += '\t'; break;
          case 'r': out += '\r'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'u': {
            if (pos_ + 4 > s_.size() ||
                s_.find_first_not_of("0123456789abcdefABCDEF", pos_) < pos_ + 4)
              fail("bad \\u escape");
            const unsigned code = static_cast<unsigned>(std::stoul(s_.substr(pos_, 4), nullptr, 16));
            pos_ += 4;
            if (code < 0x80) {
              out += static_cast<char>(code);
            } else if (code < 0x800) {
              out += static_cast<char>(0xC0 | (code >> 6));
              out += static_cast<char>(0x80 | (code & 0x3F));
            } else {
              out += static_cast<char>(0xE0 | (code >> 12));
              out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
              out += static_cast<char>(0x80 | (code & 0x3F));
            }
            break;
          }
          default: out += e;
        }
      } else {
        out += c;
      }
    }
    if (pos_ >= s_.size()) fail("unterminated string");
    ++pos_;
    return out;
  }
  // Nesting is bounded, so a damaged file cannot exhaust the stack.
  static constexpr int kMaxDepth = 256;
  struct Nest {
    explicit Nest(JsonParser& p) : p_(p) {
      if (++p_.depth_ > kMaxDepth) p_.fail("values nest deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    ~Nest() { --p_.depth_; }
    JsonParser& p_;
  };

  Config array() {
    const Nest nest(*this);
    ++pos_;
    Config out = Config::list();
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return out;
    }
    for (;;) {
      out.push_back(value());
      skip_ws();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == ']') {
        ++pos_;
        return out;
      }
      fail("expected ',' or ']'");
    }
  }
  Config object() {
    const Nest nest(*this);
    ++pos_;
    Config out = Config::map();
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return out;
    }
    for (;;) {
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != '"') fail("expected a key string");
      std::string key = string();
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != ':') fail("expected ':'");
      ++pos_;
      out.set(key, value());
      skip_ws();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == '}') {
        ++pos_;
        return out;
      }
      fail("expected ',' or '}'");
    }
  }

  const std::string& s_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};
}  // namespace

std::string Config::to_json(int indent) const {
  std::ostringstream os;
  write(os, *this, indent, 0);
  return os.str();
}

Config Config::parse_json(const std::string& text) { return JsonParser(text).parse(); }

}  // namespace tower
