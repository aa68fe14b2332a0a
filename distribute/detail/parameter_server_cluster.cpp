// Built only with gRPC (TOWER_WITH_GRPC); parameter_server_strategy.cpp throws before reaching it otherwise.
#ifdef TOWER_WITH_GRPC
#include "distribute/detail/parameter_server_cluster.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include <random>
#include <set>

#include "api/models/model.h"
#include "distribute/detail/cluster_security.h"
#include "distribute/detail/mirrored_replicas.h"
#include "distribute/detail/parameter_server_shard.h"
#include "distribute/in_process_all_reduce.h"
#include "parameter_server.grpc.pb.h"

namespace tower::distribute::detail {

namespace rpc = tower::distribute::ps;
using tower::detail::RemoteTraining;

namespace {

const char* const kWho = "ParameterServerStrategy: ";
using Clock = std::chrono::system_clock;

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

std::string describe(const grpc::Status& status) {
  static const char* const names[] = {"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
                                      "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
                                      "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
                                      "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
  const int code = status.error_code();
  const std::string name = code >= 0 && code <= 16 ? names[code] : std::to_string(code);
  return name + ": " + status.error_message();
}

std::string task_name(const char* role, std::size_t index, const std::string& address) {
  return std::string(role) + " " + std::to_string(index) + " (" + address + ")";
}

// A parameter server that did not answer: training cannot go on without its variables.
class ParameterServerFailure : public std::runtime_error {
 public:
  ParameterServerFailure(std::size_t index, const std::string& address, const std::string& what,
                         const grpc::Status& status)
      : std::runtime_error(std::string(kWho) + task_name("parameter server", index, address) + " failed (" + what +
                           ": " + describe(status) + "); training cannot go on without its variables") {}
};

// The bound on the messages a worker's server and the chief's channels to the workers take (a step's request
// and its logs).
constexpr int kControlMessageBytes = 1 << 20;

std::shared_ptr<grpc::Channel> channel_to(const std::string& address, const ClusterSecrets& secrets,
                                          std::size_t receive_limit) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(std::min<std::size_t>(receive_limit, INT32_MAX)));
  args.SetMaxSendMessageSize(-1);
  // A process that starts later than its peers is found within a second.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  if (!secrets.tls()) return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  grpc::SslCredentialsOptions tls;
  tls.pem_root_certs = secrets.ca;
  tls.pem_private_key = secrets.key;
  tls.pem_cert_chain = secrets.certificate;
  return grpc::CreateCustomChannel(address, grpc::SslCredentials(tls), args);
}

// Who may call this process's services: checks every call's client certificate (with TLS) and cluster token, and
// logs the first refusal of each peer host.
class Gate {
 public:
  Gate(const ClusterSecrets& secrets, std::string who) : secrets_(secrets), who_(std::move(who)) {}

  grpc::Status admit(const grpc::ServerContext& context) const {
    const char* why = nullptr;
    if (secrets_.tls()) {
      const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
      if (!auth || !auth->IsPeerAuthenticated()) why = "no client certificate";
    }
    if (!why && !secrets_.token.empty()) {
      const auto& metadata = context.client_metadata();
      const auto found = metadata.find(kTokenMetadataKey);
      if (found == metadata.end()) why = "no cluster token";
      else if (metadata.count(kTokenMetadataKey) > 1 ||
               !same_secret(std::string_view(found->second.data(), found->second.size()), secrets_.token))
        why = "a wrong cluster token";
    }
    if (!why) return grpc::Status::OK;
    log_once(context.peer(), why);
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        std::string(kWho) + who_ + " refused the call: " + why);
  }

 private:
  void log_once(const std::string& peer, const char* why) const {
    const std::string host = peer.substr(0, peer.rfind(':'));
    std::lock_guard lock(mutex_);
    if (logged_.size() > 1024 || !logged_.insert(host).second) return;
    std::cerr << kWho << who_ << " refused a call from " << host << " (" << why << ")"
              << (logged_.size() > 1024 ? "; refusals of further peers are not logged"
                                        : "; further refusals of this peer are not logged")
              << std::endl;
  }

