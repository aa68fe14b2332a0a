#include "distribute/detail/variable_transfer.h"

#include <stdexcept>

#include "api/core/device_memory.h"

namespace tower::distribute::detail {

void copy_into(std::string_view bytes, Tensor& target, const CopyBytes& copy) {
  if (bytes.size() != target.nbytes())
    throw std::invalid_argument("ParameterServerStrategy: " + std::to_string(bytes.size()) +
                                " bytes received for a tensor of shape " + target.shape().to_string() + " on " +
                                target.device().to_string() + " (" + std::to_string(target.nbytes()) + " bytes)");
  copy(target.raw_data(), target.device(), bytes.data(), Device::cpu(), bytes.size());
}

void copy_into(std::string_view bytes, Tensor& target) { copy_into(bytes, target, copy_bytes); }

void copy_out(const Tensor& value, std::string& out, const CopyBytes& copy) {
  out.resize(value.nbytes());
  copy(out.data(), Device::cpu(), value.raw_data(), value.device(), out.size());
}

void copy_out(const Tensor& value, std::string& out) { copy_out(value, out, copy_bytes); }

}  // namespace tower::distribute::detail
