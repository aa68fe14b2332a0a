#include "api/data/dataset.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>
#include <stdexcept>
#include <thread>

#include "api/core/random.h"
#include "testing/errors.h"

namespace tower::data {
namespace {

// float32 [n, 2] holding 0, 1, ..., 2n-1 and int32 [n] holding 0..n-1.
Element xy(Index n) {
  std::vector<float> x(static_cast<std::size_t>(2 * n));
  std::iota(x.begin(), x.end(), 0.f);
  std::vector<std::int32_t> y(static_cast<std::size_t>(n));
  std::iota(y.begin(), y.end(), 0);
  return {Tensor::from_vector(x, Shape{n, 2}), Tensor::from_vector(y, Shape{n})};
}

Tensor scalar(std::int32_t v) { return Tensor::from_vector(std::vector<std::int32_t>{v}, Shape{}); }

std::int32_t value(const Tensor& t) { return t.data<std::int32_t>()[0]; }

std::vector<std::int32_t> ints(const Tensor& t) {
  const std::int32_t* p = t.data<std::int32_t>();
  return std::vector<std::int32_t>(p, p + t.numel());
}

// The int32 scalar component `c` of every element of one pass.
std::vector<std::int32_t> labels(const Dataset& ds, std::size_t c = 1) {
  std::vector<std::int32_t> out;
  for (const Element& e : ds) out.push_back(value(e[c]));
  return out;
}

std::vector<Element> collect(const Dataset& ds) {
  std::vector<Element> out;
  for (const Element& e : ds) out.push_back(e);
  return out;
}

std::vector<std::int32_t> range(std::int32_t n) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// A dataset of n int32 scalars 0..n-1 made by a generator (no row fast path); counts generator passes.
Dataset counting(std::int32_t n, std::shared_ptr<std::atomic<int>> passes = nullptr) {
  return Dataset::from_generator([n, passes] {
    if (passes) ++*passes;
    return [n, i = 0]() mutable -> std::optional<Element> {
      if (i >= n) return std::nullopt;
      return Element{scalar(i++)};
    };
  });
}

TEST(DatasetTest, FromTensorSlicesYieldsRowsInOrder) {
  const Dataset ds = Dataset::from_tensor_slices(xy(5));
  EXPECT_EQ(ds.cardinality(), 5);
  auto it = ds.make_iterator();
  for (int i = 0; i < 5; ++i) {
    std::optional<Element> e = it->next();
    ASSERT_TRUE(e);
    ASSERT_EQ(e->size(), 2u);
    EXPECT_EQ((*e)[0].shape(), (Shape{2}));
    EXPECT_EQ((*e)[1].shape(), Shape{});
    EXPECT_EQ((*e)[0].to_vector(), (std::vector<float>{2.f * i, 2.f * i + 1}));
    EXPECT_EQ(value((*e)[1]), i);
  }
  EXPECT_FALSE(it->next());
  EXPECT_FALSE(it->next());
}

TEST(DatasetTest, FromTensorSlicesRejectsBadComponents) {
  const std::string msg = testing::error_of([] {
    Dataset::from_tensor_slices({Tensor::zeros(Shape{5, 2}), Tensor::zeros(Shape{4})});
  });
  EXPECT_NE(msg.find("(5, 2)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(4,)"), std::string::npos) << msg;
  EXPECT_THROW(Dataset::from_tensor_slices({}), std::invalid_argument);
  EXPECT_THROW(Dataset::from_tensor_slices({scalar(1)}), std::invalid_argument);
  EXPECT_THROW(Dataset::from_tensor_slices({Tensor()}), std::invalid_argument);
}

TEST(DatasetTest, RangeForStartsANewPassEachTime) {
  const Dataset ds = Dataset::from_tensor_slices(xy(4));
  EXPECT_EQ(labels(ds), range(4));
  EXPECT_EQ(labels(ds), range(4));
}

TEST(DatasetTest, FromGeneratorRestartsEachIteration) {
  auto passes = std::make_shared<std::atomic<int>>(0);
  const Dataset ds = counting(3, passes);
  EXPECT_EQ(ds.cardinality(), UNKNOWN_CARDINALITY);
  EXPECT_EQ(labels(ds, 0), range(3));
  EXPECT_EQ(labels(ds, 0), range(3));
  EXPECT_EQ(passes->load(), 2);
}

TEST(DatasetTest, MapTransformsEveryElement) {
  const Dataset ds = Dataset::from_tensor_slices(xy(3)).map([](const Element& e) {
    return Element{scalar(value(e[1]) * 10)};
  });
  EXPECT_EQ(ds.cardinality(), 3);
  EXPECT_EQ(labels(ds, 0), (std::vector<std::int32_t>{0, 10, 20}));
}

TEST(DatasetTest, ParallelMapPreservesOrder) {
  for (int threads : {2, 4, AUTOTUNE}) {
    const Dataset ds = counting(200).map(
        [](const Element& e) {
          const int i = value(e[0]);
          std::this_thread::sleep_for(std::chrono::microseconds((i * 7919) % 300));  // finish out of order
          return Element{scalar(i * 3)};
        },
        threads);
    std::vector<std::int32_t> expected = range(200);
    for (auto& v : expected) v *= 3;
    EXPECT_EQ(labels(ds, 0), expected) << threads << " threads";
  }
}

TEST(DatasetTest, MapExceptionIsRethrownInOrderThenEndsThePass) {
  for (int threads : {1, 3}) {
    const Dataset ds = counting(20).map(
        [](const Element& e) {
          if (value(e[0]) == 5) throw std::runtime_error("bad element 5");
          return e;
        },
        threads);
    auto it = ds.make_iterator();
    for (int i = 0; i < 5; ++i) EXPECT_EQ(value((*it->next())[0]), i);
    EXPECT_EQ(testing::error_of([&] { it->next(); }), "bad element 5");
    EXPECT_FALSE(it->next());
  }
}

TEST(DatasetTest, ParallelMapStopsCleanlyWhenIterationStopsEarly) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  const Dataset ds = counting(1).repeat().map(
      [calls](const Element& e) {
        ++*calls;
        return e;
      },
      4);
  {
    auto it = ds.make_iterator();
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(it->next());
  }
  const int after = calls->load();
  EXPECT_LE(after, 3 + 2 * 4 + 4);  // the window bounds the work done ahead
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(calls->load(), after);  // no thread left running
}

TEST(DatasetTest, ShuffleWithSeedIsReproducibleAndPermutes) {
  const auto order = [](std::uint64_t seed) {
    return labels(Dataset::from_tensor_slices(xy(100)).shuffle(100, seed));
  };
  const std::vector<std::int32_t> a = order(42);
  EXPECT_EQ(order(42), a);
  EXPECT_NE(order(43), a);
  EXPECT_NE(a, range(100));
  std::vector<std::int32_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, range(100));
}

