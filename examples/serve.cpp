// A model server: loads a model saved with Model::save and answers predictions over TCP from a pool of worker
// threads that all call predict_on_batch on the one shared Model (Tower's inference is thread-safe). Copy it to
// serve your own model; it needs nothing but POSIX sockets and the C++ standard library.
//   serve MODEL_FILE [--port P=8500] [--threads N=hardware threads] [--host ADDRESS=127.0.0.1]
//       serves on loopback unless --host names another address; --port 0 picks a free port (printed)
//   serve --client HOST:PORT --model MODEL_FILE [--requests K=200] [--client-threads T=4] [--shutdown]
//       K requests of random batch sizes 1..4 from T connections, each answer checked bit for bit against
//       predict_on_batch on the same file here; prints latencies and "K answers, 0 wrong"; exits 1 otherwise
//   serve --save-demo-model FILE
//       saves the demo's untrained convnet to FILE, to try the two above with
//   serve --demo
//       saves a small convnet, serves it on a free loopback port, sends it the bad requests below and 200 good
//       ones from 4 threads, shuts it down (the CTest Examples.ServeShort)
//
// Protocol: TCP, one persistent connection per client, requests answered in order, integers little-endian.
//   request   "TWR1" (magic; '1' is the version) | u32 kind (1 PREDICT, 2 SHUTDOWN) | u64 body bytes | body
//             PREDICT body: u32 rank | rank x i64 dims, batch first | float32 data, row-major (images NHWC)
//             SHUTDOWN body: empty
//   response  u8 status (0 ok, 1 bad request, 2 inference failed, 3 server busy), then
//             status 0: u32 rank | rank x i64 dims | float32 outputs (a SHUTDOWN's answer: rank 0, nothing more)
//             else:     u32 length | UTF-8 message naming the problem
// A bad body (a wrong shape, a batch of 0, fewer or more data bytes than its dims need, over 64 MiB) gets status 1
// and the connection stays open: the header's body length says where the next request starts. A malformed header
// (another magic or kind, a body over 1 GiB) is answered and closes that connection only, as does a connection
// closing or going quiet for 30 s in the middle of a request. SHUTDOWN, SIGINT and SIGTERM stop the server: it
// stops accepting, answers the requests in flight, joins its threads and closes its sockets.
// The protocol has no authentication or encryption: keep it on loopback or behind something that has.
#include <tower/tower.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <future>
#include <list>
#include <limits>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace tower;

namespace {

// ---- the protocol ----

constexpr char kMagic[4] = {'T', 'W', 'R', '1'};
constexpr std::uint32_t kPredict = 1, kShutdown = 2;
enum Status : std::uint8_t { kOk = 0, kBadRequest = 1, kInferenceFailed = 2, kBusy = 3 };
constexpr std::size_t kHeaderBytes = 16;
constexpr std::uint64_t kMaxBody = std::uint64_t{64} << 20;  // larger bodies are refused (their bytes skipped)
constexpr std::uint64_t kMaxSkip = std::uint64_t{1} << 30;   // larger ones mean a damaged header
constexpr std::uint32_t kMaxRank = 16;
constexpr std::uint32_t kMaxMessage = 1 << 20;
constexpr int kMessageTimeoutMs = 30000;  // the most silence inside one message
constexpr std::size_t kMaxConnections = 256;

using Bytes = std::vector<std::uint8_t>;

void put_u32(Bytes& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void put_u64(Bytes& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
std::uint32_t get_u32(const std::uint8_t* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= std::uint32_t{p[i]} << (8 * i);
  return v;
}
std::uint64_t get_u64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t{p[i]} << (8 * i);
  return v;
}

// float32 values to and from little-endian bytes.
void put_floats(Bytes& out, const float* values, std::size_t n) {
  const std::size_t at = out.size();
  out.resize(at + 4 * n);
  if constexpr (std::endian::native == std::endian::little) {
    if (n > 0) std::memcpy(out.data() + at, values, 4 * n);
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      const auto bits = std::bit_cast<std::uint32_t>(values[i]);
      for (int b = 0; b < 4; ++b) out[at + 4 * i + b] = static_cast<std::uint8_t>(bits >> (8 * b));
    }
  }
}
void get_floats(const std::uint8_t* bytes, float* values, std::size_t n) {
  if constexpr (std::endian::native == std::endian::little) {
    if (n > 0) std::memcpy(values, bytes, 4 * n);
  } else {
    for (std::size_t i = 0; i < n; ++i) values[i] = std::bit_cast<float>(get_u32(bytes + 4 * i));
  }
}

Bytes request_header(std::uint32_t kind, std::uint64_t body_bytes) {
  Bytes out(kMagic, kMagic + 4);
  put_u32(out, kind);
  put_u64(out, body_bytes);
  return out;
}

// A PREDICT request for `count` floats shaped `dims` (which the server checks; the demo sends wrong ones).
Bytes predict_request(const std::vector<Index>& dims, const float* data, std::size_t count) {
  Bytes out = request_header(kPredict, 4 + 8 * dims.size() + 4 * count);
  put_u32(out, static_cast<std::uint32_t>(dims.size()));
  for (Index d : dims) put_u64(out, static_cast<std::uint64_t>(d));
  put_floats(out, data, count);
  return out;
}
Bytes predict_request(const Tensor& x) {
  return predict_request(x.shape().dims(), x.data<float>(), static_cast<std::size_t>(x.numel()));
}

// Status 0 with a tensor; an undefined tensor is sent as rank 0 (SHUTDOWN's answer).
Bytes ok_response(const Tensor& y) {
  Bytes out{kOk};
  if (!y.defined()) {
    put_u32(out, 0);
    return out;
  }
  put_u32(out, static_cast<std::uint32_t>(y.rank()));
  for (Index d : y.shape()) put_u64(out, static_cast<std::uint64_t>(d));
  put_floats(out, y.data<float>(), static_cast<std::size_t>(y.numel()));
  return out;
}
Bytes error_response(Status status, std::string message) {
  if (message.size() > kMaxMessage) message.resize(kMaxMessage);
  Bytes out{status};
  put_u32(out, static_cast<std::uint32_t>(message.size()));
  out.insert(out.end(), message.begin(), message.end());
  return out;
}

std::string shape_string(const std::vector<Index>& dims) { return Shape(dims).to_string(); }

// ---- sockets ----

std::runtime_error system_error(const std::string& what) {
  return std::runtime_error(what + ": " + std::strerror(errno));
}

// A file descriptor, closed when it goes.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  ~Fd() { reset(); }
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

enum class Io { ok, closed, timed_out, failed };

// Reads exactly n bytes, giving up after timeout_ms (-1: never) of silence; `got` says how many came.
Io read_exact(int fd, void* buffer, std::size_t n, int timeout_ms, std::size_t* got = nullptr) {
  auto* p = static_cast<std::uint8_t*>(buffer);
  std::size_t done = 0;
  Io result = Io::ok;
  while (done < n) {
    pollfd ready{fd, POLLIN, 0};
    const int events = ::poll(&ready, 1, timeout_ms);
    if (events < 0 && errno == EINTR) continue;
    if (events <= 0) {
      result = events == 0 ? Io::timed_out : Io::failed;
      break;
    }
    const ssize_t r = ::recv(fd, p + done, n - done, 0);
    if (r > 0) {
      done += static_cast<std::size_t>(r);
    } else if (r == 0 || errno == ECONNRESET) {
      result = Io::closed;
      break;
    } else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
      result = Io::failed;
      break;
    }
  }
  if (got) *got = done;
  return result;
}

