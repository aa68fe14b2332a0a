// Dataset::padded_batch and Dataset::bucket_by_sequence_length against tf.data (fixtures written by
// tests/reference/make_dataset_fixtures.py), their errors, and their place in a pipeline.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <numeric>
#include <stdexcept>

#include "api/data/dataset.h"
#include "testing/fixtures.h"
#include "testing/errors.h"

namespace tower::data {
namespace {

// A dataset yielding `elements` in order (a generator, as tf.data's from_generator with unknown dimensions).
Dataset from_elements(std::vector<Element> elements) {
  auto shared = std::make_shared<const std::vector<Element>>(std::move(elements));
  return Dataset::from_generator([shared] {
    return [shared, i = std::size_t{0}]() mutable -> std::optional<Element> {
      if (i >= shared->size()) return std::nullopt;
      return (*shared)[i++];
    };
  });
}

Tensor ints(std::vector<std::int32_t> values, Shape shape) { return Tensor::from_vector(values, std::move(shape)); }

// Element i: {[i*10, i*10 + 1, ...] of lengths[i], scalar i}.
std::vector<Element> sequences(const std::vector<Index>& lengths) {
  std::vector<Element> out;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    std::vector<std::int32_t> values(static_cast<std::size_t>(lengths[i]));
    std::iota(values.begin(), values.end(), static_cast<std::int32_t>(10 * i));
    out.push_back({ints(values, Shape{lengths[i]}), ints({static_cast<std::int32_t>(i)}, Shape{})});
  }
  return out;
}

Index first_dimension(const Element& e) { return e[0].dim(0); }

std::vector<Element> collect(const Dataset& ds) {
  std::vector<Element> out;
  for (const Element& e : ds) out.push_back(e);
  return out;
}

bool same_tensor(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

void expect_same_batches(const std::vector<Element>& got, const std::vector<Element>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t b = 0; b < got.size(); ++b) {
    ASSERT_EQ(got[b].size(), want[b].size()) << "batch " << b;
    for (std::size_t c = 0; c < got[b].size(); ++c)
      EXPECT_TRUE(same_tensor(got[b][c], want[b][c]))
          << "batch " << b << " component " << c << ": got " << got[b][c].to_string(64) << ", tf.data gives "
          << want[b][c].to_string(64);
  }
}

const Config& fixtures() {
  static const Config doc = testing::read_json_fixture("data/padded_batch.json");
  return doc;
}

std::vector<Element> elements_of(const Config& list) {
  std::vector<Element> out;
  for (const Config& e : list.as_list()) {
    Element element;
    for (const Config& c : e.as_list()) element.push_back(testing::fixture_tensor(c));
    out.push_back(std::move(element));
  }
  return out;
}

std::vector<Index> indices(const Config& list) {
  std::vector<Index> out;
  for (const Config& v : list.as_list()) out.push_back(static_cast<Index>(v.as_int()));
  return out;
}

std::vector<Shape> shapes_of(const Config& c) {
  std::vector<Shape> out;
  if (c.is_null()) return out;
  for (const Config& s : c.as_list()) out.emplace_back(indices(s));
  return out;
}

std::vector<double> values_of(const Config& c) {
  std::vector<double> out;
  if (c.is_null()) return out;
  for (const Config& v : c.as_list()) out.push_back(v.as_double());
  return out;
}

// The dataset a fixture case describes.
Dataset fixture_dataset(const Config& c) {
  const Dataset input = from_elements(elements_of(c.at("elements")));
  const bool drop_remainder = c.at("drop_remainder").as_bool();
  if (c.at("op").as_string() == "padded_batch")
    return input.padded_batch(c.at("batch_size").as_int(), shapes_of(c.at("padded_shapes")),
                              values_of(c.at("padding_values")), drop_remainder);
  return input.bucket_by_sequence_length(first_dimension, indices(c.at("bucket_boundaries")),
                                         indices(c.at("bucket_batch_sizes")), shapes_of(c.at("padded_shapes")),
                                         values_of(c.at("padding_values")), c.at("pad_to_bucket_boundary").as_bool(),
                                         c.at("no_padding").as_bool(), drop_remainder);
}

TEST(PaddedBatchTest, MatchesTfData) {
  const std::vector<std::string> names = testing::fixture_case_names(fixtures());
  ASSERT_GE(names.size(), 11u);
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const Config& c = testing::fixture_case(fixtures(), name);
    const Dataset ds = fixture_dataset(c);
    EXPECT_EQ(ds.cardinality(), c.at("cardinality").as_int());
    expect_same_batches(collect(ds), elements_of(c.at("batches")));
  }
}

