#include "api/data/text_vectorization.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <set>
#include <stdexcept>
#include <unordered_set>

namespace tower::data {
namespace {

const char* const kMaskToken = "";
const char* const kOovToken = "[UNK]";

// The byte length of the UTF-8 sequence starting at text[i], or 0 where it is not a valid one (overlong forms,
// surrogates and code points above U+10FFFF included, as Unicode defines validity).
std::size_t utf8_length(const std::string& text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
  else return 0;
  if (i + n > text.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  return n;
}

void check_utf8(const std::string& layer, const std::string& text, std::size_t index) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_length(text, i);
    if (n == 0) {
      char byte[8];
      std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>(text[i]));
      throw std::invalid_argument("TextVectorization '" + layer + "': text " + std::to_string(index) +
                                  " is not valid UTF-8 (byte " + byte + " at offset " + std::to_string(i) + ")");
    }
    i += n;
  }
}

bool is_ascii_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// Keras' DEFAULT_STRIP_REGEX, r'[!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']': all of ASCII's punctuation.
bool is_keras_punctuation(char c) { return c != '\0' && std::strchr("!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~'", c); }

std::string lower_ascii(std::string text) {
  for (char& c : text)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return text;
}

std::string strip_punctuation(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text)
    if (!is_keras_punctuation(c)) out += c;
  return out;
}

std::vector<std::string> split_whitespace(const std::string& text) {
  std::vector<std::string> tokens;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_ascii_space(text[i])) ++i;
    const std::size_t start = i;
    while (i < text.size() && !is_ascii_space(text[i])) ++i;
    if (i > start) tokens.push_back(text.substr(start, i - start));
  }
  return tokens;
}

std::vector<std::string> split_characters(const std::string& text) {
  std::vector<std::string> tokens;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = std::max<std::size_t>(utf8_length(text, i), 1);
    tokens.push_back(text.substr(i, n));
    i += n;
  }
  return tokens;
}

std::vector<std::string> make_ngrams(const std::vector<std::string>& tokens, const std::vector<int>& widths) {
  std::vector<std::string> out;
  for (int width : widths) {
    for (std::size_t i = 0; i + width <= tokens.size(); ++i) {
      std::string gram = tokens[i];
      for (int k = 1; k < width; ++k) gram += " " + tokens[i + k];
      out.push_back(std::move(gram));
    }
  }
  return out;
}

std::string invalid(const std::string& layer, const std::string& what) {
  return "TextVectorization '" + layer + "': " + what;
}

std::string normalized_output_mode(const std::string& mode) {
  if (mode == "binary") return "multi_hot";
  if (mode == "tf-idf") return "tf_idf";
  return mode;
}

std::vector<int> ngram_widths(const TextVectorizationOptions& o) {
  std::vector<int> widths;
  if (const int* n = std::get_if<int>(&o.ngrams)) {
    widths = {*n};
    if (*n > 1) {  // n means the widths 1..n
      widths.resize(*n);
      std::iota(widths.begin(), widths.end(), 1);
    }
  } else if (const auto* list = std::get_if<std::vector<int>>(&o.ngrams)) {
    widths = *list;
  }
  for (int w : widths)
    if (w < 1)
      throw std::invalid_argument(invalid(o.name, "every ngram width must be >= 1, got " + std::to_string(w)));
  return widths;
}