// Reads and drops n bytes (the body of a request too large to take).
Io skip_bytes(int fd, std::uint64_t n, int timeout_ms) {
  std::vector<std::uint8_t> sink(64 * 1024);
  while (n > 0) {
    const std::size_t piece = static_cast<std::size_t>(std::min<std::uint64_t>(n, sink.size()));
    const Io io = read_exact(fd, sink.data(), piece, timeout_ms);
    if (io != Io::ok) return io;
    n -= piece;
  }
  return Io::ok;
}

// Writes all n bytes; false when the peer has gone or stopped reading for the socket's send timeout.
bool write_all(int fd, const void* buffer, std::size_t n) {
  const auto* p = static_cast<const std::uint8_t*>(buffer);
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w > 0) {
      p += w;
      n -= static_cast<std::size_t>(w);
    } else if (w < 0 && errno != EINTR) {
      return false;
    }
  }
  return true;
}
bool write_all(int fd, const Bytes& bytes) { return write_all(fd, bytes.data(), bytes.size()); }

void tune_socket(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // answers are small: send them now
  const timeval send_timeout{kMessageTimeoutMs / 1000, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout);
}

std::string describe(const sockaddr* address) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (address->sa_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(address);
    ::inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
    return std::string(text) + ":" + std::to_string(ntohs(a->sin_port));
  }
  if (address->sa_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(address);
    ::inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
    return "[" + std::string(text) + "]:" + std::to_string(ntohs(a->sin6_port));
  }
  return "an address of family " + std::to_string(address->sa_family);
}

bool is_loopback(const sockaddr* address) {
  if (address->sa_family == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in*>(address)->sin_addr.s_addr) >> 24) == 127;
  if (address->sa_family != AF_INET6) return false;
  const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr;
  return IN6_IS_ADDR_LOOPBACK(&a) || (IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127);
}

using AddressList = std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)>;

AddressList resolve(const std::string& host, int port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0) throw std::runtime_error("cannot resolve '" + host + "': " + ::gai_strerror(rc));
  return AddressList(found, ::freeaddrinfo);
}

