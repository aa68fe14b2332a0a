#pragma once
// The data section's preprocessing steps, on images float32 [height, width, channels] (one example) or
// [N, height, width, channels] (a batch):
//
//   rescale      {scale, offset = 0}            x * scale + offset
//   resize       {height, width}                bilinear (data::resize_bilinear)
//   pad          {padding, value = 0}           constant padding: an int, [h, w] or [[top, bottom], [left, right]]
//   normalize    {mean, std}                    (x - mean) / std, each a number or one value per channel
//   random_flip  {mode = horizontal}            training: each image flipped with probability 1/2 (horizontal,
//                                               vertical, or each axis independently for horizontal_and_vertical);
//                                               evaluation: nothing
//   random_crop  {height, width}                training: a uniformly placed window of that size; evaluation: the
//                                               centred window (Keras' RandomCrop)
//
// In training the random steps run on whole batches after the per-image steps, with a generator seeded from the
// experiment seed, the pass and the batch index, so a resumed run draws the same flips and crops. The schema lets
// only rescale and normalize (which commute with flips and crops) follow a random step.
#include <string>
#include <vector>

#include "api/core/random.h"
#include "api/core/tensor.h"
#include "api/engine/layer_options.h"
#include "tools/experiment/located_config.h"

namespace tower::experiment {

struct PreprocessingStep {
  std::string type;
  double scale = 1, offset = 0;  // rescale
  Index height = 0, width = 0;   // resize, random_crop
  Padding2D padding;             // pad
  double value = 0;              // pad
  std::vector<double> mean, std;  // normalize
  std::string mode = "horizontal";  // random_flip
  std::string path;               // the step's path in the experiment, for errors
};

// Reads data.preprocessing (already checked by the schema).
std::vector<PreprocessingStep> read_preprocessing(const LocatedConfig& steps);
// The example shape after the steps; an image of the wrong rank, a crop larger than the image, or normalize values
// whose count is neither 1 nor the channel count fail at the step.
Shape preprocessed_shape(const std::vector<PreprocessingStep>& steps, Shape shape, const Document& doc);

bool has_random_steps(const std::vector<PreprocessingStep>& steps);
// One image through the per-image steps. `training`: random steps are skipped (they run per batch); otherwise
// they take their evaluation form.
Tensor apply_image_steps(const std::vector<PreprocessingStep>& steps, const Tensor& image, bool training);
// The random steps on a training batch [N, H, W, C], drawing from `rng`.
Tensor apply_random_steps(const std::vector<PreprocessingStep>& steps, const Tensor& batch, Generator& rng);

}  // namespace tower::experiment
