#include "api/callbacks/model_checkpoint.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "api/callbacks/early_stopping.h"
#include "api/io/weights_file.h"
#include "api/models/model.h"

namespace tower::callbacks {

namespace detail {

std::string python_float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // The shortest digits that read back exactly, laid out as Python does: fixed notation for decimal
  // exponents in [-4, 16), scientific (two-digit exponent at least) otherwise.
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
  const std::string sci(buf, res.ptr);
  const std::size_t e = sci.find('e');
  std::string mantissa = sci.substr(0, e);
  const int exponent = std::stoi(sci.substr(e + 1));
  const bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa)
    if (c != '.') digits += c;
  std::string out;
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out = "0.";
      out.append(static_cast<std::size_t>(-exponent - 1), '0');
      out += digits;
    } else {
      const std::size_t int_digits = static_cast<std::size_t>(exponent) + 1;
      if (digits.size() <= int_digits)
        out = digits + std::string(int_digits - digits.size(), '0') + ".0";
      else
        out = digits.substr(0, int_digits) + "." + digits.substr(int_digits);
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) {
      out += '.';
      out.append(digits, 1);
    }
    char ebuf[16];
    std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out += ebuf;
  }
  if (negative) out.insert(out.begin(), '-');
  return out;
}

namespace {

// Python's format spec mini-language for numbers:
// [[fill]align][sign][#][0][width][grouping][.precision][type].
struct FormatSpec {
  char fill = ' ';
  char align = '>';  // numbers align right unless told otherwise
  char sign = '-';
  bool alternate = false;  // '#'
  std::size_t width = 0;
  char grouping = 0;  // ',' or '_'
  int precision = -1;
  char type = 0;
};

std::invalid_argument spec_error(const std::string& pattern, const std::string& spec, const std::string& why) {
  return std::invalid_argument("Failed to format the filepath \"" + pattern + "\": format spec '" + spec + "': " + why);
}

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

FormatSpec parse_spec(const std::string& spec, const std::string& pattern) {
  FormatSpec f;
  std::size_t i = 0;
  const auto is_align = [](char c) { return c == '<' || c == '>' || c == '=' || c == '^'; };
  bool fill_given = false, align_given = false;
  if (spec.size() >= 2 && is_align(spec[1])) {
    f.fill = spec[0];
    f.align = spec[1];
    fill_given = align_given = true;
    i = 2;
  } else if (!spec.empty() && is_align(spec[0])) {
    f.align = spec[0];
    align_given = true;
    i = 1;
  }
  if (i < spec.size() && (spec[i] == '+' || spec[i] == '-' || spec[i] == ' ')) f.sign = spec[i++];
  if (i < spec.size() && spec[i] == '#') {
    f.alternate = true;
    ++i;
  }
  // The '0' option pads with zeros between the sign and the digits, unless a fill or an alignment is given.
  if (i < spec.size() && spec[i] == '0' && !fill_given) {
    f.fill = '0';
    if (!align_given) f.align = '=';
    ++i;
  }
  while (i < spec.size() && is_digit(spec[i])) f.width = f.width * 10 + static_cast<std::size_t>(spec[i++] - '0');
  if (i < spec.size() && (spec[i] == ',' || spec[i] == '_')) f.grouping = spec[i++];
  if (i < spec.size() && (spec[i] == ',' || spec[i] == '_'))
    throw spec_error(pattern, spec, "Cannot specify both ',' and '_'.");
  if (i < spec.size() && spec[i] == '.') {
    ++i;
    if (i >= spec.size() || !is_digit(spec[i])) throw spec_error(pattern, spec, "Format specifier missing precision");
    f.precision = 0;
    while (i < spec.size() && is_digit(spec[i])) f.precision = f.precision * 10 + (spec[i++] - '0');
  }
  if (spec.size() - i > 1) throw spec_error(pattern, spec, "Invalid format specifier");
  if (i < spec.size()) {
    f.type = spec[i];
    if (std::string("deEfFgGn%").find(f.type) == std::string::npos)
      throw spec_error(pattern, spec,
                       std::string("unsupported format code '") + f.type + "' (Tower takes d e E f F g G n %)");
  }
  if (f.grouping && f.type == 'n')
    throw spec_error(pattern, spec, std::string("Cannot specify '") + f.grouping + "' with 'n'.");
  return f;
}

// C's printf of one double, which rounds exactly as Python does (correctly).
std::string printf_double(const std::string& format, double value) {
  const int n = std::snprintf(nullptr, 0, format.c_str(), value);
  std::string out(static_cast<std::size_t>(n) + 1, '\0');
  std::snprintf(out.data(), out.size(), format.c_str(), value);
  out.resize(static_cast<std::size_t>(n));
  return out;
}

// Removes the zeros that end the fraction (and a bare '.' unless `keep_point`), leaving any exponent.
std::string strip_fraction_zeros(const std::string& s, bool keep_point, bool keep_one_digit) {
  const std::size_t point = s.find('.');
  if (point == std::string::npos) return s;
  const std::size_t e = std::min(s.find_first_of("eE"), s.size());
  std::size_t end = e;
  while (end > point + 1 && s[end - 1] == '0') --end;
  if (keep_one_digit && end == point + 1 && e > point + 1) ++end;
  if (end == point + 1 && !keep_point && !keep_one_digit) --end;
  return s.substr(0, end) + s.substr(e);
}

// Python's float formatting without a type but with a precision p: 'g' with at least one digit after the point,
// and scientific notation from p integer digits on (so 1.0 -> "1.0", 100.0 at .3 -> "1e+02").
std::string general_with_point(double magnitude, int p, bool alternate) {
  p = std::max(p, 1);
  const std::string sci = printf_double("%." + std::to_string(p - 1) + "e", magnitude);
  const int point_position = std::stoi(sci.substr(sci.find('e') + 1)) + 1;
  if (point_position <= -4 || point_position > p - 1) {
    const std::string out =
        printf_double(std::string(alternate ? "%#." : "%.") + std::to_string(p - 1) + "e", magnitude);
    return alternate ? out : strip_fraction_zeros(out, false, false);
  }
  const std::string fixed = printf_double("%." + std::to_string(p - point_position) + "f", magnitude);
  return alternate ? fixed : strip_fraction_zeros(fixed, false, true);
}

// |value| as Python writes it for the spec (the sign is the caller's).
std::string format_magnitude(double magnitude, bool is_int, const FormatSpec& f) {
  const std::string alt = f.alternate ? "#" : "";
  const std::string p = std::to_string(f.precision < 0 ? 6 : f.precision);
  if (std::isinf(magnitude) || std::isnan(magnitude)) {
    const std::string word = std::isinf(magnitude) ? "inf" : "nan";
    if (f.type == 'E' || f.type == 'F' || f.type == 'G') {
      std::string upper = word;
      for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      return upper;
    }
    return f.type == '%' ? word + "%" : word;
  }
  switch (f.type) {
    case 'e': case 'E': case 'f': case 'F':
      return printf_double("%" + alt + "." + p + f.type, magnitude);
    case '%':
      return printf_double("%" + alt + "." + p + "f", magnitude * 100) + "%";
    case 'g': case 'G':
      return printf_double("%" + alt + "." + p + f.type, magnitude);
    default:  // 'd', 'n' or none
      if (is_int) return printf_double("%.0f", magnitude);
      if (f.type == 'n') return printf_double("%" + alt + "." + p + "g", magnitude);
      if (f.precision >= 0) return general_with_point(magnitude, f.precision, f.alternate);
      {
        const std::string repr = python_float_repr(magnitude);
        if (!f.alternate || repr.find('.') != std::string::npos) return repr;
        const std::size_t e = repr.find('e');
        return repr.substr(0, e) + "." + repr.substr(e);
      }
  }
}

// The integer digits with a separator every three (none when `separator` is 0), padded with zeros to `min_width`
// characters as Python pads zero-filled numbers (the zeros are grouped too: "0,001,234").
std::string group_digits(const std::string& digits, char separator, long min_width) {
  if (digits.empty()) return digits;
  long remaining = static_cast<long>(digits.size());
  if (!separator) return std::string(static_cast<std::size_t>(std::max(0L, min_width - remaining)), '0') + digits;
  std::string out;
  std::size_t end = digits.size();
  for (bool first = true;; first = false) {
    const long size = std::min(3L, std::max({remaining, min_width, 1L}));
    const long chars = std::max(0L, std::min(remaining, size));
    std::string group(static_cast<std::size_t>(std::max(0L, size - remaining)), '0');
    group += digits.substr(end - static_cast<std::size_t>(chars), static_cast<std::size_t>(chars));
    end -= static_cast<std::size_t>(chars);
    out = group + (first ? "" : std::string(1, separator)) + out;
    remaining -= chars;
    min_width -= size;
    if (remaining <= 0 && min_width <= 0) return out;
    min_width -= 1;
  }
}

std::string format_value(double value, bool is_int, const FormatSpec& f, const std::string& pattern,
                         const std::string& spec, const std::string& name) {
  if (!is_int && f.type == 'd')
    throw spec_error(pattern, spec, "'" + name + "' is a float: Unknown format code 'd' for object of type 'float'");
  if (is_int && f.precision >= 0 && (f.type == 0 || f.type == 'd' || f.type == 'n'))
    throw spec_error(pattern, spec, "'" + name + "' is an int: Precision not allowed in integer format specifier");
  const bool negative = std::signbit(value) && !std::isnan(value);
  const std::string body = format_magnitude(std::fabs(value), is_int, f);
  const std::string sign = negative ? "-" : f.sign == '+' ? "+" : f.sign == ' ' ? " " : "";
  std::size_t digits = 0;
  while (digits < body.size() && is_digit(body[digits])) ++digits;
  const std::string rest = body.substr(digits);
  const bool zero_padded = f.fill == '0' && f.align == '=';
  const long min_width = zero_padded ? static_cast<long>(f.width) - static_cast<long>(sign.size() + rest.size()) : 0;
  const std::string number = group_digits(body.substr(0, digits), f.grouping, min_width) + rest;
  const std::size_t length = sign.size() + number.size();
  if (length >= f.width) return sign + number;
  const std::size_t pad = f.width - length;
  switch (f.align) {
    case '<': return sign + number + std::string(pad, f.fill);
    case '^': return std::string(pad / 2, f.fill) + sign + number + std::string(pad - pad / 2, f.fill);
    case '=': return sign + std::string(pad, f.fill) + number;
    default: return std::string(pad, f.fill) + sign + number;
  }
}

}  // namespace

