#include "api/data/timeseries.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "tests/testing/fixtures.h"

namespace tower::data {
namespace {

Tensor arange(Shape shape) {
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  std::iota(v.begin(), v.end(), 0.f);
  return Tensor::from_vector(v, shape);
}

std::optional<Index> optional_index(const Config& kwargs, const char* key) {
  if (!kwargs.contains(key)) return std::nullopt;
  return kwargs.at(key).as_int();
}

TEST(TimeseriesTest, WindowsAndTargetsMatchKeras) {
  const Config doc = tower::testing::read_json_fixture("data/text/text_fixtures.json");
  for (const Config& c : doc.at("timeseries").as_list()) {
    SCOPED_TRACE(c.at("name").as_string());
    const Config& kw = c.at("kwargs");
    std::vector<Index> dims;
    for (const Config& d : c.at("data_shape").as_list()) dims.push_back(d.as_int());
    const Tensor data = arange(Shape(dims));
    std::optional<Tensor> targets;
    if (c.at("targets").as_bool()) {
      std::vector<float> t(static_cast<std::size_t>(dims[0]));
      std::iota(t.begin(), t.end(), 100.f);
      targets = Tensor::from_vector(t, Shape{dims[0]});
    }
    TimeseriesOptions options{.sequence_length = kw.at("sequence_length").as_int(), .batch_size = 0};
    options.sequence_stride = optional_index(kw, "sequence_stride").value_or(1);
    options.sampling_rate = optional_index(kw, "sampling_rate").value_or(1);
    options.start_index = optional_index(kw, "start_index");
    options.end_index = optional_index(kw, "end_index");
    std::vector<std::vector<float>> windows;
    std::vector<float> window_targets;
    for (const Element& e : timeseries_dataset_from_array(data, targets, options)) {
      windows.push_back(e[0].to_vector());
      if (targets) window_targets.push_back(e[1].item());
    }
    ASSERT_EQ(windows.size(), c.at("windows").size());
    for (std::size_t i = 0; i < windows.size(); ++i) {
      std::vector<float> expected;
      for (const Config& v : c.at("windows").as_list()[i].as_list()) expected.push_back(v.as_double());
      EXPECT_EQ(windows[i], expected) << i;
    }
    std::vector<float> expected_targets;
    for (const Config& v : c.at("window_targets").as_list()) expected_targets.push_back(v.as_double());
    EXPECT_EQ(window_targets, expected_targets);
  }
}

TEST(TimeseriesTest, BatchesAndKeepsTheDtype) {
  std::vector<std::int32_t> ids(11);
  std::iota(ids.begin(), ids.end(), 0);
  const Tensor text = Tensor::from_vector(ids, Shape{11});
  std::vector<Shape> shapes;
  for (const Element& e : timeseries_dataset_from_array(
           text, std::nullopt, {.sequence_length = 4, .sequence_stride = 3, .batch_size = 2})) {
    EXPECT_EQ(e[0].dtype(), DType::int32);
    shapes.push_back(e[0].shape());
  }
  EXPECT_EQ(shapes, (std::vector<Shape>{Shape{2, 4}, Shape{1, 4}}));
}

TEST(TimeseriesTest, ShuffleIsASeededPermutationOfTheWindows) {
  const Tensor data = arange(Shape{50});
  const TimeseriesOptions options{.sequence_length = 2, .batch_size = 0, .shuffle = true, .seed = 7};
  std::vector<float> first, again;
  for (const Element& e : timeseries_dataset_from_array(data, std::nullopt, options)) first.push_back(e[0].to_vector()[0]);
  for (const Element& e : timeseries_dataset_from_array(data, std::nullopt, options)) again.push_back(e[0].to_vector()[0]);
  EXPECT_EQ(first, again);
  std::vector<float> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  std::vector<float> all(49);
  std::iota(all.begin(), all.end(), 0.f);
  EXPECT_EQ(sorted, all);
  EXPECT_NE(first, all);
}

TEST(TimeseriesTest, KerasChecksAreClearErrors) {
  const Tensor data = arange(Shape{10});
  const std::vector<std::pair<TimeseriesOptions, std::string>> cases = {
      {{.sequence_length = 0}, "sequence_length must be >= 1"},
      {{.sequence_length = 2, .sequence_stride = 0}, "sequence_stride must be in [1, length), got 0"},
      {{.sequence_length = 2, .sampling_rate = 10}, "sampling_rate must be in [1, length), got 10"},
      {{.sequence_length = 2, .start_index = 10}, "start_index must be 0 or greater"},
      {{.sequence_length = 2, .start_index = 4, .end_index = 4}, "end_index must be higher than start_index (4)"},
      {{.sequence_length = 2, .batch_size = -1}, "batch_size must be >= 0"},
  };
  for (const auto& [options, expected] : cases) {
    try {
      (void)timeseries_dataset_from_array(data, std::nullopt, options);
      ADD_FAILURE() << "nothing thrown for " << expected;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace tower::data
