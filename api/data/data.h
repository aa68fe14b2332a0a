#pragma once
// tower::data: the input pipeline (Dataset) and the data set loaders.
#include "api/data/cifar10.h"
#include "api/data/dataset.h"
#include "api/data/idx.h"
#include "api/data/image.h"
#include "api/data/image_directory.h"
