#pragma once
// Every metric: Keras' metrics with their class names, convertible to MetricPtr; metric_from_config reads them
// by name.
#include "api/metrics/accuracy_metrics.h"
#include "api/metrics/confusion_metrics.h"
#include "api/metrics/f_score_metrics.h"
#include "api/metrics/hinge_metrics.h"
#include "api/metrics/iou_metrics.h"
#include "api/metrics/mean.h"
#include "api/metrics/metric.h"
#include "api/metrics/probabilistic_metrics.h"
#include "api/metrics/regression_metrics.h"
