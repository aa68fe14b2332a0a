#include "distribute/parameter_server_strategy.h"

#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "api/io/config.h"
#include "distribute/detail/cluster_security.h"
#include "distribute/detail/parameter_server_cluster.h"

namespace tower::distribute {

namespace {

const char* const kWho = "ParameterServerStrategy: ";

std::vector<std::string> addresses(const Config& cluster, const std::string& role) {
  std::vector<std::string> out;
  if (!cluster.contains(role)) return out;
  const Config& list = cluster.at(role);
  if (!list.is_list())
    throw std::invalid_argument(std::string(kWho) + "cluster spec key \"cluster\"." + role +
                                " must be a list of \"host:port\" strings, got a " + list.type_name());
  for (const Config& a : list.as_list()) {
    if (!a.is_string() || a.as_string().find(':') == std::string::npos)
      throw std::invalid_argument(std::string(kWho) + "cluster spec key \"cluster\"." + role +
                                  " holds " + a.to_json() + ", not a \"host:port\" string");
    out.push_back(a.as_string());
  }
  return out;
}

// "worker_devices": a name (every worker) or a list of names (one per worker).
std::vector<std::string> device_names(const Config& value) {
  const auto fail = [&] {
    return std::invalid_argument(std::string(kWho) + "cluster spec key \"worker_devices\" must be a device name or a "
                                 "list of them (\"cuda:0\", \"cpu:0\"), got " + value.to_json());
  };
  if (value.is_string()) return {value.as_string()};
  if (!value.is_list() || value.as_list().empty()) throw fail();
  std::vector<std::string> out;
  for (const Config& name : value.as_list()) {
    if (!name.is_string()) throw fail();
    out.push_back(name.as_string());
  }
  return out;
}

std::string string_key(const Config& value, const std::string& key, const char* what) {
  if (!value.is_string() || value.as_string().empty())
    throw std::invalid_argument(std::string(kWho) + "cluster spec key " + key + " must be " + what + ", got " +
                                value.to_json());
  return value.as_string();
}

// "tls": {"ca", "certificate", "key"}, "token", "token_file", "insecure".
ClusterSecurity security_of(const Config& c) {
  ClusterSecurity s;
  if (c.contains("tls")) {
    const Config& tls = c.at("tls");
    if (!tls.is_map())
      throw std::invalid_argument(std::string(kWho) + "cluster spec key \"tls\" must be a map {\"ca\": ..., "
                                  "\"certificate\": ..., \"key\": ...} of PEM file paths, got " + tls.to_json());
    for (const auto& [key, value] : tls.as_map()) {
      const std::string name = "\"tls\"." + key;
      if (key == "ca") s.ca_file = string_key(value, name, "the path of a PEM file");
      else if (key == "certificate") s.certificate_file = string_key(value, name, "the path of a PEM file");
      else if (key == "key") s.key_file = string_key(value, name, "the path of a PEM file");
      else
        throw std::invalid_argument(std::string(kWho) + "cluster spec key \"tls\" has an unknown key \"" + key +
                                    "\" (known: ca, certificate, key)");
    }
  }
  if (c.contains("token")) s.token = string_key(c.at("token"), "\"token\"", "a non-empty string");
  if (c.contains("token_file")) s.token_file = string_key(c.at("token_file"), "\"token_file\"", "a file path");
  if (c.contains("insecure")) {
    if (!c.at("insecure").is_bool())
      throw std::invalid_argument(std::string(kWho) + "cluster spec key \"insecure\" must be true or false, got " +
                                  c.at("insecure").to_json());
    s.insecure = c.at("insecure").as_bool();
  }
  return s;
}

void check_positive(double value, const char* name) {
  if (!(value > 0) || !std::isfinite(value))
    throw std::invalid_argument(std::string(kWho) + name + " must be a finite number > 0, got " +
                                std::to_string(value));
}

class ParameterServerStrategyImpl final : public detail::StrategyImpl {
 public:
  ParameterServerStrategyImpl(ClusterSpec spec, const ParameterServerOptions& options) : spec_(std::move(spec)) {
    spec_.validate();
    devices_ = {spec_.compute_device(cuda_device_count())};
    check_positive(options.rpc_timeout_seconds, "rpc_timeout_seconds");
    check_positive(options.step_timeout_seconds, "step_timeout_seconds");
    check_positive(options.connect_timeout_seconds, "connect_timeout_seconds");
    check_positive(options.idle_timeout_seconds, "idle_timeout_seconds");
#ifdef TOWER_WITH_GRPC
    detail::check_exposure(spec_);
    cluster_ = detail::make_parameter_server_cluster(spec_, options);
#else
    throw std::runtime_error(std::string(kWho) +
                             "this build of Tower has no gRPC (Debian: libgrpc++-dev libprotobuf-dev "
                             "protobuf-compiler protobuf-compiler-grpc; then configure again)");
#endif
  }
  std::string type() const override { return "ParameterServerStrategy"; }
  int num_replicas_in_sync() const override { return 1; }
  const std::vector<LogicalDevice>& devices() const override { return devices_; }
  int num_workers() const override { return static_cast<int>(spec_.worker.size()); }
  int worker_index() const override { return spec_.task_index; }
  bool is_chief() const override { return spec_.task_type == "chief"; }
  std::unique_ptr<tower::detail::Replicas> replicate(ModelImpl& model) override {
#ifdef TOWER_WITH_GRPC
    return detail::make_parameter_server_replicas(model, cluster_, devices_[0]);
#else
    (void)model;
    return nullptr;
#endif
  }
  const ClusterSpec& spec() const { return spec_; }