  const ClusterSecrets& secrets_;
  const std::string who_;
  mutable std::mutex mutex_;
  mutable std::set<std::string> logged_;
};

// What a parameter server's or worker's fit does with the requests it gets.
class ServeTarget {
 public:
  virtual ~ServeTarget() = default;
  virtual grpc::Status initialize(const rpc::Variables& request) = 0;
  virtual grpc::Status pull(const rpc::PullRequest& request, rpc::Variables* reply) = 0;
  virtual grpc::Status push(const rpc::PushRequest& request) = 0;
  virtual grpc::Status run_step(const rpc::StepRequest& request, rpc::StepReply* reply) = 0;
};

// Hands requests from gRPC's threads to the thread serving fit (the model is used on that thread only), and
// waits for their answers.
class Mailbox {
 public:
  using Job = std::function<grpc::Status(ServeTarget&)>;

  // From a handler: waits until the job has run, or until the call's deadline if it has not started by then.
  grpc::Status post(const grpc::ServerContext& context, Job job) {
    auto entry = std::make_shared<Entry>();
    entry->job = std::move(job);
    const Clock::time_point deadline = std::min(context.deadline(), after(24 * 3600.0));
    std::unique_lock lock(mutex_);
    queue_.push_back(entry);
    changed_.notify_all();
    while (!entry->done) {
      if (closed_ && !entry->started) {
        entry->abandoned = true;
        return grpc::Status(grpc::StatusCode::CANCELLED, "this process is ending");
      }
      if (changed_.wait_until(lock, deadline) == std::cv_status::timeout && !entry->started && !entry->done) {
        entry->abandoned = true;
        return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "this process is not in fit()");
      }
    }
    return entry->status;
  }

  // Answers every request not yet started, and those to come, with CANCELLED (the process is ending).
  void close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
    changed_.notify_all();
  }

  // Ends the current (or next) serve().
  void stop() {
    std::lock_guard lock(mutex_);
    ++stops_;
    changed_.notify_all();
  }

  // Runs the jobs posted until stop(); throws std::runtime_error after idle_seconds without a job.
  void serve(ServeTarget& target, double idle_seconds, const std::string& who) {
    std::unique_lock lock(mutex_);
    const std::uint64_t mine = ++serves_;
    Clock::time_point idle_until = after(idle_seconds);
    while (stops_ < mine) {
      if (queue_.empty()) {
        if (changed_.wait_until(lock, idle_until) == std::cv_status::timeout && queue_.empty() && stops_ < mine)
          throw std::runtime_error(std::string(kWho) + who + " heard nothing for " + std::to_string(idle_seconds) +
                                   " s in fit(): the chief (coordinator) is gone");
        continue;
      }
      std::shared_ptr<Entry> entry = queue_.front();
      queue_.pop_front();
      if (entry->abandoned) continue;
      entry->started = true;
      lock.unlock();
      grpc::Status status;
      try {
        status = entry->job(target);
      } catch (const std::exception& e) {
        status = grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, e.what());
      }
      lock.lock();
      entry->status = status;
      entry->done = true;
      changed_.notify_all();
      idle_until = after(idle_seconds);
    }
  }

 private:
  struct Entry {
    Job job;
    grpc::Status status;
    bool started = false, done = false, abandoned = false;
  };
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::shared_ptr<Entry>> queue_;
  std::uint64_t serves_ = 0, stops_ = 0;
  bool closed_ = false;
};

// A request of a fit this process has ended, answered without waiting for a fit.
grpc::Status ended_fit(const std::string& who, std::uint64_t fit) {
  return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                      std::string(kWho) + who + " refused the request: fit " + std::to_string(fit) +
                          " has ended; nothing was applied");
}

