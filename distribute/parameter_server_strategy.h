#pragma once
// ParameterServerStrategy (tf.distribute.experimental.ParameterServerStrategy with its ClusterCoordinator):
// asynchronous training over processes that talk over gRPC. One program runs in every process of a cluster; a
// cluster spec like TensorFlow's TF_CONFIG tells each process its role:
//
//   TOWER_CONFIG='{"cluster": {"chief": ["host0:2222"], "worker": ["host1:2222", "host2:2222"],
//                              "ps": ["host3:2222", "host4:2222"]},
//                  "task": {"type": "worker", "index": 1}}' ./train
//
//   distribute::ParameterServerStrategy strategy;             // reads TOWER_CONFIG
//   Model model = [&] {
//     auto scope = strategy.scope();
//     Model m = make_model();
//     m.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(),
//               {metrics::SparseCategoricalAccuracy()});
//     return m;
//   }();
//   FitOptions options;
//   options.epochs = 5;
//   options.steps_per_epoch = 200;                            // required, as TensorFlow requires it
//   model.fit(worker_dataset, options);                       // every role calls fit
//
// Roles (fit returns on every process when the coordinator's fit ends):
// - "ps" (parameter server): holds a shard of the model's variables, round robin over the parameter servers
//   (variable k of the model's weights() on parameter server k % number of parameter servers, TensorFlow's
//   placement without a partitioner), and the optimizer's slots for them. It applies its optimizer (the one
//   given to compile, with the variables' regularizers) to its shard whenever a worker pushes gradients, one push
//   at a time in arrival order, and takes the values a step gave the non-trainable variables of its shard.
// - "worker": runs the steps the coordinator schedules on it: pulls every variable from the parameter servers,
//   runs forward and backward on the next batch of the dataset given to its fit (repeated when it runs out; shard
//   or shuffle it per worker with task_index(), as TensorFlow's dataset_fn does), pushes the gradients to the
//   parameter servers and returns the step's loss and metrics. Workers never wait for one another. A worker
//   computes on its compute device (ClusterSpec::compute_device: by default the first GPU its process sees, else
//   the CPU): its model and plans live there, each pulled value is copied into its variable there (one copy from
//   the received bytes), the step's inputs go there as fit's do, and each gradient comes back to the host once per
//   step for the push.
// - "chief" (the coordinator): at the start of fit sends its model's variables to the parameter servers, then
//   queues steps_per_epoch steps per epoch; each idle worker takes the next one. Callbacks see each step's logs
//   as it finishes (losses and metrics are means over the epoch's finished steps, weighted by their examples),
//   and at the end of every epoch the model's variables take the parameter servers' values, so validation,
//   checkpoints and evaluate after fit run on the chief with the trained variables, on the chief's compute device.
//   Only the chief writes files and logs.
// Parameter servers always compute on the CPU (the optimizer's updates run on the host), as TensorFlow's do.
//
// Failures. Every call has a deadline. A worker that fails (its process died, or a step did not finish within
// step_timeout_seconds) is dropped and its step runs on another worker; training goes on while one worker is
// left. A parameter server that fails ends fit on the chief with std::runtime_error naming it ("parameter server
// 1 (host4:2222)"); workers and parameter servers still reachable end their fit too. A worker or parameter server
// that hears nothing for idle_timeout_seconds (the chief is gone) ends its fit with std::runtime_error.
//
// Security. Every call between the processes is refused (UNAUTHENTICATED, logged once per peer host) unless it
// proves itself in the ways the cluster spec asks:
// - "tls": {"ca": "ca.pem", "certificate": "node.pem", "key": "node.key"}: mutual TLS. Every server presents this
//   process's certificate and takes only calls whose client presents one signed by the CA; every channel checks
//   the server's certificate against the CA and the address it dials (its subjectAltName names the host or IP).
// - "token": "..." or "token_file": "/path" (readable by its owner only): a secret every call carries (gRPC
//   metadata "tower-cluster-token"), compared in constant time. Over plaintext it stops other users' processes on
//   a network nobody snoops; with TLS it is a second factor.
// Without either, every address of the cluster must be a loopback address (localhost, 127.0.0.0/8, [::1]),
// unless the spec says "insecure": true; either way the process says once that the cluster is open.
// Messages are bounded: a process takes requests and replies no larger than the largest shard of its model's
// variables needs (plus a margin, or ParameterServerOptions::max_message_bytes when larger); a longer one is
// refused with RESOURCE_EXHAUSTED. A request naming a variable out of range or of another shard, a tensor of the
// wrong size, a variable twice, or a step of a fit that has ended (each fit of the chief has its own id) is refused
// whole with INVALID_ARGUMENT or FAILED_PRECONDITION; nothing of it is applied and the server keeps serving.
// A parameter server starts listening when its model first runs (fit), once the bound is known; a worker when
// the strategy is made.
//
// num_replicas_in_sync() is 1: each worker's step takes one whole batch on its one compute device, as TensorFlow's
// on a worker with one GPU. devices() is this process's compute device.
#include <cstddef>
#include <string>
#include <vector>

