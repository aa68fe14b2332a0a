#include "tools/experiment/data_pipeline.h"

#include <filesystem>

#include "api/core/random.h"
#include "api/data/cifar10.h"
#include "api/data/idx.h"
#include "api/data/image_directory.h"

namespace tower::experiment {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kFashionMnistClasses = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                       "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

std::string source_of(const Experiment& e) { return e.at("data.source").as_string(); }

// The split names the experiment reads (train, then validation and test when they name a split).
std::vector<std::string> used_splits(const Experiment& e) {
  std::vector<std::string> out;
  for (const char* s : {"data.train", "data.validation", "data.test"}) {
    const LocatedConfig split = e.at(s)["split"];
    if (!split.is_null()) out.push_back(split.as_string());
  }
  return out;
}

std::string provider(const Experiment& e) {
  const std::string source = source_of(e);
  if (source == "fashion_mnist") {
    if (e.at("data.directory").as_string() == data::fashion_mnist::default_directory)
      return "it comes from the Debian package dataset-fashion-mnist (sudo apt-get install dataset-fashion-mnist, "
             "or run scripts/install-deps.sh)";
    return "copy the Fashion-MNIST IDX files there, or leave data.directory out to use "
           "/usr/share/datasets/fashion-mnist from the Debian package dataset-fashion-mnist";
  }
  if (source == "mnist")
    return "MNIST has no Debian package: download train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, "
           "t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz (https://yann.lecun.com/exdb/mnist/ or a "
           "mirror) into data.directory";
  if (source == "cifar10")
    return "download cifar-10-binary.tar.gz from https://www.cs.toronto.edu/~kriz/cifar.html and extract it into "
           "data.directory";
  return "data.directory must hold one sub-folder of images per class";
}

[[noreturn]] void missing(const Experiment& e, const std::string& path) {
  throw ExperimentError(e.at("data.directory").mark(),
                        "data.directory: missing " + path + "; " + provider(e));
}

void check_idx(const Experiment& e, const fs::path& dir, const std::string& split) {
  const std::string prefix = split == "train" ? "train" : "t10k";
  for (const char* kind : {"-images-idx3-ubyte", "-labels-idx1-ubyte"}) {
    const fs::path plain = dir / (prefix + kind);
    if (!fs::exists(plain) && !fs::exists(fs::path(plain.string() + ".gz"))) missing(e, plain.string() + "(.gz)");
  }
}

void check_cifar(const Experiment& e, const fs::path& dir, const std::string& split) {
  const fs::path base = fs::exists(dir / "cifar-10-batches-bin") ? dir / "cifar-10-batches-bin" : dir;
  std::vector<std::string> files;
  if (split == "train") {
    for (int i = 1; i <= 5; ++i) files.push_back("data_batch_" + std::to_string(i) + ".bin");
  } else {
    files.push_back("test_batch.bin");
  }
  for (const std::string& f : files)
    if (!fs::exists(base / f)) missing(e, (base / f).string());
}

fs::path split_directory(const Experiment& e, const std::string& split) {
  const fs::path dir = e.at("data.directory").as_string();
  return split == "." || split.empty() ? dir : dir / split;
}

Tensor uniform_tensor(const Shape& shape, Generator& g, float scale) {
  Tensor t(shape);
  float* p = t.data<float>();
  for (Index i = 0; i < t.numel(); ++i) p[i] = g.uniform() * scale;
  return t;
}

data::Dataset synthetic_split(const Experiment& e, const std::string& split) {
  const std::vector<Index> dims = [&] {
    std::vector<Index> d;
    for (std::int64_t v : e.at("data.shape").as_int_list()) d.push_back(v);
    return d;
  }();
  const Shape shape(dims);
  const Index classes = e.at("data.classes").as_int();
  const Index n = e.at(split == "train" ? "data.train_examples" : "data.test_examples").as_int();
  const float scale = e.at("data.normalize").as_bool() ? 1.f : 255.f;
  // Class patterns are shared by the splits; examples differ.
  Generator patterns(e.seed() * 2654435761u + 17);
  std::vector<Tensor> means;
  for (Index k = 0; k < classes; ++k) means.push_back(uniform_tensor(shape, patterns, 1.f));
  Generator g(e.seed() * 2654435761u + (split == "train" ? 101 : 202));
  std::vector<Index> xdims = {n};
  xdims.insert(xdims.end(), dims.begin(), dims.end());
  Tensor x(Shape{xdims});
  Tensor y(Shape({n}), DType::int32);
  const Index per = shape.numel();
  for (Index i = 0; i < n; ++i) {
    const Index label = static_cast<Index>(g.next_u64() % static_cast<std::uint64_t>(classes));
    y.data<std::int32_t>()[i] = static_cast<std::int32_t>(label);
    const float* m = means[static_cast<std::size_t>(label)].data<float>();
    float* dst = x.data<float>() + i * per;
    for (Index j = 0; j < per; ++j) dst[j] = (0.5f * m[j] + 0.5f * g.uniform()) * scale;
  }
  return data::Dataset::from_tensor_slices({x, y});
}

Tensor divide_by_255(const Tensor& image) {
  Tensor out(image.shape());
  const float* s = image.data<float>();
  float* d = out.data<float>();
  for (Index i = 0; i < image.numel(); ++i) d[i] = s[i] / 255.f;
  return out;
}

struct Source {
  data::Dataset examples;
  std::vector<std::string> class_names;
};

Source load_split(const Experiment& e, const std::string& split, const std::vector<std::string>& class_names) {
  const std::string source = source_of(e);
  const bool normalize = e.at("data.normalize").as_bool();
  const LocatedConfig where = e.at("data.source");
  if (source == "synthetic") return {synthetic_split(e, split), known_class_names(e)};
  const std::string dir = e.at("data.directory").as_string();
  if (source == "fashion_mnist")
    return {where.locate([&] { return data::fashion_mnist::load(split, {dir, normalize}); }), kFashionMnistClasses};
  if (source == "mnist")
    return {where.locate([&] { return data::mnist::load(split, {dir, normalize}); }), known_class_names(e)};
  if (source == "cifar10")
    return {where.locate([&] { return data::cifar10::load(dir, split, normalize); }), data::cifar10::class_names()};
  data::ImageDirectoryOptions o;
  const auto size = e.at("data.image_size").as_int_list();
  o.image_size = {size[0], size[1]};
  o.color_mode = e.at("data.color_mode").as_string();
  o.batch_size = 0;
  o.shuffle = false;
  o.seed = e.seed();
  o.class_names = class_names;
  const data::ImageDirectoryDataset loaded = e.at("data.directory").locate(
      [&] { return data::image_dataset_from_directory(split_directory(e, split).string(), o); });
  data::Dataset examples = loaded.dataset;
  if (normalize)
    examples = examples.map([](const data::Element& el) { return data::Element{divide_by_255(el[0]), el[1]}; });
  return {examples, loaded.class_names};
}

data::Dataset take(const Experiment& e, const std::string& split_path, data::Dataset ds) {
  const LocatedConfig t = e.at(split_path)["take"];
  return t.is_null() ? ds : ds.take(t.as_int());
}

int parallel_calls(const Experiment& e) {
  const std::int64_t n = e.at("data.parallel_calls").as_int();
  return n == 0 ? data::AUTOTUNE : static_cast<int>(n);
}

data::Dataset evaluation(const Experiment& e, const data::Dataset& examples, Index batch,
                         const std::vector<PreprocessingStep>& steps) {
  data::Dataset ds = examples;
  if (!steps.empty())
    ds = ds.map(
        [steps](const data::Element& el) {
          data::Element out = el;
          out[0] = apply_image_steps(steps, el[0], false);
          return out;
        },
        parallel_calls(e));
  ds = ds.batch(batch);
  const int prefetch = static_cast<int>(e.at("data.prefetch").as_int());
  return prefetch > 0 ? ds.prefetch(prefetch) : ds;
}

}  // namespace

