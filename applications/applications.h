#pragma once
// Every model in tower::applications.
#include "applications/mobilenet_v2.h"