TEST(PaddedBatchTest, CardinalityFollowsTfData) {
  // tf.data: padded_batch counts as batch does; group_by_window (so bucket_by_sequence_length) is unknown.
  const Dataset rows = Dataset::from_tensor_slices({Tensor::zeros({7, 3})});
  EXPECT_EQ(rows.padded_batch(3).cardinality(), 3);
  EXPECT_EQ(rows.padded_batch(3, {}, {}, true).cardinality(), 2);
  EXPECT_EQ(rows.repeat().padded_batch(3).cardinality(), INFINITE_CARDINALITY);
  EXPECT_EQ(rows.bucket_by_sequence_length(first_dimension, {2}, {2, 2}).cardinality(), UNKNOWN_CARDINALITY);
}

TEST(PaddedBatchTest, EqualShapesBatchAsBatchDoes) {
  const Dataset rows = Dataset::from_tensor_slices({Tensor::full({5, 2, 3}, 1.5f), ints({0, 1, 2, 3, 4}, Shape{5})});
  expect_same_batches(collect(rows.padded_batch(2)), collect(rows.batch(2)));
}

TEST(PaddedBatchTest, AnElementLongerThanItsPaddedShapeNamesComponentDimensionAndSizes) {
  const Dataset ds = from_elements(sequences({2, 5, 1}));
  const std::string error = testing::error_of([&] { collect(ds.padded_batch(3, {Shape{4}, Shape{}})); });
  EXPECT_NE(error.find("padded_batch"), std::string::npos) << error;
  EXPECT_NE(error.find("element 1"), std::string::npos) << error;
  EXPECT_NE(error.find("component 0"), std::string::npos) << error;
  EXPECT_NE(error.find("dimension 0"), std::string::npos) << error;
  EXPECT_NE(error.find("size 5"), std::string::npos) << error;
  EXPECT_NE(error.find("padded shape (4,)"), std::string::npos) << error;
}

TEST(PaddedBatchTest, ComponentsOfDifferentRanksAreAClearError) {
  const Dataset ds = from_elements({{ints({1, 2}, Shape{2})}, {ints({1, 2}, Shape{1, 2})}});
  const std::string error = testing::error_of([&] { collect(ds.padded_batch(2)); });
  EXPECT_NE(error.find("element 1"), std::string::npos) << error;
  EXPECT_NE(error.find("component 0"), std::string::npos) << error;
  EXPECT_NE(error.find("rank"), std::string::npos) << error;
  EXPECT_NE(error.find("(2,)"), std::string::npos) << error;
  EXPECT_NE(error.find("(1, 2)"), std::string::npos) << error;
}

TEST(PaddedBatchTest, MismatchedArgumentsAreClearErrors) {
  const Dataset ds = from_elements(sequences({2, 3}));
  const auto fails = [&](const Dataset& bad, const std::string& expected) {
    const std::string error = testing::error_of([&] { collect(bad); });
    EXPECT_NE(error.find(expected), std::string::npos) << error;
  };
  fails(ds.padded_batch(2, {Shape{4}}), "1 padded shapes for elements of 2 components");
  fails(ds.padded_batch(2, {Shape{4, 1}, Shape{}}), "padded shape (4, 1) of rank 2 for component 0 of rank 1");
  fails(ds.padded_batch(2, {}, {0.0, 1.0, 2.0}), "3 padding values for elements of 2 components");
  fails(from_elements({{ints({1}, Shape{1})}, {Tensor::zeros({2})}}).padded_batch(2), "int32");
  fails(ds.padded_batch(2, {}, {0.5, 0.0}), "padding value 0.5 for component 0 does not fit its dtype int32");
  fails(ds.padded_batch(2, {}, {0.0, -3e9}), "padding value -3e+09 for component 1 does not fit its dtype int32");
  EXPECT_THROW(ds.padded_batch(0), std::invalid_argument);
  EXPECT_THROW(ds.padded_batch(2, {Shape{-2}, Shape{}}), std::invalid_argument);
}

