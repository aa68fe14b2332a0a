#include "api/training/training_state.h"

#include <cstdlib>
#include <stdexcept>

namespace tower::detail {

Config plan_rngs_to_config(const std::vector<TrainingLoop::PlanRng>& rngs) {
  Config list = Config::list();
  for (const TrainingLoop::PlanRng& p : rngs) {
    Config e = Config::map();
    e.set("batch_size", p.batch_size);
    e.set("replica", p.replica);
    // Bit for bit: the config holds signed 64-bit integers.
    e.set("seed", static_cast<std::int64_t>(p.seed));
    e.set("steps", static_cast<std::int64_t>(p.steps));
    list.push_back(e);
  }
  return list;
}

std::vector<TrainingLoop::PlanRng> plan_rngs_from_config(const Config& list) {
  std::vector<TrainingLoop::PlanRng> out;
  for (const Config& p : list.as_list())
    out.push_back({p.at("batch_size").as_int(), static_cast<int>(p.at("replica").as_int()),
                   static_cast<std::uint64_t>(p.at("seed").as_int()),
                   static_cast<std::uint64_t>(p.at("steps").as_int())});
  return out;
}

Config callback_states(const std::vector<callbacks::CallbackPtr>& callbacks, const callbacks::Callback* self,
                       const std::string& prefix, std::vector<io::NamedTensor>& tensors) {
  Config list = Config::list();
  for (std::size_t i = 0; i < callbacks.size(); ++i) {
    if (callbacks[i].get() == self) continue;
    const callbacks::CallbackState s = callbacks[i]->state();
    if (s.empty()) continue;
    for (const auto& [name, t] : s.tensors) tensors.push_back({prefix + std::to_string(i) + "/" + name, t});
    Config e = Config::map();
    e.set("index", static_cast<std::int64_t>(i));
    e.set("values", s.values);
    list.push_back(e);
  }
  return list;
}

void restore_callback_states(const Config& list, const std::vector<io::NamedTensor>& tensors, const std::string& prefix,
                             const std::vector<callbacks::CallbackPtr>& callbacks, const std::string& file) {
  std::vector<callbacks::CallbackState> states(callbacks.size());
  std::vector<bool> given(callbacks.size(), false);
  for (const Config& e : list.as_list()) {
    const std::int64_t i = e.at("index").as_int();
    if (i < 0 || static_cast<std::size_t>(i) >= callbacks.size())
      throw std::runtime_error(file + " holds the state of callback " + std::to_string(i + 1) + "; this fit has " +
                               std::to_string(callbacks.size()) + " callbacks");
    states[static_cast<std::size_t>(i)].values = e.at("values");
    given[static_cast<std::size_t>(i)] = true;
  }
  for (const io::NamedTensor& t : tensors) {
    const std::string rest = t.name.substr(prefix.size());
    const std::size_t slash = rest.find('/');
    const long i = slash == std::string::npos ? -1 : std::strtol(rest.substr(0, slash).c_str(), nullptr, 10);
    if (i < 0 || static_cast<std::size_t>(i) >= callbacks.size() || !given[static_cast<std::size_t>(i)])
      throw std::runtime_error(file + ": unexpected entry '" + t.name + "'");
    states[static_cast<std::size_t>(i)].tensors.emplace_back(rest.substr(slash + 1), t.value);
  }
  for (std::size_t i = 0; i < callbacks.size(); ++i) {
    if (!given[i]) continue;
    try {
      callbacks[i]->restore_state(states[i]);
    } catch (const std::exception& e) {
      throw std::runtime_error(file + ": callback " + std::to_string(i + 1) + ": " + e.what());
    }
  }
}

}  // namespace tower::detail
