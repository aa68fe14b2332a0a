#include "layers/minimum.h"

#include "api/backend/backend.h"
#include "api/engine/layer_registry.h"

namespace tower::layers {

MinimumImpl::MinimumImpl(Options options) : Merge("Minimum", options.name), options_(std::move(options)) {
  options_.name = name();
}

void MinimumImpl::forward(const ForwardContext& ctx) { combine(backend::BinaryOp::minimum, ctx.inputs, ctx.outputs[0]); }

TOWER_REGISTER_LAYER(MinimumImpl, "Minimum");

}  // namespace tower::layers
