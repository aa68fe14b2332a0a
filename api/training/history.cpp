#include "api/training/history.h"

#include <stdexcept>

namespace tower::callbacks {

void History::on_train_begin(const Logs&) {
  epoch_.clear();
  keys_.clear();
  values_.clear();
}

void History::on_epoch_end(int epoch, const Logs& logs) {
  epoch_.push_back(epoch);
  for (const auto& [k, v] : logs.entries()) {
    if (!values_.count(k)) keys_.push_back(k);
    values_[k].push_back(v);
  }
}

const std::vector<double>& History::operator[](const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) {
    std::string known;
    for (const std::string& k : keys_) known += (known.empty() ? "" : ", ") + k;
    throw std::out_of_range("History has no '" + key + "' (keys: " + known + ")");
  }
  return it->second;
}

}  // namespace tower::callbacks
