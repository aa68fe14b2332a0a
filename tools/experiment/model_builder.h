#pragma once
// Builds an experiment's `model` section into a Model, with weights initialised from the global seed:
//
//   application: MobileNetV2 + its options      a model from the application registry (applications.h)
//   layers: [{type: Conv2D, ...}, ...]            a Sequential model; it starts with an optional
//                                                 {type: Input, shape: [...]}, else model.input_shape, else the
//                                                 data's example shape
//   nodes: [{name: x, type: Input, ...},          a functional model: each node is a layer called on the nodes named
//           {name: y, type: Dense, inputs: x}]    by `inputs` (a name, or a list for merge layers; "name[i]" picks
//                                                 output i; default: the node before), the model's inputs are its
//                                                 Input nodes and its outputs the nodes named by model.outputs
//                                                 (default: the last node)
//
// Layers are built through the layer registry (layer_from_config) with Keras' argument names. Every error is an
// ExperimentError at the layer, the argument, or the reference at fault: an unknown layer type lists the known
// ones, an unknown argument names the closest one, a shape that does not fit names the layer and the shapes.
#include "api/core/shape.h"
#include "api/models/model.h"
#include "tools/experiment/experiment.h"

namespace tower::experiment {

// `data_shape`: one example's shape as the data pipeline produces it (after preprocessing).
Model build_model(const Experiment& experiment, const Shape& data_shape);

}  // namespace tower::experiment