// A listening socket on host:port, and the address it got (port 0: a free one). Refuses an address other
// machines can reach unless allow_remote.
Fd listen_on(const std::string& host, int port, bool allow_remote, std::string* bound_address, bool* remote) {
  const AddressList found = resolve(host, port, true);
  std::string problem = "'" + host + "' has no address";
  for (const addrinfo* a = found.get(); a; a = a->ai_next) {
    if (!allow_remote && !is_loopback(a->ai_addr)) {
      problem = describe(a->ai_addr) + " is not a loopback address; name it with --host to serve on it";
      continue;
    }
    Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol));
    const int one = 1;
    if (fd.get() < 0 || ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        ::bind(fd.get(), a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd.get(), 128) != 0) {
      problem = "cannot listen on " + describe(a->ai_addr) + ": " + std::strerror(errno);
      continue;
    }
    sockaddr_storage bound{};
    socklen_t length = sizeof bound;
    ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &length);
    *bound_address = describe(reinterpret_cast<const sockaddr*>(&bound));
    *remote = !is_loopback(a->ai_addr);
    return fd;
  }
  throw std::runtime_error(problem);
}

Fd connect_to(const std::string& host, int port) {
  const AddressList found = resolve(host, port, false);
  std::string problem = "'" + host + "' has no address";
  for (const addrinfo* a = found.get(); a; a = a->ai_next) {
    Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (fd.get() >= 0 && ::connect(fd.get(), a->ai_addr, a->ai_addrlen) == 0) {
      tune_socket(fd.get());
      return fd;
    }
    problem = "cannot connect to " + describe(a->ai_addr) + ": " + std::strerror(errno);
  }
  throw std::runtime_error(problem);
}

// ---- the server ----

// N threads calling predict_on_batch on one shared Model: however many connections are open, at most N
// predictions run at once. submit() returns the outputs, or the exception predict_on_batch threw, as a future.
class InferencePool {
 public:
  InferencePool(Model model, int threads) : model_(std::move(model)) {
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }
  ~InferencePool() { stop(); }

  std::future<Tensor> submit(Tensor x) {
    Job job{std::move(x), {}};
    std::future<Tensor> result = job.result.get_future();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_.push_back(std::move(job));
    }
    ready_.notify_one();
    return result;
  }

  // Finishes the jobs queued and joins the workers.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    for (std::thread& w : workers_)
      if (w.joinable()) w.join();
  }

 private:
  struct Job {
    Tensor input;
    std::promise<Tensor> result;
  };

  void work() {
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      try {
        job.result.set_value(model_.predict_on_batch(job.input));
      } catch (...) {
        job.result.set_exception(std::current_exception());
      }
    }
  }

  const Model model_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

struct BadRequest : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8500;  // 0: a free port
  int threads = 1;
  bool allow_remote = false;  // listen on an address other machines can reach (serve's --host)
};

