// A character-level language model on the licence texts every Debian system ships (/usr/share/common-licenses,
// package base-files): a small causal Transformer or an LSTM predicts each next character, trained on the first 90%
// of the text and scored on the last 10% in bits per character (cross-entropy / ln 2), beside a unigram model's.
// It ends by sampling text from a seed string with a temperature.
//   char_lm [transformer|lstm] [epochs=8] [steps_per_epoch=all] [sample_length=400]
#include <tower/tower.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

using namespace tower;

constexpr Index kLength = 64;  // characters per training window
constexpr int kModelDim = 64;

// A learned embedding of each position 0..length-1, added to the characters' embeddings (Keras users write this
// layer themselves too; keras_hub's PositionEmbedding is the same thing).
struct PositionEmbeddingOptions {
  int sequence_length = 0;
  std::string name;
  template <class V> void visit(V&& v) {
    v("sequence_length", sequence_length);
    v("name", name);
  }
};

class PositionEmbedding final : public CustomLayer {
 public:
  using Options = PositionEmbeddingOptions;
  explicit PositionEmbedding(Options options)
      : CustomLayer("PositionEmbedding", options.name), options_(std::move(options)) {
    options_.name = name();
  }

  void build(const std::vector<Shape>& input_shapes) override {
    positions_ = add_weight("embeddings", {options_.sequence_length, input_shapes[0][-1]},
                            initializers::Initializer("glorot_uniform"));
  }

  std::vector<Tensor> call(const std::vector<Tensor>& inputs, bool) override {
    const Tensor& x = inputs[0];  // [N, T, D]
    return {x + ops::reshape(positions_->value, {1, options_.sequence_length, x.shape()[-1]})};
  }

  Config get_config() const override { return options_to_config(options_); }

 private:
  Options options_;
  VariablePtr positions_;
};
TOWER_REGISTER_LAYER(PositionEmbedding, "PositionEmbedding");

// The licence files (symbolic links left out, as they repeat a file), in name order, as one text.
std::string read_corpus(const std::string& folder) {
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(folder))
    if (entry.is_regular_file() && !entry.is_symlink()) paths.push_back(entry.path().string());
  std::sort(paths.begin(), paths.end());
  std::string text;
  for (const std::string& line : data::read_text_lines(paths)) text += line + "\n";
  return text;
}

Model transformer(int vocabulary_size, int blocks) {
  auto ids = Input({kLength});
  auto x = layers::Embedding({.input_dim = vocabulary_size, .output_dim = kModelDim})(ids);
  x = (*std::make_shared<PositionEmbedding>(PositionEmbeddingOptions{.sequence_length = kLength}))(x);
  for (int b = 0; b < blocks; ++b) {
    auto h = layers::LayerNormalization()(x);
    h = layers::MultiHeadAttention({.num_heads = 4, .key_dim = kModelDim / 4, .use_causal_mask = true})({h, h});
    x = layers::Add()({x, h});
    h = layers::LayerNormalization()(x);
    h = layers::Dense({.units = 4 * kModelDim, .activation = "gelu"})(h);
    h = layers::Dense({.units = kModelDim})(h);
    x = layers::Add()({x, h});
  }
  x = layers::LayerNormalization()(x);
  return Model(ids, layers::Dense({.units = vocabulary_size})(x));  // logits [N, T, vocabulary]
}

Model lstm(int vocabulary_size) {
  auto ids = Input({kLength});
  auto x = layers::Embedding({.input_dim = vocabulary_size, .output_dim = kModelDim})(ids);
  x = layers::LSTM({.units = 256, .return_sequences = true})(x);
  return Model(ids, layers::Dense({.units = vocabulary_size})(x));
}

// Windows of kLength + 1 ids, split into the inputs (the first kLength, as floats for the Embedding) and the
// next-character targets (the last kLength).
data::Dataset windows(const Tensor& ids, Index batch_size, bool shuffle) {
  return data::timeseries_dataset_from_array(
             ids, std::nullopt,
             {.sequence_length = kLength + 1, .sequence_stride = kLength, .batch_size = batch_size,
              .shuffle = shuffle, .seed = 1})
      .map([](const data::Element& e) -> data::Element {
        const Tensor& w = e[0];
        const Index n = w.dim(0);
        Tensor x({n, kLength}), y({n, kLength}, DType::int32);
        const std::int32_t* src = w.data<std::int32_t>();
        for (Index i = 0; i < n; ++i)
          for (Index t = 0; t < kLength; ++t) {
            x.data<float>()[i * kLength + t] = static_cast<float>(src[i * (kLength + 1) + t]);
            y.data<std::int32_t>()[i * kLength + t] = src[i * (kLength + 1) + t + 1];
          }
        return {x, y};
      });
}

