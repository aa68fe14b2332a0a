#include "tools/experiment/runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <functional>
#include <iostream>
#include <sstream>

#include "api/callbacks/backup_and_restore.h"
#include "api/callbacks/csv_logger.h"
#include "api/callbacks/event_log.h"
#include "api/training/progbar_logger.h"
#include "api/core/random.h"
#include "api/data/idx.h"
#include "api/data/image.h"
#include "tools/experiment/callbacks_builder.h"
#include "tools/experiment/compile_builder.h"
#include "tools/experiment/data_pipeline.h"
#include "tools/experiment/interrupt.h"
#include "tools/experiment/model_builder.h"
#include "tools/experiment/run_checkpoint.h"
#include "tools/experiment/run_directory.h"
#include "tools/experiment/strategy.h"

namespace tower::experiment {

namespace fs = std::filesystem;
using callbacks::Callback;
using callbacks::CallbackPtr;
using callbacks::Logs;

namespace {

// Runs a callback with the number of steps and the verbosity fit() cannot know: the training data is a
// generator (its size unknown to fit) and fit runs silently so that the progress bar is ours.
class WithParams : public Callback {
 public:
  WithParams(CallbackPtr inner, int verbose) : inner_(std::move(inner)), verbose_(verbose) {}
  void set_steps(std::int64_t steps) { steps_ = steps; }

  void before_train_begin(const Logs& logs) override {
    inner_->set_model(model());
    inner_->before_train_begin(logs);
  }
  void on_train_begin(const Logs& logs) override {
    callbacks::Params p = params();
    p.steps = steps_;
    p.verbose = verbose_;
    inner_->set_model(model());
    inner_->set_params(p);
    inner_->on_train_begin(logs);
  }
  void on_train_end(const Logs& logs) override { inner_->on_train_end(logs); }
  void on_epoch_begin(int epoch, const Logs& logs) override { inner_->on_epoch_begin(epoch, logs); }
  void add_epoch_logs(int epoch, Logs& logs) override { inner_->add_epoch_logs(epoch, logs); }
  void on_epoch_end(int epoch, const Logs& logs) override { inner_->on_epoch_end(epoch, logs); }
  void on_train_batch_begin(std::int64_t b, const Logs& logs) override { inner_->on_train_batch_begin(b, logs); }
  void on_train_batch_end(std::int64_t b, const Logs& logs) override { inner_->on_train_batch_end(b, logs); }
  void on_test_begin(const Logs& logs) override { inner_->on_test_begin(logs); }
  void on_test_end(const Logs& logs) override { inner_->on_test_end(logs); }
  void on_test_batch_begin(std::int64_t b, const Logs& logs) override { inner_->on_test_batch_begin(b, logs); }
  void on_test_batch_end(std::int64_t b, const Logs& logs) override { inner_->on_test_batch_end(b, logs); }

 private:
  CallbackPtr inner_;
  int verbose_;
  std::int64_t steps_ = -1;
};

Config logs_config(const Logs& logs) {
  Config c = Config::map();
  for (const auto& [k, v] : logs.entries()) c.set(k, v);
  return c;
}

std::string default_run_directory(const Experiment& e) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  return (fs::path("runs") / (e.name() + "-" + stamp)).string();
}

// The first path where a and b differ, skipping `ignored` paths; "" when equal. A key set to null is the key
// left out (the schema's default applies to both), so `steps_per_epoch: null` matches a file without it.
std::string first_difference(const Config& a, const Config& b, const std::string& path,
                             const std::vector<std::string>& ignored) {
  if (std::find(ignored.begin(), ignored.end(), path) != ignored.end()) return "";
  if (a.is_map() && b.is_map()) {
    static const Config null;
    for (const auto& [k, v] : a.as_map()) {
      const std::string d = first_difference(v, b.contains(k) ? b.at(k) : null, child_path(path, k), ignored);
      if (!d.empty()) return d;
    }
    for (const auto& [k, v] : b.as_map()) {
      if (a.contains(k)) continue;
      const std::string d = first_difference(null, v, child_path(path, k), ignored);
      if (!d.empty()) return d;
    }
    return "";
  }
  if (a.is_list() && b.is_list() && a.size() == b.size()) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      const std::string d = first_difference(a.as_list()[i], b.as_list()[i], item_path(path, i), ignored);
      if (!d.empty()) return d;
    }
    return "";
  }
  return a == b ? "" : (path.empty() ? std::string("(the whole file)") : path);
}

