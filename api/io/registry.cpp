#include "api/io/registry.h"

#include <algorithm>

namespace tower::detail {

std::string closest_key(const std::string& key, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = std::max<std::size_t>(2, key.size() / 3) + 1;
  for (const std::string& cand : candidates) {
    std::vector<std::size_t> prev(cand.size() + 1), cur(cand.size() + 1);
    for (std::size_t j = 0; j <= cand.size(); ++j) prev[j] = j;
    for (std::size_t i = 1; i <= key.size(); ++i) {
      cur[0] = i;
      for (std::size_t j = 1; j <= cand.size(); ++j)
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (key[i - 1] == cand[j - 1] ? 0 : 1)});
      std::swap(prev, cur);
    }
    if (prev[cand.size()] < best_d) {
      best_d = prev[cand.size()];
      best = cand;
    }
  }
  return best;
}

std::pair<std::string, Config> read_serialized(const Config& serialized, const std::string& what,
                                               const std::vector<std::string>& extra_keys) {
  if (serialized.is_string()) return {serialized.as_string(), Config::map()};
  if (!serialized.is_map() || !serialized.contains("class_name") || !serialized.at("class_name").is_string()) {
    const bool vowel = !what.empty() && std::string("aeiou").find(what[0]) != std::string::npos;
    throw ConfigError(std::string(vowel ? "an " : "a ") + what + " is a name or {class_name, config}, got " +
                      serialized.to_json());
  }
  const std::string name = serialized.at("class_name").as_string();
  for (const auto& [key, value] : serialized.as_map()) {
    if (key == "class_name" || key == "config" || key == "module" || key == "registered_name" ||
        std::find(extra_keys.begin(), extra_keys.end(), key) != extra_keys.end())
      continue;
    const std::string near = closest_key(key, {"class_name", "config"});
    throw ConfigError(what + " '" + name + "': unknown key '" + key + "'" +
                      (near.empty() ? std::string() : " (did you mean '" + near + "'?)") +
                      " (expected class_name and config)");
  }
  const bool has_config = serialized.contains("config") && !serialized.at("config").is_null();
  return {name, has_config ? serialized.at("config") : Config::map()};
}

void check_arguments(const Config& arguments, const std::vector<std::string>& known, const std::string& what) {
  for (const auto& [key, value] : arguments.as_map()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string list;
    for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
    const std::string near = closest_key(key, known);
    throw ConfigError(what + ": unknown argument '" + key + "'" +
                      (near.empty() ? std::string() : " (did you mean '" + near + "'?)") + "; its arguments: " +
                      (list.empty() ? "none" : list));
  }
}

void unknown_name(const std::string& name, const std::vector<std::string>& known, const std::string& what) {
  std::string list;
  for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
  const std::string near = closest_key(name, known);
  throw ConfigError("unknown " + what + " '" + name + "'" + (near.empty() ? "" : " (did you mean '" + near + "'?)") +
                    "; known: " + list);
}

}  // namespace tower::detail