class ParameterServerService final : public rpc::ParameterServer::Service {
 public:
  ParameterServerService(Mailbox& mailbox, const Gate& gate, const EndedFits& ended, std::string who)
      : mailbox_(mailbox), gate_(gate), ended_(ended), who_(std::move(who)) {}
  grpc::Status Initialize(grpc::ServerContext* c, const rpc::Variables* request, rpc::Empty*) override {
    if (grpc::Status s = gate_.admit(*c); !s.ok()) return s;
    if (ended_.contains(request->fit())) return ended_fit(who_, request->fit());
    return mailbox_.post(*c, [request](ServeTarget& t) { return t.initialize(*request); });
  }
  grpc::Status Pull(grpc::ServerContext* c, const rpc::PullRequest* request, rpc::Variables* reply) override {
    if (grpc::Status s = gate_.admit(*c); !s.ok()) return s;
    if (ended_.contains(request->fit())) return ended_fit(who_, request->fit());
    return mailbox_.post(*c, [request, reply](ServeTarget& t) { return t.pull(*request, reply); });
  }
  grpc::Status Push(grpc::ServerContext* c, const rpc::PushRequest* request, rpc::Empty*) override {
    if (grpc::Status s = gate_.admit(*c); !s.ok()) return s;
    if (ended_.contains(request->fit())) return ended_fit(who_, request->fit());
    return mailbox_.post(*c, [request](ServeTarget& t) { return t.push(*request); });
  }
  grpc::Status Shutdown(grpc::ServerContext* c, const rpc::Empty*, rpc::Empty*) override {
    if (grpc::Status s = gate_.admit(*c); !s.ok()) return s;
    mailbox_.stop();
    return grpc::Status::OK;
  }

 private:
  Mailbox& mailbox_;
  const Gate& gate_;
  const EndedFits& ended_;
  const std::string who_;
};

class WorkerService final : public rpc::Worker::Service {
 public:
  WorkerService(Mailbox& mailbox, const Gate& gate) : mailbox_(mailbox), gate_(gate) {}
  grpc::Status RunStep(grpc::ServerContext* c, const rpc::StepRequest* request, rpc::StepReply* reply) override {
    if (grpc::Status s = gate_.admit(*c); !s.ok()) return s;
    return mailbox_.post(*c, [request, reply](ServeTarget& t) { return t.run_step(*request, reply); });
  }
  grpc::Status Shutdown(grpc::ServerContext* c, const rpc::Empty*, rpc::Empty*) override {
    if (grpc::Status s = gate_.admit(*c); !s.ok()) return s;
    mailbox_.stop();
    return grpc::Status::OK;
  }

 private:
  Mailbox& mailbox_;
  const Gate& gate_;
};

}  // namespace

// The process's server (parameter servers and workers) and its channels to the others.
class ParameterServerCluster {
 public:
  ParameterServerCluster(ClusterSpec spec_, ParameterServerOptions options_)
      : spec(std::move(spec_)),
        options(options_),
        secrets(read_cluster_secrets(spec.security)),
        gate_(secrets, own_name()) {
    if (spec.task_type == "worker") {
      service_ = std::make_unique<WorkerService>(mailbox, gate_);
      listen(kControlMessageBytes);
    }
    if (spec.task_type == "chief")
      for (const std::string& a : spec.worker) {
        worker_channels.push_back(channel_to(a, secrets, kControlMessageBytes));
        workers.push_back(rpc::Worker::NewStub(worker_channels.back()));
      }
  }
  ~ParameterServerCluster() {
    mailbox.close();
    if (server_) server_->Shutdown(after(1.0));
  }
  const std::string& own_address() const {
    const auto& list = spec.task_type == "ps" ? spec.ps : spec.task_type == "worker" ? spec.worker : spec.chief;
    return list[static_cast<std::size_t>(spec.task_index)];
  }
  std::string own_name() const {
    return task_name(spec.task_type == "ps" ? "parameter server" : spec.task_type.c_str(),
                     static_cast<std::size_t>(spec.task_index), own_address());
  }