// Accepts connections on one thread, reads each connection's requests on a thread of its own and runs the
// predictions on the InferencePool.
class Server {
 public:
  Server(Model model, const ServerOptions& options)
      : model_(model), pool_(model, options.threads), threads_(options.threads) {
    if (model.inputs().size() != 1 || model.outputs().size() != 1)
      throw std::invalid_argument("serve takes models of one input and one output; '" + model.name() + "' has " +
                                  std::to_string(model.inputs().size()) + " and " +
                                  std::to_string(model.outputs().size()));
    input_shape_ = model.inputs()[0].shape();
    // One plan per worker, and every call on its worker's thread alone: the workers already fill the cores, and
    // kernels' threads of their own would only wait on one another (README, "Serving a model").
    model_->set_inference_options({.plans_per_shape = static_cast<std::size_t>(options.threads),
                                   .caller_thread_bytes = std::numeric_limits<std::size_t>::max()});
    listen_ = listen_on(options.host, options.port, options.allow_remote, &address_, &remote_);
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) throw system_error("pipe2");
    wake_read_ = Fd(pipe_fds[0]);
    wake_write_ = Fd(pipe_fds[1]);
  }

  const std::string& name() const { return model_.name(); }
  const std::string& address() const { return address_; }
  int port() const { return std::stoi(address_.substr(address_.rfind(':') + 1)); }
  int threads() const { return threads_; }
  bool reachable_from_other_machines() const { return remote_; }
  std::uint64_t answered() const { return answered_.load(); }
  // Writing a byte here stops run(); async-signal-safe, for a signal handler.
  int wake_fd() const { return wake_write_.get(); }
  void stop() const {
    const char byte = 1;
    [[maybe_unused]] const ssize_t ignored = ::write(wake_write_.get(), &byte, 1);
  }

  // Serves until stop(); then stops accepting, lets the requests in flight finish and joins every thread.
  void run() {
    for (;;) {
      pollfd events[2] = {{listen_.get(), POLLIN, 0}, {wake_read_.get(), POLLIN, 0}};
      const int n = ::poll(events, 2, 200);
      reap_finished();
      if (n < 0 && errno != EINTR) {
        std::fprintf(stderr, "serve: poll: %s; stopping\n", std::strerror(errno));
        break;
      }
      if (n > 0 && events[1].revents) break;
      if (n > 0 && (events[0].revents & POLLIN)) accept_one();
    }
    listen_.reset();
    for (auto& c : connections_) ::shutdown(c->fd.get(), SHUT_RD);  // wakes their reads; answers still go out
    for (auto& c : connections_) c->thread.join();
    connections_.clear();
    pool_.stop();
  }

 private:
  struct Connection {
    Fd fd;
    std::string peer;
    std::thread thread;
    std::atomic<bool> done{false};
  };

  static void log(const Connection& c, const std::string& what) {
    std::fprintf(stderr, "serve: %s: %s\n", c.peer.c_str(), what.c_str());
  }

  void accept_one() {
    sockaddr_storage peer{};
    socklen_t length = sizeof peer;
    Fd fd(::accept4(listen_.get(), reinterpret_cast<sockaddr*>(&peer), &length, SOCK_CLOEXEC));
    if (fd.get() < 0) {
      if (errno == EMFILE || errno == ENFILE) {
        std::fprintf(stderr, "serve: accept: %s\n", std::strerror(errno));
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      return;  // EAGAIN, EINTR, ECONNABORTED: nothing to take now
    }
    tune_socket(fd.get());
    if (connections_.size() >= kMaxConnections) {
      write_all(fd.get(), error_response(kBusy, "server busy: " + std::to_string(kMaxConnections) +
                                                    " connections open; try again later"));
      return;
    }
    auto c = std::make_unique<Connection>();
    c->fd = std::move(fd);
    c->peer = describe(reinterpret_cast<const sockaddr*>(&peer));
    Connection* raw = c.get();
    connections_.push_back(std::move(c));
    raw->thread = std::thread([this, raw] {
      try {
        serve(*raw);
      } catch (const std::exception& e) {
        log(*raw, std::string("closing: ") + e.what());
      }
      raw->done = true;
    });
  }

  // Joins the threads of connections that have ended and closes their sockets.
  void reap_finished() {
    for (auto it = connections_.begin(); it != connections_.end();) {
      if ((*it)->done) {
        (*it)->thread.join();
        it = connections_.erase(it);
      } else {
        ++it;
      }
    }
  }

  // Answers one connection's requests until it closes, sends a malformed header or SHUTDOWN, or run() ends.
  void serve(Connection& c) {
    const int fd = c.fd.get();
    for (;;) {
      std::uint8_t head[kHeaderBytes];
      if (read_exact(fd, head, 1, -1) != Io::ok) return;  // a client may stay quiet between requests
      std::size_t got = 0;
      Io io = read_exact(fd, head + 1, kHeaderBytes - 1, kMessageTimeoutMs, &got);
      if (io != Io::ok) {
        const std::string what = "truncated request header: the connection " + ended(io) + " after " +
                                 std::to_string(got + 1) + " of its " + std::to_string(kHeaderBytes) + " bytes";
        write_all(fd, error_response(kBadRequest, what));
        log(c, "closing: " + what);
        return;
      }
      const std::uint32_t kind = get_u32(head + 4);
      const std::uint64_t body_bytes = get_u64(head + 8);
      const std::string malformed = check_header(head, kind, body_bytes);
      if (!malformed.empty()) {
        write_all(fd, error_response(kBadRequest, "malformed header: " + malformed + "; closing the connection"));
        log(c, "closing: malformed header: " + malformed);
        return;
      }
      if (body_bytes > kMaxBody) {
        if (const Io skipped = skip_bytes(fd, body_bytes, kMessageTimeoutMs); skipped != Io::ok) {
          log(c, "closing: the connection " + ended(skipped) + " inside a request too large to take");
          return;
        }
        if (!write_all(fd, error_response(kBadRequest, "request too large: a body of " + std::to_string(body_bytes) +
                                                           " bytes; the limit is 64 MiB")))
          return;
        continue;
      }
      Bytes body(body_bytes);
      io = read_exact(fd, body.data(), body.size(), kMessageTimeoutMs, &got);
      if (io != Io::ok) {
        const std::string what = "truncated request: the header announced " + std::to_string(body_bytes) +
                                 " body bytes; the connection " + ended(io) + " after " + std::to_string(got);
        write_all(fd, error_response(kBadRequest, what));  // a client that only shut down its writing reads it
        log(c, "closing: " + what);
        return;
      }
      if (kind == kShutdown) {
        write_all(fd, ok_response(Tensor()));
        log(c, "SHUTDOWN requested; stopping");
        stop();
        return;
      }
      if (!write_all(fd, predict(body))) return;
    }
  }

  static std::string ended(Io io) {
    if (io == Io::timed_out) return "was silent for " + std::to_string(kMessageTimeoutMs / 1000) + " s";
    return io == Io::closed ? "closed" : std::string("failed (") + std::strerror(errno) + ")";
  }

  // Why a header cannot be trusted to find the next request by, or "" when it can.
  static std::string check_header(const std::uint8_t* head, std::uint32_t kind, std::uint64_t body_bytes) {
    if (std::memcmp(head, kMagic, 4) != 0) return "it does not start with \"TWR1\"";
    if (kind != kPredict && kind != kShutdown) return "unknown request kind " + std::to_string(kind);
    if (body_bytes > kMaxSkip) return "a body of " + std::to_string(body_bytes) + " bytes (over 1 GiB)";
    return "";
  }

  Bytes predict(const Bytes& body) {
    Tensor x;
    try {
      x = parse_input(body);
    } catch (const BadRequest& e) {
      return error_response(kBadRequest, e.what());
    }
    try {
      Bytes answer = ok_response(pool_.submit(std::move(x)).get());
      ++answered_;
      return answer;
    } catch (const std::exception& e) {
      return error_response(kInferenceFailed, std::string("inference failed: ") + e.what());
    }
  }

  // The input tensor of a PREDICT body; throws BadRequest naming what is wrong with it.
  Tensor parse_input(const Bytes& body) const {
    if (body.size() < 4)
      throw BadRequest("a PREDICT body starts with its rank (4 bytes); this one has " + std::to_string(body.size()));
    const std::uint32_t rank = get_u32(body.data());
    if (rank == 0 || rank > kMaxRank)
      throw BadRequest("rank " + std::to_string(rank) + ": an input has a batch dimension and at most " +
                       std::to_string(kMaxRank) + " dimensions");
    const std::size_t dims_end = 4 + 8 * std::size_t{rank};
    if (body.size() < dims_end)
      throw BadRequest("truncated request: rank " + std::to_string(rank) + " needs " + std::to_string(8 * rank) +
                       " bytes of dims; the body has " + std::to_string(body.size() - 4));
    std::vector<Index> dims(rank);
    for (std::uint32_t i = 0; i < rank; ++i) {
      dims[i] = static_cast<Index>(get_u64(body.data() + 4 + 8 * i));
      if (dims[i] < 0) throw BadRequest("dimension " + std::to_string(i) + " is " + std::to_string(dims[i]));
    }
    const std::uint64_t data_bytes = body.size() - dims_end;
    const std::uint64_t needed = float_bytes(dims);
    if (needed != data_bytes)
      throw BadRequest((needed > data_bytes ? "truncated request: shape " : "extra bytes: shape ") +
                       shape_string(dims) + " needs " +
                       (needed > kMaxBody ? "over 64 MiB" : std::to_string(needed) + " bytes") +
                       " of float32 data; the body carries " + std::to_string(data_bytes));
    if (dims[0] == 0)
      throw BadRequest("empty batch: shape " + shape_string(dims) + "; the batch (first) dimension must be >= 1");
    if (!accepts(dims))
      throw BadRequest("wrong input shape " + shape_string(dims) + ": model '" + model_.name() + "' takes " +
                       input_shape_.to_string() + ", batch first");
    Tensor x{Shape(dims)};
    get_floats(body.data() + dims_end, x.data<float>(), static_cast<std::size_t>(x.numel()));
    return x;
  }

  // The bytes of float32 data `dims` hold, kMaxBody + 1 for anything over the limit.
  static std::uint64_t float_bytes(const std::vector<Index>& dims) {
    if (std::find(dims.begin(), dims.end(), 0) != dims.end()) return 0;
    std::uint64_t bytes = 4;
    for (Index d : dims) {
      if (bytes > kMaxBody / static_cast<std::uint64_t>(d)) return kMaxBody + 1;
      bytes *= static_cast<std::uint64_t>(d);
    }
    return bytes;
  }

  bool accepts(const std::vector<Index>& dims) const {
    if (static_cast<int>(dims.size()) != input_shape_.rank()) return false;
    for (int i = 1; i < input_shape_.rank(); ++i)
      if (input_shape_[i] != -1 && input_shape_[i] != dims[i]) return false;
    return true;
  }

  const Model model_;
  InferencePool pool_;
  const int threads_;
  Shape input_shape_;
  std::string address_;
  bool remote_ = false;
  Fd listen_, wake_read_, wake_write_;
  std::list<std::unique_ptr<Connection>> connections_;  // touched by run()'s thread only
  std::atomic<std::uint64_t> answered_{0};
};