// Bits per character of the validation ids under the training ids' character frequencies (add-one smoothed).
double unigram_bpc(const Tensor& train, const Tensor& validation, int vocabulary_size) {
  std::vector<double> counts(vocabulary_size, 1.0);
  for (Index i = 0; i < train.numel(); ++i) counts[train.data<std::int32_t>()[i]] += 1.0;
  const double total = train.numel() + vocabulary_size;
  double bits = 0.0;
  for (Index i = 0; i < validation.numel(); ++i) bits -= std::log2(counts[validation.data<std::int32_t>()[i]] / total);
  return bits / validation.numel();
}

// Continues `seed` by `length` characters, each drawn from softmax(logits / temperature) of the model's prediction
// at the last known position. The models are causal, so a window right-padded with 0 predicts its known positions
// exactly.
std::string sample(Model& model, const data::TextVectorization& vectorize, const std::string& seed, int length,
                   float temperature, Generator& generator) {
  const std::vector<std::string> vocabulary = vectorize.get_vocabulary();
  const Tensor seed_ids = vectorize({seed});
  std::vector<std::int32_t> ids(seed_ids.data<std::int32_t>(), seed_ids.data<std::int32_t>() + seed_ids.numel());
  std::string text = seed;
  for (int step = 0; step < length; ++step) {
    const Index known = std::min<Index>(static_cast<Index>(ids.size()), kLength);
    Tensor window = Tensor::zeros({1, kLength});
    for (Index t = 0; t < known; ++t) window.data<float>()[t] = static_cast<float>(ids[ids.size() - known + t]);
    const std::vector<float> logits = model.predict(window, {.verbose = 0}).to_vector();
    const float* row = logits.data() + (known - 1) * vocabulary.size();
    std::vector<double> p(vocabulary.size());
    const float top = *std::max_element(row, row + vocabulary.size());
    double sum = 0.0;
    for (std::size_t c = 2; c < p.size(); ++c) sum += p[c] = std::exp((row[c] - top) / temperature);  // no pad, OOV
    double u = generator.uniform() * sum;
    std::size_t next = p.size() - 1;
    for (std::size_t c = 2; c < p.size(); ++c)
      if ((u -= p[c]) < 0) {
        next = c;
        break;
      }
    ids.push_back(static_cast<std::int32_t>(next));
    text += vocabulary[next];
  }
  return text;
}

int main(int argc, char** argv) {
  const std::string variant = argc > 1 ? argv[1] : "transformer";
  const int epochs = argc > 2 ? std::atoi(argv[2]) : 8;
  const Index steps_per_epoch = argc > 3 ? std::atoll(argv[3]) : -1;
  const int sample_length = argc > 4 ? std::atoi(argv[4]) : 400;
  if (variant != "transformer" && variant != "lstm") {
    std::fprintf(stderr, "usage: char_lm [transformer|lstm] [epochs] [steps_per_epoch] [sample_length]\n");
    return 2;
  }
  set_random_seed(42);

  const std::string text = read_corpus("/usr/share/common-licenses");
  data::TextVectorization vectorize({.standardize = std::nullopt, .split = "character"});
  vectorize.adapt({text});
  const int vocabulary_size = vectorize.vocabulary_size();
  const Tensor ids = vectorize({text}).reshape({-1});  // [characters]
  const Index split = ids.numel() * 9 / 10;
  const Tensor train_ids = ids.slice(0, split), validation_ids = ids.slice(split, ids.numel());
  std::printf("%lld characters, %d distinct ids (with padding and [UNK]); %lld to train, %lld to validate\n",
              static_cast<long long>(ids.numel()), vocabulary_size, static_cast<long long>(split),
              static_cast<long long>(validation_ids.numel()));
  std::printf("Unigram model: validation %.3f bits per character\n",
              unigram_bpc(train_ids, validation_ids, vocabulary_size));

  const auto train = windows(train_ids, 32, true).prefetch(2);
  const auto validation = windows(validation_ids, 64, false);
  Model model = variant == "lstm" ? lstm(vocabulary_size) : transformer(vocabulary_size, 2);
  model.summary();
  model.compile(optimizers::Adam(variant == "lstm" ? 3e-3 : 2e-3),
                losses::SparseCategoricalCrossentropy({.from_logits = true}));

  const auto start = std::chrono::steady_clock::now();
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    FitOptions fit{.epochs = 1, .verbose = 0};
    if (steps_per_epoch > 0) fit.steps_per_epoch = steps_per_epoch;
    const auto history = model.fit(train, fit);
    const double loss = *model.evaluate(validation, {.verbose = 0}).get("loss");
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("Epoch %d/%d: train loss %.4f - validation loss %.4f - validation %.3f bits per character (%.0f s)\n",
                epoch, epochs, history["loss"].back(), loss, loss / std::log(2.0), seconds);
    std::fflush(stdout);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  Generator generator(7);
  const std::string seed = "This License ";
  std::printf("Sample (temperature 0.8) from \"%s\":\n%s\n", seed.c_str(),
              sample(model, vectorize, seed, sample_length, 0.8f, generator).c_str());
  std::printf("Trained %s for %d epochs in %.1f s (%d threads)\n", variant.c_str(), epochs, seconds,
              backend::num_threads());
  return 0;
}
