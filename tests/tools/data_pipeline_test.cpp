#include "tools/experiment/data_pipeline.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "api/core/random.h"
#include "api/data/idx.h"
#include "tests/tools/tools_testing.h"

namespace tower::experiment {
namespace {

namespace fs = std::filesystem;
const fs::path kData = fs::path(TOWER_TEST_DATA_DIR) / "data";
const std::string kRest = "model: {layers: [{type: Flatten}]}\ncompile: {optimizer: adam, loss: mse}\n";

Experiment parse(const std::string& data, const std::vector<std::string>& overrides = {}) {
  return Experiment::parse(data + kRest, "d.yaml", overrides);
}

std::int64_t count(const data::Dataset& ds, Index* examples = nullptr) {
  std::int64_t n = 0;
  Index total = 0;
  for (const data::Element& e : ds) {
    ++n;
    total += e[0].dim(0);
  }
  if (examples) *examples = total;
  return n;
}

std::vector<std::vector<float>> all_batches(const data::Dataset& ds, int passes) {
  std::vector<std::vector<float>> out;
  for (int p = 0; p < passes; ++p)
    for (const data::Element& e : ds) {
      std::vector<float> v = e[0].to_vector();
      const std::int32_t* labels = e[1].data<std::int32_t>();
      for (Index i = 0; i < e[1].numel(); ++i) v.push_back(static_cast<float>(labels[i]));
      out.push_back(v);
    }
  return out;
}

TEST(DataPipeline, IdxSplitsWithTakeAndAValidationFraction) {
  const Experiment e = parse("data:\n  source: mnist\n  directory: " + (kData / "idx").string() +
                             "\n  validation: {fraction: 0.34}\n  test: {split: test, take: 3}\n");
  EXPECT_EQ(example_shape(e), Shape({28, 28, 1}));
  set_random_seed(1);
  const DataPipeline d = build_data(e, 2);
  // Keras' validation_split: int(6 * 0.66) = 3 for training, the last 3 for validation.
  EXPECT_EQ(d.train->examples(), 3);
  EXPECT_EQ(d.train->batches_per_pass(), 2);
  Index n = 0;
  EXPECT_EQ(count(*d.validation, &n), 2);
  EXPECT_EQ(n, 3);
  EXPECT_EQ(count(*d.test, &n), 2);
  EXPECT_EQ(n, 3);
  EXPECT_EQ(count(d.train->dataset(), &n), 2);
  EXPECT_EQ(n, 3);
  EXPECT_EQ(d.class_names.size(), 10u);
  // The validation examples are the last three of the training file: labels (3i + 1) % 10 for i = 3, 4, 5.
  std::vector<std::int32_t> labels;
  for (const data::Element& b : *d.validation)
    for (Index i = 0; i < b[1].numel(); ++i) labels.push_back(b[1].data<std::int32_t>()[i]);
  EXPECT_EQ(labels, (std::vector<std::int32_t>{0, 3, 6}));
}

TEST(DataPipeline, Cifar10AndImageDirectorySources) {
  const Experiment c = parse("data:\n  source: cifar10\n  directory: " + (kData / "cifar10").string() + "\n");
  EXPECT_EQ(example_shape(c), Shape({32, 32, 3}));
  Index n = 0;
  DataPipeline d = build_data(c, 4);
  EXPECT_EQ(d.train->examples(), 10);
  EXPECT_EQ(count(*d.test, &n), 1);
  EXPECT_EQ(n, 3);
  EXPECT_EQ(d.class_names[0], "airplane");

  const Experiment i = parse("data:\n  source: image_directory\n  directory: " + (kData / "images").string() +
                             "\n  image_size: [6, 5]\n  color_mode: grayscale\n  train: {split: .}\n");
  EXPECT_EQ(example_shape(i), Shape({6, 5, 1}));
  d = build_data(i, 3);
  EXPECT_EQ(d.class_names, (std::vector<std::string>{"birds", "cats", "dogs"}));
  EXPECT_EQ(d.train->examples(), 7);
  EXPECT_FALSE(d.test.has_value());
  for (const data::Element& b : d.train->dataset())
    for (float v : b[0].to_vector()) {
      EXPECT_GE(v, 0.f);
      EXPECT_LE(v, 1.f);  // normalize: 0..255 divided by 255
    }
}

// `--set data.train.take=N` on a file relying on the default train: {split: train} keeps that default split.
TEST(DataPipeline, TakeOnADefaultSplitKeepsItsDefaultName) {
  const std::string data = "data: {source: synthetic, shape: [4, 4, 1], classes: 3, train_examples: 30, "
                           "test_examples: 12}\n";
  const Experiment e = parse(data, {"data.train.take=10", "data.test.take=5"});
  EXPECT_EQ(e.at("data.train.split").as_string(), "train");
  EXPECT_EQ(e.at("data.test.split").as_string(), "test");
  const DataPipeline d = build_data(e, 4);
  EXPECT_EQ(d.train->examples(), 10);
  Index n = 0;
  count(*d.test, &n);
  EXPECT_EQ(n, 5);
}

TEST(DataPipeline, SyntheticDataIsSeeded) {
  const std::string data = "data: {source: synthetic, shape: [4, 4, 1], classes: 3, train_examples: 30, "
                           "test_examples: 12}\n";
  const DataPipeline a = build_data(parse("seed: 9\n" + data), 8), b = build_data(parse("seed: 9\n" + data), 8);
  const DataPipeline c = build_data(parse("seed: 10\n" + data), 8);
  EXPECT_EQ(all_batches(*a.test, 1), all_batches(*b.test, 1));
  EXPECT_NE(all_batches(*a.test, 1), all_batches(*c.test, 1));
  EXPECT_EQ(a.train->examples(), 30);
  EXPECT_EQ(a.class_names, (std::vector<std::string>{"class_0", "class_1", "class_2"}));
}

TEST(Preprocessing, StepsComputeWhatTheySay) {
  const Document doc = Document::parse(R"(steps:
  - {type: pad, padding: [[1, 0], [0, 2]], value: -1}
  - {type: rescale, scale: 2.0, offset: 1.0}
  - {type: normalize, mean: [1.0, 3.0], std: [2.0, 4.0]}
  - {type: random_crop, height: 2, width: 3}
)",
                                       "p.yaml");
  const std::vector<PreprocessingStep> steps = read_preprocessing(LocatedConfig(doc, "steps"));
  EXPECT_EQ(preprocessed_shape(steps, Shape({2, 2, 2}), doc), Shape({2, 3, 2}));
  // image [2, 2, 2]: channel 0 = 0, 1, 2, 3; channel 1 = 10, 11, 12, 13.
  const Tensor x = Tensor::from_vector(std::vector<float>{0, 10, 1, 11, 2, 12, 3, 13}, Shape({2, 2, 2}));
  // Evaluation: pad to [3, 4] (-1 top row and two right columns), x * 2 + 1, per-channel normalize, then the
  // centred 2x3 window: rows 0..1 (offset (3 - 2) / 2 = 0), columns 0..2 (offset (4 - 3) / 2 = 0).
  const Tensor y = apply_image_steps(steps, x, false);
  ASSERT_EQ(y.shape(), Shape({2, 3, 2}));
  const auto n0 = [](float v) { return (v * 2 + 1 - 1) / 2; };
  const auto n1 = [](float v) { return (v * 2 + 1 - 3) / 4; };
  const std::vector<float> expected = {n0(-1), n1(-1), n0(-1), n1(-1), n0(-1), n1(-1),  //
                                       n0(0),  n1(10), n0(1),  n1(11), n0(-1), n1(-1)};
  EXPECT_EQ(y.to_vector(), expected);
  // Training: the per-image steps only; the crop runs on batches.
  EXPECT_EQ(apply_image_steps(steps, x, true).shape(), Shape({3, 4, 2}));
}

TEST(Preprocessing, RandomStepsTakeWindowsAndMirrorsDrawnFromTheGenerator) {
  const Document doc = Document::parse(
      "steps: [{type: random_flip, mode: horizontal_and_vertical}, {type: random_crop, height: 2, width: 2}]\n", "p.yaml");
  const std::vector<PreprocessingStep> steps = read_preprocessing(LocatedConfig(doc, "steps"));
  const Index n = 64;
  std::vector<float> values;
  for (Index i = 0; i < n * 9; ++i) values.push_back(static_cast<float>(i % 9));  // 3x3 images 0..8
  const Tensor batch = Tensor::from_vector(values, Shape({n, 3, 3, 1}));
  Generator g1(5), g2(5);
  const Tensor a = apply_random_steps(steps, batch, g1), b = apply_random_steps(steps, batch, g2);
  testing::expect_identical({a}, {b});
  ASSERT_EQ(a.shape(), Shape({n, 2, 2, 1}));
  // Every output is a 2x2 window of one of the four mirror images of 0..8, and across 64 images every window
  // position of every mirror shows up.
  std::set<std::vector<float>> seen;
  for (Index i = 0; i < n; ++i) {
    const float* p = a.data<float>() + i * 4;
    std::vector<float> w(p, p + 4);
    bool found = false;
    for (int fy = 0; fy < 2; ++fy)
      for (int fx = 0; fx < 2; ++fx)
        for (int top = 0; top < 2; ++top)
          for (int left = 0; left < 2; ++left) {
            std::vector<float> c;
            for (int y = 0; y < 2; ++y)
              for (int x = 0; x < 2; ++x) {
                const int sy = fy ? 2 - (top + y) : top + y, sx = fx ? 2 - (left + x) : left + x;
                c.push_back(static_cast<float>(sy * 3 + sx));
              }
            found = found || c == w;
          }
    EXPECT_TRUE(found) << "image " << i << " is no window of a mirror image";
    seen.insert(w);
  }
  EXPECT_GE(seen.size(), 12u);
}

// Seeking to a global batch yields exactly the batches an uninterrupted pipeline yields from there, shuffled,
// preprocessed and randomly flipped alike.
TEST(TrainData, SeekResumesTheSameStreamAtAnyBatch) {
  const Experiment e = parse("seed: 3\ndata:\n  source: synthetic\n  shape: [3, 3, 1]\n  train_examples: 22\n"
                             "  shuffle_buffer: 8\n  preprocessing: [{type: rescale, scale: 3.0}, {type: random_flip}]\n");
  set_random_seed(77);
  const DataPipeline whole = build_data(e, 4);
  ASSERT_EQ(whole.train->batches_per_pass(), 6);
  const std::vector<std::vector<float>> expected = all_batches(whole.train->dataset(), 3);
  ASSERT_EQ(expected.size(), 18u);
  EXPECT_NE(expected[0], expected[6]);  // each pass has its own order
  for (std::int64_t t : {0, 1, 5, 6, 9, 17}) {
    set_random_seed(77);
    const DataPipeline resumed = build_data(e, 4);
    resumed.train->seek(t);
    std::vector<std::vector<float>> got = all_batches(resumed.train->dataset(), 3 - static_cast<int>(t / 6));
    ASSERT_EQ(got.size(), expected.size() - static_cast<std::size_t>(t)) << "seek " << t;
    for (std::size_t i = 0; i < got.size(); ++i)
      EXPECT_EQ(got[i], expected[static_cast<std::size_t>(t) + i]) << "seek " << t << " batch " << i;
  }
}

}  // namespace
}  // namespace tower::experiment
