#include "distribute/logical_device.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <stdexcept>

namespace tower::distribute {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() < 9 &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

// 0 until set or read from the environment.
std::atomic<int> per_gpu_setting{0};

}  // namespace

void set_logical_gpus_per_gpu(int per_gpu) {
  if (per_gpu < 1)
    throw std::invalid_argument("set_logical_gpus_per_gpu: each GPU must appear as at least 1 logical GPU, got " +
                                std::to_string(per_gpu));
  per_gpu_setting.store(per_gpu);
}

int logical_gpus_per_gpu() {
  if (const int set = per_gpu_setting.load(); set > 0) return set;
  int per_gpu = 1;
  if (const char* text = std::getenv("TOWER_LOGICAL_GPUS"); text && *text) {
    if (!all_digits(text) || std::stoi(text) < 1)
      throw std::invalid_argument(std::string("TOWER_LOGICAL_GPUS='") + text +
                                  "' is not a whole number >= 1 (the logical GPUs each physical GPU appears as)");
    per_gpu = std::stoi(text);
  }
  int expected = 0;
  per_gpu_setting.compare_exchange_strong(expected, per_gpu);
  return per_gpu_setting.load();
}

std::vector<LogicalDevice> logical_gpus(int physical, int per_gpu) {
  std::vector<LogicalDevice> out;
  for (int p = 0; p < physical; ++p)
    for (int j = 0; j < per_gpu; ++j) out.push_back({"gpu:" + std::to_string(p * per_gpu + j), Device::cuda(p)});
  return out;
}

std::string message_prefix(const std::string& who) {
  if (who.empty() || (who.size() >= 2 && who.compare(who.size() - 2, 2, ": ") == 0)) return who;
  return who + ": ";
}

std::string available_devices() { return available_devices(cuda_device_count()); }

std::string available_devices(int gpus) {
  std::string out = "cpu:0, cpu:1, ... (logical CPU devices, any index)";
  if (gpus == 0) return out + "; no GPU visible";
  const int per_gpu = logical_gpus_per_gpu();
  for (const LogicalDevice& d : logical_gpus(gpus, per_gpu))
    out += ", " + d.name + (per_gpu > 1 ? " (on " + d.device.to_string() + ")" : "");
  return out;
}

LogicalDevice parse_logical_device(const std::string& name, const std::string& caller) {
  return parse_logical_device(name, caller, cuda_device_count());
}

LogicalDevice parse_logical_device(const std::string& name, const std::string& caller, int visible_gpus) {
  const std::string who = message_prefix(caller);
  const auto unknown = [&](const std::string& why) {
    return std::invalid_argument(who + "unknown device '" + name + "'" + why + ". Available devices: " +
                                 available_devices(visible_gpus));
  };
  std::string t = lower(name);
  if (const auto job = t.find("/device:"); t.rfind("/job:", 0) == 0 && job != std::string::npos) t = t.substr(job);
  if (t.rfind("/device:", 0) == 0) t = t.substr(8);
  if (!t.empty() && t[0] == '/') t.erase(0, 1);
  std::string kind = t, index = "0";
  if (const auto colon = t.find(':'); colon != std::string::npos) {
    kind = t.substr(0, colon);
    index = t.substr(colon + 1);
  }
  if (!all_digits(index)) throw unknown("");
  const int i = std::stoi(index);
  if (kind == "cpu") return {"cpu:" + index, Device::cpu()};
  if (kind == "gpu" || kind == "cuda") {
    if (i >= visible_gpus * logical_gpus_per_gpu()) throw unknown(" (no such GPU)");
    return {"gpu:" + std::to_string(i), Device::cuda(i / logical_gpus_per_gpu())};
  }
  throw unknown("");
}

std::vector<LogicalDevice> default_devices() {
  std::vector<LogicalDevice> out = logical_gpus(cuda_device_count(), logical_gpus_per_gpu());
  if (out.empty()) out.push_back({"cpu:0", Device::cpu()});
  return out;
}

std::vector<LogicalDevice> parse_device_list(const std::vector<std::string>& names, const std::string& caller) {
  const std::string who = message_prefix(caller);
  if (names.empty())
    throw std::invalid_argument(who + "the device list is empty; give at least one device (available: " +
                                available_devices() + "), or none at all for every visible GPU, else the CPU");
  std::vector<LogicalDevice> out;
  for (const std::string& n : names) {
    LogicalDevice d = parse_logical_device(n, who);
    for (const LogicalDevice& seen : out)
      if (seen.name == d.name)
        throw std::invalid_argument(who + "device '" + n + "' is listed twice (as " + d.name +
                                    "); each replica needs its own device");
    if (!out.empty() && out[0].device.is_cpu() != d.device.is_cpu())
      throw std::invalid_argument(who + "devices " + out[0].name + " and " + d.name +
                                  " mix CPU and GPU; a strategy's replicas are all CPU devices or all GPUs");
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace tower::distribute