void check_options(const TextVectorizationOptions& o) {
  if (const auto* s = std::get_if<std::string>(&o.standardize);
      s && *s != "lower_and_strip_punctuation" && *s != "lower" && *s != "strip_punctuation")
    throw std::invalid_argument(invalid(o.name, "standardize must be \"lower_and_strip_punctuation\", \"lower\", "
                                                "\"strip_punctuation\", none or a function, got \"" + *s + "\""));
  if (const auto* s = std::get_if<std::string>(&o.split); s && *s != "whitespace" && *s != "character")
    throw std::invalid_argument(
        invalid(o.name, "split must be \"whitespace\", \"character\", none or a function, got \"" + *s + "\""));
  const std::string& mode = o.output_mode;
  if (mode != "int" && mode != "multi_hot" && mode != "count" && mode != "tf_idf")
    throw std::invalid_argument(invalid(
        o.name, "output_mode must be \"int\", \"multi_hot\", \"count\" or \"tf_idf\", got \"" + mode + "\""));
  if (o.max_tokens && *o.max_tokens <= 1)
    throw std::invalid_argument(
        invalid(o.name, "if set, max_tokens must be greater than 1, got " + std::to_string(*o.max_tokens)));
  if (o.pad_to_max_tokens && !o.max_tokens)
    throw std::invalid_argument(invalid(o.name, "pad_to_max_tokens needs max_tokens"));
  if (o.output_sequence_length && mode != "int")
    throw std::invalid_argument(invalid(o.name, "output_sequence_length must not be set if output_mode is not "
                                                "\"int\" (output_mode \"" + mode + "\")"));
  if (o.output_sequence_length && *o.output_sequence_length < 0)
    throw std::invalid_argument(invalid(
        o.name, "output_sequence_length must be >= 0, got " + std::to_string(*o.output_sequence_length)));
  if (o.idf_weights && mode != "tf_idf")
    throw std::invalid_argument(
        invalid(o.name, "idf_weights should only be set if output_mode is \"tf_idf\" (output_mode \"" + mode + "\")"));
  if (o.vocabulary && mode == "tf_idf" && !o.idf_weights)
    throw std::invalid_argument(
        invalid(o.name, "a vocabulary given in tf_idf output mode needs idf_weights too"));
}

}  // namespace

TextVectorization::TextVectorization(Options options) : options_(std::move(options)) {
  options_.output_mode = normalized_output_mode(options_.output_mode);
  check_options(options_);
  ngram_widths_ = ngram_widths(options_);
  if (options_.vocabulary) {
    has_input_vocabulary_ = true;
    set_vocabulary(*options_.vocabulary, options_.idf_weights);
  }
}

int TextVectorization::token_start() const { return options_.output_mode == "int" ? 2 : 1; }

int TextVectorization::vocabulary_size() const { return token_start() + static_cast<int>(tokens_.size()); }

int TextVectorization::depth() const {
  return options_.pad_to_max_tokens ? *options_.max_tokens : vocabulary_size();
}

std::vector<std::string> TextVectorization::tokenize(const std::string& text) const {
  std::string s = text;
  if (const auto* name = std::get_if<std::string>(&options_.standardize)) {
    if (*name != "strip_punctuation") s = lower_ascii(std::move(s));
    if (*name != "lower") s = strip_punctuation(s);
  } else if (const auto* fn = std::get_if<Options::StandardizeFn>(&options_.standardize)) {
    s = (*fn)(s);
  }
  std::vector<std::string> tokens;
  if (const auto* name = std::get_if<std::string>(&options_.split))
    tokens = *name == "whitespace" ? split_whitespace(s) : split_characters(s);
  else if (const auto* fn = std::get_if<Options::SplitFn>(&options_.split))
    tokens = (*fn)(s);
  else
    tokens = {s};
  return ngram_widths_.empty() ? tokens : make_ngrams(tokens, ngram_widths_);
}

void TextVectorization::reset_state() {
  token_counts_.clear();
  document_counts_.clear();
  num_documents_ = 0;
}

void TextVectorization::update_state(const std::vector<std::string>& texts) {
  if (has_input_vocabulary_)
    throw std::logic_error(invalid(options_.name, "cannot adapt a layer constructed with a vocabulary"));
  for (std::size_t i = 0; i < texts.size(); ++i) check_utf8(options_.name, texts[i], i);
  for (const std::string& text : texts) {
    const std::vector<std::string> tokens = tokenize(text);
    for (const std::string& t : tokens) ++token_counts_[t];
    if (options_.output_mode == "tf_idf") {
      for (const std::string& t : std::unordered_set<std::string>(tokens.begin(), tokens.end())) ++document_counts_[t];
      ++num_documents_;
    }
  }
}

