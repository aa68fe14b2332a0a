#include "api/core/device.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>

#ifdef TOWER_WITH_CUDA
#include "api/core/cuda/cuda_device.h"
#endif

namespace tower {

Device Device::parse(const std::string& text) {
  std::string t = text;
  if (!t.empty() && t[0] == '/') t.erase(0, 1);
  for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (t == "cpu" || t == "cpu:0") return cpu();
  for (const std::string prefix : {"cuda", "gpu"}) {
    if (t.rfind(prefix, 0) != 0) continue;
    std::string rest = t.substr(prefix.size());
    if (rest.empty()) return cuda(0);
    if (rest[0] == ':' && rest.size() > 1) {
      bool digits = true;
      for (size_t i = 1; i < rest.size(); ++i) digits = digits && std::isdigit(static_cast<unsigned char>(rest[i]));
      if (digits) return cuda(std::stoi(rest.substr(1)));
    }
  }
  throw std::invalid_argument("unknown device '" + text + "' (expected cpu, cuda or cuda:N)");
}


int cuda_device_count() {
#ifdef TOWER_WITH_CUDA
  return cuda::device_count();
#else
  return 0;
#endif
}

Device default_device() {
  if (const char* text = std::getenv("TOWER_DEVICE"); text && *text) {
    Device d;
    try {
      d = Device::parse(text);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("TOWER_DEVICE: ") + e.what());
    }
    if (d.is_cuda() && d.index >= cuda_device_count()) {
#ifdef TOWER_WITH_CUDA
      try {
        cuda::require_device(d.index);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(std::string("TOWER_DEVICE: ") + e.what());
      }
#else
      throw std::invalid_argument(std::string("TOWER_DEVICE: ") + text + " was asked for, but this build of Tower has no CUDA backend");
#endif
    }
    return d;
  }
  if (cuda_device_count() > 0) return Device::cuda(0);
#ifdef TOWER_WITH_CUDA
  static std::once_flag logged;
  std::call_once(logged, [] { std::fprintf(stderr, "Tower: no GPU is visible; running on the CPU\n"); });
#endif
  return Device::cpu();
}

std::vector<Device> list_physical_devices(const std::string& type) {
  std::vector<Device> out;
  if (type.empty() || type == "CPU" || type == "cpu") out.push_back(Device::cpu());
  if (type.empty() || type == "GPU" || type == "gpu" || type == "cuda")
    for (int i = 0; i < cuda_device_count(); ++i) out.push_back(Device::cuda(i));
  return out;
}

std::string Device::to_string() const {
  return is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(index);
}

}  // namespace tower