  // Before model `name` first runs: the bound on the messages that hold its shards (`bytes`). The first model
  // sets this process's bound, makes the channels to the parameter servers and, on a parameter server, starts
  // its server; a later model must fit in it. Throws std::runtime_error when it does not, or when the server
  // cannot listen.
  void prepare(const std::string& name, std::size_t bytes) {
    std::lock_guard lock(prepare_mutex_);
    bytes = std::max(bytes, options.max_message_bytes);
    if (limit_ != 0) {
      if (bytes > limit_)
        throw std::runtime_error(std::string(kWho) + own_name() + ": model '" + name + "' needs messages of up to " +
                                 std::to_string(bytes) + " bytes, but this process bounds its messages at " +
                                 std::to_string(limit_) + " bytes, set by the first model it ran: give "
                                 "ParameterServerOptions::max_message_bytes >= " + std::to_string(bytes) +
                                 ", or use one strategy per model");
      return;
    }
    if (spec.task_type == "ps") {
      service_ = std::make_unique<ParameterServerService>(mailbox, gate_, ended, own_name());
      listen(bytes);
    } else {
      for (const std::string& a : spec.ps) ps.push_back(rpc::ParameterServer::NewStub(channel_to(a, secrets, bytes)));
    }
    limit_ = bytes;
  }

  // A call's context: its deadline `seconds` from now, and the cluster token.
  void prepare_call(grpc::ClientContext& context, double seconds) const {
    context.set_deadline(after(seconds));
    if (!secrets.token.empty()) context.AddMetadata(kTokenMetadataKey, secrets.token);
  }

  const ClusterSpec spec;
  const ParameterServerOptions options;
  const ClusterSecrets secrets;
  Mailbox mailbox;
  EndedFits ended;                                              // a parameter server's ended fits
  std::vector<std::unique_ptr<rpc::ParameterServer::Stub>> ps;  // workers and the chief, after prepare()
  std::vector<std::shared_ptr<grpc::Channel>> worker_channels;  // the chief
  std::vector<std::unique_ptr<rpc::Worker::Stub>> workers;      // the chief

 private:
  void listen(std::size_t receive_limit) {
    const std::string& address = own_address();
    grpc::ServerBuilder builder;
    int port = 0;
    std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
    if (secrets.tls()) {
      // A client certificate is asked for and, when given, verified against the CA in the handshake; a call
      // without one is refused by the gate (UNAUTHENTICATED).
      grpc::SslServerCredentialsOptions tls(GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
      tls.pem_root_certs = secrets.ca;
      tls.pem_key_cert_pairs.push_back({secrets.key, secrets.certificate});
      credentials = grpc::SslServerCredentials(tls);
    }
    builder.AddListeningPort(address, credentials, &port);
    builder.SetMaxReceiveMessageSize(static_cast<int>(std::min<std::size_t>(receive_limit, INT32_MAX)));
    builder.SetMaxSendMessageSize(-1);
    // No second process may take the same port.
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    if (!server_ || port == 0)
      throw std::runtime_error(std::string(kWho) + own_name() + " cannot listen on " + address +
                               " (is the port in use, or the host not this machine?" +
                               (secrets.tls() ? " Are its certificate and key a pair?" : "") + ")");
  }

  Gate gate_;
  std::mutex prepare_mutex_;
  std::size_t limit_ = 0;
  std::unique_ptr<grpc::Service> service_;
  std::unique_ptr<grpc::Server> server_;
};

namespace {

// One model under the strategy: one local replica (MirroredReplicas on the strategy's device) for evaluate and
// predict on any process, and fit in this process's role.
class ParameterServerReplicas final : public tower::detail::Replicas, public RemoteTraining, public ServeTarget {
 public:
  ParameterServerReplicas(ModelImpl& model, std::shared_ptr<ParameterServerCluster> cluster,
                          const LogicalDevice& device)
      : model_(model),
        cluster_(std::move(cluster)),
        spec_(cluster_->spec),
        inner_(model, {device}, InProcessAllReduce(), nullptr, kWho) {
    cluster_->prepare(model.name(), ParameterServerShard::message_bytes(model, spec_.ps.size()));
    if (role() == Role::ps)
      shard_.emplace(model, shard_index(), spec_.ps.size(), cluster_->own_name(), cluster_->ended);
  }
  ~ParameterServerReplicas() override {
    if (threads_.empty()) return;
    try {
      end();
    } catch (...) {
    }
  }