std::string python_format(const std::string& pattern, const Logs& values, const std::vector<std::string>& ints) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '}') {
      if (i + 1 < pattern.size() && pattern[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      throw std::invalid_argument("Failed to format the filepath \"" + pattern + "\": single '}' encountered");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < pattern.size() && pattern[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const std::size_t close = pattern.find('}', i);
    if (close == std::string::npos)
      throw std::invalid_argument("Failed to format the filepath \"" + pattern + "\": single '{' encountered");
    const std::string field = pattern.substr(i + 1, close - i - 1);
    const std::size_t colon = field.find(':');
    const std::string name = field.substr(0, colon);
    const std::string spec = colon == std::string::npos ? "" : field.substr(colon + 1);
    const std::optional<double> value = values.get(name);
    if (!value)
      throw std::invalid_argument("Failed to format the filepath \"" + pattern + "\": no value named '" + name +
                                  "' (known: " + log_keys(values) + ")");
    const bool is_int = std::find(ints.begin(), ints.end(), name) != ints.end();
    out += format_value(*value, is_int, parse_spec(spec, pattern), pattern, spec, name);
    i = close;
  }
  return out;
}

}  // namespace detail

ModelCheckpoint::ModelCheckpoint(std::string filepath, ModelCheckpointOptions options)
    : filepath_(std::move(filepath)),
      options_(std::move(options)),
      direction_("ModelCheckpoint", options_.monitor, options_.mode) {
  if (filepath_.empty()) throw std::invalid_argument("ModelCheckpoint: the filepath is empty");
  if (!options_.save_weights_only)
    throw std::invalid_argument("ModelCheckpoint(\"" + filepath_ +
                                "\"): only save_weights_only=true is supported (weights files); save whole "
                                "models with Model::save");
  if (const auto* freq = std::get_if<std::int64_t>(&options_.save_freq)) {
    if (*freq <= 0)
      throw std::invalid_argument("ModelCheckpoint: save_freq must be \"epoch\" or a positive number of batches, "
                                  "got " + std::to_string(*freq));
    batch_freq_ = *freq;
  } else if (std::get<std::string>(options_.save_freq) != "epoch") {
    throw std::invalid_argument("ModelCheckpoint: unrecognized save_freq \"" +
                                std::get<std::string>(options_.save_freq) +
                                "\"; expected \"epoch\" or a number of batches");
  }
  best_ = options_.initial_value_threshold;
}

void ModelCheckpoint::on_epoch_begin(int epoch, const Logs&) { current_epoch_ = epoch; }

void ModelCheckpoint::on_train_batch_end(std::int64_t batch, const Logs& logs) {
  if (should_save_on_batch(batch)) save(current_epoch_, batch, logs);
}

void ModelCheckpoint::on_epoch_end(int epoch, const Logs& logs) {
  direction_.maximize(model());  // resolved at the first epoch end, as Keras does
  if (batch_freq_ == 0) save(epoch, -1, logs);
}

bool ModelCheckpoint::should_save_on_batch(std::int64_t batch) {
  if (batch_freq_ == 0) return false;
  // A batch index not above the last one seen means a new epoch began.
  batches_since_save_ += batch <= last_batch_seen_ ? batch + 1 : batch - last_batch_seen_;
  last_batch_seen_ = batch;
  if (batches_since_save_ < batch_freq_) return false;
  batches_since_save_ = 0;
  return true;
}

bool ModelCheckpoint::should_save(int epoch, const Logs& logs, const std::string& path) {
  if (!options_.save_best_only) {
    if (options_.verbose > 0) std::cout << "\nEpoch " << epoch + 1 << ": saving model to " << path << "\n";
    return true;
  }
  const std::optional<double> current = logs.get(options_.monitor);
  if (!current) {
    if (!warned_)
      std::cerr << "Warning: ModelCheckpoint can save best model only with " << options_.monitor
                << " available (logs have: " << detail::log_keys(logs) << "); saving every time.\n";
    warned_ = true;
    return true;
  }
  char best_str[64];
  if (best_)
    std::snprintf(best_str, sizeof best_str, "%.5f", *best_);
  else
    std::snprintf(best_str, sizeof best_str, "None");
  const bool improved = !best_ || (direction_.maximize(model()) ? *current > *best_ : *current < *best_);
  if (!improved) {
    if (options_.verbose > 0)
      std::cout << "\nEpoch " << epoch + 1 << ": " << options_.monitor << " did not improve from " << best_str << "\n";
    return false;
  }
  if (options_.verbose > 0) {
    char cur[64];
    std::snprintf(cur, sizeof cur, "%.5f", *current);
    std::cout << "\nEpoch " << epoch + 1 << ": " << options_.monitor << " improved from " << best_str << " to " << cur
              << ", saving model to " << path << "\n";
  }
  best_ = *current;
  return true;
}

void ModelCheckpoint::save(int epoch, std::int64_t batch, const Logs& logs) {
  if (!model()->is_chief()) return;  // under a multi-worker strategy only the chief writes checkpoints
  Logs values;
  values.set("epoch", epoch + 1);
  std::vector<std::string> ints = {"epoch"};
  if (batch >= 0 && !logs.contains("batch")) {
    values.set("batch", static_cast<double>(batch + 1));
    ints.push_back("batch");
  }
  for (const auto& [k, v] : logs.entries()) values.set(k, v);
  const std::string path = detail::python_format(filepath_, values, ints);
  // The weights of a diverged run are never written: they would replace the last good checkpoint (the same
  // file, or the one a user would pick as the latest).
  std::vector<io::NamedTensor> named;
  for (const VariablePtr& v : model()->weights()) named.push_back({v->path, v->value});
  if (const std::string bad = io::first_non_finite(named); !bad.empty()) {
    if (!warned_non_finite_)
      std::cerr << "Warning: ModelCheckpoint: not saving " << path << " (epoch " << epoch + 1
                << "): weight '" << bad << "' is NaN or infinite, the training diverged; "
                << (last_saved_.empty() ? std::string("no checkpoint was saved before")
                                        : "the last good checkpoint, " + last_saved_ + ", is kept")
                << " (no checkpoint is written while the weights stay non-finite)\n";
    warned_non_finite_ = true;
    return;
  }
  warned_non_finite_ = false;
  if (!should_save(epoch, logs, path)) return;
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  if (std::filesystem::is_directory(path))
    throw std::runtime_error("ModelCheckpoint: please specify a non-directory filepath; \"" + path +
                             "\" is an existing directory");
  model()->save_weights(path);
  last_saved_ = path;
}

}  // namespace tower::callbacks