void check_data_files(const Experiment& e) {
  const std::string source = source_of(e);
  if (source == "synthetic") return;
  const fs::path dir = e.at("data.directory").as_string();
  if (!fs::is_directory(dir)) missing(e, "the folder " + dir.string());
  for (const std::string& split : used_splits(e)) {
    if (source == "fashion_mnist" || source == "mnist") {
      check_idx(e, dir, split);
    } else if (source == "cifar10") {
      check_cifar(e, dir, split);
    } else if (!fs::is_directory(split_directory(e, split))) {
      missing(e, "the folder " + split_directory(e, split).string());
    }
  }
}

std::vector<std::string> known_class_names(const Experiment& e) {
  const std::string source = source_of(e);
  if (source == "fashion_mnist") return kFashionMnistClasses;
  if (source == "cifar10") return data::cifar10::class_names();
  std::vector<std::string> out;
  if (source == "mnist") {
    for (int i = 0; i < 10; ++i) out.push_back(std::to_string(i));
  } else if (source == "synthetic") {
    for (std::int64_t i = 0; i < e.at("data.classes").as_int(); ++i) out.push_back("class_" + std::to_string(i));
  } else if (!e.at("data.class_names").is_null()) {
    for (std::size_t i = 0; i < e.at("data.class_names").size(); ++i)
      out.push_back(e.at("data.class_names")[i].as_string());
  }
  return out;
}