Index global_batch(const Experiment& e, const RunStrategy& strategy) {
  return e.at("fit.batch_size_per_replica").as_int() * strategy.num_replicas_in_sync();
}

// Makes the model (in the strategy's scope) and compiles it.
Model make_model(const Experiment& e, const RunStrategy& strategy, const Shape& example_shape) {
  std::optional<Model> model;
  strategy.in_scope([&] {
    model = build_model(e, example_shape);
    compile_model(e, *model);
  });
  return *model;
}

// "<title> loss: 0.1234 - accuracy: 0.9876"
void print_logs(std::ostream& log, const std::string& title, const Logs& logs) {
  log << title;
  const char* separator = " ";
  for (const auto& [k, v] : logs.entries()) {
    char value[32];
    std::snprintf(value, sizeof value, "%.4f", std::isnan(v) ? std::fabs(v) : v);  // "nan", never "-nan"
    log << separator << k << ": " << value;
    separator = " - ";
  }
  log << "\n";
}

// The state `read` returns; its failure (a damaged or mismatched checkpoint) also says what to do.
RunState resumable_state(const RunDirectory& dir, const std::function<RunState()>& read) {
  try {
    return read();
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string(e.what()) + ". The run cannot resume from this checkpoint: start it again " +
                             "in a new directory with `tower train " + dir.config_path() +
                             " --out NEW_DIR`, or put back an intact copy of " + dir.state_path());
  }
}

}  // namespace

Experiment resume_experiment(const std::string& run_directory, const Experiment* given) {
  const RunDirectory dir = RunDirectory::open(run_directory);
  Experiment saved = Experiment::from_document(Document::load_file(dir.config_path()));
  if (!given) return saved;
  const std::string diff = first_difference(given->document().root(), saved.document().root(), "",
                                            {"output", "fit.epochs", "fit.verbose"});
  if (!diff.empty()) {
    const Config* mine = given->document().find(diff);
    const Config* theirs = saved.document().find(diff);
    throw ExperimentError(given->document().value_mark(diff),
                          diff + ": " + (mine ? mine->to_json() : std::string("(absent)")) + " differs from " +
                              (theirs ? theirs->to_json() : std::string("(absent)")) + " in " + dir.config_path() +
                              "; a resumed run must be the same experiment (only fit.epochs, fit.verbose and "
                              "output may change)");
  }
  return *given;
}

