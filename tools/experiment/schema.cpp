#include "tools/experiment/schema.h"

#include <algorithm>
#include <filesystem>
#include <limits>

#include "distribute/logical_device.h"
#include "tools/experiment/located_config.h"

namespace tower::experiment {

namespace {

const Mark kDefault{"(default)"};
// The largest value of a key the run reads as an int (epochs, prefetch, ...).
constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();

void set_default(Document& doc, const std::string& path, Config value) {
  const Config* c = doc.find(path);
  if (c && !c->is_null()) return;
  // Missing parent maps (fit.validation for fit.validation.freq) are made too.
  for (std::size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', dot + 1)) {
    const Config* parent = doc.find(path.substr(0, dot));
    if (!parent || parent->is_null()) doc.set(path.substr(0, dot), Config::map(), kDefault);
  }
  doc.set(path, std::move(value), kDefault);
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

bool has_named_splits(const std::string& source) { return source != "image_directory"; }

void check_shape(const LocatedConfig& c, std::size_t rank) {
  const std::vector<std::int64_t> dims = c.as_int_list();
  if (rank && dims.size() != rank)
    c.fail("expected " + std::to_string(rank) + " sizes, got " + std::to_string(dims.size()));
  for (std::int64_t d : dims)
    if (d < 1) c.fail("sizes must be >= 1, got " + std::to_string(d));
}

void check_split(Document& doc, const std::string& path, const std::string& source, bool validation) {
  const LocatedConfig split(doc, path);
  if (split.is_null()) return;
  std::vector<std::string> keys = {"split", "take"};
  if (validation) keys.push_back("fraction");
  split.require_keys(keys);
  const LocatedConfig name = split["split"], fraction = split["fraction"];
  if (!fraction.is_null()) {
    if (!name.is_null()) split.fail("give either 'split' or 'fraction', not both");
    const double f = fraction.as_number();
    if (!(f > 0 && f < 1)) fraction.fail("must be in (0, 1), got " + std::to_string(f));
  } else if (name.is_null()) {
    split.fail(validation ? "missing 'split' (a split of the source) or 'fraction' (of the training split)"
                          : "missing required key 'split'");
  } else if (has_named_splits(source)) {
    name.as_choice({"train", "test"});
  } else {
    name.as_string();
  }
  split.get_int_in("take", 1, 1);
}

void check_padding(const LocatedConfig& p, std::int64_t v) {
  if (v < 0 || v > kIntMax)
    p.fail("padding must be in [0, " + std::to_string(kIntMax) + "], got " + std::to_string(v));
}

void check_preprocessing(const LocatedConfig& steps) {
  if (steps.is_null()) return;
  steps.require_list();
  bool random_seen = false;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const LocatedConfig s = steps[i];
    s.require_map();
    s.require("type");
    const std::string type = s["type"].as_choice(preprocessing_types());
    if (type == "rescale") {
      s.require_keys({"type", "scale", "offset"});
      s.require("scale");
      s["scale"].as_number();
      s.get_number("offset", 0);
    } else if (type == "resize" || type == "random_crop") {
      s.require_keys({"type", "height", "width"});
      s.require("height");
      s.require("width");
      s.get_int_in("height", 1, 1);
      s.get_int_in("width", 1, 1);
    } else if (type == "pad") {
      s.require_keys({"type", "padding", "value"});
      s.require("padding");
      const LocatedConfig p = s["padding"];
      if (p.value().is_list()) {
        if (p.size() != 2) p.fail("expected an int, [height, width] or [[top, bottom], [left, right]]");
        for (std::size_t k = 0; k < 2; ++k) {
          if (p[k].value().is_list()) {
            for (std::int64_t v : p[k].as_int_list()) check_padding(p, v);
          } else {
            check_padding(p, p[k].as_int());
          }
        }
      } else {
        check_padding(p, p.as_int());
      }
      s.get_number("value", 0);
    } else if (type == "normalize") {
      s.require_keys({"type", "mean", "std"});
      s.require("mean");
      s.require("std");
      s["mean"].as_number_list();
      for (double v : s["std"].as_number_list())
        if (!(v > 0)) s["std"].fail("standard deviations must be > 0");
    } else if (type == "random_flip") {
      s.require_keys({"type", "mode"});
      if (!s["mode"].is_null()) s["mode"].as_choice({"horizontal", "vertical", "horizontal_and_vertical"});
    }
    if (is_random_preprocessing(type)) {
      random_seen = true;
    } else if (random_seen && (type == "resize" || type == "pad")) {
      s["type"].fail("'" + type + "' cannot follow a random step (random_flip, random_crop): random steps run on "
                     "training batches after the per-image steps; move it before them");
    }
  }
}

void check_data(Document& doc) {
  const LocatedConfig data(doc, "data");
  if (!data.exists()) LocatedConfig(doc, "").fail("missing required section 'data'");
  data.require_map();
  data.require_keys({"source", "directory", "normalize", "image_size", "color_mode", "class_names", "shape",
                     "classes", "train_examples", "test_examples", "train", "validation", "test", "preprocessing",
                     "shuffle_buffer", "prefetch", "parallel_calls"});
  data.require("source");
  const std::string source = data["source"].as_choice(data_sources());
  const auto only_for = [&](const std::string& key, const std::string& which) {
    if (!data[key].is_null() && source != which)
      data[key].fail_key("'" + key + "' applies to source " + which + ", not " + source);
  };
  for (const char* key : {"image_size", "color_mode", "class_names"}) only_for(key, "image_directory");
  for (const char* key : {"shape", "classes", "train_examples", "test_examples"}) only_for(key, "synthetic");
  if (source == "synthetic") {
    if (!data["directory"].is_null()) data["directory"].fail_key("source synthetic reads no directory");
    set_default(doc, "data.shape", Config::List{28, 28, 1});
    set_default(doc, "data.classes", 10);
    set_default(doc, "data.train_examples", 1024);
    set_default(doc, "data.test_examples", 256);
    check_shape(data["shape"], 3);
    data.get_int_in("classes", 10, 2);
    data.get_int_in("train_examples", 1, 1);
    data.get_int_in("test_examples", 1, 1);
  } else if (source == "fashion_mnist") {
    set_default(doc, "data.directory", "/usr/share/datasets/fashion-mnist");
  } else if (data["directory"].is_null()) {
    data.fail("source " + source + " needs 'directory' (where its files are)");
  }
  if (!data["directory"].is_null() && std::filesystem::path(data["directory"].as_string()).is_relative()) {
    // Resolved against the working directory now, so that the run directory's config.yaml reads the same data
    // from anywhere (tower evaluate RUN/config.yaml, tower train --resume RUN).
    const std::string absolute =
        (std::filesystem::current_path() / data["directory"].as_string()).lexically_normal().string();
    doc.set("data.directory", absolute, doc.value_mark("data.directory"));
  }
  if (source == "image_directory") {
    set_default(doc, "data.image_size", Config::List{256, 256});
    set_default(doc, "data.color_mode", "rgb");
    check_shape(data["image_size"], 2);
    data["color_mode"].as_choice({"rgb", "grayscale", "rgba"});
    if (!data["class_names"].is_null()) {
      data["class_names"].require_list();
      for (std::size_t i = 0; i < data["class_names"].size(); ++i) data["class_names"][i].as_string();
    }
  }
  set_default(doc, "data.normalize", true);
  data["normalize"].as_bool();

  // A split given in part ({take: 512}, from --set data.train.take=512) keeps the default's name.
  if (data["train"].is_null() || data["train"].value().is_map()) set_default(doc, "data.train.split", "train");
  if (has_named_splits(source) && (!data.value().contains("test") || data["test"].value().is_map()))
    set_default(doc, "data.test.split", "test");
  check_split(doc, "data.train", source, false);
  check_split(doc, "data.validation", source, true);
  check_split(doc, "data.test", source, false);
  check_preprocessing(LocatedConfig(doc, "data.preprocessing"));
  set_default(doc, "data.preprocessing", Config::list());
  data.get_int_in("shuffle_buffer", 0, 0);
  set_default(doc, "data.prefetch", 2);
  data.get_int_in("prefetch", 2, 0, kIntMax);
  set_default(doc, "data.parallel_calls", 0);
  data.get_int_in("parallel_calls", 0, 0, kIntMax);
}

void check_model(Document& doc) {
  const LocatedConfig model(doc, "model");
  if (!model.exists()) LocatedConfig(doc, "").fail("missing required section 'model'");
  model.require_map();
  const bool app = !model["application"].is_null(), seq = !model["layers"].is_null(), fn = !model["nodes"].is_null();
  if (app + seq + fn != 1)
    model.fail("give exactly one of 'application' (a model such as MobileNetV2), 'layers' (a Sequential list) or "
               "'nodes' (a functional graph)");
  if (!model["name"].is_null()) model["name"].as_string();
  if (app) {
    model["application"].as_string();  // its options are checked by the application registry
    return;
  }
  if (seq) {
    model.require_keys({"name", "layers", "input_shape"});
    if (!model["input_shape"].is_null()) check_shape(model["input_shape"], 0);
    const LocatedConfig layers = model["layers"];
    layers.require_list();
    if (layers.size() == 0) layers.fail("a Sequential model needs at least one layer");
    for (std::size_t i = 0; i < layers.size(); ++i) {
      layers[i].require_map();
      layers[i].require("type");
      layers[i]["type"].as_string();
      if (!layers[i]["inputs"].is_null())
        layers[i]["inputs"].fail_key("'inputs' belongs to functional 'nodes'; a 'layers' list is a chain");
    }
    return;
  }
  model.require_keys({"name", "nodes", "outputs"});
  const LocatedConfig nodes = model["nodes"];
  nodes.require_list();
  if (nodes.size() == 0) nodes.fail("a functional model needs at least one node");
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const LocatedConfig n = nodes[i];
    n.require_map();
    n.require("type");
    n["type"].as_string();
    if (!n["name"].is_null()) n["name"].as_string();
    const LocatedConfig inputs = n["inputs"];
    if (inputs.value().is_list()) {
      for (std::size_t k = 0; k < inputs.size(); ++k) inputs[k].as_string();
    } else if (!inputs.is_null()) {
      inputs.as_string();
    }
  }
  const LocatedConfig outputs = model["outputs"];
  if (outputs.value().is_list()) {
    for (std::size_t k = 0; k < outputs.size(); ++k) outputs[k].as_string();
  } else if (!outputs.is_null()) {
    outputs.as_string();
  }
}

void check_named_object(const LocatedConfig& c, const std::string& what) {
  if (c.value().is_string()) return;
  if (c.value().is_map() && (c.value().contains("type") || c.value().contains("class_name"))) {
    (c.value().contains("type") ? c["type"] : c["class_name"]).as_string();
    return;
  }
  c.fail("expected " + what + ": a name, or a map {type: <class name>, <arguments>}; got " + describe(c.value()));
}

void check_compile(Document& doc) {
  const LocatedConfig compile(doc, "compile");
  if (!compile.exists()) LocatedConfig(doc, "").fail("missing required section 'compile'");
  compile.require_keys({"optimizer", "loss", "metrics", "weighted_metrics", "loss_weights"});
  compile.require("optimizer");
  compile.require("loss");
  check_named_object(compile["optimizer"], "an optimizer");
  const LocatedConfig loss = compile["loss"];
  if (loss.value().is_list()) {
    for (std::size_t i = 0; i < loss.size(); ++i) check_named_object(loss[i], "a loss");
  } else {
    check_named_object(loss, "a loss");
  }
  for (const char* key : {"metrics", "weighted_metrics"}) {
    set_default(doc, std::string("compile.") + key, Config::list());
    const LocatedConfig metrics = compile[key];
    metrics.require_list();
    for (std::size_t i = 0; i < metrics.size(); ++i) check_named_object(metrics[i], "a metric");
  }
  if (!compile["loss_weights"].is_null()) compile["loss_weights"].as_number_list();
}

void check_fit(Document& doc) {
  set_default(doc, "fit", Config::map());
  const LocatedConfig fit(doc, "fit");
  fit.require_keys({"epochs", "batch_size_per_replica", "steps_per_epoch", "verbose", "class_weight", "validation"});
  set_default(doc, "fit.epochs", 1);
  set_default(doc, "fit.batch_size_per_replica", 32);
  set_default(doc, "fit.verbose", 1);
  fit.get_int_in("epochs", 1, 1, kIntMax);
  fit.get_int_in("batch_size_per_replica", 32, 1);
  fit.get_int_in("steps_per_epoch", 1, 1);
  fit.get_int_in("verbose", 1, 0, 2);
  const LocatedConfig cw = fit["class_weight"];
  if (!cw.is_null()) {
    cw.require_map();
    for (const std::string& key : cw.keys()) {
      if (key.empty() || key.size() > 9 || key.find_first_not_of("0123456789") != std::string::npos)
        cw[key].fail_key("class_weight keys are class indices (0, 1, ...), got '" + key + "'");
      cw[key].as_number();
    }
  }
  const LocatedConfig val = fit["validation"];
  val.require_keys({"freq", "steps", "batch_size"});
  set_default(doc, "fit.validation.freq", 1);
  val.get_int_in("freq", 1, 1, kIntMax);
  val.get_int_in("steps", 1, 1);
  val.get_int_in("batch_size", 1, 1);
}

void check_device(const LocatedConfig& c) {
  const std::string& text = c.as_string();
  // The location names the key, so the message needs no caller.
  c.locate([&] { return distribute::parse_logical_device(text, ""); });
}

// A strategy's list of devices: absent (every GPU, else the CPU) or a non-empty list of known devices.
void check_device_list(const LocatedConfig& devices) {
  if (devices.is_null()) return;
  devices.require_list();
  if (devices.size() == 0)
    devices.fail("an empty device list; leave '" + devices.path().substr(devices.path().rfind('.') + 1) +
                 "' out to use every GPU (or the CPU)");
  for (std::size_t i = 0; i < devices.size(); ++i) check_device(devices[i]);
}

void check_strategy(Document& doc) {
  set_default(doc, "strategy", Config::map());
  set_default(doc, "strategy.type", "default");
  const LocatedConfig s(doc, "strategy");
  s.require_map();
  const std::string type = s["type"].as_choice(strategy_types());
  const std::vector<std::string> keys_by_type[] = {
      {"type"},
      {"type", "device"},
      {"type", "devices", "cross_device_ops", "bucket_cap_mb"},
      {"type", "communication"},
      {"type", "compute_devices", "parameter_device"}};
  const auto& types = strategy_types();
  const std::size_t t = static_cast<std::size_t>(std::find(types.begin(), types.end(), type) - types.begin());
  for (const std::string& key : s.keys()) {
    if (contains(keys_by_type[t], key)) continue;
    for (std::size_t other = 0; other < types.size(); ++other)
      if (contains(keys_by_type[other], key))
        s[key].fail_key("'" + key + "' applies to strategy type " + types[other] + ", not " + type);
  }
  s.require_keys({"type", "device", "devices", "cross_device_ops", "bucket_cap_mb", "communication", "compute_devices",
                  "parameter_device"});
  if (type == "one_device") {
    set_default(doc, "strategy.device", "cpu:0");
    check_device(s["device"]);
  } else if (type == "mirrored") {
    check_device_list(s["devices"]);
    if (!s["cross_device_ops"].is_null())
      s["cross_device_ops"].as_choice(
          {"NcclAllReduce", "HierarchicalCopyAllReduce", "ReductionToOneDevice", "InProcessAllReduce"});
    if (!s["bucket_cap_mb"].is_null() && !(s["bucket_cap_mb"].as_number() > 0))
      s["bucket_cap_mb"].fail("the gradient bucket cap must be a positive number of MiB (25 by default)");
  } else if (type == "multi_worker") {
    set_default(doc, "strategy.communication", "auto");
    s["communication"].as_choice({"auto", "mpi", "nccl"});
  } else if (type == "central_storage") {
    check_device_list(s["compute_devices"]);
    if (!s["parameter_device"].is_null()) check_device(s["parameter_device"]);
  }
}

void check_callbacks(Document& doc) {
  set_default(doc, "callbacks", Config::list());
  const LocatedConfig cbs(doc, "callbacks");
  cbs.require_list();
  for (std::size_t i = 0; i < cbs.size(); ++i) check_named_object(cbs[i], "a callback");
}

void check_output(Document& doc) {
  set_default(doc, "output", Config::map());
  const LocatedConfig out(doc, "output");
  out.require_keys({"directory", "epoch_weights", "batch_events"});
  if (!out["directory"].is_null()) out["directory"].as_string();
  set_default(doc, "output.epoch_weights", true);
  set_default(doc, "output.batch_events", true);
  out["epoch_weights"].as_bool();
  out["batch_events"].as_bool();
}

}  // namespace

