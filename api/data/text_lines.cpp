#include "api/data/text_lines.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace tower::data {
namespace {

std::string read_file(const std::string& path) {
  if (std::filesystem::is_directory(path)) throw std::runtime_error("read_text_lines: '" + path + "' is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("read_text_lines: cannot open '" + path + "': " + std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw std::runtime_error("read_text_lines: cannot read '" + path + "': " + std::strerror(errno));
  return bytes;
}

}  // namespace

std::vector<std::string> read_text_lines(const std::vector<std::string>& paths) {
  std::vector<std::string> lines;
  for (const std::string& path : paths) {
    const std::string bytes = read_file(path);
    std::string line;
    for (char c : bytes) {
      if (c == '\n') {
        lines.push_back(std::move(line));
        line.clear();
      } else if (c != '\r') {
        line += c;
      }
    }
    if (!bytes.empty() && bytes.back() != '\n') lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace tower::data