 private:
  ClusterSpec spec_;
  std::vector<LogicalDevice> devices_;
#ifdef TOWER_WITH_GRPC
  std::shared_ptr<detail::ParameterServerCluster> cluster_;
#endif
};

}  // namespace

ClusterSpec ClusterSpec::from_json(const std::string& json) {
  Config c;
  try {
    c = Config::parse_json(json);
  } catch (const ConfigError& e) {
    throw std::invalid_argument(std::string(kWho) + "the cluster spec is not JSON: " + e.what());
  }
  if (!c.is_map() || !c.contains("cluster") || !c.at("cluster").is_map())
    throw std::invalid_argument(std::string(kWho) + "the cluster spec needs a map \"cluster\" (TF_CONFIG's form)");
  if (!c.contains("task") || !c.at("task").is_map() || !c.at("task").contains("type"))
    throw std::invalid_argument(std::string(kWho) + "the cluster spec needs \"task\": {\"type\": ..., \"index\": ...}");
  ClusterSpec spec;
  const Config& cluster = c.at("cluster");
  for (const auto& [key, value] : cluster.as_map())
    if (key != "chief" && key != "worker" && key != "ps")
      throw std::invalid_argument(std::string(kWho) + "the cluster spec names an unknown role \"" + key +
                                  "\" (known: chief, worker, ps)");
  spec.chief = addresses(cluster, "chief");
  spec.worker = addresses(cluster, "worker");
  spec.ps = addresses(cluster, "ps");
  const Config& task = c.at("task");
  if (!task.at("type").is_string())
    throw std::invalid_argument(std::string(kWho) + "cluster spec key \"task\".type must be a string");
  spec.task_type = task.at("type").as_string();
  if (task.contains("index")) {
    if (!task.at("index").is_int())
      throw std::invalid_argument(std::string(kWho) + "cluster spec key \"task\".index must be an integer");
    spec.task_index = static_cast<int>(task.at("index").as_int());
  }
  for (const auto& [key, value] : c.as_map())
    if (key != "cluster" && key != "task" && key != "worker_devices" && key != "chief_device" && key != "tls" &&
        key != "token" && key != "token_file" && key != "insecure" && key != "environment" && key != "rpc_layer")
      throw std::invalid_argument(std::string(kWho) + "the cluster spec has an unknown key \"" + key +
                                  "\" (known: cluster, task, worker_devices, chief_device, tls, token, token_file, "
                                  "insecure)");
  spec.security = security_of(c);
  if (c.contains("worker_devices")) spec.worker_devices = device_names(c.at("worker_devices"));
  if (c.contains("chief_device")) {
    if (!c.at("chief_device").is_string())
      throw std::invalid_argument(std::string(kWho) + "cluster spec key \"chief_device\" must be a device name "
                                  "(\"cuda:0\", \"cpu:0\"), got " + c.at("chief_device").to_json());
    spec.chief_device = c.at("chief_device").as_string();
  }
  spec.validate();
  return spec;
}

ClusterSpec ClusterSpec::from_environment() {
  const char* config = std::getenv("TOWER_CONFIG");
  if (!config || !*config)
    throw std::invalid_argument(std::string(kWho) +
                                "TOWER_CONFIG is not set: give every process the cluster spec and its task, e.g. "
                                "{\"cluster\": {\"chief\": [\"host0:2222\"], \"worker\": [\"host1:2222\"], \"ps\": "
                                "[\"host2:2222\"]}, \"task\": {\"type\": \"worker\", \"index\": 0}}");
  return from_json(config);
}

void ClusterSpec::validate() const {
  if (chief.size() != 1)
    throw std::invalid_argument(std::string(kWho) + "the cluster needs exactly one \"chief\" (the coordinator), got " +
                                std::to_string(chief.size()));
  if (worker.empty()) throw std::invalid_argument(std::string(kWho) + "the cluster has no \"worker\"");
  if (ps.empty()) throw std::invalid_argument(std::string(kWho) + "the cluster has no \"ps\" (parameter server)");
  const std::vector<std::string>* tasks = task_type == "chief"    ? &chief
                                          : task_type == "worker" ? &worker
                                          : task_type == "ps"     ? &ps
                                                                  : nullptr;
  if (!tasks)
    throw std::invalid_argument(std::string(kWho) + "unknown task type \"" + task_type +
                                "\" (known: chief, worker, ps)");
  if (task_index < 0 || task_index >= static_cast<int>(tasks->size()))
    throw std::invalid_argument(std::string(kWho) + "task index " + std::to_string(task_index) + " of \"" +
                                task_type + "\" is out of range: the cluster has " + std::to_string(tasks->size()));
  if (security.tls() && (security.ca_file.empty() || security.certificate_file.empty() || security.key_file.empty()))
    throw std::invalid_argument(std::string(kWho) + "cluster spec key \"tls\" needs all of \"ca\", "
                                "\"certificate\" and \"key\" (mutual TLS: every process proves itself)");
  if (!security.token.empty() && !security.token_file.empty())
    throw std::invalid_argument(std::string(kWho) + "the cluster spec gives both \"token\" and \"token_file\": "
                                "give one");
  if (worker_devices.size() > 1 && worker_devices.size() != worker.size())
    throw std::invalid_argument(std::string(kWho) + "\"worker_devices\" names " +
                                std::to_string(worker_devices.size()) + " devices for " +
                                std::to_string(worker.size()) +
                                " workers: give one device for every worker, or one per worker");
}

LogicalDevice ClusterSpec::compute_device(int visible_gpus) const {
  validate();
  if (task_type == "ps") return {"cpu:0", Device::cpu()};
  const bool is_worker = task_type == "worker";
  const std::string task = is_worker ? "worker " + std::to_string(task_index) + " (" +
                                           worker.at(static_cast<std::size_t>(task_index)) + ")"
                                     : "chief (" + chief.at(0) + ")";
  std::string name = is_worker ? "" : chief_device, key = "chief_device";
  bool chosen = !is_worker && !chief_device.empty();
  if (is_worker && !worker_devices.empty()) {
    const std::size_t i = worker_devices.size() == 1 ? 0 : static_cast<std::size_t>(task_index);
    name = worker_devices[i];
    key = worker_devices.size() == 1 ? "worker_devices" : "worker_devices[" + std::to_string(i) + "]";
    chosen = true;
  }
  // The first of the devices a strategy given none uses (default_devices()), for the GPUs this process sees.
  if (!chosen)
    return visible_gpus > 0 ? logical_gpus(visible_gpus, logical_gpus_per_gpu()).front()
                            : LogicalDevice{"cpu:0", Device::cpu()};
  return parse_logical_device(name, std::string(kWho) + task + " computes on " + key, visible_gpus);
}

ParameterServerStrategy::ParameterServerStrategy(ClusterSpec cluster, ParameterServerOptions options)
    : Strategy(std::make_shared<ParameterServerStrategyImpl>(std::move(cluster), options)) {}

const std::string& ParameterServerStrategy::task_type() const {
  return static_cast<const ParameterServerStrategyImpl&>(*impl()).spec().task_type;
}

int ParameterServerStrategy::task_index() const {
  return static_cast<const ParameterServerStrategyImpl&>(*impl()).spec().task_index;
}

bool grpc_available() {
#ifdef TOWER_WITH_GRPC
  return true;
#else
  return false;
#endif
}

}  // namespace tower::distribute