  // ---- Replicas ----
  int num_local() const override { return inner_.num_local(); }
  std::pair<Index, Index> slice(Index n, int r) const override { return inner_.slice(n, r); }
  Plan& plan(int r, Index batch, bool training) override { return inner_.plan(r, batch, training); }
  void run(Index n, const tower::detail::ReplicaWork& work, bool reduce_gradients) override {
    const bool remote_step = reduce_gradients && role() == Role::worker;
    if (remote_step) pull_variables();
    inner_.run(n, work, reduce_gradients);
    if (remote_step) push_gradients();
  }
  const std::vector<Tensor>& gradients() const override { return inner_.gradients(); }
  void gather(Index n, std::span<const Tensor> parts, Tensor& global) override { inner_.gather(n, parts, global); }
  void after_update() override { inner_.after_update(); }
  void update_copies(const optimizers::Optimizer& main, const tower::detail::CopyUpdate& update) override {
    inner_.update_copies(main, update);
  }
  void sync_from_model() override { inner_.sync_from_model(); }
  RemoteTraining* remote() override { return this; }

  // ---- RemoteTraining ----
  Role role() const override {
    return spec_.task_type == "ps" ? Role::ps : spec_.task_type == "worker" ? Role::worker : Role::coordinator;
  }
  void serve(const std::function<StepLogs()>& step) override {
    step_ = &step;
    struct Reset {
      const std::function<StepLogs()>*& step;
      std::optional<ParameterServerShard>& shard;
      ~Reset() {
        step = nullptr;
        if (shard) shard->end_fit();
      }
    } reset{step_, shard_};
    cluster_->mailbox.serve(*this, cluster_->options.idle_timeout_seconds, cluster_->own_name());
  }
  void begin() override;
  void schedule(std::int64_t steps) override {
    std::lock_guard lock(mutex_);
    for (std::int64_t s = 0; s < steps; ++s) queue_.push_back(next_step_++);
    changed_.notify_all();
  }
  StepLogs next_result() override {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return !results_.empty() || fatal_; });
    if (fatal_) throw std::runtime_error(*fatal_);
    StepLogs out = std::move(results_.front());
    results_.pop_front();
    return out;
  }
  void cancel() override {
    std::unique_lock lock(mutex_);
    queue_.clear();
    changed_.wait(lock, [&] { return running_ == 0; });
    results_.clear();
  }
  void pull() override {
    pull_variables();
    inner_.sync_from_model();
  }
  void end() override;

