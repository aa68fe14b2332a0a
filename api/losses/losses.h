#pragma once
// Every loss: Keras' losses with their class names, convertible to LossPtr; loss_from_config reads them by name.
#include "api/losses/binary_crossentropy.h"
#include "api/losses/categorical_crossentropy.h"
#include "api/losses/huber.h"
#include "api/losses/kl_divergence.h"
#include "api/losses/loss.h"
#include "api/losses/mean_absolute_error.h"
#include "api/losses/mean_squared_error.h"
#include "api/losses/sparse_categorical_crossentropy.h"
