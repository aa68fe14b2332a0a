#include "api/training/callback.h"

namespace tower::callbacks {

void Logs::set(const std::string& key, double value) {
  for (auto& [k, v] : entries_)
    if (k == key) {
      v = value;
      return;
    }
  entries_.emplace_back(key, value);
}

std::optional<double> Logs::get(const std::string& key) const {
  for (const auto& [k, v] : entries_)
    if (k == key) return v;
  return std::nullopt;
}

}  // namespace tower::callbacks