TEST(DatasetTest, ShuffleReshufflesEachIterationUnlessAskedNot) {
  const Dataset reshuffled = Dataset::from_tensor_slices(xy(50)).shuffle(50, 7);
  const std::vector<std::int32_t> first = labels(reshuffled);
  const std::vector<std::int32_t> second = labels(reshuffled);
  EXPECT_NE(first, second);
  std::vector<std::int32_t> sorted = second;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, range(50));
  // Pass k is the same in every run.
  const Dataset again = Dataset::from_tensor_slices(xy(50)).shuffle(50, 7);
  EXPECT_EQ(labels(again), first);
  EXPECT_EQ(labels(again), second);

  const Dataset fixed = Dataset::from_tensor_slices(xy(50)).shuffle(50, 7, false);
  EXPECT_EQ(labels(fixed), labels(fixed));
}

TEST(DatasetTest, ShuffleWithoutSeedFollowsSetRandomSeed) {
  set_random_seed(123);
  const Dataset a = Dataset::from_tensor_slices(xy(40)).shuffle(40);
  set_random_seed(123);
  const Dataset b = Dataset::from_tensor_slices(xy(40)).shuffle(40);
  set_random_seed(124);
  const Dataset c = Dataset::from_tensor_slices(xy(40)).shuffle(40);
  EXPECT_EQ(labels(a), labels(b));
  EXPECT_NE(labels(a), labels(c));
}

TEST(DatasetTest, ShuffleBufferBoundsHowFarElementsMove) {
  EXPECT_EQ(labels(Dataset::from_tensor_slices(xy(30)).shuffle(1, 5)), range(30));
  const std::vector<std::int32_t> order = labels(Dataset::from_tensor_slices(xy(30)).shuffle(3, 5));
  EXPECT_NE(order, range(30));
  // With a buffer of 3, output i can only be one of the first i + 3 inputs.
  for (std::size_t i = 0; i < order.size(); ++i) EXPECT_LE(order[i], static_cast<std::int32_t>(i) + 2);
}

