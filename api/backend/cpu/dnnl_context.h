#pragma once
// oneDNN's engine and stream for the CPU backend's op files. Internal: not installed, not included by any
// public header.
#include <oneapi/dnnl/dnnl.hpp>

#include "api/backend/cpu/cpu_backend.h"

namespace tower::backend::cpu {

// One engine for every thread; a stream per thread (oneDNN's streams are not for several threads at once), so
// primitives run from any number of threads, each on its caller's stream.
struct DnnlContext {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream& stream() {
    thread_local dnnl::stream own{engine};
    return own;
  }
};

}  // namespace tower::backend::cpu