  // ---- ServeTarget ----
  grpc::Status initialize(const rpc::Variables& request) override {
    if (!shard_) return not_a_parameter_server();
    return shard_->initialize(request);
  }
  grpc::Status pull(const rpc::PullRequest& request, rpc::Variables* reply) override {
    if (!shard_) return not_a_parameter_server();
    return shard_->pull(request, reply);
  }
  grpc::Status push(const rpc::PushRequest& request) override {
    if (!shard_) return not_a_parameter_server();
    return shard_->push(request);
  }
  grpc::Status run_step(const rpc::StepRequest& request, rpc::StepReply* reply) override {
    if (!step_) return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "this worker is not in fit()");
    if (request.fit() == 0)
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(kWho) + "a step without a fit id");
    fit_ = request.fit();
    try {
      for (const auto& [key, value] : (*step_)()) {
        reply->add_keys(key);
        reply->add_values(value);
      }
    } catch (const ParameterServerFailure& e) {
      return grpc::Status(grpc::StatusCode::ABORTED, e.what());
    }
    return grpc::Status::OK;
  }

 private:
  std::size_t shard_index() const { return static_cast<std::size_t>(spec_.task_index); }
  std::size_t owner(std::size_t variable) const { return variable % spec_.ps.size(); }
  grpc::Status not_a_parameter_server() const {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, std::string(kWho) + cluster_->own_name() +
                                                             " is not a parameter server");
  }
  // Every variable from its parameter server into the model's variables.
  void pull_variables() {
    const std::vector<VariablePtr> weights = model_.weights();
    for (std::size_t p = 0; p < cluster_->ps.size(); ++p) {
      grpc::ClientContext context;
      cluster_->prepare_call(context, cluster_->options.rpc_timeout_seconds);
      rpc::PullRequest request;
      request.set_fit(fit_);
      rpc::Variables reply;
      const grpc::Status status = cluster_->ps[p]->Pull(&context, request, &reply);
      if (!status.ok()) throw ParameterServerFailure(p, spec_.ps[p], "pulling its variables", status);
      for (const rpc::Tensor& t : reply.variables()) {
        if (t.index() >= weights.size())
          throw std::invalid_argument(std::string(kWho) + "parameter server " + std::to_string(p) +
                                      " holds variable " + std::to_string(t.index()) + ", but model '" +
                                      model_.name() + "' has " + std::to_string(weights.size()) + " weights here");
        Variable& v = *weights[t.index()];
        read_tensor(t, v, v.value);
      }
    }
  }
  // The step's gradients (trainable variables) and values (the others) to the parameter servers holding them.
  void push_gradients() {
    const std::vector<VariablePtr> weights = model_.weights();
    const std::vector<VariablePtr> trainable = model_.trainable_weights();
    const std::vector<Tensor>& grads = inner_.gradients();
    std::map<const Variable*, std::size_t> gradient_of;
    for (std::size_t t = 0; t < trainable.size(); ++t) gradient_of[trainable[t].get()] = t;
    std::vector<rpc::PushRequest> requests(spec_.ps.size());
    for (rpc::PushRequest& r : requests) r.set_fit(fit_);
    for (std::size_t k = 0; k < weights.size(); ++k) {
      rpc::PushRequest& r = requests[owner(k)];
      const auto g = gradient_of.find(weights[k].get());
      if (g != gradient_of.end()) write_tensor(r.add_gradients(), k, grads[g->second]);
      else write_tensor(r.add_values(), k, weights[k]->value);
    }
    for (std::size_t p = 0; p < requests.size(); ++p) {
      grpc::ClientContext context;
      cluster_->prepare_call(context, cluster_->options.rpc_timeout_seconds);
      rpc::Empty reply;
      const grpc::Status status = cluster_->ps[p]->Push(&context, requests[p], &reply);
      if (!status.ok()) throw ParameterServerFailure(p, spec_.ps[p], "pushing gradients", status);
    }
  }
  // The chief's thread for worker w: runs queued steps there until end(), the worker fails or a parameter
  // server does.
  void drive_worker(std::size_t w);
  void fail(std::string message) {
    if (!fatal_) fatal_ = std::move(message);
    changed_.notify_all();
  }

  ModelImpl& model_;
  std::shared_ptr<ParameterServerCluster> cluster_;
  const ClusterSpec& spec_;
  MirroredReplicas inner_;
  const std::function<StepLogs()>* step_ = nullptr;
  std::optional<ParameterServerShard> shard_;  // a parameter server's
  // The fit the requests to the parameter servers belong to: the chief's own (begin()), or on a worker the one of
  // the step it runs.
  std::uint64_t fit_ = 0;

  // The chief's scheduler.
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::int64_t> queue_;
  std::deque<StepLogs> results_;
  std::int64_t next_step_ = 0;
  int running_ = 0, alive_ = 0;
  bool closing_ = false;
  std::optional<std::string> fatal_;
  std::vector<bool> failed_;
  std::vector<std::thread> threads_;
};

