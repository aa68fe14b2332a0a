// ParameterServerStrategy's security ("Security" in parameter_server_strategy.h): who a cluster lets in, and
// what its servers take.
//
//   SecurityKeysAreRead, SecurityErrorsNameTheKeyAndTheFile  TOWER_CONFIG's "tls", "token", "token_file" and
//                                       "insecure", and the strategy's refusals (a token file others may read, a
//                                       file that is missing, an address off the loopback interface with neither
//                                       TLS nor a token).
//   TokensCompareWhole, LoopbackAddresses  the checks without a network.
//   IntrudersWithoutTheTokenAreRefusedWhileTrainingGoesOn  a cluster with a token (1 worker, 1 parameter server,
//                                       SGD) trains to synchronous SGD's weights (1e-5) while this process calls
//                                       every service of the parameter server and the worker with no token and
//                                       with a wrong one: each call UNAUTHENTICATED, one log line per peer.
//   OneWorkerEqualsSynchronousSgdUnderMutualTls  the same cluster with mutual TLS (certificates made here with
//                                       openssl) trains to the same weights; a client without a certificate is
//                                       refused with UNAUTHENTICATED, plaintext and a certificate of another CA
//                                       never get in.
//   MalformedRequestsGetAStatusAndChangeNothing  a parameter server in this process, its fit on a thread, and
//                                       raw requests: each malformed one gets its status, the shard is unchanged
//                                       and the server goes on serving; a push of a fit that has ended is refused
//                                       at once.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "distribute/detail/cluster_security.h"
#include "distribute/ps_cluster_testing.h"
#include "distribute/replica_testing.h"
#include "tower/tower.h"

#ifdef TOWER_TEST_WITH_GRPC
#include <grpcpp/grpcpp.h>

#include "parameter_server.grpc.pb.h"
#endif

namespace tower {
namespace {

namespace fs = std::filesystem;
using namespace testing;  // the cluster harness (ps_cluster_testing.h)

const std::string kCluster = R"("cluster": {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"], "ps": ["127.0.0.1:3"]}, "task": {"type": "chief"})";