TEST(DatasetTest, ShuffleAndBatchFastPathMatchesGenericPath) {
  // from_tensor_slices runs on row indices; a generator of the same elements goes element by element.
  const Element source = xy(23);
  const Dataset fast = Dataset::from_tensor_slices(source).shuffle(10, 3).batch(4);
  const Dataset generic = Dataset::from_generator([source] {
                            return [source, i = Index{0}]() mutable -> std::optional<Element> {
                              if (i >= source[1].dim(0)) return std::nullopt;
                              Element e{source[0].slice(i, i + 1).reshape(Shape{2}), scalar(static_cast<int>(i))};
                              ++i;
                              return e;
                            };
                          }).shuffle(10, 3).batch(4);
  auto a = fast.make_iterator();
  auto b = generic.make_iterator();
  int batches = 0;
  for (;;) {
    std::optional<Element> x = a->next(), y = b->next();
    ASSERT_EQ(x.has_value(), y.has_value());
    if (!x) break;
    ++batches;
    EXPECT_EQ((*x)[0].shape(), (*y)[0].shape());
    EXPECT_EQ((*x)[0].to_vector(), (*y)[0].to_vector());
    EXPECT_EQ(ints((*x)[1]), ints((*y)[1]));
  }
  EXPECT_EQ(batches, 6);
}

TEST(DatasetTest, BatchStacksAndKeepsOrDropsTheRemainder) {
  const Dataset ds = Dataset::from_tensor_slices(xy(10));
  const Dataset batched = ds.batch(4);
  EXPECT_EQ(batched.cardinality(), 3);
  std::vector<Element> batches = collect(batched);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0][0].shape(), (Shape{4, 2}));
  EXPECT_EQ(batches[0][1].shape(), (Shape{4}));
  EXPECT_EQ(batches[2][0].shape(), (Shape{2, 2}));
  EXPECT_EQ(batches[2][0].to_vector(), (std::vector<float>{16, 17, 18, 19}));
  EXPECT_EQ(ints(batches[1][1]), (std::vector<std::int32_t>{4, 5, 6, 7}));
  EXPECT_FALSE(batches[0][0].same_storage(ds.make_iterator()->next()->at(0)));  // a copy, not a view

  const Dataset dropped = ds.batch(4, true);
  EXPECT_EQ(dropped.cardinality(), 2);
  std::vector<Element> kept = collect(dropped);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(ints(kept[1][1]), (std::vector<std::int32_t>{4, 5, 6, 7}));

  // The generic path (after map) gives the same.
  const Dataset mapped = ds.map([](const Element& e) { return e; }).batch(4);
  std::vector<Element> generic = collect(mapped);
  ASSERT_EQ(generic.size(), 3u);
  EXPECT_EQ(generic[2][0].to_vector(), (std::vector<float>{16, 17, 18, 19}));
  EXPECT_EQ(ints(generic[2][1]), (std::vector<std::int32_t>{8, 9}));
  EXPECT_EQ(ds.map([](const Element& e) { return e; }).batch(4, true).cardinality(), 2);
}