#include "distribute/logical_device.h"
#include "distribute/strategy.h"

namespace tower::distribute {

// How the processes of a cluster prove themselves to one another ("Security" above). Paths as the process sees
// them; each process names its own certificate and key.
struct ClusterSecurity {
  std::string ca_file;           // "tls": {"ca": ...}: the CA that signed every process's certificate (PEM)
  std::string certificate_file;  // "tls": {"certificate": ...}: this process's certificate chain (PEM)
  std::string key_file;          // "tls": {"key": ...}: its private key (PEM)
  std::string token;             // "token": the cluster token itself
  std::string token_file;        // "token_file": a file holding it (a trailing newline is not part of it)
  bool insecure = false;         // "insecure": true: listen on any address without TLS or a token
  bool tls() const { return !ca_file.empty() || !certificate_file.empty() || !key_file.empty(); }
  bool has_token() const { return !token.empty() || !token_file.empty(); }
};

// TensorFlow's ClusterSpec with the process's own task.
struct ClusterSpec {
  std::vector<std::string> chief;   // the coordinator: exactly one "host:port" (it listens on none)
  std::vector<std::string> worker;  // "host:port" each, at least one
  std::vector<std::string> ps;      // "host:port" each, at least one
  std::string task_type;            // "chief", "worker" or "ps"
  int task_index = 0;
  // Where the workers compute, as logical_device.h names devices ("cpu:0", "gpu:1", "cuda:0"): none, each worker
  // on the first GPU its process sees, else on the CPU (as MirroredStrategy chooses; TOWER_DEVICE, which chooses a
  // model's device outside strategies, does not apply); one name, every worker on it; one per worker, worker i on
  // worker_devices[i]. Each worker's process checks its own device.
  std::vector<std::string> worker_devices;
  // Where the chief computes (validation and evaluate on the chief); empty: the first GPU it sees, else the CPU.
  std::string chief_device;
  ClusterSecurity security;

  // TF_CONFIG's JSON: {"cluster": {"chief": [...], "worker": [...], "ps": [...]}, "task": {"type": ..., "index":
  // ...}}, and optionally "worker_devices" (a name, or a list of names), "chief_device" (a name), "tls", "token",
  // "token_file" and "insecure" beside "cluster" and "task". Throws std::invalid_argument naming the key that is
  // missing or wrong (or unknown).
  static ClusterSpec from_json(const std::string& json);
  // from_json of the environment variable TOWER_CONFIG; throws std::invalid_argument when it is not set.
  static ClusterSpec from_environment();
  // Throws std::invalid_argument for a missing role, an unknown task type, a task index out of range,
  // worker_devices with neither one name nor one per worker, "tls" without all three files, or both "token" and
  // "token_file".
  void validate() const;
  // The device this process computes on when it sees `visible_gpus` GPUs (the strategy passes
  // cuda_device_count()): the CPU for a parameter server; for a worker and the chief, the device chosen above.
  // Throws std::invalid_argument as validate() does, and naming the task and the device when the choice is not a
  // device this process has ("ParameterServerStrategy: worker 1 (host2:2222) computes on worker_devices[1]:
  // unknown device 'cuda:1' (no such GPU). Available devices: ...").
  LogicalDevice compute_device(int visible_gpus) const;
};

struct ParameterServerOptions {
  // Deadline of every call between the processes but a step (seconds > 0).
  double rpc_timeout_seconds = 60;
  // Deadline of one step on a worker, its pulls and pushes included; a worker that misses it counts as failed.
  double step_timeout_seconds = 300;
  // How long the chief waits at the start of fit for every worker and parameter server to answer.
  double connect_timeout_seconds = 60;
  // How long a worker or parameter server waits for its next request in fit before it gives up.
  double idle_timeout_seconds = 600;
  // The least bound on a message (bytes; 0: what the model's largest shard needs, plus a margin).
  std::size_t max_message_bytes = 0;
};

class ParameterServerStrategy : public Strategy {
 public:
  // Workers start serving at once (on their address's port), parameter servers when their model first runs.
  // Throws std::runtime_error when this build has no gRPC or a server cannot listen on its address,
  // std::invalid_argument for a bad spec or options, a TLS or token file that cannot be read (or a token file
  // others may read), or a cluster with an address off the loopback interface and neither TLS nor a token nor
  // "insecure": true.
  explicit ParameterServerStrategy(ClusterSpec cluster = ClusterSpec::from_environment(),
                                   ParameterServerOptions options = {});
  // "chief", "worker" or "ps", and the index among those.
  const std::string& task_type() const;
  int task_index() const;
};

// True when this build of Tower has gRPC (ParameterServerStrategy can work).
bool grpc_available();

}  // namespace tower::distribute
