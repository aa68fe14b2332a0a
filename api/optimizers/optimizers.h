#pragma once
// Every optimizer and learning-rate schedule (keras.optimizers).
#include "api/optimizers/adadelta.h"
#include "api/optimizers/adagrad.h"
#include "api/optimizers/adam.h"
#include "api/optimizers/adamax.h"
#include "api/optimizers/adamw.h"
#include "api/optimizers/nadam.h"
#include "api/optimizers/optimizer.h"
#include "api/optimizers/rmsprop.h"
#include "api/optimizers/schedules.h"
#include "api/optimizers/sgd.h"