void ParameterServerReplicas::begin() {
  const double wait = cluster_->options.connect_timeout_seconds;
  const auto reach = [&](grpc::Channel& channel, const char* role, std::size_t i, const std::string& address) {
    if (!channel.WaitForConnected(after(wait)))
      throw std::runtime_error(std::string(kWho) + task_name(role, i, address) + " did not answer within " +
                               std::to_string(wait) + " s");
  };
  try {
    for (std::size_t w = 0; w < spec_.worker.size(); ++w)
      reach(*cluster_->worker_channels[w], "worker", w, spec_.worker[w]);
  } catch (...) {
    end();  // the processes that did answer end their fit
    throw;
  }
  const std::vector<VariablePtr> weights = model_.weights();
  // This fit's id: a request of an earlier fit (a slow worker's push) is refused.
  std::random_device entropy;
  do fit_ = (static_cast<std::uint64_t>(entropy()) << 32) ^ entropy();
  while (fit_ == 0);
  for (std::size_t p = 0; p < spec_.ps.size(); ++p) {
    rpc::Variables shard;
    shard.set_fit(fit_);
    for (std::size_t k = p; k < weights.size(); k += spec_.ps.size()) write_tensor(shard.add_variables(), k, weights[k]->value);
    grpc::ClientContext context;
    cluster_->prepare_call(context, wait);
    context.set_wait_for_ready(true);
    rpc::Empty reply;
    const grpc::Status status = cluster_->ps[p]->Initialize(&context, shard, &reply);
    if (!status.ok()) {
      end();
      throw ParameterServerFailure(p, spec_.ps[p], "taking its variables", status);
    }
  }
  std::lock_guard lock(mutex_);
  queue_.clear();
  results_.clear();
  fatal_.reset();
  closing_ = false;
  running_ = 0;
  failed_.assign(spec_.worker.size(), false);
  alive_ = static_cast<int>(spec_.worker.size());
  for (std::size_t w = 0; w < spec_.worker.size(); ++w) threads_.emplace_back([this, w] { drive_worker(w); });
}

void ParameterServerReplicas::drive_worker(std::size_t w) {
  const std::string name = task_name("worker", w, spec_.worker[w]);
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return closing_ || fatal_ || !queue_.empty(); });
    if (closing_ || fatal_) return;
    const std::int64_t step = queue_.front();
    queue_.pop_front();
    ++running_;
    lock.unlock();
    grpc::ClientContext context;
    cluster_->prepare_call(context, cluster_->options.step_timeout_seconds);
    rpc::StepRequest request;
    request.set_step(step);
    request.set_fit(fit_);
    rpc::StepReply reply;
    const grpc::Status status = cluster_->workers[w]->RunStep(&context, request, &reply);
    lock.lock();
    --running_;
    changed_.notify_all();
    if (status.ok()) {
      StepLogs logs;
      for (int i = 0; i < reply.keys_size() && i < reply.values_size(); ++i) logs.emplace_back(reply.keys(i), reply.values(i));
      results_.push_back(std::move(logs));
      continue;
    }
    if (status.error_code() == grpc::StatusCode::ABORTED)  // the worker lost a parameter server
      return fail(status.error_message() + " (seen by " + name + ")");
    if (status.error_code() == grpc::StatusCode::FAILED_PRECONDITION)  // the step itself threw
      return fail(std::string(kWho) + "a step on " + name + " failed: " + status.error_message());
    // The worker is gone or too slow: another one runs its step.
    failed_[w] = true;
    --alive_;
    if (alive_ == 0)
      return fail(std::string(kWho) + "every worker failed; the last, " + name + ": " + describe(status));
    queue_.push_front(step);
    std::cerr << kWho << name << " failed (" << describe(status) << "); its step runs on another worker\n";
    return;
  }
}

void ParameterServerReplicas::end() {
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
    changed_.notify_all();
  }
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  const double wait = std::min(5.0, cluster_->options.rpc_timeout_seconds);
  for (std::size_t w = 0; w < cluster_->workers.size(); ++w) {
    if (w < failed_.size() && failed_[w]) continue;
    grpc::ClientContext context;
    cluster_->prepare_call(context, wait);
    rpc::Empty reply;
    cluster_->workers[w]->Shutdown(&context, rpc::Empty(), &reply);
  }
  for (auto& ps : cluster_->ps) {
    grpc::ClientContext context;
    cluster_->prepare_call(context, wait);
    rpc::Empty reply;
    ps->Shutdown(&context, rpc::Empty(), &reply);
  }
}

}  // namespace

std::shared_ptr<ParameterServerCluster> make_parameter_server_cluster(const ClusterSpec& spec,
                                                                      const ParameterServerOptions& options) {
  return std::make_shared<ParameterServerCluster>(spec, options);
}

std::unique_ptr<tower::detail::Replicas> make_parameter_server_replicas(
    ModelImpl& model, std::shared_ptr<ParameterServerCluster> cluster, const LogicalDevice& device) {
  return std::make_unique<ParameterServerReplicas>(model, std::move(cluster), device);
}

}  // namespace tower::distribute::detail
#endif
