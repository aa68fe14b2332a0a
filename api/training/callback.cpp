#include "api/training/callback.h"

namespace tower::callbacks {

Logs::Logs(const Logs& other) : entries_(other.entries()) {}

Logs& Logs::operator=(const Logs& other) {
  if (this != &other) {
    entries_ = other.entries();
    deferred_ = nullptr;
  }
  return *this;
}

void Logs::defer(std::function<Logs()> values) { deferred_ = std::move(values); }

void Logs::resolve() const {
  if (!deferred_) return;
  const std::function<Logs()> fill = std::move(deferred_);
  deferred_ = nullptr;
  std::vector<std::pair<std::string, double>> merged = fill().entries();
  for (const auto& [key, value] : entries_) {
    bool replaced = false;
    for (auto& [k, v] : merged)
      if (k == key) v = value, replaced = true;
    if (!replaced) merged.emplace_back(key, value);
  }
  entries_ = std::move(merged);
}

const std::vector<std::pair<std::string, double>>& Logs::entries() const {
  resolve();
  return entries_;
}

void Logs::set(const std::string& key, double value) {
  for (auto& [k, v] : entries_)
    if (k == key) {
      v = value;
      return;
    }
  entries_.emplace_back(key, value);
}

std::optional<double> Logs::get(const std::string& key) const {
  // An entry set here wins over a deferred one: "size" is looked at without reading the device.
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& [k, v] : entries_)
      if (k == key) return v;
    if (!deferred_) break;
    resolve();
  }
  return std::nullopt;
}

}  // namespace tower::callbacks
