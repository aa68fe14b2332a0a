#pragma once
// oneDNN's engine and stream for the CPU backend's op files. Internal: not installed, not included by any
// public header.
#include <oneapi/dnnl/dnnl.hpp>

#include "api/backend/cpu/cpu_backend.h"

namespace tower::backend::cpu {

struct DnnlContext {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
};

}  // namespace tower::backend::cpu
