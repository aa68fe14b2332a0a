#pragma once
// Every callback Tower provides, as keras.callbacks does.
#include "api/callbacks/backup_and_restore.h"
#include "api/callbacks/callback.h"
#include "api/callbacks/csv_logger.h"
#include "api/callbacks/early_stopping.h"
#include "api/callbacks/history.h"
#include "api/callbacks/lambda_callback.h"
#include "api/callbacks/learning_rate_scheduler.h"
#include "api/callbacks/model_checkpoint.h"
#include "api/callbacks/progbar_logger.h"
#include "api/callbacks/reduce_lr_on_plateau.h"
#include "api/callbacks/terminate_on_nan.h"