void TextVectorization::finalize_state() {
  if (has_input_vocabulary_ || token_counts_.empty()) {
    has_vocabulary_ = has_vocabulary_ || has_input_vocabulary_;
    return;
  }
  token_counts_.erase(kMaskToken);
  token_counts_.erase(kOovToken);
  std::vector<std::pair<std::string, std::int64_t>> counted(token_counts_.begin(), token_counts_.end());
  // numpy.lexsort((tokens, counts))[::-1]: count descending, then the tokens' bytes descending.
  std::sort(counted.begin(), counted.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first > b.first;
  });
  if (options_.max_tokens)
    counted.resize(std::min<std::size_t>(counted.size(), std::max(*options_.max_tokens - token_start(), 0)));
  std::vector<std::string> tokens;
  for (auto& [token, count] : counted) tokens.push_back(token);
  set_tokens(std::move(tokens));
  if (options_.output_mode == "tf_idf") {
    std::vector<float> idf;
    for (const std::string& t : tokens_)
      idf.push_back(static_cast<float>(
          std::log(1.0 + static_cast<double>(num_documents_) / (1.0 + static_cast<double>(document_counts_[t])))));
    const float mean = idf.empty() ? 0.f : std::accumulate(idf.begin(), idf.end(), 0.f) / idf.size();
    idf_.assign(1, mean);
    idf_.insert(idf_.end(), idf.begin(), idf.end());
    idf_.resize(depth(), 0.f);
  }
  reset_state();
}

void TextVectorization::adapt(const std::vector<std::string>& texts) {
  reset_state();
  update_state(texts);
  finalize_state();
}

void TextVectorization::set_tokens(std::vector<std::string> tokens) {
  tokens_ = std::move(tokens);
  index_.clear();
  for (std::size_t i = 0; i < tokens_.size(); ++i) index_[tokens_[i]] = token_start() + static_cast<std::int32_t>(i);
  has_vocabulary_ = true;
}

void TextVectorization::set_vocabulary(const std::vector<std::string>& vocabulary,
                                       const std::optional<std::vector<float>>& idf_weights) {
  const std::string& name = options_.name;
  const bool tf_idf = options_.output_mode == "tf_idf";
  if (tf_idf && !idf_weights) throw std::invalid_argument(invalid(name, "idf_weights must be set in tf_idf mode"));
  if (!tf_idf && idf_weights)
    throw std::invalid_argument(invalid(name, "idf_weights should only be set if output_mode is \"tf_idf\""));
  if (vocabulary.empty()) throw std::invalid_argument(invalid(name, "cannot set an empty vocabulary"));
  std::vector<std::string> special = {kOovToken};
  if (!tf_idf && options_.output_mode == "int") special.insert(special.begin(), kMaskToken);
  const bool found_special = vocabulary.size() >= special.size() &&
                             std::equal(special.begin(), special.end(), vocabulary.begin());
  std::vector<std::string> tokens(vocabulary.begin() + (found_special ? special.size() : 0), vocabulary.end());
  std::set<std::string> seen;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (!seen.insert(tokens[i]).second)
      throw std::invalid_argument(invalid(name, "the vocabulary repeats the token \"" + tokens[i] + "\""));
    if (tokens[i] == kMaskToken)
      throw std::invalid_argument(invalid(name, "the padding token \"\" may only come first in the vocabulary, "
                                                "followed by \"[UNK]\" (int mode), or not at all"));
  }
  const int size = token_start() + static_cast<int>(tokens.size());
  if (options_.max_tokens && size > *options_.max_tokens)
    throw std::invalid_argument(invalid(name, "a vocabulary of " + std::to_string(size) +
                                                  " tokens (special tokens included) is larger than max_tokens " +
                                                  std::to_string(*options_.max_tokens)));
  if (tf_idf && idf_weights->size() != vocabulary.size())
    throw std::invalid_argument(invalid(name, "idf_weights has " + std::to_string(idf_weights->size()) +
                                                  " entries for a vocabulary of " + std::to_string(vocabulary.size())));
  set_tokens(std::move(tokens));
  if (tf_idf) {
    idf_ = *idf_weights;
    if (!found_special) {
      const float mean = std::accumulate(idf_.begin(), idf_.end(), 0.f) / idf_.size();
      idf_.insert(idf_.begin(), mean);
    }
    idf_.resize(depth(), 0.f);
  }
}

