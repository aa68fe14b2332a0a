#include "api/callbacks/callback_registry.h"

#include <functional>
#include <map>
#include <variant>

#include "api/callbacks/callbacks.h"
#include "api/callbacks/event_log.h"
#include "api/callbacks/live_monitor.h"
#include "api/engine/layer_options.h"

namespace tower::callbacks {

namespace {

// The arguments of the callbacks that take more than their options struct (whose visit() lists the rest by
// their Keras names; save_freq, a string or a number, is read by take_save_freq).
struct ModelCheckpointArgs {
  std::string filepath;
  ModelCheckpointOptions o;
  template <class V> void visit(V&& v) {
    v("filepath", filepath);
    o.visit(v);
  }
};

struct CSVLoggerArgs {
  std::string filename, separator = ",";
  bool append = false;
  template <class V> void visit(V&& v) {
    v("filename", filename);
    v("separator", separator);
    v("append", append);
  }
};

struct BackupAndRestoreArgs {
  std::string backup_dir;
  BackupAndRestoreOptions o;
  template <class V> void visit(V&& v) {
    v("backup_dir", backup_dir);
    o.visit(v);
  }
};

struct EventLogArgs {
  std::string path;
  EventLogOptions o;
  template <class V> void visit(V&& v) {
    v("path", path);
    o.visit(v);
  }
};

struct NoArgs {
  template <class V> void visit(V&&) {}
};

// save_freq is a string or a number, which the options glue has no field type for: read it here and drop it.
std::variant<std::string, std::int64_t> take_save_freq(Config& args, const std::string& type) {
  std::variant<std::string, std::int64_t> out = std::string("epoch");
  if (!args.contains("save_freq")) return out;
  const Config value = args.at("save_freq");
  if (value.is_string()) {
    out = value.as_string();
  } else if (value.is_int()) {
    out = value.as_int();
  } else {
    throw ConfigError(type + ": argument 'save_freq': expected \"epoch\" or a number of batches, got " +
                      value.type_name() + " " + value.to_json());
  }
  Config rest = Config::map();
  for (const auto& [k, v] : args.as_map())
    if (k != "save_freq") rest.set(k, v);
  args = rest;
  return out;
}

void require_argument(const std::string& value, const std::string& key, const std::string& type) {
  if (value.empty()) throw ConfigError(type + ": missing required argument '" + key + "'");
}

// The arguments of a callback that saves (Args::o has save_freq), save_freq included.
template <class Args>
Args read_saving_arguments(const Config& c, const std::string& type) {
  Config args = c;
  const auto freq = take_save_freq(args, type);
  Args a = options_from_config<Args>(args, type);
  a.o.save_freq = freq;
  return a;
}

}  // namespace

Registry<CallbackPtr>& registry() {
  static Registry<CallbackPtr> r("callback");
  static const bool populated = [] {
    r.add("BackupAndRestore", [](const Config& c) -> CallbackPtr {
      const auto a = read_saving_arguments<BackupAndRestoreArgs>(c, "BackupAndRestore");
      require_argument(a.backup_dir, "backup_dir", "BackupAndRestore");
      return std::make_shared<BackupAndRestore>(a.backup_dir, a.o);
    });
    r.add("CSVLogger", [](const Config& c) -> CallbackPtr {
      const CSVLoggerArgs a = options_from_config<CSVLoggerArgs>(c, "CSVLogger");
      require_argument(a.filename, "filename", "CSVLogger");
      return std::make_shared<CSVLogger>(a.filename, a.separator, a.append);
    });
    r.add("EarlyStopping", [](const Config& c) -> CallbackPtr {
      return std::make_shared<EarlyStopping>(options_from_config<EarlyStoppingOptions>(c, "EarlyStopping"));
    });
    r.add("EventLog", [](const Config& c) -> CallbackPtr {
      const EventLogArgs a = options_from_config<EventLogArgs>(c, "EventLog");
      require_argument(a.path, "path", "EventLog");
      return std::make_shared<EventLog>(a.path, a.o);
    });
    r.add("LiveMonitor", [](const Config& c) -> CallbackPtr {
      return std::make_shared<LiveMonitor>(options_from_config<LiveMonitorOptions>(c, "LiveMonitor"));
    });
    r.add("ModelCheckpoint", [](const Config& c) -> CallbackPtr {
      const auto a = read_saving_arguments<ModelCheckpointArgs>(c, "ModelCheckpoint");
      require_argument(a.filepath, "filepath", "ModelCheckpoint");
      return std::make_shared<ModelCheckpoint>(a.filepath, a.o);
    });
    r.add("ReduceLROnPlateau", [](const Config& c) -> CallbackPtr {
      return std::make_shared<ReduceLROnPlateau>(options_from_config<ReduceLROnPlateauOptions>(c, "ReduceLROnPlateau"));
    });
    r.add("TerminateOnNaN", [](const Config& c) -> CallbackPtr {
      options_from_config<NoArgs>(c, "TerminateOnNaN");
      return std::make_shared<TerminateOnNaN>();
    });
    return true;
  }();
  (void)populated;
  return r;
}

std::vector<std::string> callback_types() { return registry().class_names(); }

CallbackPtr callback_from_config(const Config& c) {
  const std::string type = tower::detail::read_serialized(c, "callback").first;
  if (type == "LearningRateScheduler" || type == "LambdaCallback")
    throw ConfigError(type + " takes C++ functions and has no config form; use an optimizer learning-rate "
                             "schedule, or add the callback in C++");
  return registry().from_config(c);
}

}  // namespace tower::callbacks
