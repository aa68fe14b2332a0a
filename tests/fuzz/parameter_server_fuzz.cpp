// A parameter server's request handlers (distribute/detail/parameter_server_shard.h) on any bytes, with no
// network: the first byte picks what the rest is, as gRPC would hand it to the handler once parsed,
//   0  an Initialize (Variables)       1  a Pull (PullRequest)       2  a Push (PushRequest)
//   3  a Push, then a Pull              4  a cluster token, compared with the cluster's (same_secret)
// The shard is shard 0 of 2 of fuzz::keras_model() (convolution, BatchNormalization, Dense: trainable and
// non-trainable variables), compiled with SGD, in fit 1 with its initial values before every input, and fit 7
// has ended. Besides crashes and sanitizer reports, a finding is: an exception out of a handler (the server turns
// it into a status only after applying part of a request), a refused request that changed a variable, or a
// token comparison that disagrees with ==.
#include <cstring>
#include <string>
#include <vector>

#include "distribute/detail/cluster_security.h"
#include "distribute/detail/parameter_server_shard.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/fuzz_models.h"

namespace {

using namespace tower;
namespace ps = tower::distribute::ps;
using distribute::detail::ParameterServerShard;

constexpr std::uint64_t kFit = 1;
constexpr std::uint64_t kEndedFit = 7;

struct Server {
  Model model = [] {
    Model m = fuzz::keras_model();
    m.compile(optimizers::SGD(0.1), losses::MeanSquaredError());
    return m;
  }();
  distribute::detail::EndedFits ended;
  ParameterServerShard shard{model.impl(), 0, 2, "parameter server 0 (fuzz)", ended};
  ps::Variables initial;  // fit 1 with the model's initial values of shard 0

  Server() {
    ended.add(kEndedFit);
    initial.set_fit(kFit);
    const std::vector<VariablePtr> weights = model.weights();
    for (std::size_t k = 0; k < weights.size(); k += 2)
      distribute::detail::write_tensor(initial.add_variables(), k, weights[k]->value);
  }

  std::vector<std::string> values() const {
    std::vector<std::string> out;
    for (const VariablePtr& v : model.weights()) {
      std::string bytes(v->value.nbytes(), '\0');
      std::memcpy(bytes.data(), v->value.data<float>(), bytes.size());
      out.push_back(std::move(bytes));
    }
    return out;
  }
};

Server& server() {
  static Server* s = new Server();  // never destroyed: the model outlives every input
  return *s;
}

// Runs a handler: a finding when it throws, or when it refused the request and a variable changed.
template <class Handle>
void expect_refusal_changes_nothing(const char* what, Handle&& handle) {
  Server& s = server();
  const std::vector<std::string> before = s.values();
  grpc::Status status;
  try {
    status = handle();
  } catch (const std::exception& e) {
    fuzz::finding((std::string(what) + " threw").c_str(), e.what());
  }
  if (fuzz::verbose())
    std::fprintf(stderr, "  %s: %d %s\n", what, static_cast<int>(status.error_code()), status.error_message().c_str());
  if (!status.ok() && s.values() != before) fuzz::finding(what, "a refused request changed the shard");
  if (!status.ok() && status.error_message().empty()) fuzz::finding(what, "a refusal without a message");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  Server& s = server();
  const grpc::Status reset = s.shard.initialize(s.initial);
  if (!reset.ok()) fuzz::finding("the initial Initialize", reset.error_message().c_str());
  const std::uint8_t kind = data[0] % 5;
  const char* body = reinterpret_cast<const char*>(data + 1);
  const int length = static_cast<int>(size - 1);
  switch (kind) {
    case 0: {
      ps::Variables request;
      if (!request.ParseFromArray(body, length)) return 0;
      expect_refusal_changes_nothing("Initialize", [&] { return s.shard.initialize(request); });
      break;
    }
    case 1: {
      ps::PullRequest request;
      if (!request.ParseFromArray(body, length)) return 0;
      ps::Variables reply;
      expect_refusal_changes_nothing("Pull", [&] { return s.shard.pull(request, &reply); });
      break;
    }
    case 2:
    case 3: {
      ps::PushRequest request;
      if (!request.ParseFromArray(body, length)) return 0;
      expect_refusal_changes_nothing("Push", [&] { return s.shard.push(request); });
      if (kind == 3) {
        ps::PullRequest pull;
        pull.set_fit(request.fit());
        ps::Variables reply;
        expect_refusal_changes_nothing("Pull after Push", [&] { return s.shard.pull(pull, &reply); });
      }
      break;
    }
    default: {
      const std::string_view token(body, static_cast<std::size_t>(length));
      for (std::string_view expected : {std::string_view("cluster-token"), std::string_view("")})
        if (distribute::detail::same_secret(token, expected) != (token == expected))
          fuzz::finding("same_secret", "disagrees with ==");
      break;
    }
  }
  return 0;
}