std::vector<std::string> TextVectorization::get_vocabulary(bool include_special_tokens) const {
  std::vector<std::string> vocabulary;
  if (include_special_tokens) {
    if (options_.output_mode == "int") vocabulary.push_back(kMaskToken);
    vocabulary.push_back(kOovToken);
  }
  vocabulary.insert(vocabulary.end(), tokens_.begin(), tokens_.end());
  return vocabulary;
}

std::int32_t TextVectorization::lookup(const std::string& token) const {
  const auto it = index_.find(token);
  return it != index_.end() ? it->second : token_start() - 1;
}

Tensor TextVectorization::ids(const std::vector<std::vector<std::string>>& rows) const {
  std::size_t longest = 0;
  for (const auto& row : rows) longest = std::max(longest, row.size());
  const Index length = options_.output_sequence_length ? *options_.output_sequence_length : static_cast<Index>(longest);
  Tensor out = Tensor::zeros({static_cast<Index>(rows.size()), length}, DType::int32);
  std::int32_t* data = out.data<std::int32_t>();
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (std::size_t t = 0; t < rows[r].size() && static_cast<Index>(t) < length; ++t)
      data[r * length + t] = rows[r][t].empty() ? 0 : lookup(rows[r][t]);
  return out;
}

Tensor TextVectorization::encoded(const std::vector<std::vector<std::string>>& rows) const {
  const Index columns = depth();
  Tensor out = Tensor::zeros({static_cast<Index>(rows.size()), columns});
  float* data = out.data<float>();
  for (std::size_t r = 0; r < rows.size(); ++r) {
    float* row = data + r * columns;
    for (const std::string& token : rows[r])
      if (!token.empty()) row[lookup(token)] += 1.f;
    for (Index c = 0; c < columns; ++c) {
      if (options_.output_mode == "multi_hot") row[c] = row[c] > 0.f ? 1.f : 0.f;
      if (options_.output_mode == "tf_idf") row[c] *= idf_[c];
    }
  }
  return out;
}

Tensor TextVectorization::operator()(const std::vector<std::string>& texts) const {
  if (!has_vocabulary_)
    throw std::logic_error(invalid(options_.name, "the layer has no vocabulary: call adapt() or set_vocabulary(), "
                                                  "or give the vocabulary option, before calling it"));
  std::vector<std::vector<std::string>> rows;
  rows.reserve(texts.size());
  for (std::size_t i = 0; i < texts.size(); ++i) {
    check_utf8(options_.name, texts[i], i);
    rows.push_back(tokenize(texts[i]));
  }
  if (options_.output_mode != "int") return encoded(rows);
  // A text left whole is one id, as Keras gives [N] for a batch of N unsplit strings.
  const bool whole = std::holds_alternative<std::nullopt_t>(options_.split) && ngram_widths_.empty();
  const Tensor out = ids(rows);
  return whole && !options_.output_sequence_length ? out.reshape({out.dim(0)}) : out;
}

