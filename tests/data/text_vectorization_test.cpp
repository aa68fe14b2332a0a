#include "api/data/text_vectorization.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "api/data/text_lines.h"
#include "tests/testing/fixtures.h"
#include "testing/errors.h"

namespace tower::data {
namespace {

const Config& fixtures() {
  static const Config doc = tower::testing::read_json_fixture("data/text/text_fixtures.json");
  return doc;
}

const Config& fixture(const std::string& name) {
  for (const Config& c : fixtures().at("text_vectorization").as_list())
    if (c.at("name").as_string() == name) return c;
  throw std::runtime_error("no text_vectorization fixture case " + name);
}

std::vector<std::string> corpus() {
  return read_text_lines({(tower::testing::reference_dir() / "data/text/corpus.txt").string()});
}

std::vector<std::string> strings(const Config& list) {
  std::vector<std::string> out;
  for (const Config& s : list.as_list()) out.push_back(s.as_string());
  return out;
}

std::vector<std::int32_t> ints(const Tensor& t) {
  const std::int32_t* p = t.data<std::int32_t>();
  return std::vector<std::int32_t>(p, p + t.numel());
}

// The message of the exception `fn` throws as E; fails when it throws nothing.
void expect_like_keras(const TextVectorization& layer, const Config& c) {
  EXPECT_EQ(layer.get_vocabulary(), strings(c.at("vocabulary")));
  EXPECT_EQ(layer.vocabulary_size(), c.at("vocabulary_size").as_int());
  const Tensor expected = tower::testing::fixture_tensor(c.at("output"));
  const Tensor out = layer(strings(c.at("inputs")));
  ASSERT_EQ(out.shape(), expected.shape());
  ASSERT_EQ(out.dtype(), expected.dtype());
  if (out.dtype() == DType::int32) {
    EXPECT_EQ(ints(out), ints(expected));
  } else {
    const std::vector<float> a = out.to_vector(), b = expected.to_vector();
    for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5f * (1.f + std::fabs(b[i]))) << i;
  }
}

TEST(TextVectorizationTest, MatchesKerasOnEveryFixtureCase) {
  for (const Config& c : fixtures().at("text_vectorization").as_list()) {
    SCOPED_TRACE(c.at("name").as_string());
    TextVectorization layer(c.at("config"));
    if (c.at("adapt").as_bool()) layer.adapt(corpus());
    expect_like_keras(layer, c);
  }
}

TEST(TextVectorizationTest, OptionsStructIsKerasDefaults) {
  const Config& c = fixture("default");
  TextVectorization layer;
  layer.adapt(corpus());
  expect_like_keras(layer, c);
}

TEST(TextVectorizationTest, AdaptingInPiecesEqualsAdaptingAtOnce) {
  const Config& c = fixture("tf_idf");
  TextVectorization layer({.output_mode = "tf_idf"});
  const std::vector<std::string> lines = corpus();
  layer.reset_state();
  layer.update_state({lines.begin(), lines.begin() + 3});
  layer.update_state({lines.begin() + 3, lines.end()});
  layer.finalize_state();
  expect_like_keras(layer, c);
}

TEST(TextVectorizationTest, KerasDocstringExample) {
  TextVectorization layer({.max_tokens = 5000, .output_sequence_length = 4});
  layer.adapt({"foo bar", "bar baz", "baz bada boom"});
  EXPECT_EQ(ints(layer({"foo qux bar", "qux baz"})), (std::vector<std::int32_t>{4, 1, 3, 0, 1, 2, 0, 0}));
  TextVectorization given({.vocabulary = std::vector<std::string>{"earth", "wind", "and", "fire"}});
  EXPECT_EQ(given.get_vocabulary(), (std::vector<std::string>{"", "[UNK]", "earth", "wind", "and", "fire"}));
  EXPECT_EQ(given.get_vocabulary(false), (std::vector<std::string>{"earth", "wind", "and", "fire"}));
}

TEST(TextVectorizationTest, TiesAreBrokenByTheTokensInDescendingOrder) {
  TextVectorization layer;
  layer.adapt({"b a c", "c a b", "d"});
  EXPECT_EQ(layer.get_vocabulary(), (std::vector<std::string>{"", "[UNK]", "c", "b", "a", "d"}));
}

TEST(TextVectorizationTest, LowercasesAsciiOnlyAndSplitsCharactersIntoCodePoints) {
  TextVectorization layer({.standardize = "lower", .split = "character"});
  layer.adapt({"ÉA😀"});
  EXPECT_EQ(layer.get_vocabulary(), (std::vector<std::string>{"", "[UNK]", "😀", "É", "a"}));
}

TEST(TextVectorizationTest, FunctionsStandardizeAndSplit) {
  TextVectorization layer({.standardize = [](const std::string& s) { return s + "-x"; },
                           .split = [](const std::string& s) {
                             return std::vector<std::string>{s.substr(0, 1), s.substr(1)};
                           }});
  layer.adapt({"ab"});
  EXPECT_EQ(layer.get_vocabulary(), (std::vector<std::string>{"", "[UNK]", "b-x", "a"}));
  EXPECT_EQ(ints(layer({"ab", "zb"})), (std::vector<std::int32_t>{3, 2, 1, 2}));
  EXPECT_NE(testing::error_of<std::logic_error>([&] { (void)layer.get_config(); }).find("standardize function"),
            std::string::npos);
}

TEST(TextVectorizationTest, ConfigRoundTripKeepsTheVocabulary) {
  for (const std::string mode : {"int", "tf_idf", "count"}) {
    SCOPED_TRACE(mode);
    TextVectorization layer({.max_tokens = 10, .ngrams = 2, .output_mode = mode});
    layer.adapt(corpus());
    const Config config = layer.get_config();
    TextVectorization copy(Config::parse_json(config.to_json()));
    EXPECT_EQ(copy.get_config(), config);
    EXPECT_EQ(copy.get_vocabulary(), layer.get_vocabulary());
    const std::vector<std::string> texts = {"the cat sat on the mat", "zeta yak"};
    const Tensor a = layer(texts), b = copy(texts);
    ASSERT_EQ(a.shape(), b.shape());
    if (mode == "int") EXPECT_EQ(ints(a), ints(b));
    else EXPECT_EQ(a.to_vector(), b.to_vector());
  }
}

TEST(TextVectorizationTest, EmptyTextsAndBatchesGiveEmptyRows) {
  TextVectorization layer;
  layer.adapt({"a b"});
  EXPECT_EQ(layer({"", "  "}).shape(), (Shape{2, 0}));
  EXPECT_EQ(layer({}).shape(), (Shape{0, 0}));
  TextVectorization padded({.output_sequence_length = 3});
  padded.adapt({"a b"});
  EXPECT_EQ(ints(padded({""})), (std::vector<std::int32_t>{0, 0, 0}));
  TextVectorization counts({.output_mode = "count"});
  counts.adapt({"a b"});
  EXPECT_EQ(counts({}).shape(), (Shape{0, 3}));
}

TEST(TextVectorizationTest, InvalidUtf8IsAClearError) {
  TextVectorization layer({.split = "character"});
  const std::string message =
      testing::error_of<std::invalid_argument>([&] { layer.adapt({"fine", std::string("ab\xff") + "c"}); });
  EXPECT_NE(message.find("'text_vectorization'"), std::string::npos) << message;
  EXPECT_NE(message.find("text 1 is not valid UTF-8 (byte 0xff at offset 2)"), std::string::npos) << message;
  layer.adapt({"ab"});
  EXPECT_NE(testing::error_of<std::invalid_argument>([&] { (void)layer({"\xc3"}); }).find("text 0"), std::string::npos);
  // An overlong form and a surrogate are not UTF-8 either.
  EXPECT_THROW((void)layer({"\xc0\xaf"}), std::invalid_argument);
  EXPECT_THROW((void)layer({"\xed\xa0\x80"}), std::invalid_argument);
}

TEST(TextVectorizationTest, CallingWithoutAVocabularyIsAClearError) {
  TextVectorization layer;
  EXPECT_NE(testing::error_of<std::logic_error>([&] { (void)layer({"a b"}); }).find("has no vocabulary"),
            std::string::npos);
  TextVectorization given({.vocabulary = std::vector<std::string>{"a"}});
  EXPECT_NE(testing::error_of<std::logic_error>([&] { given.adapt({"a"}); }).find("constructed with a vocabulary"),
            std::string::npos);
}

TEST(TextVectorizationTest, OptionsKerasRefusesAreRefused) {
  using O = TextVectorizationOptions;
  const std::vector<std::pair<O, std::string>> cases = {
      {O{.max_tokens = 1}, "max_tokens must be greater than 1"},
      {O{.pad_to_max_tokens = true}, "pad_to_max_tokens needs max_tokens"},
      {O{.output_mode = "count", .output_sequence_length = 3}, "output_sequence_length must not be set"},
      {O{.output_mode = "one_hot"}, "output_mode must be"},
      {O{.standardize = "upper"}, "standardize must be"},
      {O{.split = "comma"}, "split must be"},
      {O{.ngrams = 0}, "ngram width must be >= 1"},
      {O{.ngrams = std::vector<int>{1, -2}}, "ngram width must be >= 1"},
      {O{.output_sequence_length = -1}, "output_sequence_length must be >= 0"},
      {O{.idf_weights = std::vector<float>{1.f}}, "idf_weights should only be set"},
      {O{.output_mode = "tf_idf", .vocabulary = std::vector<std::string>{"a"}}, "needs idf_weights"},
      {O{.vocabulary = std::vector<std::string>{"a", "a"}}, "repeats the token \"a\""},
      {O{.vocabulary = std::vector<std::string>{"a", ""}}, "padding token"},
      {O{.vocabulary = std::vector<std::string>{}}, "empty vocabulary"},
      {O{.max_tokens = 3, .vocabulary = std::vector<std::string>{"a", "b"}}, "larger than max_tokens 3"},
      {O{.output_mode = "tf_idf", .vocabulary = std::vector<std::string>{"a", "b"},
         .idf_weights = std::vector<float>{1.f}},
       "idf_weights has 1 entries for a vocabulary of 2"},
  };
  for (const auto& [options, expected] : cases) {
    const std::string message = testing::error_of<std::invalid_argument>([&] { TextVectorization layer(options); });
    EXPECT_NE(message.find(expected), std::string::npos) << message << " (expected: " << expected << ")";
  }
}

TEST(TextVectorizationTest, AConfigOfTheWrongTypeNamesItsProblem) {
  Config config = Config::map();
  config.set("sparse", true);
  EXPECT_THROW(TextVectorization{config}, ConfigError);
  Config bad = Config::map();
  bad.set("max_tokens", "many");
  EXPECT_THROW(TextVectorization{bad}, ConfigError);
}

}  // namespace
}  // namespace tower::data
