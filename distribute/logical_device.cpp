#include "distribute/logical_device.h"

#include <algorithm>
#include <cctype>
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

}  // namespace

std::string message_prefix(const std::string& who) {
  if (who.empty() || (who.size() >= 2 && who.compare(who.size() - 2, 2, ": ") == 0)) return who;
  return who + ": ";
}

std::string available_devices() {
  std::string out = "cpu:0, cpu:1, ... (logical CPU devices, any index)";
  const int gpus = cuda_device_count();
  if (gpus == 0) return out + "; no GPU visible";
  for (int i = 0; i < gpus; ++i) out += ", gpu:" + std::to_string(i);
  return out;
}

LogicalDevice parse_logical_device(const std::string& name, const std::string& caller) {
  const std::string who = message_prefix(caller);
  const auto unknown = [&](const std::string& why) {
    return std::invalid_argument(who + "unknown device '" + name + "'" + why + ". Available devices: " +
                                 available_devices());
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
    if (i >= cuda_device_count()) throw unknown(" (no such GPU)");
    return {"gpu:" + std::to_string(i), Device::cuda(i)};
  }
  throw unknown("");
}

std::vector<LogicalDevice> default_devices() {
  std::vector<LogicalDevice> out;
  for (int i = 0; i < cuda_device_count(); ++i) out.push_back({"gpu:" + std::to_string(i), Device::cuda(i)});
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