Config TextVectorization::get_config() const {
  const auto name_or_null = [&](const auto& option, const char* key) -> Config {
    if (const auto* s = std::get_if<std::string>(&option)) return *s;
    if (std::holds_alternative<std::nullopt_t>(option)) return nullptr;
    throw std::logic_error(invalid(options_.name, std::string("a ") + key +
                                                      " function cannot be written in a config"));
  };
  Config config = Config::map();
  config.set("name", options_.name);
  config.set("max_tokens", options_.max_tokens ? Config(*options_.max_tokens) : Config());
  config.set("standardize", name_or_null(options_.standardize, "standardize"));
  config.set("split", name_or_null(options_.split, "split"));
  Config ngrams;
  if (const int* n = std::get_if<int>(&options_.ngrams)) ngrams = *n;
  if (const auto* list = std::get_if<std::vector<int>>(&options_.ngrams)) {
    ngrams = Config::list();
    for (int w : *list) ngrams.push_back(w);
  }
  config.set("ngrams", ngrams);
  config.set("output_mode", options_.output_mode);
  config.set("output_sequence_length",
             options_.output_sequence_length ? Config(*options_.output_sequence_length) : Config());
  config.set("pad_to_max_tokens", options_.pad_to_max_tokens);
  config.set("sparse", false);
  config.set("ragged", false);
  Config vocabulary, idf;
  if (has_vocabulary_) {
    vocabulary = Config::list();
    for (const std::string& t : get_vocabulary()) vocabulary.push_back(t);
  }
  if (has_vocabulary_ && options_.output_mode == "tf_idf") {
    idf = Config::list();
    for (int i = 0; i < vocabulary_size(); ++i) idf.push_back(static_cast<double>(idf_[i]));
  }
  config.set("vocabulary", vocabulary);
  config.set("idf_weights", idf);
  config.set("encoding", "utf-8");
  config.set("vocabulary_size", has_vocabulary_ ? Config(vocabulary_size()) : Config());
  return config;
}

namespace {

TextVectorizationOptions options_from_config(const Config& c) {
  TextVectorizationOptions o;
  const auto has = [&](const char* key) { return c.contains(key) && !c.at(key).is_null(); };
  if (c.contains("name")) o.name = c.at("name").as_string();
  if (has("max_tokens")) o.max_tokens = static_cast<int>(c.at("max_tokens").as_int());
  if (c.contains("standardize"))
    o.standardize = has("standardize") ? decltype(o.standardize)(c.at("standardize").as_string()) : std::nullopt;
  if (c.contains("split")) o.split = has("split") ? decltype(o.split)(c.at("split").as_string()) : std::nullopt;
  if (has("ngrams")) {
    const Config& n = c.at("ngrams");
    if (n.is_list()) {
      std::vector<int> widths;
      for (const Config& w : n.as_list()) widths.push_back(static_cast<int>(w.as_int()));
      o.ngrams = widths;
    } else {
      o.ngrams = static_cast<int>(n.as_int());
    }
  }
  if (c.contains("output_mode")) o.output_mode = c.at("output_mode").as_string();
  if (has("output_sequence_length"))
    o.output_sequence_length = static_cast<int>(c.at("output_sequence_length").as_int());
  if (c.contains("pad_to_max_tokens")) o.pad_to_max_tokens = c.at("pad_to_max_tokens").as_bool();
  if (has("vocabulary")) {
    o.vocabulary.emplace();
    for (const Config& t : c.at("vocabulary").as_list()) o.vocabulary->push_back(t.as_string());
  }
  if (has("idf_weights")) {
    o.idf_weights.emplace();
    for (const Config& w : c.at("idf_weights").as_list()) o.idf_weights->push_back(static_cast<float>(w.as_double()));
  }
  for (const char* key : {"sparse", "ragged"})
    if (has(key) && c.at(key).as_bool())
      throw ConfigError("TextVectorization '" + o.name + "': " + key + " = true is not supported");
  if (has("encoding") && c.at("encoding").as_string() != "utf-8")
    throw ConfigError("TextVectorization '" + o.name + "': only the encoding \"utf-8\" is supported, got \"" +
                      c.at("encoding").as_string() + "\"");
  return o;
}

}  // namespace

TextVectorization::TextVectorization(const Config& config) : TextVectorization(options_from_config(config)) {}

}  // namespace tower::data
