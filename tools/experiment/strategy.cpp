#include "tools/experiment/strategy.h"

#include <algorithm>

#include "distribute/distribute.h"

namespace tower::experiment {

namespace {

distribute::CrossDeviceOpsPtr cross_device_ops(const std::string& name) {
  if (name == "NcclAllReduce") return distribute::NcclAllReduce();
  if (name == "HierarchicalCopyAllReduce") return distribute::HierarchicalCopyAllReduce();
  if (name == "ReductionToOneDevice") return distribute::ReductionToOneDevice();
  if (name == "InProcessAllReduce") return distribute::InProcessAllReduce();
  return nullptr;  // the strategy's default for its devices
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

StrategySpec read_strategy(const Experiment& e) {
  const LocatedConfig s = e.at("strategy");
  StrategySpec spec;
  spec.type = s["type"].as_string();
  spec.device = s.get_string("device", "cpu:0");
  for (std::size_t i = 0; i < s["devices"].size(); ++i) spec.devices.push_back(s["devices"][i].as_string());
  spec.cross_device_ops = s.get_string("cross_device_ops", "");
  spec.bucket_cap_mb = s.get_number("bucket_cap_mb", 25);
  spec.communication = s.get_string("communication", "auto");
  for (std::size_t i = 0; i < s["compute_devices"].size(); ++i)
    spec.compute_devices.push_back(s["compute_devices"][i].as_string());
  spec.parameter_device = s.get_string("parameter_device", "");
  return spec;
}

RunStrategy::RunStrategy(const Experiment& e) : spec_(read_strategy(e)) {
  const LocatedConfig s = e.at("strategy");
  if (spec_.type == "one_device") {
    strategy_ = s["device"].locate([&] { return distribute::Strategy(distribute::OneDeviceStrategy(spec_.device)); });
  } else if (spec_.type == "mirrored") {
    std::optional<std::vector<std::string>> devices;
    if (!spec_.devices.empty()) devices = spec_.devices;
    strategy_ = s.locate([&] {
      const auto cap = static_cast<std::size_t>(std::max(1.0, spec_.bucket_cap_mb * 1024 * 1024));
      return distribute::Strategy(
          distribute::MirroredStrategy(devices, cross_device_ops(spec_.cross_device_ops), {.bucket_cap_bytes = cap}));
    });
  } else if (spec_.type == "multi_worker") {
    distribute::CommunicationOptions o;
    o.implementation = spec_.communication == "mpi" ? "RING" : upper(spec_.communication);
    strategy_ = s.locate([&] { return distribute::Strategy(distribute::MultiWorkerMirroredStrategy(o)); });
  } else if (spec_.type == "central_storage") {
    std::optional<std::vector<std::string>> devices;
    if (!spec_.compute_devices.empty()) devices = spec_.compute_devices;
    std::optional<std::string> parameter_device;
    if (!spec_.parameter_device.empty()) parameter_device = spec_.parameter_device;
    strategy_ = s.locate(
        [&] { return distribute::Strategy(distribute::CentralStorageStrategy(devices, parameter_device)); });
  }
}

int RunStrategy::num_replicas_in_sync() const { return strategy_ ? strategy_->num_replicas_in_sync() : 1; }

bool RunStrategy::is_chief() const { return !strategy_ || strategy_->is_chief(); }

void RunStrategy::in_scope(const std::function<void()>& build) const {
  if (!strategy_) return build();
  const distribute::StrategyScope scope = strategy_->scope();
  build();
}

}  // namespace tower::experiment