TrainResult train(const Experiment& experiment, const TrainOptions& options) {
  std::ostream& log = options.log ? *options.log : std::cout;
  const bool resuming = !options.resume.empty();
  const bool default_place = !resuming && options.out.empty() && experiment.at("output.directory").is_null();
  const std::string named = resuming ? options.resume
                            : !options.out.empty() ? options.out
                            : default_place ? default_run_directory(experiment)
                                            : experiment.at("output.directory").as_string();
  const RunStrategy strategy(experiment);
  // Under a multi-worker strategy only the chief writes the run directory; the others read its checkpoint.
  const bool chief = strategy.is_chief();
  const RunDirectory dir = resuming          ? RunDirectory::open(named)
                           : !chief          ? RunDirectory::view(named)
                           : default_place   ? RunDirectory::create_unique(named)
                                             : RunDirectory::create(named);
  const std::string& out = dir.path();
  // Nothing in the directory is rewritten before its checkpoint is known readable.
  if (resuming) resumable_state(dir, [&] { return read_run_state(dir.state_path()); });
  if (resuming && chief) dir.remove_stale_temporaries();  // what a killed run left
  Document resolved = experiment.document();
  resolved.set("output.directory", out, Mark{"(run directory)"});
  if (chief) dir.write("config.yaml", resolved.to_yaml());

  const Experiment& e = experiment;
  const int verbose = static_cast<int>(e.at("fit.verbose").as_int());
  set_random_seed(e.seed());
  DataPipeline data = build_data(e, global_batch(e, strategy));
  if (chief) {
    Config class_names = Config::list();
    for (const std::string& name : data.class_names) class_names.as_list().emplace_back(name);
    dir.write("class_names.json", class_names.to_json() + "\n");
  }
  Model model = make_model(e, strategy, data.example_shape);
  if (chief) dir.write("summary.txt", model.summary_string());
  if (verbose > 0 && chief) log << model.summary_string();

  const std::optional<std::int64_t> steps_option =
      e.at("fit.steps_per_epoch").is_null() ? std::nullopt
                                            : std::optional<std::int64_t>(e.at("fit.steps_per_epoch").as_int());
  const std::int64_t epoch_steps = steps_option ? *steps_option : data.train->batches_per_pass();
  RunCheckpointOptions co;
  co.epoch_steps = epoch_steps;
  co.epoch_weights = e.at("output.epoch_weights").as_bool();
  co.interrupt_after_batches = options.interrupt_after_batches;
  co.partial_epochs = !steps_option;
  auto checkpoint = std::make_shared<RunCheckpoint>(dir, co);
  const callbacks::EventLogOptions event_options{.run = e.name(), .batch_events = e.at("output.batch_events").as_bool()};
  auto events =
      std::make_shared<WithParams>(std::make_shared<callbacks::EventLog>(dir.events_path(), event_options), verbose);
  auto progress = std::make_shared<WithParams>(std::make_shared<callbacks::ProgbarLogger>(options.log), verbose);
  std::vector<CallbackPtr> cbs = build_callbacks(e, dir.path());
  if (chief) {
    cbs.push_back(std::make_shared<callbacks::CSVLogger>(dir.history_path(), ",", resuming));
    cbs.push_back(events);
    cbs.push_back(progress);
    checkpoint->watch(cbs);
    cbs.push_back(checkpoint);
  }
  if (chief && options.on_run_directory) options.on_run_directory(dir.path());

  const int epochs = static_cast<int>(e.at("fit.epochs").as_int());
  int start_epoch = 0;
  std::int64_t first_batch = 0;
  bool stopped = false;
  if (resuming) {
    std::vector<CallbackPtr> watched(cbs.begin(), cbs.end() - (chief ? 1 : 0));
    const RunState state =
        resumable_state(dir, [&] { return restore_run_state(dir.state_path(), model.impl(), watched); });
    // The run's state is its one resumable state: a BackupAndRestore of the experiment, whose backup may be an
    // epoch ahead of it (written first at an epoch's end), starts afresh from it.
    for (const CallbackPtr& cb : cbs)
      if (auto backup = std::dynamic_pointer_cast<callbacks::BackupAndRestore>(cb)) fs::remove(backup->backup_path());
    // The rows of epochs trained after the state and lost with a crash are trained, and written, again.
    std::error_code ec;
    if (chief && state.history_bytes >= 0 &&
        fs::file_size(dir.history_path(), ec) > static_cast<std::uintmax_t>(state.history_bytes) && !ec)
      fs::resize_file(dir.history_path(), static_cast<std::uintmax_t>(state.history_bytes));
    checkpoint->restored(state);
    data.train->seek(state.iterations);
    start_epoch = state.stopped ? epochs : state.epoch_complete() ? state.epoch + 1 : state.epoch;
    stopped = state.stopped;
    first_batch = state.epoch_complete() ? 0 : state.epoch_batches;
    if (verbose > 0)
      log << "Resuming " << dir.path() << " at epoch " << start_epoch + 1 << "/" << epochs
          << (first_batch > 0 ? ", batch " + std::to_string(first_batch + 1) : std::string()) << "\n";
  }

  FitOptions fit;
  fit.verbose = 0;
  fit.callbacks = cbs;
  fit.validation_data = data.validation;
  fit.validation_freq = static_cast<int>(e.at("fit.validation.freq").as_int());
  if (!e.at("fit.validation.steps").is_null()) fit.validation_steps = e.at("fit.validation.steps").as_int();
  const LocatedConfig cw = e.at("fit.class_weight");
  for (const std::string& k : cw.keys()) fit.class_weight[std::stoi(k)] = cw[k].as_number();

  const auto started = std::chrono::steady_clock::now();
  std::optional<callbacks::History> last_history;
  {
    std::optional<InterruptHandler> handler;
    if (options.handle_sigint) handler.emplace();
    if (!options.handle_sigint) clear_interrupt();
    // The rest of an interrupted epoch runs as its own fit: fit() has no way to start an epoch part-way.
    if (first_batch > 0 && start_epoch < epochs) {
      FitOptions part = fit;
      part.epochs = start_epoch + 1;
      part.initial_epoch = start_epoch;
      checkpoint->start_epoch_at(first_batch);
      events->set_steps(epoch_steps - first_batch);
      progress->set_steps(epoch_steps - first_batch);
      last_history = model.fit(data.train->dataset(), part);
      ++start_epoch;
    }
    // A run a callback stopped (EarlyStopping) trains no further epoch; its fit only finishes (on_train_end).
    if (!checkpoint->interrupted() && (start_epoch < epochs || stopped)) {
      fit.epochs = epochs;
      fit.initial_epoch = start_epoch;
      fit.steps_per_epoch = steps_option;
      events->set_steps(epoch_steps);
      progress->set_steps(epoch_steps);
      callbacks::History h = model.fit(data.train->dataset(), fit);
      if (!h.epoch().empty()) last_history = h;
    }
    clear_interrupt();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  TrainResult result;
  result.run_directory = dir.path();
  result.chief = chief;
  const std::optional<RunState>& state = checkpoint->last_state();
  // An interrupt during the last batch of the last epoch stopped nothing.
  result.interrupted = checkpoint->interrupted() && state && !(state->epoch_complete() && state->epoch + 1 >= epochs);
  result.model = model.ptr();
  Config metrics = Config::map();
  metrics.set("run", e.name());
  metrics.set("epochs", epochs);
  metrics.set("epochs_completed", state ? (state->epoch_complete() ? state->epoch + 1 : state->epoch) : 0);
  metrics.set("steps", model.optimizer()->iterations());
  metrics.set("interrupted", result.interrupted);
  metrics.set("train_seconds", seconds);
  if (last_history && !last_history->epoch().empty()) {
    Logs last;
    for (const std::string& k : last_history->keys()) last.set(k, (*last_history)[k].back());
    metrics.set("last_epoch", logs_config(last));
  }
  if (result.interrupted) {
    if (chief)
      log << "Training interrupted; the checkpoint is in " << dir.state_path() << ". Continue with:\n  tower train "
          << dir.config_path() << " --resume " << dir.path() << "\n";
  } else {
    if (chief) model.save_weights(dir.final_weights_path());
    // Every worker evaluates: under a multi-worker strategy evaluation is a collective.
    if (data.test) {
      const Logs test = model.evaluate(*data.test, {.verbose = 0});
      metrics.set("test", logs_config(test));
      if (verbose > 0 && chief) print_logs(log, "Test:", test);
    }
  }
  result.metrics = metrics;
  if (!chief) return result;
  dir.write("metrics.json", metrics.to_json(2) + "\n");
  return result;
}

callbacks::Logs evaluate(const Experiment& e, const std::string& weights, const std::string& split,
                         std::ostream* log) {
  if (split != "test" && split != "validation")
    throw std::invalid_argument("evaluate: unknown split '" + split + "'; expected test or validation");
  const RunStrategy strategy(e);
  set_random_seed(e.seed());
  DataPipeline data = build_data(e, global_batch(e, strategy), false);
  const std::optional<data::Dataset>& ds = split == "test" ? data.test : data.validation;
  if (!ds) e.at("data").fail("the experiment has no " + split + " split (data." + split + ")");
  Model model = make_model(e, strategy, data.example_shape);
  const std::string path = resolve_weights(weights);
  model.load_weights(path);
  const Logs logs = model.evaluate(*ds, {.verbose = log ? 1 : 0});
  if (log) print_logs(*log, "Evaluated " + path + " on the " + split + " split:", logs);
  return logs;
}

namespace {

bool is_image_file(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".bmp" || ext == ".gif";
}

// The source's image shape before preprocessing.
Shape source_shape(const Experiment& e) {
  const std::string source = e.at("data.source").as_string();
  if (source == "fashion_mnist" || source == "mnist") return Shape({28, 28, 1});
  if (source == "cifar10") return Shape({32, 32, 3});
  if (source == "synthetic") {
    const auto d = e.at("data.shape").as_int_list();
    return Shape({d[0], d[1], d[2]});
  }
  const auto size = e.at("data.image_size").as_int_list();
  const std::string mode = e.at("data.color_mode").as_string();
  return Shape({size[0], size[1], mode == "rgb" ? 3 : mode == "rgba" ? 4 : 1});
}

}  // namespace

std::vector<Prediction> predict(const Experiment& e, const std::string& weights, const std::string& input, int top) {
  const RunStrategy strategy(e);
  set_random_seed(e.seed());
  const Shape shape = source_shape(e);
  const float scale = e.at("data.normalize").as_bool() ? 1.f / 255.f : 1.f;
  std::vector<std::string> names;
  std::vector<Tensor> images;
  const auto add_image = [&](const std::string& path) {
    Tensor img = data::resize_bilinear(data::decode_image(path, static_cast<int>(shape[2])), shape[0], shape[1]);
    float* p = img.data<float>();
    for (Index i = 0; i < img.numel(); ++i) p[i] *= scale;
    names.push_back(path);
    images.push_back(img);
  };
  if (fs::is_directory(input)) {
    std::vector<std::string> files;
    for (const auto& entry : fs::recursive_directory_iterator(input))
      if (entry.is_regular_file() && is_image_file(entry.path())) files.push_back(entry.path().string());
    std::sort(files.begin(), files.end());
    if (files.empty()) throw std::runtime_error("no images (.png, .jpg, .jpeg, .bmp, .gif) under " + input);
    for (const std::string& f : files) add_image(f);
  } else if (is_image_file(input)) {
    add_image(input);
  } else {
    const Tensor raw = data::idx::read(input);
    if (raw.rank() != 3 || raw.dtype() != DType::uint8)
      throw std::runtime_error(input + " is not an IDX file of uint8 images [N, height, width]");
    if (raw.numel() == 0)
      throw std::runtime_error(input + " holds no images (its shape is [" + std::to_string(raw.dim(0)) + ", " +
                               std::to_string(raw.dim(1)) + ", " + std::to_string(raw.dim(2)) + "])");
    if (shape[2] != 1)
      throw std::runtime_error(input + " holds grayscale images; the experiment's have " + std::to_string(shape[2]) +
                               " channels");
    for (Index i = 0; i < raw.dim(0); ++i) {
      Tensor img(Shape({raw.dim(1), raw.dim(2), 1}));
      const std::uint8_t* s = raw.data<std::uint8_t>() + i * raw.dim(1) * raw.dim(2);
      for (Index j = 0; j < img.numel(); ++j) img.data<float>()[j] = s[j] * scale;
      names.push_back(input + "[" + std::to_string(i) + "]");
      images.push_back(data::resize_bilinear(img, shape[0], shape[1]));
    }
  }
  std::vector<Index> dims = {static_cast<Index>(images.size())};
  for (Index d : shape) dims.push_back(d);
  Tensor x{Shape(dims)};
  for (std::size_t i = 0; i < images.size(); ++i)
    x.slice(static_cast<Index>(i), static_cast<Index>(i) + 1).copy_from(images[i]);

  Model model = make_model(e, strategy, example_shape(e));
  model.load_weights(resolve_weights(weights));
  const Index batch = global_batch(e, strategy);
  const std::vector<Tensor> outputs =
      model.predict(evaluation_pipeline(e, data::Dataset::from_tensor_slices({x}), batch));
  const Tensor& y = outputs.at(0);
  const Index classes = y.numel() / y.dim(0);
  std::vector<Prediction> out;
  for (Index i = 0; i < y.dim(0); ++i) {
    const float* row = y.data<float>() + i * classes;
    std::vector<int> order(static_cast<std::size_t>(classes));
    for (Index k = 0; k < classes; ++k) order[static_cast<std::size_t>(k)] = static_cast<int>(k);
    const std::size_t keep = std::min<std::size_t>(order.size(), static_cast<std::size_t>(std::max(top, 1)));
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep), order.end(),
                      [&](int a, int b) { return row[a] > row[b]; });
    Prediction p;
    p.input = names[static_cast<std::size_t>(i)];
    for (std::size_t k = 0; k < keep; ++k) p.top.emplace_back(order[k], row[order[k]]);
    out.push_back(p);
  }
  return out;
}

}  // namespace tower::experiment