Shape example_shape(const Experiment& e) {
  const std::string source = source_of(e);
  Shape shape;
  if (source == "fashion_mnist" || source == "mnist") {
    shape = Shape({28, 28, 1});
  } else if (source == "cifar10") {
    shape = Shape({32, 32, 3});
  } else if (source == "synthetic") {
    const auto d = e.at("data.shape").as_int_list();
    shape = Shape({d[0], d[1], d[2]});
  } else {
    const auto size = e.at("data.image_size").as_int_list();
    const std::string mode = e.at("data.color_mode").as_string();
    shape = Shape({size[0], size[1], mode == "rgb" ? 3 : mode == "rgba" ? 4 : 1});
  }
  return preprocessed_shape(read_preprocessing(e.at("data.preprocessing")), shape, e.document());
}

DataPipeline build_data(const Experiment& e, Index batch_size, bool with_train) {
  check_data_files(e);
  DataPipeline out;
  out.example_shape = example_shape(e);
  const std::vector<PreprocessingStep> steps = read_preprocessing(e.at("data.preprocessing"));
  const Index eval_batch = e.at("fit.validation").get_int("batch_size", batch_size);

  Source train = load_split(e, e.at("data.train.split").as_string(), known_class_names(e));
  out.class_names = train.class_names;
  data::Dataset train_examples = train.examples;
  const LocatedConfig val = e.at("data.validation");
  if (!val.is_null() && !val["fraction"].is_null()) {
    const Index n = train_examples.cardinality();
    const Index split_at = static_cast<Index>(static_cast<double>(n) * (1.0 - val["fraction"].as_number()));
    if (split_at <= 0 || split_at >= n)
      val["fraction"].fail("leaves " + std::to_string(split_at) + " of " + std::to_string(n) +
                           " examples for training; both parts must be non-empty");
    out.validation = evaluation(e, take(e, "data.validation", train_examples.skip(split_at)), eval_batch, steps);
    train_examples = train_examples.take(split_at);
  } else if (!val.is_null()) {
    const Source v = load_split(e, val["split"].as_string(), out.class_names);
    out.validation = evaluation(e, take(e, "data.validation", v.examples), eval_batch, steps);
  }
  train_examples = take(e, "data.train", train_examples);
  if (!e.at("data.test").is_null()) {
    const Source t = load_split(e, e.at("data.test.split").as_string(), out.class_names);
    out.test = evaluation(e, take(e, "data.test", t.examples), eval_batch, steps);
  }

  if (!with_train) return out;
  TrainDataOptions o;
  const Index examples = train_examples.cardinality();
  o.shuffle_buffer = e.at("data").get_int("shuffle_buffer", examples);
  o.batch_size = batch_size;
  o.prefetch = static_cast<int>(e.at("data.prefetch").as_int());
  o.parallel_calls = parallel_calls(e);
  o.steps = steps;
  o.augment_seed = e.seed();
  out.train = e.at("data.train").locate([&] { return std::make_shared<TrainData>(train_examples, o); });
  return out;
}

data::Dataset evaluation_pipeline(const Experiment& e, const data::Dataset& examples, Index batch_size) {
  return evaluation(e, examples, batch_size, read_preprocessing(e.at("data.preprocessing")));
}

}  // namespace tower::experiment
