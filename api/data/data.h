#pragma once
// tower::data: the input pipeline (Dataset), the data set loaders and text (lines of files, TextVectorization,
// windows over a sequence).
#include "api/data/cifar10.h"
#include "api/data/dataset.h"
#include "api/data/idx.h"
#include "api/data/image.h"
#include "api/data/image_directory.h"
#include "api/data/text_lines.h"
#include "api/data/text_vectorization.h"
#include "api/data/timeseries.h"
