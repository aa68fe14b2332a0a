#include "api/core/device.h"

#include <cctype>
#include <stdexcept>

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

std::string Device::to_string() const {
  return is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(index);
}

}  // namespace tower
