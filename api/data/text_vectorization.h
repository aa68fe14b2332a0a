#pragma once
// TextVectorization (keras.layers.TextVectorization): strings to token ids or token-count vectors, before the graph.
// Tower's tensors hold numbers only, so text is turned into tensors here, in the input pipeline, as Keras users do
// with the layer outside their model:
//
//   data::TextVectorization vectorize({.max_tokens = 20000, .output_sequence_length = 200});
//   vectorize.adapt(data::read_text_lines({"train.txt"}));
//   Tensor ids = vectorize({"The cat sat.", "A dog"});          // int32 [2, 200]
//
// Each text goes through Keras' steps, with Keras' options and defaults:
//   1. standardize: "lower_and_strip_punctuation" (default), "lower", "strip_punctuation", none (std::nullopt) or a
//      function. Lowercasing is Keras' tf.strings.lower, which changes the ASCII letters A-Z only ("ÉCOLE" becomes
//      "École"); the punctuation stripped is Keras' regex, the 32 ASCII characters !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~.
//   2. split: "whitespace" (default: runs of the ASCII whitespace " \t\n\v\f\r", as tf.strings.split; other Unicode
//      spaces stay inside tokens, as in Keras), "character" (one token per Unicode code point, as
//      tf.strings.unicode_split), none (the whole text is one token) or a function.
//   3. ngrams: none, n (the 1- to n-grams) or a list of widths; the tokens of each width in order, width by width,
//      joined by a space (tf.strings.ngrams). A text shorter than a width gives none of that width.
//   4. lookup, by output_mode:
//      "int" (default): int32 ids [N, L]. Index 0 is the padding token "" (an empty token maps to it too), 1 is the
//        out-of-vocabulary token "[UNK]". L is output_sequence_length (rows padded with 0 or truncated), else the
//        longest row, as Keras pads a ragged batch. With split none (and no ngrams or output_sequence_length) each
//        text is one id and the output [N], as in Keras.
//      "multi_hot" / "count" / "tf_idf": float32 [N, depth], depth = vocabulary_size(), or max_tokens with
//        pad_to_max_tokens. Index 0 is "[UNK]". multi_hot: 1 where the token occurs; count: its count; tf_idf: count
//        times the token's idf weight.
// Every text must be valid UTF-8; one that is not throws std::invalid_argument naming the layer, the text's index
// and the byte offset.
//
// adapt(texts) learns the vocabulary as Keras does: tokens by count, most frequent first, ties broken by the tokens'
// bytes in descending order; the special tokens first; at most max_tokens in all. In tf_idf mode it learns each
// token's idf weight, log(1 + documents / (1 + documents containing it)), and gives "[UNK]" their mean. Large corpora
// adapt in pieces as in Keras: reset_state(), update_state(texts) per piece (e.g. per file's read_text_lines), then
// finalize_state().
//
// Errors (std::invalid_argument naming the layer and the value): the constructor refuses what Keras refuses (an
// unknown standardize / split / output_mode, max_tokens <= 1, pad_to_max_tokens without max_tokens,
// output_sequence_length outside int mode or < 0, idf_weights outside tf_idf mode, a vocabulary in tf_idf mode
// without idf_weights) and an ngram width < 1. set_vocabulary refuses an empty vocabulary, a repeated token, "" other
// than first in int mode, more than max_tokens tokens and idf_weights of another length. Calling the layer before it
// has a vocabulary, and adapting a layer constructed with one, throw std::logic_error.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "api/core/tensor.h"
#include "api/io/config.h"

namespace tower::data {

struct TextVectorizationOptions {
  using StandardizeFn = std::function<std::string(const std::string&)>;
  using SplitFn = std::function<std::vector<std::string>(const std::string&)>;

  std::optional<int> max_tokens;  // the vocabulary's size at most, the special tokens included
  std::variant<std::string, std::nullopt_t, StandardizeFn> standardize = std::string("lower_and_strip_punctuation");
  std::variant<std::string, std::nullopt_t, SplitFn> split = std::string("whitespace");
  std::variant<std::nullopt_t, int, std::vector<int>> ngrams = std::nullopt;
  std::string output_mode = "int";  // "int", "multi_hot", "count", "tf_idf" (Keras' aliases "binary", "tf-idf")
  std::optional<int> output_sequence_length;
  bool pad_to_max_tokens = false;
  std::optional<std::vector<std::string>> vocabulary;  // given instead of adapt, with or without the special tokens
  std::optional<std::vector<float>> idf_weights;       // tf_idf only, one per vocabulary entry
  std::string name = "text_vectorization";
};

class TextVectorization {
 public:
  using Options = TextVectorizationOptions;

  explicit TextVectorization(Options options = {});
  // Keras' get_config keys (unknown keys are ignored, as "sparse", "ragged" and "encoding" must be false, false and
  // "utf-8"); a "vocabulary" (with "idf_weights" in tf_idf mode) sets the vocabulary. Throws ConfigError naming a key
  // of the wrong type.
  explicit TextVectorization(const Config& config);

  // Learns the vocabulary (and idf weights) from texts, replacing any vocabulary learned before.
  void adapt(const std::vector<std::string>& texts);
  void reset_state();
  void update_state(const std::vector<std::string>& texts);
  void finalize_state();

  // The texts as a tensor (see the header comment for its shape and dtype).
  Tensor operator()(const std::vector<std::string>& texts) const;
  // One text's tokens after standardize, split and ngrams.
  std::vector<std::string> tokenize(const std::string& text) const;

  // The vocabulary, index i being the token of id i; without the special tokens when include_special_tokens is false.
  std::vector<std::string> get_vocabulary(bool include_special_tokens = true) const;
  // Replaces the vocabulary (special tokens first or left out) and, in tf_idf mode, the idf weights (one per entry).
  void set_vocabulary(const std::vector<std::string>& vocabulary,
                      const std::optional<std::vector<float>>& idf_weights = std::nullopt);
  // The number of ids, the special tokens included.
  int vocabulary_size() const;

  // Keras' keys. "vocabulary" holds the whole current vocabulary (and "idf_weights" the weights it was given with),
  // so the config rebuilds an adapted layer too (Keras keeps an adapted vocabulary in its file's assets instead).
  // Throws std::logic_error for a standardize or split function, which a config cannot hold.
  Config get_config() const;
  const Options& options() const { return options_; }

 private:
  int token_start() const;
  int depth() const;
  std::int32_t lookup(const std::string& token) const;
  void set_tokens(std::vector<std::string> tokens);
  Tensor ids(const std::vector<std::vector<std::string>>& rows) const;
  Tensor encoded(const std::vector<std::vector<std::string>>& rows) const;

  Options options_;
  std::vector<int> ngram_widths_;
  bool has_input_vocabulary_ = false;
  bool has_vocabulary_ = false;
  std::vector<std::string> tokens_;  // without the special tokens
  std::unordered_map<std::string, std::int32_t> index_;
  std::vector<float> idf_;  // tf_idf: one per output column
  std::unordered_map<std::string, std::int64_t> token_counts_;
  std::unordered_map<std::string, std::int64_t> document_counts_;
  std::int64_t num_documents_ = 0;
};

}  // namespace tower::data
