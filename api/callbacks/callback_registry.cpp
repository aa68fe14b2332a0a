#include "api/callbacks/callback_registry.h"

#include <functional>
#include <map>
#include <variant>

#include "api/callbacks/callbacks.h"
#include "api/callbacks/event_log.h"
#include "api/callbacks/live_monitor.h"
#include "api/losses/loss.h"
#include "api/engine/layer_options.h"

namespace tower::callbacks {

namespace {

using Factory = std::function<CallbackPtr(const Config&)>;

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
         return std::make_shared<EarlyStopping>(read<EarlyStoppingOptions>(c, "EarlyStopping"));
       }},
      {"EventLog",
       [](const Config& c) -> CallbackPtr {
         const EventLogArgs a = read<EventLogArgs>(c, "EventLog");
         require_argument(a.path, "path", "EventLog");
         return std::make_shared<EventLog>(a.path, a.o);
       }},
      {"LiveMonitor",
       [](const Config& c) -> CallbackPtr {
         return std::make_shared<LiveMonitor>(read<LiveMonitorOptions>(c, "LiveMonitor"));
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
         return std::make_shared<ReduceLROnPlateau>(read<ReduceLROnPlateauOptions>(c, "ReduceLROnPlateau"));
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
