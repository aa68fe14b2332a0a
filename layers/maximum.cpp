#include "layers/maximum.h"

#include "api/backend/backend.h"
#include "api/engine/layer_registry.h"

namespace tower::layers {

MaximumImpl::MaximumImpl(Options options) : Merge("Maximum", options.name), options_(std::move(options)) {
  options_.name = name();
}

void MaximumImpl::forward(const ForwardContext& ctx) { combine(backend::BinaryOp::maximum, ctx.inputs, ctx.outputs[0]); }

TOWER_REGISTER_LAYER(MaximumImpl, "Maximum");

}  // namespace tower::layers