// ---- the client ----

struct Reply {
  std::uint8_t status = kOk;
  Tensor output;  // status 0 (undefined for SHUTDOWN's answer)
  std::string message;  // other statuses
};

// One connection to a server.
class Client {
 public:
  Client(const std::string& host, int port) : fd_(connect_to(host, port)) {}

  Reply predict(const Tensor& x) {
    send(predict_request(x));
    return receive();
  }
  Reply shutdown_server() {
    send(request_header(kShutdown, 0));
    return receive();
  }
  // Any bytes, well-formed or not (the demo's bad requests).
  void send(const Bytes& bytes) {
    if (!write_all(fd_.get(), bytes)) throw system_error("sending a request");
  }
  Reply receive() {
    Reply reply;
    read(&reply.status, 1);
    if (reply.status != kOk) {
      reply.message.resize(read_u32("message length", kMaxMessage));
      read(reply.message.data(), reply.message.size());
      return reply;
    }
    std::vector<Index> dims(read_u32("rank", kMaxRank));
    for (Index& d : dims) {
      std::uint8_t word[8];
      read(word, 8);
      d = static_cast<Index>(get_u64(word));
      if (d < 0 || d > static_cast<Index>(kMaxBody))
        throw std::runtime_error("a reply with a dimension " + std::to_string(d));
    }
    if (dims.empty()) return reply;
    reply.output = Tensor{Shape(dims)};
    Bytes data(reply.output.nbytes());
    read(data.data(), data.size());
    get_floats(data.data(), reply.output.data<float>(), static_cast<std::size_t>(reply.output.numel()));
    return reply;
  }
  // True when the server has closed this connection (waits up to a second for it to).
  bool closed_by_server() {
    std::uint8_t byte;
    return read_exact(fd_.get(), &byte, 1, 1000) == Io::closed;
  }