std::string spec_error(const std::string& json) {
  try {
    distribute::ClusterSpec::from_json(json);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

// The message the strategy's constructor throws for `spec`, or "no error".
std::string strategy_error(const distribute::ClusterSpec& spec) {
  try {
    distribute::ParameterServerStrategy strategy(spec);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

void write_file(const fs::path& path, const std::string& text, fs::perms perms) {
  std::ofstream(path) << text;
  fs::permissions(path, perms);
}

TEST(ParameterServerSecurity, SecurityKeysAreRead) {
  const distribute::ClusterSpec tls = distribute::ClusterSpec::from_json(
      "{" + kCluster + R"(, "tls": {"ca": "/c/ca.pem", "certificate": "/c/n.pem", "key": "/c/n.key"}, "token_file": "/c/t"})");
  EXPECT_EQ(tls.security.ca_file, "/c/ca.pem");
  EXPECT_EQ(tls.security.certificate_file, "/c/n.pem");
  EXPECT_EQ(tls.security.key_file, "/c/n.key");
  EXPECT_EQ(tls.security.token_file, "/c/t");
  EXPECT_TRUE(tls.security.tls());
  EXPECT_FALSE(tls.security.insecure);
  const distribute::ClusterSpec open = distribute::ClusterSpec::from_json("{" + kCluster + R"(, "insecure": true, "token": "abc"})");
  EXPECT_TRUE(open.security.insecure);
  EXPECT_EQ(open.security.token, "abc");
  EXPECT_FALSE(open.security.tls());
}

TEST(ParameterServerSecurity, SecurityErrorsNameTheKeyAndTheFile) {
  EXPECT_NE(spec_error("{" + kCluster + R"(, "tls": {"ca": "a.pem"}})").find("\"tls\" needs all of"), std::string::npos);
  EXPECT_NE(spec_error("{" + kCluster + R"(, "tls": {"ca": "a", "certificate": "b", "key": "c", "pem": "d"}})")
                .find("\"tls\" has an unknown key \"pem\""), std::string::npos);
  EXPECT_NE(spec_error("{" + kCluster + R"(, "tls": "ca.pem"})").find("\"tls\" must be a map"), std::string::npos);
  EXPECT_NE(spec_error("{" + kCluster + R"(, "token": 5})").find("\"token\" must be a non-empty string"), std::string::npos);
  EXPECT_NE(spec_error("{" + kCluster + R"(, "token": ""})").find("\"token\" must be a non-empty string"), std::string::npos);
  EXPECT_NE(spec_error("{" + kCluster + R"(, "token": "a", "token_file": "/t"})").find("both \"token\" and \"token_file\""),
            std::string::npos);
  EXPECT_NE(spec_error("{" + kCluster + R"(, "insecure": "yes"})").find("\"insecure\" must be true or false"), std::string::npos);
  EXPECT_NE(spec_error("{" + kCluster + R"(, "secret": "x"})").find("unknown key \"secret\""), std::string::npos);

  if (!distribute::grpc_available()) GTEST_SKIP() << "this build of Tower has no gRPC (install libgrpc++-dev)";
  // Off the loopback interface, an open cluster is refused unless it says "insecure": true. (A chief listens on
  // nothing, so these strategies are made without a network.)
  distribute::ClusterSpec spec{{"10.1.2.3:2222"}, {"10.1.2.4:2222"}, {"10.1.2.5:2222"}, "chief", 0};
  spec.chief_device = "cpu:0";
  const std::string open = strategy_error(spec);
  EXPECT_NE(open.find("address 10.1.2.3:2222, which is not on the loopback interface, and neither TLS"), std::string::npos)
      << open;
  spec.security.insecure = true;
  EXPECT_EQ(strategy_error(spec), "no error");
  spec.security.insecure = false;
  spec.security.token = "a long cluster token";
  EXPECT_EQ(strategy_error(spec), "no error");

  // A token file: readable by its owner only, present, not empty.
  const fs::path dir = fresh_dir("security_files");
  spec.security.token.clear();
  spec.security.token_file = (dir / "token").string();
  write_file(dir / "token", "s3cret\n", fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  const std::string readable = strategy_error(spec);
  EXPECT_NE(readable.find("\"token_file\": '" + spec.security.token_file + "' may be read or written by others (mode 640)"),
            std::string::npos)
      << readable;
  fs::permissions(dir / "token", fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(strategy_error(spec), "no error");
  write_file(dir / "token", "\n", fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_NE(strategy_error(spec).find("holds no token"), std::string::npos) << strategy_error(spec);
  spec.security.token_file = (dir / "missing").string();
  EXPECT_NE(strategy_error(spec).find("\"token_file\": cannot read '" + spec.security.token_file + "'"), std::string::npos)
      << strategy_error(spec);
  spec.security.token_file.clear();
  spec.security.ca_file = (dir / "ca.pem").string();
  spec.security.certificate_file = (dir / "node.pem").string();
  spec.security.key_file = (dir / "node.key").string();
  EXPECT_NE(strategy_error(spec).find("\"tls\".ca: cannot read '" + spec.security.ca_file + "'"), std::string::npos)
      << strategy_error(spec);
  fs::remove_all(dir);
}

TEST(ParameterServerSecurity, TokensCompareWhole) {
  using distribute::detail::same_secret;
  EXPECT_TRUE(same_secret("s3cret-token", "s3cret-token"));
  EXPECT_FALSE(same_secret("s3cret-tokeN", "s3cret-token"));
  EXPECT_FALSE(same_secret("S3cret-token", "s3cret-token"));
  EXPECT_FALSE(same_secret("s3cret", "s3cret-token")) << "a prefix";
  EXPECT_FALSE(same_secret("s3cret-token-and-more", "s3cret-token")) << "a longer string";
  EXPECT_FALSE(same_secret("", "s3cret-token"));
  EXPECT_FALSE(same_secret(std::string_view("s3cret-token\0", 13), "s3cret-token")) << "a trailing NUL";
}

TEST(ParameterServerSecurity, LoopbackAddresses) {
  using distribute::detail::is_loopback_address;
  for (const char* a : {"127.0.0.1:2222", "127.8.9.10:1", "localhost:2222", "[::1]:2222"})
    EXPECT_TRUE(is_loopback_address(a)) << a;
  for (const char* a : {"10.0.0.1:2222", "0.0.0.0:2222", "[::]:2222", "host0:2222", "127.0.0.1.evil.com:1",
                        "localhost.evil.com:1", "128.0.0.1:1", "[::1]x:1"})
    EXPECT_FALSE(is_loopback_address(a)) << a;
}

#ifdef TOWER_TEST_WITH_GRPC

namespace rpc = tower::distribute::ps;

// An intruder's channel, finding a server that starts later within 100 ms.
std::shared_ptr<grpc::Channel> channel(const std::string& address,
                                       const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 100);
  return grpc::CreateCustomChannel(address, credentials, args);
}

std::shared_ptr<grpc::Channel> plain_channel(const std::string& address) {
  return channel(address, grpc::InsecureChannelCredentials());
}

void open_gate(const ClusterAddresses& a) {
  if (!fs::exists(a.gate)) std::ofstream(a.gate) << "refused\n";
}

// A call's context: a deadline, `token` unless empty, and waiting for the server to be up (else failing at once
// when the channel cannot connect).
std::unique_ptr<grpc::ClientContext> context_for(const std::string& token, double seconds = 2, bool wait = true) {
  auto c = std::make_unique<grpc::ClientContext>();
  c->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(static_cast<int>(seconds * 1000)));
  c->set_wait_for_ready(wait);
  if (!token.empty()) c->AddMetadata(distribute::detail::kTokenMetadataKey, token);
  return c;
}

// Calls every method of the parameter server and the worker at these channels with `token`: the status of each.
// With `wait`, each call waits (2 s at most) for its server to be up.
std::vector<grpc::Status> call_everything(const std::shared_ptr<grpc::Channel>& ps_channel,
                                          const std::shared_ptr<grpc::Channel>& worker_channel,
                                          const std::string& token, bool wait = true) {
  const auto ps = rpc::ParameterServer::NewStub(ps_channel);
  const auto worker = rpc::Worker::NewStub(worker_channel);
  std::vector<grpc::Status> out;
  rpc::Empty empty;
  rpc::Variables variables;
  variables.set_fit(1);
  out.push_back(ps->Initialize(context_for(token, 2, wait).get(), variables, &empty));
  rpc::PullRequest pull;
  out.push_back(ps->Pull(context_for(token, 2, wait).get(), pull, &variables));
  rpc::PushRequest push;
  out.push_back(ps->Push(context_for(token, 2, wait).get(), push, &empty));
  out.push_back(ps->Shutdown(context_for(token, 2, wait).get(), empty, &empty));
  rpc::StepRequest step;
  step.set_fit(1);
  rpc::StepReply reply;
  out.push_back(worker->RunStep(context_for(token, 2, wait).get(), step, &reply));
  out.push_back(worker->Shutdown(context_for(token, 2, wait).get(), empty, &empty));
  return out;
}

// The intruder's tally while a cluster trains: every answer it got.
struct Intrusions {
  std::atomic<int> refused{0}, admitted{0}, other{0};
  std::string first_other;
  std::mutex mutex;
  void count(const grpc::Status& s, grpc::StatusCode refusal) {
    if (s.error_code() == refusal) ++refused;
    else if (s.ok()) ++admitted;
    // The servers are not up yet, or have gone (their calls in flight are cancelled as a process ends).
    else if (s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED && s.error_code() != grpc::StatusCode::UNAVAILABLE &&
             s.error_code() != grpc::StatusCode::CANCELLED) {
      std::lock_guard lock(mutex);
      if (other++ == 0) first_other = std::to_string(s.error_code()) + ": " + s.error_message();
    }
  }
};

int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ParameterServerSecurity, IntrudersWithoutTheTokenAreRefusedWhileTrainingGoesOn) {
  if (!distribute::grpc_available()) GTEST_SKIP() << "this build of Tower has no gRPC (install libgrpc++-dev)";
  Intrusions tally;
  const auto intruder = [&](const ClusterAddresses& a) {
    const auto ps = plain_channel(a.ps[0]);
    const auto worker = plain_channel(a.worker[0]);
    // While the cluster trains (its 16 steps take about half a second).
    for (int round = 0; round == 0 || !*a.ended; ++round) {
      for (const std::string& token : {std::string(), std::string("not-the-token"), std::string("cluster-token-12")})
        for (const grpc::Status& s : call_everything(ps, worker, token, !fs::exists(a.gate)))
          tally.count(s, grpc::StatusCode::UNAUTHENTICATED);
      if (tally.refused >= 12) open_gate(a);  // both servers have refused every call of a round
    }
  };
  std::string logs;
  expect_one_worker_matches_one_process("sgd", 1, kCpuCluster, R"("token": "cluster-token-123")", intruder, &logs);
  // One line per peer host, however many calls it made: the parameter server's and the worker's.
  EXPECT_EQ(count_of(logs, ") refused a call from ipv4:127.0.0.1 (no cluster token); further refusals of this peer "
                           "are not logged"),
            2)
      << logs;
  EXPECT_EQ(tally.admitted.load(), 0) << "a call without the token got in";
  EXPECT_EQ(tally.other.load(), 0) << tally.first_other;
  EXPECT_GT(tally.refused.load(), 0);
  std::cout << "[ ParameterServerSecurity ] " << tally.refused.load() << " calls without the token refused\n";
}

// Makes a CA and a certificate it signs for 127.0.0.1 and localhost (server and client use) in `dir`, with
// openssl: <prefix>ca.pem, <prefix>node.pem, <prefix>node.key. False when openssl failed.
bool make_certificates(const fs::path& dir, const std::string& prefix) {
  const std::string d = dir.string() + "/" + prefix;
  const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  std::ofstream(d + "ext.cnf") << "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                                  "extendedKeyUsage=serverAuth,clientAuth\n";
  const std::string commands =
      "openssl req -x509 " + ec + " -keyout " + d + "ca.key -out " + d + "ca.pem -days 2 -subj /CN=tower-test-ca && " +
      "openssl req " + ec + " -keyout " + d + "node.key -out " + d + "node.csr -subj /CN=localhost && " +
      "openssl x509 -req -in " + d + "node.csr -CA " + d + "ca.pem -CAkey " + d + "ca.key -CAcreateserial -out " + d +
      "node.pem -days 2 -extfile " + d + "ext.cnf";
  return std::system(("(" + commands + ") >" + d + "openssl.log 2>&1").c_str()) == 0;
}

std::string read_text(const fs::path& p) { return read_file(p); }

TEST(ParameterServerSecurity, OneWorkerEqualsSynchronousSgdUnderMutualTls) {
  if (!distribute::grpc_available()) GTEST_SKIP() << "this build of Tower has no gRPC (install libgrpc++-dev)";
  const fs::path dir = fresh_dir("tls_certificates");
  ASSERT_TRUE(make_certificates(dir, "")) << read_text(dir / "openssl.log");
  ASSERT_TRUE(make_certificates(dir, "other_")) << read_text(dir / "other_openssl.log");
  const std::string tls = R"("tls": {"ca": ")" + (dir / "ca.pem").string() + R"(", "certificate": ")" +
                          (dir / "node.pem").string() + R"(", "key": ")" + (dir / "node.key").string() + R"("})";
  Intrusions no_certificate, plaintext, stranger;
  const auto intruder = [&](const ClusterAddresses& a) {
    grpc::SslCredentialsOptions ca_only;
    ca_only.pem_root_certs = read_text(dir / "ca.pem");
    grpc::SslCredentialsOptions other;
    other.pem_root_certs = ca_only.pem_root_certs;
    other.pem_cert_chain = read_text(dir / "other_node.pem");
    other.pem_private_key = read_text(dir / "other_node.key");
    const auto tls_channel = [](const std::string& address, const grpc::SslCredentialsOptions& o) {
      return channel(address, grpc::SslCredentials(o));
    };
    // Until the gate opens the calls wait for the servers to be up; then, and always for the clients that cannot
    // finish a handshake, they fail at once when they cannot connect.
    for (int round = 0; round == 0 || !*a.ended; ++round) {
      for (const grpc::Status& s :
           call_everything(tls_channel(a.ps[0], ca_only), tls_channel(a.worker[0], ca_only), "", !fs::exists(a.gate)))
        no_certificate.count(s, grpc::StatusCode::UNAUTHENTICATED);
      for (const grpc::Status& s : call_everything(plain_channel(a.ps[0]), plain_channel(a.worker[0]), "", false))
        plaintext.count(s, grpc::StatusCode::UNAVAILABLE);
      for (const grpc::Status& s :
           call_everything(tls_channel(a.ps[0], other), tls_channel(a.worker[0], other), "", false))
        stranger.count(s, grpc::StatusCode::UNAVAILABLE);
      if (no_certificate.refused >= 6) open_gate(a);
    }
  };
  std::string logs;
  expect_one_worker_matches_one_process("sgd", 1, kCpuCluster, tls, intruder, &logs);
  EXPECT_EQ(count_of(logs, ") refused a call from ipv4:127.0.0.1 (no client certificate)"), 2) << logs;
  EXPECT_EQ(no_certificate.admitted.load() + plaintext.admitted.load() + stranger.admitted.load(), 0)
      << "a call without a certificate of the CA got in";
  EXPECT_GT(no_certificate.refused.load(), 0);
  EXPECT_EQ(no_certificate.other.load(), 0) << no_certificate.first_other;
  EXPECT_EQ(plaintext.other.load() + stranger.other.load(), 0) << plaintext.first_other << stranger.first_other;
  std::cout << "[ ParameterServerSecurity ] under mutual TLS, refused: " << no_certificate.refused.load()
            << " calls without a client certificate (UNAUTHENTICATED), " << plaintext.refused.load() + plaintext.other.load()
            << " plaintext calls and " << stranger.refused.load() << " calls with another CA's certificate\n";
  fs::remove_all(dir);
}

// A parameter server of one shard in this process, serving its fit on a thread; this test speaks to it as the
// chief and as a broken or hostile worker.
TEST(ParameterServerSecurity, MalformedRequestsGetAStatusAndChangeNothing) {
  if (!distribute::grpc_available()) GTEST_SKIP() << "this build of Tower has no gRPC (install libgrpc++-dev)";
  const std::string token = "in-process-token";
  distribute::ClusterSpec spec;
  spec.chief = {"127.0.0.1:" + std::to_string(free_port())};
  spec.worker = {"127.0.0.1:" + std::to_string(free_port())};
  spec.ps = {"127.0.0.1:" + std::to_string(free_port())};
  spec.task_type = "ps";
  spec.security.token = token;
  distribute::ParameterServerOptions options;
  options.idle_timeout_seconds = 60;
  distribute::ParameterServerStrategy strategy(spec, options);
  Model model = [&] {
    auto scope = strategy.scope();
    set_random_seed(kClusterSeed);
    Model m = small_convnet(true, false);  // with BatchNormalization: non-trainable variables too
    m.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy());
    return m;
  }();
  std::string fit_error;
  std::thread fitter([&] {
    FitOptions fit;
    fit.verbose = 0;
    fit.steps_per_epoch = 1;
    try {
      model.fit(cluster_examples(16, 1), fit);
    } catch (const std::exception& e) {
      fit_error = e.what();
    }
  });
  const std::vector<VariablePtr> weights = model.weights();
  std::size_t trainable = weights.size(), frozen = weights.size(), total_bytes = 0;
  for (std::size_t k = 0; k < weights.size(); ++k) {
    total_bytes += weights[k]->value.nbytes();
    if (weights[k]->trainable && trainable == weights.size()) trainable = k;
    if (!weights[k]->trainable && frozen == weights.size()) frozen = k;
  }
  ASSERT_LT(trainable, weights.size());
  ASSERT_LT(frozen, weights.size());
  // Variable k's bytes, every element `value`.
  const auto bytes_of = [&](std::size_t k, float value) {
    const std::vector<float> v(static_cast<std::size_t>(weights[k]->value.numel()), value);
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
  };
  const auto ps = rpc::ParameterServer::NewStub(plain_channel(spec.ps[0]));
  const std::uint64_t fit = 0x5eed;
  rpc::Empty empty;
  {
    rpc::Variables init;
    init.set_fit(fit);
    for (std::size_t k = 0; k < weights.size(); ++k) {
      rpc::Tensor* t = init.add_variables();
      t->set_index(static_cast<std::uint32_t>(k));
      t->set_data(bytes_of(k, 0.5f));
    }
    const grpc::Status s = ps->Initialize(context_for(token, 30).get(), init, &empty);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  const auto pull = [&](std::uint64_t id, grpc::Status* status = nullptr) {
    rpc::PullRequest request;
    request.set_fit(id);
    rpc::Variables reply;
    const grpc::Status s = ps->Pull(context_for(token).get(), request, &reply);
    if (status) *status = s;
    else EXPECT_TRUE(s.ok()) << s.error_message();
    std::vector<std::string> out;
    for (const rpc::Tensor& t : reply.variables()) out.push_back(t.data());
    return out;
  };
  const std::vector<std::string> initialized = pull(fit);
  ASSERT_EQ(initialized.size(), weights.size());
  EXPECT_EQ(initialized[trainable], bytes_of(trainable, 0.5f)) << "Initialize set the chief's values";

  const auto push = [&](const std::function<void(rpc::PushRequest&)>& fill, const std::string& with_token) {
    rpc::PushRequest request;
    request.set_fit(fit);
    fill(request);
    return ps->Push(context_for(with_token).get(), request, &empty);
  };
  const auto gradient = [&](rpc::PushRequest& r, std::size_t k, std::string data) {
    rpc::Tensor* t = r.add_gradients();
    t->set_index(static_cast<std::uint32_t>(k));
    t->set_data(std::move(data));
  };
  // A worker's step: the gradient of every trainable variable (the shard is the whole model).
  const auto every_gradient = [&](rpc::PushRequest& r, float value) {
    for (std::size_t k = 0; k < weights.size(); ++k)
      if (weights[k]->trainable) gradient(r, k, bytes_of(k, value));
  };
  struct Case {
    std::string what;
    std::function<void(rpc::PushRequest&)> fill;
    grpc::StatusCode code;
    std::string says;
    std::string token;
  };
  const std::vector<Case> cases = {
      {"an oversized message", [&](rpc::PushRequest& r) { gradient(r, trainable, std::string(total_bytes + (1 << 20), 'x')); },
       grpc::StatusCode::RESOURCE_EXHAUSTED, "", token},
      {"a variable out of range", [&](rpc::PushRequest& r) { gradient(r, 1000, bytes_of(trainable, 1)); },
       grpc::StatusCode::INVALID_ARGUMENT, "gradient of variable 1000, which does not exist", token},
      {"a tensor of the wrong size", [&](rpc::PushRequest& r) { gradient(r, trainable, "abcd"); },
       grpc::StatusCode::INVALID_ARGUMENT, "with 4 bytes, expected", token},
      {"a variable twice",
       [&](rpc::PushRequest& r) {
         gradient(r, trainable, bytes_of(trainable, 1));
         gradient(r, trainable, bytes_of(trainable, 1));
       },
       grpc::StatusCode::INVALID_ARGUMENT, "twice in one request", token},
      {"a good gradient, then a bad one",
       [&](rpc::PushRequest& r) {
         gradient(r, trainable, bytes_of(trainable, 1));
         gradient(r, trainable + 1, "x");
       },
       grpc::StatusCode::INVALID_ARGUMENT, "with 1 bytes, expected", token},
      {"the gradients of some of the shard's trainable variables",
       [&](rpc::PushRequest& r) { gradient(r, trainable, bytes_of(trainable, 1)); }, grpc::StatusCode::INVALID_ARGUMENT,
       "trainable variables it holds: a step pushes all of them", token},
      {"a gradient of a non-trainable variable", [&](rpc::PushRequest& r) { gradient(r, frozen, bytes_of(frozen, 1)); },
       grpc::StatusCode::INVALID_ARGUMENT, "which is not trainable", token},
      {"a value of a trainable variable",
       [&](rpc::PushRequest& r) {
         rpc::Tensor* t = r.add_values();
         t->set_index(static_cast<std::uint32_t>(trainable));
         t->set_data(bytes_of(trainable, 9));
       },
       grpc::StatusCode::INVALID_ARGUMENT, "which is trainable", token},
      {"a step of another fit",
       [&](rpc::PushRequest& r) {
         r.set_fit(fit + 1);
         every_gradient(r, 1);
       },
       grpc::StatusCode::FAILED_PRECONDITION, "it is in fit", token},
      {"a step of no fit",
       [&](rpc::PushRequest& r) {
         r.set_fit(0);
         every_gradient(r, 1);
       },
       grpc::StatusCode::FAILED_PRECONDITION, "nothing was applied", token},
      {"no token", [&](rpc::PushRequest& r) { every_gradient(r, 1); },
       grpc::StatusCode::UNAUTHENTICATED, "refused the call: no cluster token", ""},
      {"a wrong token", [&](rpc::PushRequest& r) { every_gradient(r, 1); },
       grpc::StatusCode::UNAUTHENTICATED, "refused the call: a wrong cluster token", token + "x"},
  };
  for (const Case& c : cases) {
    const grpc::Status s = push(c.fill, c.token);
    EXPECT_EQ(s.error_code(), c.code) << c.what << ": " << s.error_message();
    EXPECT_NE(s.error_message().find(c.says), std::string::npos) << c.what << ": " << s.error_message();
    EXPECT_EQ(pull(fit), initialized) << c.what << " changed the shard";
  }
  // An Initialize of the wrong size, and a pull of another fit: refused, nothing changed.
  {
    rpc::Variables init;
    init.set_fit(fit + 7);
    rpc::Tensor* t = init.add_variables();
    t->set_index(static_cast<std::uint32_t>(trainable));
    t->set_data("xy");
    const grpc::Status s = ps->Initialize(context_for(token).get(), init, &empty);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    grpc::Status other;
    pull(fit + 7, &other);
    EXPECT_EQ(other.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << "the refused Initialize began fit " << fit + 7;
    EXPECT_EQ(pull(fit), initialized);
  }
  // The server is still serving: a good push applies SGD (0.1 * gradient 1 from 0.5) and takes a value.
  const grpc::Status good = push(
      [&](rpc::PushRequest& r) {
        every_gradient(r, 1);
        rpc::Tensor* t = r.add_values();
        t->set_index(static_cast<std::uint32_t>(frozen));
        t->set_data(bytes_of(frozen, 3));
      },
      token);
  ASSERT_TRUE(good.ok()) << good.error_message();
  const std::vector<std::string> after = pull(fit);
  for (std::size_t k = 0; k < weights.size(); ++k)
    if (weights[k]->trainable) EXPECT_EQ(after[k], bytes_of(k, 0.4f)) << "0.5 - 0.1 * 1: " << weights[k]->path;
  EXPECT_EQ(after[frozen], bytes_of(frozen, 3));

  // The chief ends the fit; a late push of it is refused at once, not at its deadline.
  ASSERT_TRUE(ps->Shutdown(context_for(token).get(), empty, &empty).ok());
  fitter.join();
  EXPECT_EQ(fit_error, "");
  const auto start = std::chrono::steady_clock::now();
  const grpc::Status late = push([&](rpc::PushRequest& r) { every_gradient(r, 1); }, token);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(late.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << late.error_message();
  EXPECT_NE(late.error_message().find("fit " + std::to_string(fit) + " has ended"), std::string::npos) << late.error_message();
  EXPECT_LT(seconds, 3.0) << "the late push waited for its deadline";
  std::cout << "[ ParameterServerSecurity ] " << cases.size() + 2 << " malformed or unauthenticated requests refused, "
            << "the shard unchanged; a push of the ended fit refused in " << seconds << " s\n";
}

#endif

}  // namespace
}  // namespace tower
