// The instruction set oneDNN's kernels use on this machine (after ONEDNN_MAX_CPU_ISA), its version, and the
// vector clone Tower's own loops run (api/backend/cpu/loops.h; a backend built with
// -DTOWER_VECTOR_CLONES_UP_TO_AVX2 has no AVX-512 clone), so that every benchmark result names them. Prints one
// line; bench/train.sh, bench/layers.sh and bench/onednn_versions.sh print it above their tables.
//   bench_cpu_isa
#include <oneapi/dnnl/dnnl.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "api/backend/cpu/cpu_backend.h"

namespace {

std::string isa_name(dnnl_cpu_isa_t isa) {
  switch (isa) {
    case dnnl_cpu_isa_sse41: return "SSE4.1";
    case dnnl_cpu_isa_avx: return "AVX";
    case dnnl_cpu_isa_avx2: return "AVX2";
    case dnnl_cpu_isa_avx2_vnni: return "AVX2 + VNNI";
    case dnnl_cpu_isa_avx512_core: return "AVX-512";
    case dnnl_cpu_isa_avx512_core_vnni: return "AVX-512 + VNNI";
    case dnnl_cpu_isa_avx512_core_bf16: return "AVX-512 + VNNI + BF16";
    case dnnl_cpu_isa_avx512_core_amx: return "AVX-512 + AMX";
    default: {
      char hex[32];
      std::snprintf(hex, sizeof hex, "dnnl_cpu_isa 0x%x", static_cast<unsigned>(isa));
      return hex;
    }
  }
}

}  // namespace

int main() {
  const dnnl_version_t* v = dnnl_version();
  const char* limit = std::getenv("ONEDNN_MAX_CPU_ISA");
  std::printf("oneDNN %d.%d.%d isa: %s%s%s; Tower loops: %s\n", v->major, v->minor, v->patch,
              isa_name(dnnl_get_effective_cpu_isa()).c_str(), limit ? ", ONEDNN_MAX_CPU_ISA=" : "",
              limit ? limit : "", tower::backend::cpu::vector_loops_isa());
  return 0;
}