TEST(BucketBySequenceLengthTest, ArgumentsAreCheckedAsTfDataDoes) {
  const Dataset ds = from_elements(sequences({2, 3}));
  const std::string error = testing::error_of([&] { ds.bucket_by_sequence_length(first_dimension, {3, 5}, {2, 2}); });
  EXPECT_NE(error.find("len(bucket_batch_sizes) must equal len(bucket_boundaries) + 1"), std::string::npos) << error;
  EXPECT_NE(error.find("2 batch sizes for 2 boundaries"), std::string::npos) << error;
  EXPECT_THROW(ds.bucket_by_sequence_length(first_dimension, {5, 3}, {1, 1, 1}), std::invalid_argument);
  EXPECT_THROW(ds.bucket_by_sequence_length(first_dimension, {3}, {1, 0}), std::invalid_argument);
  EXPECT_THROW(ds.bucket_by_sequence_length(nullptr, {3}, {1, 1}), std::invalid_argument);
}

TEST(BucketBySequenceLengthTest, PadToBucketBoundaryRefusesElementsPastTheLastBoundary) {
  const Dataset ds = from_elements(sequences({2, 3, 8}))
                         .bucket_by_sequence_length(first_dimension, {3, 8}, {4, 4, 4}, {}, {}, true);
  const std::string error = testing::error_of([&] { collect(ds); });
  EXPECT_NE(error.find("pad_to_bucket_boundary"), std::string::npos) << error;
  EXPECT_NE(error.find("length 8"), std::string::npos) << error;
  EXPECT_NE(error.find("< max(bucket_boundaries) = 8"), std::string::npos) << error;
  // tf.data batches without padding, and so without the check, when no_padding is set too.
  const Dataset unpadded = from_elements(sequences({2, 9, 9}))
                               .bucket_by_sequence_length(first_dimension, {3, 8}, {4, 4, 4}, {}, {}, true, true);
  EXPECT_EQ(collect(unpadded).size(), 2u);
}

TEST(BucketBySequenceLengthTest, NoPaddingRefusesUnequalShapesInABucket) {
  const Dataset ds = from_elements(sequences({2, 3})).bucket_by_sequence_length(first_dimension, {5}, {2, 2}, {}, {},
                                                                                 false, true);
  const std::string error = testing::error_of([&] { collect(ds); });
  EXPECT_NE(error.find("equal shapes"), std::string::npos) << error;
}

TEST(PaddedBatchTest, WorksAfterShuffleAndBeforePrefetchAndRepeat) {
  const std::vector<Element> elements = sequences({3, 1, 4, 1, 5, 9, 2, 6});
  const Dataset shuffled = from_elements(elements).shuffle(8, 42);
  const Dataset padded = shuffled.padded_batch(3);
  const auto same_pass = [](const Dataset& a, const Dataset& b) { expect_same_batches(collect(a), collect(b)); };
  // Padding a shuffled pass equals padding the same order given directly.
  const std::vector<Element> order = collect(from_elements(elements).shuffle(8, 42));
  same_pass(from_elements(elements).shuffle(8, 42).padded_batch(3), from_elements(order).padded_batch(3));
  same_pass(from_elements(elements).shuffle(8, 42).padded_batch(3).prefetch(2),
            from_elements(order).padded_batch(3));
  const std::vector<Element> twice = collect(from_elements(elements).padded_batch(3).repeat(2));
  EXPECT_EQ(twice.size(), 6u);
  EXPECT_TRUE(same_tensor(twice[0][0], twice[3][0]));
  const Dataset bucketed =
      from_elements(elements).bucket_by_sequence_length(first_dimension, {3}, {2, 2}).prefetch(AUTOTUNE).repeat(2);
  EXPECT_EQ(collect(bucketed).size(), 10u);
  // The shuffle's pass counter stays reachable through both, so a resumed run can set it back.
  EXPECT_EQ(padded.pass_counts().size(), 1u);
  const Dataset bucket_of_shuffled = shuffled.bucket_by_sequence_length(first_dimension, {3}, {2, 2});
  const std::vector<Element> first = collect(bucket_of_shuffled);
  EXPECT_EQ(bucket_of_shuffled.pass_counts(), std::vector<std::uint64_t>{1});
  bucket_of_shuffled.set_pass_counts({0});
  expect_same_batches(collect(bucket_of_shuffled), first);
}

}  // namespace
}  // namespace tower::data
