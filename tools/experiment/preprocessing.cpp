#include "tools/experiment/preprocessing.h"

#include <algorithm>
#include <cstring>

#include "api/data/image.h"
#include "tools/experiment/schema.h"

namespace tower::experiment {

namespace {

Padding2D read_padding(const LocatedConfig& p) {
  if (!p.value().is_list()) return Padding2D(static_cast<int>(p.as_int()));
  if (p[0].value().is_list()) {
    const auto h = p[0].as_int_list(), w = p[1].as_int_list();
    if (h.size() != 2 || w.size() != 2) p.fail("expected [[top, bottom], [left, right]]");
    return Padding2D({static_cast<int>(h[0]), static_cast<int>(h[1])}, {static_cast<int>(w[0]), static_cast<int>(w[1])});
  }
  return Padding2D(static_cast<int>(p[0].as_int()), static_cast<int>(p[1].as_int()));
}

Tensor rescale(const Tensor& x, double scale, double offset) {
  Tensor out(x.shape());
  const float* s = x.data<float>();
  float* d = out.data<float>();
  const float k = static_cast<float>(scale), b = static_cast<float>(offset);
  for (Index i = 0; i < x.numel(); ++i) d[i] = s[i] * k + b;
  return out;
}

Tensor normalize(const Tensor& x, const std::vector<double>& mean, const std::vector<double>& std) {
  Tensor out(x.shape());
  const Index c = x.dim(-1);
  const float* s = x.data<float>();
  float* d = out.data<float>();
  for (Index i = 0; i < x.numel(); ++i) {
    const std::size_t ch = static_cast<std::size_t>(i % c);
    const double m = mean.size() == 1 ? mean[0] : mean[ch], sd = std.size() == 1 ? std[0] : std[ch];
    d[i] = static_cast<float>((s[i] - m) / sd);
  }
  return out;
}

Tensor pad(const Tensor& x, const Padding2D& p, double value) {
  const Index h = x.dim(0), w = x.dim(1), c = x.dim(2);
  const Index oh = h + p.top + p.bottom, ow = w + p.left + p.right;
  Tensor out(Shape({oh, ow, c}));
  float* d = out.data<float>();
  std::fill(d, d + out.numel(), static_cast<float>(value));
  const float* s = x.data<float>();
  for (Index y = 0; y < h; ++y)
    std::memcpy(d + ((y + p.top) * ow + p.left) * c, s + y * w * c, static_cast<std::size_t>(w * c) * sizeof(float));
  return out;
}

// The window [top, top + height) x [left, left + width) of one image [H, W, C] into `dst`.
void crop_into(const float* src, Index w, Index c, Index top, Index left, Index height, Index width, float* dst) {
  for (Index y = 0; y < height; ++y)
    std::memcpy(dst + y * width * c, src + ((top + y) * w + left) * c, static_cast<std::size_t>(width * c) * sizeof(float));
}

Tensor center_crop(const Tensor& x, Index height, Index width) {
  Tensor out(Shape({height, width, x.dim(2)}));
  crop_into(x.data<float>(), x.dim(1), x.dim(2), (x.dim(0) - height) / 2, (x.dim(1) - width) / 2, height, width,
            out.data<float>());
  return out;
}

// Flips image [H, W, C] in place along y (vertical) or x (horizontal).
void flip(float* img, Index h, Index w, Index c, bool horizontal) {
  if (horizontal) {
    for (Index y = 0; y < h; ++y)
      for (Index x = 0; x < w / 2; ++x)
        for (Index k = 0; k < c; ++k) std::swap(img[(y * w + x) * c + k], img[(y * w + (w - 1 - x)) * c + k]);
  } else {
    for (Index y = 0; y < h / 2; ++y)
      for (Index i = 0; i < w * c; ++i) std::swap(img[y * w * c + i], img[(h - 1 - y) * w * c + i]);
  }
}

}  // namespace

std::vector<PreprocessingStep> read_preprocessing(const LocatedConfig& steps) {
  std::vector<PreprocessingStep> out;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const LocatedConfig s = steps[i];
    PreprocessingStep p;
    p.type = s["type"].as_string();
    p.path = s.path();
    if (p.type == "rescale") {
      p.scale = s["scale"].as_number();
      p.offset = s.get_number("offset", 0);
    } else if (p.type == "resize" || p.type == "random_crop") {
      p.height = s["height"].as_int();
      p.width = s["width"].as_int();
    } else if (p.type == "pad") {
      p.padding = read_padding(s["padding"]);
      p.value = s.get_number("value", 0);
    } else if (p.type == "normalize") {
      p.mean = s["mean"].as_number_list();
      p.std = s["std"].as_number_list();
    } else if (p.type == "random_flip") {
      p.mode = s.get_string("mode", "horizontal");
    }
    out.push_back(p);
  }
  return out;
}

