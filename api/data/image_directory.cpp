#include "api/data/image_directory.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <memory>
#include <numeric>
#include <set>
#include <stdexcept>
#include <utility>

#include "api/core/random.h"
#include "api/data/image.h"

namespace tower::data {
namespace {

namespace fs = std::filesystem;

const char* const kWho = "image_dataset_from_directory: ";

int channels_of(const std::string& color_mode) {
  if (color_mode == "rgb") return 3;
  if (color_mode == "grayscale") return 1;
  if (color_mode == "rgba") return 4;
  throw std::invalid_argument(std::string(kWho) + "color_mode must be \"rgb\", \"grayscale\" or \"rgba\", got \"" +
                              color_mode + "\"");
}

void check_options(const ImageDirectoryOptions& o) {
  if (o.labels != "inferred")
    throw std::invalid_argument(std::string(kWho) + "labels must be \"inferred\" (one sub-folder per class), got \"" +
                                o.labels + "\"");
  if (o.label_mode != "int" && o.label_mode != "categorical" && o.label_mode != "binary")
    throw std::invalid_argument(std::string(kWho) + "label_mode must be \"int\", \"categorical\" or \"binary\", got \"" +
                                o.label_mode + "\"");
  channels_of(o.color_mode);
  if (o.image_size[0] < 1 || o.image_size[1] < 1)
    throw std::invalid_argument(std::string(kWho) + "image_size must be positive, got {" +
                                std::to_string(o.image_size[0]) + ", " + std::to_string(o.image_size[1]) + "}");
  if (o.batch_size < 0)
    throw std::invalid_argument(std::string(kWho) + "batch_size must be >= 0 (0: unbatched), got " +
                                std::to_string(o.batch_size));
  if (!(o.validation_split >= 0 && o.validation_split < 1))
    throw std::invalid_argument(std::string(kWho) + "validation_split must be in [0, 1), got " +
                                std::to_string(o.validation_split));
  if (o.validation_split > 0 && o.subset != "training" && o.subset != "validation")
    throw std::invalid_argument(std::string(kWho) + "with validation_split, subset must be \"training\" or "
                                "\"validation\", got \"" + o.subset + "\"");
  if (o.validation_split == 0 && !o.subset.empty())
    throw std::invalid_argument(std::string(kWho) + "subset \"" + o.subset + "\" needs a validation_split > 0");
  if (o.validation_split > 0 && o.shuffle && !o.seed)
    throw std::invalid_argument(std::string(kWho) + "validation_split with shuffle needs a seed, so that the "
                                "training and validation subsets do not overlap");
}

std::vector<std::string> class_folders(const fs::path& root, const ImageDirectoryOptions& o) {
  std::error_code ec;
  if (!fs::exists(root, ec)) throw std::runtime_error(std::string(kWho) + "directory not found: " + root.string());
  if (!fs::is_directory(root, ec)) throw std::runtime_error(std::string(kWho) + "not a directory: " + root.string());
  if (!o.class_names.empty()) {
    std::set<std::string> seen;
    for (const std::string& name : o.class_names) {
      if (!seen.insert(name).second)
        throw std::invalid_argument(std::string(kWho) + "class_names lists \"" + name + "\" twice");
      if (!fs::is_directory(root / name, ec))
        throw std::runtime_error(std::string(kWho) + "class_names lists \"" + name + "\" but " +
                                 (root / name).string() + " is not a folder");
    }
    return o.class_names;
  }
  std::vector<std::string> names;
  for (const fs::directory_entry& entry : fs::directory_iterator(root))
    if (entry.is_directory()) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  if (names.empty())
    throw std::runtime_error(std::string(kWho) + root.string() + " has no sub-folders; labels \"inferred\" expects "
                             "one sub-folder of images per class (e.g. " + (root / "cats").string() + "/*.jpg, " +
                             (root / "dogs").string() + "/*.jpg)");
  return names;
}

bool is_image_file(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return ext == ".bmp" || ext == ".gif" || ext == ".jpeg" || ext == ".jpg" || ext == ".png";
}

// The image files under a class folder (recursively) in Keras' order: folder by folder, the folders sorted by
// path (a folder's own files before its sub-folders'), each folder's files sorted by name.
std::vector<std::string> image_files(const fs::path& folder) {
  std::vector<std::pair<std::string, std::string>> files;  // folder, name
  for (const fs::directory_entry& entry :
       fs::recursive_directory_iterator(folder, fs::directory_options::skip_permission_denied))
    if (entry.is_regular_file() && is_image_file(entry.path()))
      files.emplace_back(entry.path().parent_path().string(), entry.path().filename().string());
  std::sort(files.begin(), files.end());
  std::vector<std::string> paths;
  for (const auto& [dir, name] : files) paths.push_back((fs::path(dir) / name).string());
  return paths;
}

Tensor make_label(std::int32_t label, const std::string& mode, Index num_classes) {
  if (mode == "int") return Tensor::from_vector(std::vector<std::int32_t>{label}, Shape{});
  if (mode == "binary") return Tensor::from_vector(std::vector<float>{static_cast<float>(label)}, Shape{1});
  Tensor one_hot = Tensor::zeros(Shape{num_classes});
  one_hot.data<float>()[label] = 1.f;
  return one_hot;
}

}  // namespace

ImageDirectoryDataset image_dataset_from_directory(const std::string& directory, ImageDirectoryOptions o) {
  check_options(o);
  const std::uint64_t seed = o.seed ? *o.seed : next_global_seed();
  const fs::path root(directory);

  std::vector<std::string> class_names = class_folders(root, o);
  const Index num_classes = static_cast<Index>(class_names.size());
  if (o.label_mode == "binary" && num_classes != 2)
    throw std::invalid_argument(std::string(kWho) + "label_mode \"binary\" needs exactly 2 classes, " + root.string() +
                                " has " + std::to_string(num_classes));

  std::vector<std::string> paths;
  std::vector<std::int32_t> labels;
  for (Index c = 0; c < num_classes; ++c)
    for (std::string& file : image_files(root / class_names[c])) {
      paths.push_back(std::move(file));
      labels.push_back(static_cast<std::int32_t>(c));
    }
  if (paths.empty())
    throw std::runtime_error(std::string(kWho) + "no images found in " + root.string() +
                             " (looked for .bmp, .gif, .jpeg, .jpg and .png files in its class sub-folders)");

  std::vector<std::size_t> order(paths.size());
  std::iota(order.begin(), order.end(), 0);
  if (o.shuffle) {
    Generator generator(seed);
    for (std::size_t i = order.size() - 1; i > 0; --i) std::swap(order[i], order[generator.next_u64() % (i + 1)]);
  }
  std::size_t begin = 0, end = order.size();
  if (o.validation_split > 0) {
    const auto num_validation = static_cast<std::size_t>(o.validation_split * static_cast<double>(order.size()));
    if (o.subset == "training") end -= num_validation; else begin = end - num_validation;
    if (begin == end)
      throw std::runtime_error(std::string(kWho) + "the " + o.subset + " subset of " + root.string() + " is empty (" +
                               std::to_string(order.size()) + " files, validation_split " +
                               std::to_string(o.validation_split) + ")");
  }
  std::vector<std::string> subset_paths;
  std::vector<std::int32_t> subset_labels;
  for (std::size_t i = begin; i < end; ++i) {
    subset_paths.push_back(paths[order[i]]);
    subset_labels.push_back(labels[order[i]]);
  }

  const Index n = static_cast<Index>(subset_paths.size());
  std::vector<std::int32_t> indices(n);
  std::iota(indices.begin(), indices.end(), 0);
  Dataset files = Dataset::from_tensor_slices({Tensor::from_vector(indices, Shape{n})});
  if (o.shuffle) files = files.shuffle(o.batch_size > 0 ? o.batch_size * 8 : 1024, seed);

  auto file_paths = std::make_shared<const std::vector<std::string>>(subset_paths);
  auto file_labels = std::make_shared<const std::vector<std::int32_t>>(subset_labels);
  const int channels = channels_of(o.color_mode);
  Dataset images = files.map(
      [file_paths, file_labels, channels, size = o.image_size, mode = o.label_mode, num_classes](const Element& e) {
        const std::size_t i = static_cast<std::size_t>(e[0].data<std::int32_t>()[0]);
        Tensor image = resize_bilinear(decode_image((*file_paths)[i], channels), size[0], size[1]);
        return Element{image, make_label((*file_labels)[i], mode, num_classes)};
      },
      AUTOTUNE);
  return {o.batch_size > 0 ? images.batch(o.batch_size) : images, std::move(class_names), std::move(subset_paths),
          std::move(subset_labels)};
}

}  // namespace tower::data
