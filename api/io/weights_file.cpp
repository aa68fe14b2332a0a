#include "api/io/weights_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
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

void write_file_atomically(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw std::runtime_error("cannot write '" + path + "': " + std::strerror(errno));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string err = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      throw std::runtime_error("cannot write '" + path + "': " + err + " (the previous file is unchanged)");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const std::string err = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot write '" + path + "': " + err + " (the previous file is unchanged)");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string err = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot replace '" + path + "': " + err + " (the previous file is unchanged)");
  }
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
  const std::uint64_t json_size = get_u(data, 12, 8);
  if (20 + json_size + 8 + 4 > data.size())
    fail(path, "truncated: header of " + std::to_string(json_size) + " bytes does not fit in " +
                   std::to_string(data.size()) + " bytes");
  const std::uint64_t data_size = get_u(data, 20 + json_size, 8);
  const std::size_t data_start = 20 + json_size + 8;
  if (data_start + data_size + 4 != data.size())
    fail(path, "truncated or padded: expected " + std::to_string(data_start + data_size + 4) + " bytes, found " +
                   std::to_string(data.size()));
  const std::uint32_t stored = static_cast<std::uint32_t>(get_u(data, data.size() - 4, 4));
  if (crc32(data.data(), data.size() - 4) != stored) fail(path, "checksum mismatch: the file is corrupted");

  Config header;
  try {
    header = Config::parse_json(data.substr(20, json_size));
  } catch (const ConfigError& e) {
    fail(path, std::string("malformed header: ") + e.what());
  }
  WeightsFile result;
  if (header.contains("extra")) result.extra = header.at("extra");
  for (const Config& e : header.at("weights").as_list()) {
    std::vector<Index> dims;
    for (const Config& d : e.at("shape").as_list()) dims.push_back(d.as_int());
    Tensor t{Shape(dims)};
    const std::uint64_t off = static_cast<std::uint64_t>(e.at("offset").as_int());
    if (off + t.nbytes() > data_size) fail(path, "weight '" + e.at("name").as_string() + "' lies outside the data");
    std::memcpy(t.raw_data(), data.data() + data_start + off, t.nbytes());
    result.weights.push_back({e.at("name").as_string(), t});
  }
  return result;
}

}  // namespace tower::io
