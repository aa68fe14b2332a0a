#include "api/callbacks/callback_registry.h"

#include <functional>
#include <map>
#include <variant>

#include "api/callbacks/callbacks.h"
#include "api/callbacks/event_log.h"
#include "api/callbacks/live_monitor.h"
#include "api/losses/loss.h"
#include "api/models/layer_options.h"

namespace tower::callbacks {

namespace {

using Factory = std::function<CallbackPtr(const Config&)>;

// The arguments each callback reads, listed once with their Keras names (see layer_options.h).
struct EarlyStoppingArgs {
  EarlyStoppingOptions o;
  template <class V> void visit(V&& v) {
    v("monitor", o.monitor);
    v("min_delta", o.min_delta);
    v("patience", o.patience);
    v("verbose", o.verbose);
    v("mode", o.mode);
    v("baseline", o.baseline);
    v("restore_best_weights", o.restore_best_weights);
    v("start_from_epoch", o.start_from_epoch);
  }
};

struct ReduceLROnPlateauArgs {
  ReduceLROnPlateauOptions o;
  template <class V> void visit(V&& v) {
    v("monitor", o.monitor);
    v("factor", o.factor);
    v("patience", o.patience);
    v("verbose", o.verbose);
    v("mode", o.mode);
    v("min_delta", o.min_delta);
    v("cooldown", o.cooldown);
    v("min_lr", o.min_lr);
  }
};

struct ModelCheckpointArgs {
  std::string filepath;
  ModelCheckpointOptions o;
  template <class V> void visit(V&& v) {
    v("filepath", filepath);
    v("monitor", o.monitor);
    v("verbose", o.verbose);
    v("save_best_only", o.save_best_only);
    v("save_weights_only", o.save_weights_only);
    v("mode", o.mode);
    v("initial_value_threshold", o.initial_value_threshold);
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
    v("delete_checkpoint", o.delete_checkpoint);
  }
};

struct EventLogArgs {
  std::string path;
  EventLogOptions o;
  template <class V> void visit(V&& v) {
    v("path", path);
    v("run", o.run);
    v("batch_events", o.batch_events);
    v("flush_seconds", o.flush_seconds);
  }
};

struct LiveMonitorArgs {
  LiveMonitorOptions o;
  template <class V> void visit(V&& v) {
    v("host", o.host);
    v("port", o.port);
    v("run", o.run);
    v("queue_size", o.queue_size);
    v("flush_interval", o.flush_interval);
    v("reconnect_interval", o.reconnect_interval);
    v("close_timeout", o.close_timeout);
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

template <class Args>
Args read(const Config& args, const std::string& type) {
  return options_from_config<Args>(args.is_null() ? Config::map() : args, type);
}

const std::map<std::string, Factory>& factories() {
  static const std::map<std::string, Factory> by_class = {
      {"BackupAndRestore",
       [](const Config& c) -> CallbackPtr {
         Config args = c.is_null() ? Config::map() : c;
         auto freq = args.is_map() ? take_save_freq(args, "BackupAndRestore") : std::string("epoch");
         BackupAndRestoreArgs a = read<BackupAndRestoreArgs>(args, "BackupAndRestore");
         require_argument(a.backup_dir, "backup_dir", "BackupAndRestore");
         a.o.save_freq = freq;
         return std::make_shared<BackupAndRestore>(a.backup_dir, a.o);
       }},
      {"CSVLogger",
       [](const Config& c) -> CallbackPtr {
         const CSVLoggerArgs a = read<CSVLoggerArgs>(c, "CSVLogger");
         require_argument(a.filename, "filename", "CSVLogger");
         return std::make_shared<CSVLogger>(a.filename, a.separator, a.append);
       }},
      {"EarlyStopping",
       [](const Config& c) -> CallbackPtr {
         return std::make_shared<EarlyStopping>(read<EarlyStoppingArgs>(c, "EarlyStopping").o);
       }},
      {"EventLog",
       [](const Config& c) -> CallbackPtr {
         const EventLogArgs a = read<EventLogArgs>(c, "EventLog");
         require_argument(a.path, "path", "EventLog");
         return std::make_shared<EventLog>(a.path, a.o);
       }},
      {"LiveMonitor",
       [](const Config& c) -> CallbackPtr {
         return std::make_shared<LiveMonitor>(read<LiveMonitorArgs>(c, "LiveMonitor").o);
       }},
      {"ModelCheckpoint",
       [](const Config& c) -> CallbackPtr {
         Config args = c.is_null() ? Config::map() : c;
         auto freq = args.is_map() ? take_save_freq(args, "ModelCheckpoint") : std::string("epoch");
         ModelCheckpointArgs a = read<ModelCheckpointArgs>(args, "ModelCheckpoint");
         require_argument(a.filepath, "filepath", "ModelCheckpoint");
         a.o.save_freq = freq;
         return std::make_shared<ModelCheckpoint>(a.filepath, a.o);
       }},
      {"ReduceLROnPlateau",
       [](const Config& c) -> CallbackPtr {
         return std::make_shared<ReduceLROnPlateau>(read<ReduceLROnPlateauArgs>(c, "ReduceLROnPlateau").o);
       }},
      {"TerminateOnNaN",
       [](const Config& c) -> CallbackPtr {
         read<NoArgs>(c, "TerminateOnNaN");
         return std::make_shared<TerminateOnNaN>();
       }},
  };
  return by_class;
}

}  // namespace

std::vector<std::string> callback_types() {
  std::vector<std::string> out;
  for (const auto& [k, v] : factories()) out.push_back(k);
  return out;
}

CallbackPtr callback_from_config(const Config& c) {
  const auto [type, arguments] = losses::detail::resolve_name(c, {}, "callback");
  if (type == "LearningRateScheduler" || type == "LambdaCallback")
    throw ConfigError(type + " takes C++ functions and has no config form; use an optimizer learning-rate "
                             "schedule, or add the callback in C++");
  return losses::detail::from_registry<CallbackPtr>(c, factories(), {}, "callback");
}

}  // namespace tower::callbacks
