#pragma once
// Every layer in tower::layers.
#include "api/models/input_layer.h"
#include "layers/dense.h"