const std::vector<std::string>& data_sources() {
  static const std::vector<std::string> s = {"fashion_mnist", "mnist", "cifar10", "image_directory", "synthetic"};
  return s;
}

const std::vector<std::string>& preprocessing_types() {
  static const std::vector<std::string> s = {"rescale", "resize", "pad", "normalize", "random_flip", "random_crop"};
  return s;
}

bool is_random_preprocessing(const std::string& type) { return type == "random_flip" || type == "random_crop"; }

const std::vector<std::string>& strategy_types() {
  static const std::vector<std::string> s = {"default", "one_device", "mirrored", "multi_worker", "central_storage"};
  return s;
}

void validate_experiment(Document& doc, const std::string& default_name) {
  const LocatedConfig top(doc, "");
  top.require_keys({"seed", "name", "description", "data", "model", "compile", "fit", "strategy", "callbacks",
                    "output"});
  set_default(doc, "name", default_name);
  top["name"].as_string();
  if (top["name"].as_string().empty() || top["name"].as_string().find('/') != std::string::npos)
    top["name"].fail("a run name must be non-empty and hold no '/'");
  if (!top["description"].is_null()) top["description"].as_string();
  set_default(doc, "seed", 1337);
  top.get_int_in("seed", 1337, 0);
  check_data(doc);
  check_model(doc);
  check_compile(doc);
  check_fit(doc);
  check_strategy(doc);
  check_callbacks(doc);
  check_output(doc);
}

}  // namespace tower::experiment