Shape preprocessed_shape(const std::vector<PreprocessingStep>& steps, Shape shape, const Document& doc) {
  for (const PreprocessingStep& p : steps) {
    const LocatedConfig at(doc, p.path);
    if (shape.rank() != 3) at.fail(p.type + " works on images [height, width, channels], got examples of shape " +
                                   shape.to_string());
    if (p.type == "resize") {
      shape = Shape({p.height, p.width, shape[2]});
    } else if (p.type == "pad") {
      shape = Shape({shape[0] + p.padding.top + p.padding.bottom, shape[1] + p.padding.left + p.padding.right,
                     shape[2]});
    } else if (p.type == "random_crop") {
      if (p.height > shape[0] || p.width > shape[1])
        at.fail("a " + std::to_string(p.height) + "x" + std::to_string(p.width) + " crop of " +
                std::to_string(shape[0]) + "x" + std::to_string(shape[1]) + " images; pad or resize them first");
      shape = Shape({p.height, p.width, shape[2]});
    } else if (p.type == "normalize") {
      for (const auto* v : {&p.mean, &p.std})
        if (v->size() != 1 && static_cast<Index>(v->size()) != shape[2])
          at.fail(std::string(v == &p.mean ? "mean" : "std") + " has " + std::to_string(v->size()) +
                  " values for images of " + std::to_string(shape[2]) + " channels; give 1 or " +
                  std::to_string(shape[2]));
    }
  }
  return shape;
}

bool has_random_steps(const std::vector<PreprocessingStep>& steps) {
  return std::any_of(steps.begin(), steps.end(), [](const PreprocessingStep& p) { return is_random_preprocessing(p.type); });
}

Tensor apply_image_steps(const std::vector<PreprocessingStep>& steps, const Tensor& image, bool training) {
  Tensor x = image;
  for (const PreprocessingStep& p : steps) {
    if (p.type == "rescale") {
      x = rescale(x, p.scale, p.offset);
    } else if (p.type == "resize") {
      x = data::resize_bilinear(x, p.height, p.width);
    } else if (p.type == "pad") {
      x = pad(x, p.padding, p.value);
    } else if (p.type == "normalize") {
      x = normalize(x, p.mean, p.std);
    } else if (p.type == "random_crop" && !training) {
      x = center_crop(x, p.height, p.width);
    }
  }
  return x;
}

Tensor apply_random_steps(const std::vector<PreprocessingStep>& steps, const Tensor& batch, Generator& rng) {
  Tensor x = batch;
  for (const PreprocessingStep& p : steps) {
    if (!is_random_preprocessing(p.type)) continue;
    const Index n = x.dim(0), h = x.dim(1), w = x.dim(2), c = x.dim(3);
    if (p.type == "random_flip") {
      Tensor out(x.shape());
      out.copy_from(x);
      for (Index i = 0; i < n; ++i) {
        float* img = out.data<float>() + i * h * w * c;
        const bool both = p.mode == "horizontal_and_vertical";
        if ((both || p.mode == "horizontal") && rng.uniform() < 0.5f) flip(img, h, w, c, true);
        if ((both || p.mode == "vertical") && rng.uniform() < 0.5f) flip(img, h, w, c, false);
      }
      x = out;
    } else {
      Tensor out(Shape({n, p.height, p.width, c}));
      for (Index i = 0; i < n; ++i) {
        const Index top = static_cast<Index>(rng.next_u64() % static_cast<std::uint64_t>(h - p.height + 1));
        const Index left = static_cast<Index>(rng.next_u64() % static_cast<std::uint64_t>(w - p.width + 1));
        crop_into(x.data<float>() + i * h * w * c, w, c, top, left, p.height, p.width,
                  out.data<float>() + i * p.height * p.width * c);
      }
      x = out;
    }
  }
  return x;
}

}  // namespace tower::experiment