TEST(DatasetTest, BatchOfMismatchedShapesNamesTheElement) {
  const Dataset ds = Dataset::from_generator([] {
    return [i = 0]() mutable -> std::optional<Element> {
      if (i >= 4) return std::nullopt;
      return Element{Tensor::zeros(Shape{i == 2 ? 3 : 2}), scalar(i++)};
    };
  });
  auto it = ds.batch(3).make_iterator();
  const std::string msg = testing::error_of([&] { it->next(); });
  EXPECT_NE(msg.find("element 2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(3,)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(2,)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("element 0"), std::string::npos) << msg;
}

TEST(DatasetTest, BatchFastPathCrossesRepeatBoundaries) {
  const Dataset ds = Dataset::from_tensor_slices(xy(5)).repeat(2).batch(4);
  EXPECT_EQ(ds.cardinality(), 3);
  std::vector<std::vector<std::int32_t>> got;
  for (const Element& b : ds) got.push_back(ints(b[1]));
  EXPECT_EQ(got, (std::vector<std::vector<std::int32_t>>{{0, 1, 2, 3}, {4, 0, 1, 2}, {3, 4}}));
}

TEST(DatasetTest, PrefetchYieldsEveryElementInOrder) {
  EXPECT_EQ(labels(Dataset::from_tensor_slices(xy(50)).prefetch(3)), range(50));
  EXPECT_EQ(labels(Dataset::from_tensor_slices(xy(50)).prefetch(AUTOTUNE)), range(50));
  EXPECT_EQ(labels(Dataset::from_tensor_slices(xy(5)).prefetch(0)), range(5));
  EXPECT_EQ(Dataset::from_tensor_slices(xy(5)).prefetch(2).cardinality(), 5);
}

TEST(DatasetTest, PrefetchStopsCleanlyWhenIterationStopsEarly) {
  auto produced = std::make_shared<std::atomic<int>>(0);
  const Dataset ds = Dataset::from_generator([produced] {
                       return [produced]() -> std::optional<Element> { return Element{scalar((*produced)++)}; };
                     }).prefetch(4);
  {
    auto it = ds.make_iterator();
    for (int i = 0; i < 3; ++i) EXPECT_EQ(value((*it->next())[0]), i);
  }
  const int after = produced->load();
  EXPECT_LE(after, 3 + 4 + 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(produced->load(), after);
  // Destroying an iterator that was never read from also joins its thread.
  { auto unused = ds.make_iterator(); }
}

TEST(DatasetTest, PrefetchRethrowsTheProducersException) {
  const Dataset ds = counting(10)
                         .map(
                             [](const Element& e) {
                               if (value(e[0]) == 3) throw std::runtime_error("map failed on 3");
                               return e;
                             },
                             2)
                         .prefetch(2);
  auto it = ds.make_iterator();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(value((*it->next())[0]), i);
  EXPECT_EQ(testing::error_of([&] { it->next(); }), "map failed on 3");
  EXPECT_FALSE(it->next());
}

TEST(DatasetTest, RepeatTakeAndSkip) {
  const Dataset ds = Dataset::from_tensor_slices(xy(4));
  std::vector<std::int32_t> three = range(4);
  three.insert(three.end(), {0, 1, 2, 3, 0, 1, 2, 3});
  EXPECT_EQ(labels(ds.repeat(3)), three);
  EXPECT_EQ(labels(ds.repeat(0)), std::vector<std::int32_t>{});
  EXPECT_EQ(labels(ds.repeat().take(6)), (std::vector<std::int32_t>{0, 1, 2, 3, 0, 1}));
  EXPECT_EQ(labels(ds.take(2)), (std::vector<std::int32_t>{0, 1}));
  EXPECT_EQ(labels(ds.take(10)), range(4));
  EXPECT_EQ(labels(ds.take(-1)), range(4));
  EXPECT_EQ(labels(ds.take(0)), std::vector<std::int32_t>{});
  EXPECT_EQ(labels(ds.skip(1)), (std::vector<std::int32_t>{1, 2, 3}));
  EXPECT_EQ(labels(ds.skip(9)), std::vector<std::int32_t>{});
  EXPECT_EQ(labels(ds.skip(-1)), std::vector<std::int32_t>{});
  EXPECT_EQ(labels(ds.skip(1).take(2)), (std::vector<std::int32_t>{1, 2}));
  // The same through the generic (element) path.
  EXPECT_EQ(labels(counting(4).repeat(2).skip(3).take(4), 0), (std::vector<std::int32_t>{3, 0, 1, 2}));
  // An empty input ends even an infinite repeat.
  EXPECT_EQ(labels(counting(0).repeat(), 0), std::vector<std::int32_t>{});
  EXPECT_EQ(labels(ds.take(0).repeat()), std::vector<std::int32_t>{});
}

TEST(DatasetTest, RepeatKeepsItsPipelineAliveWithoutTheDataset) {
  std::unique_ptr<Iterator> it = Dataset::from_tensor_slices(xy(2)).shuffle(2, 1).repeat(2).make_iterator();
  int n = 0;
  while (it->next()) ++n;
  EXPECT_EQ(n, 4);
}

TEST(DatasetTest, CacheReplaysTheFirstCompletePass) {
  auto passes = std::make_shared<std::atomic<int>>(0);
  const Dataset cached = counting(5, passes).cache();
  {
    auto it = cached.make_iterator();  // stopped early: caches nothing
    it->next();
  }
  EXPECT_EQ(passes->load(), 1);
  EXPECT_EQ(labels(cached, 0), range(5));
  EXPECT_EQ(passes->load(), 2);
  EXPECT_EQ(labels(cached, 0), range(5));
  EXPECT_EQ(labels(cached.repeat(2), 0).size(), 10u);
  EXPECT_EQ(passes->load(), 2);

  // A cached shuffle replays its first order (the row path).
  const Dataset shuffled = Dataset::from_tensor_slices(xy(30)).shuffle(30, 9).cache();
  const std::vector<std::int32_t> first = labels(shuffled);
  EXPECT_NE(first, range(30));
  EXPECT_EQ(labels(shuffled), first);
  EXPECT_EQ(labels(shuffled.batch(7)).size(), 5u);
}

TEST(DatasetTest, CardinalityFollowsTfData) {
  const Dataset ds = Dataset::from_tensor_slices(xy(10));
  EXPECT_EQ(ds.shuffle(4).map([](const Element& e) { return e; }).prefetch(1).cache().cardinality(), 10);
  EXPECT_EQ(ds.batch(3).cardinality(), 4);
  EXPECT_EQ(ds.batch(3, true).cardinality(), 3);
  EXPECT_EQ(ds.repeat(3).cardinality(), 30);
  EXPECT_EQ(ds.repeat().cardinality(), INFINITE_CARDINALITY);
  EXPECT_EQ(ds.repeat().batch(3).cardinality(), INFINITE_CARDINALITY);
  EXPECT_EQ(ds.repeat().take(7).cardinality(), 7);
  EXPECT_EQ(ds.take(3).cardinality(), 3);
  EXPECT_EQ(ds.take(30).cardinality(), 10);
  EXPECT_EQ(ds.skip(3).cardinality(), 7);
  EXPECT_EQ(ds.skip(30).cardinality(), 0);
  EXPECT_EQ(ds.skip(-1).cardinality(), 0);
  EXPECT_EQ(ds.take(0).repeat().cardinality(), 0);
  EXPECT_EQ(counting(3).cardinality(), UNKNOWN_CARDINALITY);
  EXPECT_EQ(counting(3).take(2).cardinality(), UNKNOWN_CARDINALITY);
  EXPECT_EQ(counting(3).repeat().cardinality(), INFINITE_CARDINALITY);
  EXPECT_EQ(counting(3).repeat().take(2).cardinality(), 2);
}

TEST(DatasetTest, InvalidArgumentsThrow) {
  const Dataset ds = Dataset::from_tensor_slices(xy(3));
  EXPECT_THROW(ds.batch(0), std::invalid_argument);
  EXPECT_THROW(ds.shuffle(0), std::invalid_argument);
  EXPECT_THROW(ds.map(nullptr), std::invalid_argument);
  EXPECT_THROW(ds.map([](const Element& e) { return e; }, 0), std::invalid_argument);
  EXPECT_THROW(ds.prefetch(-2), std::invalid_argument);
  EXPECT_THROW(ds.repeat(-2), std::invalid_argument);
  EXPECT_THROW(ds.take(-2), std::invalid_argument);
  EXPECT_THROW(ds.skip(-2), std::invalid_argument);
  EXPECT_THROW(Dataset::from_generator(nullptr), std::invalid_argument);
}

TEST(DatasetTest, LargeShuffledEpochGathersEveryRowOnce) {
  // The shape of a Fashion-MNIST epoch through the fast path: every row arrives exactly once, intact.
  const Index n = 6000;
  Tensor x(Shape{n, 28, 28, 1});
  for (Index i = 0; i < n; ++i) std::fill_n(x.data<float>() + i * 784, 784, static_cast<float>(i));
  const Dataset ds = Dataset::from_tensor_slices({x, xy(n)[1]}).shuffle(1000, 1).batch(128).prefetch(2);
  std::vector<int> seen(static_cast<std::size_t>(n), 0);
  Index batches = 0;
  for (const Element& b : ds) {
    ++batches;
    const float* p = b[0].data<float>();
    for (Index r = 0; r < b[0].dim(0); ++r) {
      const std::int32_t label = b[1].data<std::int32_t>()[r];
      ASSERT_EQ(p[r * 784], static_cast<float>(label));
      ASSERT_EQ(p[r * 784 + 783], static_cast<float>(label));
      ++seen[static_cast<std::size_t>(label)];
    }
  }
  EXPECT_EQ(batches, (n + 127) / 128);
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int s) { return s == 1; }));
}

}  // namespace
}  // namespace tower::data