 private:
  void read(void* buffer, std::size_t n) {
    switch (read_exact(fd_.get(), buffer, n, kMessageTimeoutMs)) {
      case Io::ok: return;
      case Io::closed: throw std::runtime_error("the server closed the connection");
      case Io::timed_out: throw std::runtime_error("no answer from the server for 30 s");
      case Io::failed: throw system_error("reading an answer");
    }
  }
  std::uint32_t read_u32(const char* what, std::uint32_t limit) {
    std::uint8_t word[4];
    read(word, 4);
    const std::uint32_t v = get_u32(word);
    if (v > limit) throw std::runtime_error(std::string("a reply with ") + what + " " + std::to_string(v));
    return v;
  }

  Fd fd_;
};

struct ClientOptions {
  std::string host = "127.0.0.1";
  int port = 0;
  int requests = 200;
  int threads = 4;
  unsigned seed = 1;
};

struct ClientReport {
  int answers = 0, wrong = 0, errors = 0;
  std::vector<double> latency_ms;
};

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.defined() && b.defined() && a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

Tensor random_batch(const Shape& input_shape, Index batch, std::mt19937& rng) {
  Tensor x{input_shape.with_batch(batch)};
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  float* p = x.data<float>();
  for (Index i = 0; i < x.numel(); ++i) p[i] = uniform(rng);
  return x;
}

// One client thread: `count` requests on one connection, each answer compared with `model` here.
ClientReport client_thread(const Model& model, const ClientOptions& options, int count, unsigned seed) {
  ClientReport report;
  std::mt19937 rng(seed);
  auto complain = [&](const std::string& what) {
    if (report.errors + report.wrong <= 3) std::fprintf(stderr, "client: %s\n", what.c_str());
  };
  try {
    Client client(options.host, options.port);
    for (int i = 0; i < count; ++i) {
      const Tensor x = random_batch(model.inputs()[0].shape(), 1 + static_cast<Index>(rng() % 4), rng);
      const auto start = std::chrono::steady_clock::now();
      const Reply reply = client.predict(x);
      report.latency_ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
      if (reply.status != kOk) {
        ++report.errors;
        complain("error " + std::to_string(reply.status) + ": " + reply.message);
        continue;
      }
      ++report.answers;
      if (!same_bits(reply.output, model.predict_on_batch(x))) {
        ++report.wrong;
        complain("an answer for a batch of " + std::to_string(x.dim(0)) + " differs from predict_on_batch here");
      }
    }
  } catch (const std::exception& e) {
    complain(e.what());
    report.errors = count - report.answers;
  }
  return report;
}

// `requests` predictions of random batch sizes 1..4 from `threads` connections at once, every answer checked bit
// for bit against predict_on_batch on `model` (the file the server serves, loaded here).
ClientReport run_client(const Model& model, const ClientOptions& options) {
  const Shape& input = model.inputs()[0].shape();
  for (int i = 1; i < input.rank(); ++i)
    if (input[i] < 0) throw std::invalid_argument("the client makes inputs of fully known shapes; '" + model.name() +
                                                  "' takes " + input.to_string());
  const int connections = std::min(options.threads, options.requests);
  std::vector<ClientReport> reports(connections);
  std::vector<std::thread> threads;
  for (int t = 0; t < connections; ++t) {
    const int count = options.requests / connections + (t < options.requests % connections ? 1 : 0);
    threads.emplace_back([&, t, count] { reports[t] = client_thread(model, options, count, options.seed * 7919 + t); });
  }
  for (std::thread& t : threads) t.join();
  ClientReport all;
  for (const ClientReport& r : reports) {
    all.answers += r.answers;
    all.wrong += r.wrong;
    all.errors += r.errors;
    all.latency_ms.insert(all.latency_ms.end(), r.latency_ms.begin(), r.latency_ms.end());
  }
  return all;
}

void print_latency(ClientReport& report, int threads) {
  std::vector<double>& ms = report.latency_ms;
  if (ms.empty()) return;
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];
  const double p99 = ms[std::min(ms.size() - 1, (ms.size() * 99 + 99) / 100 - 1)];
  std::printf("latency median %.3f ms, p99 %.3f ms, max %.3f ms (%zu requests, %d client threads)\n", median, p99,
              ms.back(), ms.size(), threads);
}

void print_summary(const ClientReport& report) {
  std::printf("%d answers, %d wrong", report.answers, report.wrong);
  if (report.errors > 0) std::printf(", %d errors", report.errors);
  std::printf("\n");
}

// ---- the demo ----

