#include "api/io/weights_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tower::io {

namespace {
constexpr char kMagic[8] = {'T', 'O', 'W', 'E', 'R', 'W', 'T', 'S'};
constexpr std::uint32_t kVersion = 1;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error("weights file '" + path + "': " + what);
}

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
std::uint64_t get_u(const std::string& in, std::size_t pos, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in[pos + static_cast<std::size_t>(i)])) << (8 * i);
  return v;
}
}  // namespace

std::uint32_t crc32(const void* data, std::size_t size, std::uint32_t crc) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  crc = ~crc;
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < size; ++i) crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

namespace {

// The test hook of write_file_atomically (see weights_file.h): stops the process half-way through writing.
void maybe_stop_in_write(const std::string& path, int fd, const std::string& bytes, std::size_t& done) {
  const char* suffix = std::getenv("TOWER_TEST_STOP_IN_WRITE");
  if (!suffix || !*suffix) return;
  const std::string s = suffix;
  if (s != "*" && (path.size() < s.size() || path.compare(path.size() - s.size(), s.size(), s) != 0)) return;
  const std::size_t half = bytes.size() / 2;
  while (done < half) {
    const ssize_t n = ::write(fd, bytes.data() + done, half - done);
    if (n <= 0) return;  // the normal path reports the error
    done += static_cast<std::size_t>(n);
  }
  ::raise(SIGSTOP);
}

// Makes a rename durable: fsync of the directory holding `path` (best effort; some file systems refuse it).
void sync_parent_directory(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

void remove_stale_temporaries(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const std::size_t mark = name.rfind(".tmp-");
    if (mark == std::string::npos || mark + 5 == name.size()) continue;
    const std::string pid = name.substr(mark + 5);
    if (pid.find_first_not_of("0123456789") != std::string::npos || pid.size() > 9) continue;
    if (::kill(static_cast<pid_t>(std::stol(pid)), 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge
    fs::remove(entry.path(), ec);
  }
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  struct stat st {};
  const std::string unchanged =
      ::stat(path.c_str(), &st) == 0 ? " (the previous file is unchanged)" : " (no file was written)";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot write '" + path + "': " + std::strerror(errno) + unchanged);
  // Every failure removes the temporary file, so a full disk gets its space back, and leaves `path` alone.
  const auto abandon = [&](int error) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot write '" + path + "': " + std::strerror(error) + unchanged);
  };
  std::size_t done = 0;
  maybe_stop_in_write(path, fd, bytes, done);
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) abandon(errno);
    done += static_cast<std::size_t>(n);
  }
  // Delayed allocation (and network file systems) may report a full disk only here.
  if (::fsync(fd) != 0) abandon(errno);
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot write '" + path + "': " + std::strerror(error) + unchanged);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot replace '" + path + "': " + std::strerror(error) + unchanged);
  }
  sync_parent_directory(path);
}

std::string first_non_finite(const std::vector<NamedTensor>& tensors) {
  for (const NamedTensor& t : tensors) {
    if (t.value.dtype() != DType::float32) continue;
    const Tensor host = t.value.to(Device::cpu());
    const float* p = host.data<float>();
    for (Index i = 0; i < host.numel(); ++i)
      if (!std::isfinite(p[i])) return t.name;
  }
  return "";
}

void write_weights_file(const std::string& path, const std::vector<NamedTensor>& weights, const Config& extra) {
  Config header = Config::map();
  header.set("format", "tower-weights");
  Config list = Config::list();
  std::uint64_t offset = 0;
  for (const NamedTensor& w : weights) {
    if (w.value.dtype() != DType::float32) fail(path, "weight '" + w.name + "' is not float32");
    Config e = Config::map();
    e.set("name", w.name);
    Config shape = Config::list();
    for (Index d : w.value.shape()) shape.push_back(d);
    e.set("shape", shape);
    e.set("offset", static_cast<std::int64_t>(offset));
    list.push_back(e);
    offset += w.value.nbytes();
  }
  header.set("weights", list);
  if (!extra.is_null()) header.set("extra", extra);
  const std::string json = header.to_json();

  std::string out(kMagic, sizeof kMagic);
  put_u32(out, kVersion);
  put_u64(out, json.size());
  out += json;
  put_u64(out, offset);
  for (const NamedTensor& w : weights) {
    const Tensor host = w.value.to(Device::cpu());
    out.append(static_cast<const char*>(host.raw_data()), host.nbytes());
  }
  put_u32(out, crc32(out.data(), out.size()));
  write_file_atomically(path, out);
}

WeightsFile read_weights_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open: ") + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string data = ss.str();
  if (data.size() < sizeof kMagic || std::memcmp(data.data(), kMagic, sizeof kMagic) != 0)
    fail(path, "not a Tower weights file (bad magic)");
  if (data.size() < 20 + 8 + 4) fail(path, "truncated: " + std::to_string(data.size()) + " bytes");
  const std::uint32_t version = static_cast<std::uint32_t>(get_u(data, 8, 4));
  if (version != kVersion) fail(path, "format version " + std::to_string(version) + " is not supported");
  // Every size and offset in the file is checked against the file itself before it is used.
  const std::uint64_t json_size = get_u(data, 12, 8);
  if (json_size > data.size() - (20 + 8 + 4))
    fail(path, "truncated: header of " + std::to_string(json_size) + " bytes does not fit in " +
                   std::to_string(data.size()) + " bytes");
  const std::uint64_t data_size = get_u(data, 20 + json_size, 8);
  const std::size_t data_start = 20 + json_size + 8;
  if (data_size != data.size() - data_start - 4)
    fail(path, "truncated or padded: the data size field says " + std::to_string(data_size) + " bytes, the file has " +
                   std::to_string(data.size() - data_start - 4) + " after its header");
  const std::uint32_t stored = static_cast<std::uint32_t>(get_u(data, data.size() - 4, 4));
  if (crc32(data.data(), data.size() - 4) != stored) fail(path, "checksum mismatch: the file is corrupted");

  WeightsFile result;
  try {
    const Config header = Config::parse_json(data.substr(20, json_size));
    if (header.contains("extra")) result.extra = header.at("extra");
    for (const Config& e : header.at("weights").as_list()) {
      const std::string& name = e.at("name").as_string();
      const std::string where = "weight '" + name + "'";
      std::vector<Index> dims;
      std::uint64_t bytes = sizeof(float);
      for (const Config& d : e.at("shape").as_list()) {
        dims.push_back(d.as_int());
        if (dims.back() < 0) fail(path, where + ": negative dimension " + std::to_string(dims.back()) + " in its shape");
        if (__builtin_mul_overflow(bytes, static_cast<std::uint64_t>(dims.back()), &bytes)) bytes = UINT64_MAX;
      }
      const std::int64_t offset = e.at("offset").as_int();
      if (offset < 0 || bytes > data_size || static_cast<std::uint64_t>(offset) > data_size - bytes)
        fail(path, where + " of shape " + Shape(dims).to_string() + " at offset " + std::to_string(offset) +
                       " lies outside the " + std::to_string(data_size) + " bytes of data");
      Tensor t{Shape(std::move(dims))};
      std::memcpy(t.raw_data(), data.data() + data_start + offset, t.nbytes());
      result.weights.push_back({name, t});
    }
  } catch (const ConfigError& e) {
    fail(path, std::string("malformed header: ") + e.what());
  }
  return result;
}

}  // namespace tower::io
