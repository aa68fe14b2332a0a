#include "api/callbacks/csv_logger.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "api/callbacks/model_checkpoint.h"
#include "api/models/model.h"

namespace tower::callbacks {

CSVLogger::CSVLogger(std::string filename, std::string separator, bool append)
    : filename_(std::move(filename)), separator_(std::move(separator)), append_(append) {
  if (filename_.empty()) throw std::invalid_argument("CSVLogger: the filename is empty");
  if (separator_.empty()) throw std::invalid_argument("CSVLogger(\"" + filename_ + "\"): the separator is empty");
}

void CSVLogger::on_train_begin(const Logs&) {
  if (model() && !model()->is_chief()) return;  // under a multi-worker strategy only the chief logs
  std::error_code ec;
  append_header_ = !(append_ && std::filesystem::exists(filename_, ec) && std::filesystem::file_size(filename_, ec) > 0);
  keys_.reset();
  if (file_.is_open()) file_.close();
  file_.open(filename_, append_ ? std::ios::app : std::ios::trunc);
  if (!file_)
    throw std::runtime_error("CSVLogger: cannot open \"" + filename_ + "\" for writing: " + std::strerror(errno));
}

// Quotes a field holding the separator, a quote or a line break, as Python's csv module does.
std::string CSVLogger::field(const std::string& text) const {
  if (text.find(separator_) == std::string::npos && text.find_first_of("\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

void CSVLogger::on_epoch_end(int epoch, const Logs& logs) {
  if (model() && !model()->is_chief()) return;
  errno = 0;  // what a failed write below sets, for the error message
  if (!keys_) {
    std::vector<std::string> keys;
    for (const auto& [k, v] : logs.entries()) keys.push_back(k);
    std::sort(keys.begin(), keys.end());
    const bool has_val = std::any_of(keys.begin(), keys.end(), [](const std::string& k) { return k.rfind("val_", 0) == 0; });
    if (!has_val) {
      const std::size_t n = keys.size();
      for (std::size_t i = 0; i < n; ++i) keys.push_back("val_" + keys[i]);
    }
    keys_ = std::move(keys);
    if (append_header_) {
      file_ << "epoch";
      for (const std::string& k : *keys_) file_ << separator_ << field(k);
      file_ << "\n";
    }
  }
  file_ << epoch;
  for (const std::string& k : *keys_) {
    const std::optional<double> v = logs.get(k);
    file_ << separator_ << (v ? detail::python_float_repr(*v) : "NA");
  }
  file_ << "\n";
  file_.flush();
  if (!file_)
    throw std::runtime_error("CSVLogger: cannot write to \"" + filename_ + "\"" +
                             (errno ? std::string(": ") + std::strerror(errno) : std::string()));
}

void CSVLogger::on_train_end(const Logs&) {
  file_.close();
  keys_.reset();
}

}  // namespace tower::callbacks