Model demo_convnet() {
  auto image = Input({28, 28, 1}, "image");
  auto x = layers::Conv2D({.filters = 8, .kernel_size = 3, .activation = "relu", .name = "conv"})(image);
  x = layers::MaxPooling2D({.pool_size = 2, .name = "pool"})(x);
  x = layers::Flatten({.name = "flatten"})(x);
  auto probabilities = layers::Dense({.units = 10, .activation = "softmax", .name = "probabilities"})(x);
  return Model(image, probabilities, "convnet");
}

// Ends the process if it is still alive after `limit` (a hung demo would otherwise hang its test).
class Watchdog {
 public:
  explicit Watchdog(std::chrono::seconds limit)
      : thread_([this, limit] {
          std::unique_lock<std::mutex> lock(mutex_);
          if (cv_.wait_for(lock, limit, [this] { return done_; })) return;
          std::fprintf(stderr, "serve --demo: still running after %lld s; giving up\n",
                       static_cast<long long>(limit.count()));
          std::_Exit(3);
        }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// Sends the bad requests the protocol lists and checks each gets the answer it should; returns how many did not.
int check_bad_requests(const Model& model, int port) {
  int failures = 0;
  auto expect = [&](const char* request, const Reply& reply, const char* words) {
    const bool right = reply.status == kBadRequest && reply.message.find(words) != std::string::npos;
    std::printf("  %-30s -> status %d: %s\n", request, reply.status, reply.message.c_str());
    if (!right) {
      ++failures;
      std::printf("     expected status 1 naming \"%s\"\n", words);
    }
  };
  std::vector<float> image(28 * 28 * 3, 0.5f);
  Client client("127.0.0.1", port);  // all but the last two on this one connection
  client.send(predict_request({1, 28, 28, 3}, image.data(), image.size()));
  expect("shape (1, 28, 28, 3)", client.receive(), "wrong input shape");
  client.send(predict_request({0, 28, 28, 1}, nullptr, 0));
  expect("a batch of 0", client.receive(), "empty batch");
  client.send(predict_request({2, 28, 28, 1}, image.data(), 28 * 28));
  expect("shape (2, 28, 28, 1), 1 image", client.receive(), "truncated request");
  Bytes huge = request_header(kPredict, kMaxBody + 4);
  huge.resize(huge.size() + kMaxBody + 4);
  client.send(huge);
  expect("a body of 64 MiB + 4 bytes", client.receive(), "request too large");

  std::mt19937 rng(5);
  const Tensor x = random_batch(model.inputs()[0].shape(), 3, rng);
  const Reply good = client.predict(x);
  const bool right = good.status == kOk && same_bits(good.output, model.predict_on_batch(x));
  std::printf("  %-30s -> %s\n", "then a good batch of 3", right ? "the right answer" : "WRONG");
  failures += right ? 0 : 1;

  Client http("127.0.0.1", port);
  http.send(Bytes{'G', 'E', 'T', ' ', '/', ' ', 'H', 'T', 'T', 'P', '/', '1', '.', '1', '\r', '\n'});
  expect("\"GET / HTTP/1.1\" (bad magic)", http.receive(), "malformed header");
  const bool closed = http.closed_by_server();
  std::printf("  %-30s -> %s\n", "", closed ? "and the server closed that connection" : "CONNECTION LEFT OPEN");
  failures += closed ? 0 : 1;

  Client quitter("127.0.0.1", port);
  Bytes half = predict_request({1, 28, 28, 1}, image.data(), 28 * 28);
  half.resize(half.size() / 2);
  quitter.send(half);  // and closes: the server logs it
  std::printf("  %-30s -> (the server logs it)\n", "half a request, then close");
  return failures;
}

std::filesystem::path demo_model_file() {
  return std::filesystem::temp_directory_path() / ("serve_demo_" + std::to_string(::getpid()) + ".tower");
}

int run_demo() {
  Watchdog watchdog(std::chrono::seconds(60));
  set_random_seed(42);
  const std::filesystem::path path = demo_model_file();
  demo_convnet().save(path.string());
  struct Remove {
    std::filesystem::path path;
    ~Remove() { std::filesystem::remove(path); }
  } remove{path};

  Server server(Model::load(path.string()), {.host = "127.0.0.1", .port = 0, .threads = 4});
  std::printf("serving '%s' on %s with %d threads\n", server.name().c_str(), server.address().c_str(),
              server.threads());
  std::fflush(stdout);
  std::thread serving([&server] {
    try {
      server.run();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "serve: the server failed: %s\n", e.what());
    }
  });
  struct StopAtExit {  // also when a check throws
    Server& server;
    std::thread& thread;
    ~StopAtExit() {
      if (!thread.joinable()) return;
      server.stop();
      thread.join();
    }
  } stop_at_exit{server, serving};

  const Model model = Model::load(path.string());  // the client's own copy, as a separate client would have
  std::printf("bad requests:\n");
  const int failures = check_bad_requests(model, server.port());
  ClientReport report = run_client(model, {.host = "127.0.0.1", .port = server.port(), .requests = 200, .threads = 4});
  print_latency(report, 4);
  const Reply bye = Client("127.0.0.1", server.port()).shutdown_server();
  serving.join();
  std::printf("server stopped (SHUTDOWN answered with status %d) after %llu good answers\n", bye.status,
              static_cast<unsigned long long>(server.answered()));
  report.wrong += failures;  // a bad request answered wrongly is a wrong answer too
  print_summary(report);
  return report.answers == 200 && report.wrong == 0 && report.errors == 0 ? 0 : 1;
}

// ---- the command line ----

constexpr const char* kUsage =
    "usage: serve MODEL_FILE [--port P] [--threads N] [--host ADDRESS]\n"
    "       serve --client HOST:PORT --model MODEL_FILE [--requests K] [--client-threads T] [--shutdown]\n"
    "       serve --save-demo-model FILE\n"
    "       serve --demo\n";

struct UsageError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

struct Args {
  std::string model_file, client, host = "127.0.0.1", save_demo_model;
  bool host_given = false, demo = false, shutdown = false;
  int port = 8500, requests = 200, client_threads = 4;
  int threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
};

int parse_int(const std::string& flag, const std::string& text, int lo, int hi) {
  std::size_t used = 0;
  long value = 0;
  try {
    value = std::stol(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || value < lo || value > hi)
    throw UsageError(flag + " takes a number from " + std::to_string(lo) + " to " + std::to_string(hi) + ", not '" +
                     text + "'");
  return static_cast<int>(value);
}

Args parse_args(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(flag + " needs a value");
      return argv[++i];
    };
    if (flag == "--demo") args.demo = true;
    else if (flag == "--shutdown") args.shutdown = true;
    else if (flag == "--port") args.port = parse_int(flag, value(), 0, 65535);
    else if (flag == "--threads") args.threads = parse_int(flag, value(), 1, 1024);
    else if (flag == "--host") args.host = value(), args.host_given = true;
    else if (flag == "--client") args.client = value();
    else if (flag == "--model") args.model_file = value();
    else if (flag == "--save-demo-model") args.save_demo_model = value();
    else if (flag == "--requests") args.requests = parse_int(flag, value(), 1, 100000000);
    else if (flag == "--client-threads") args.client_threads = parse_int(flag, value(), 1, 1024);
    else if (flag.starts_with("-")) throw UsageError("unknown option " + flag);
    else if (args.model_file.empty()) args.model_file = flag;
    else throw UsageError("one model file only, not '" + args.model_file + "' and '" + flag + "'");
  }
  if (!args.demo && args.save_demo_model.empty() && args.model_file.empty()) throw UsageError("no model file");
  return args;
}

// "HOST:PORT" or "[IPv6]:PORT".
std::pair<std::string, int> parse_endpoint(const std::string& text) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) throw UsageError("--client takes HOST:PORT, not '" + text + "'");
  std::string host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return {host, parse_int("--client's port", text.substr(colon + 1), 1, 65535)};
}

std::atomic<int> g_stop_fd{-1};  // the running server's wake_fd(), for the signal handler

extern "C" void on_stop_signal(int) {
  const int saved_errno = errno;
  const int fd = g_stop_fd.load();
  const char byte = 1;
  if (fd >= 0 && ::write(fd, &byte, 1) < 0) {
  }  // a full pipe already holds a wake-up
  errno = saved_errno;
}

void stop_on_signals(const Server& server) {
  g_stop_fd = server.wake_fd();
  struct sigaction action{};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
}

int run_server(const Args& args) {
  Server server(Model::load(args.model_file),
                {.host = args.host, .port = args.port, .threads = args.threads, .allow_remote = args.host_given});
  stop_on_signals(server);
  std::printf("serving '%s' on %s with %d threads\n", server.name().c_str(), server.address().c_str(),
              server.threads());
  if (server.reachable_from_other_machines())
    std::printf("(no authentication or encryption: anyone who can reach this address can use the model)\n");
  std::fflush(stdout);
  server.run();
  std::printf("stopped after %llu good answers\n", static_cast<unsigned long long>(server.answered()));
  return 0;
}

int run_client_mode(const Args& args) {
  const auto [host, port] = parse_endpoint(args.client);
  const Model model = Model::load(args.model_file);
  ClientReport report = run_client(model, {.host = host, .port = port, .requests = args.requests,
                                           .threads = args.client_threads});
  print_latency(report, args.client_threads);
  print_summary(report);
  if (args.shutdown) {
    const Reply bye = Client(host, port).shutdown_server();
    std::printf("SHUTDOWN answered with status %d\n", bye.status);
  }
  return report.answers == args.requests && report.wrong == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args args = parse_args(argc, argv);
    if (args.demo) return run_demo();
    if (!args.save_demo_model.empty()) {
      set_random_seed(42);
      demo_convnet().save(args.save_demo_model);
      std::printf("saved the demo convnet to %s\n", args.save_demo_model.c_str());
      return 0;
    }
    if (!args.client.empty()) return run_client_mode(args);
    return run_server(args);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "serve: %s\n%s", e.what(), kUsage);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "serve: %s\n", e.what());
    return 1;
  }
}
