#include "distribute/detail/cluster_security.h"

#include <sys/stat.h>

#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <stdexcept>

namespace tower::distribute::detail {

namespace {

const char* const kWho = "ParameterServerStrategy: ";

std::string read_whole(const std::string& path, const std::string& key) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::invalid_argument(std::string(kWho) + "cluster spec key " + key + ": cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  if (text.empty()) throw std::invalid_argument(std::string(kWho) + "cluster spec key " + key + ": '" + path + "' is empty");
  return text;
}

std::string host_of(const std::string& address) {
  if (address.starts_with("[")) {
    const std::size_t end = address.find(']');
    if (end == std::string::npos || (end + 1 < address.size() && address[end + 1] != ':')) return address;
    return address.substr(1, end - 1);
  }
  const std::size_t colon = address.rfind(':');
  return colon == std::string::npos ? address : address.substr(0, colon);
}

}  // namespace

ClusterSecrets read_cluster_secrets(const ClusterSecurity& security) {
  ClusterSecrets s;
  if (security.tls()) {
    s.ca = read_whole(security.ca_file, "\"tls\".ca");
    s.certificate = read_whole(security.certificate_file, "\"tls\".certificate");
    s.key = read_whole(security.key_file, "\"tls\".key");
  }
  s.token = security.token;
  if (!security.token_file.empty()) {
    struct stat st {};
    if (stat(security.token_file.c_str(), &st) != 0)
      throw std::invalid_argument(std::string(kWho) + "cluster spec key \"token_file\": cannot read '" +
                                  security.token_file + "'");
    if (st.st_mode & 077)
      throw std::invalid_argument(std::string(kWho) + "cluster spec key \"token_file\": '" + security.token_file +
                                  "' may be read or written by others (mode " +
                                  std::to_string((st.st_mode >> 6) & 7) + std::to_string((st.st_mode >> 3) & 7) +
                                  std::to_string(st.st_mode & 7) + "): make it readable by its owner only (chmod 600)");
    s.token = read_whole(security.token_file, "\"token_file\"");
    while (!s.token.empty() && (s.token.back() == '\n' || s.token.back() == '\r')) s.token.pop_back();
    if (s.token.empty())
      throw std::invalid_argument(std::string(kWho) + "cluster spec key \"token_file\": '" + security.token_file +
                                  "' holds no token");
  }
  return s;
}

bool is_loopback_address(const std::string& address) {
  const std::string host = host_of(address);
  if (host == "localhost" || host == "::1" || host == "ip6-localhost") return true;
  // 127.a.b.c, digits only.
  if (!host.starts_with("127.")) return false;
  int dots = 0;
  for (char c : host) {
    if (c == '.') ++dots;
    else if (c < '0' || c > '9') return false;
  }
  return dots == 3;
}

void check_exposure(const ClusterSpec& spec) {
  const ClusterSecurity& s = spec.security;
  if (s.tls() || s.has_token()) return;
  if (!s.insecure)
    for (const std::vector<std::string>* list : {&spec.chief, &spec.worker, &spec.ps})
      for (const std::string& a : *list)
        if (!is_loopback_address(a))
          throw std::invalid_argument(std::string(kWho) + "the cluster has address " + a +
                                      ", which is not on the loopback interface, and neither TLS (\"tls\") nor a "
                                      "cluster token (\"token\", \"token_file\"): anyone who reaches it could read "
                                      "the model or change it. Give \"tls\" or a token, or \"insecure\": true on a "
                                      "network you trust");
  static std::once_flag said;
  std::call_once(said, [&] {
    std::cerr << kWho << "this cluster has neither TLS nor a cluster token"
              << (s.insecure ? " (\"insecure\": true): any process that reaches its addresses can read and change "
                               "the model"
                             : ": any process on this machine can read and change the model (its addresses are "
                               "loopback addresses)")
              << "\n";
  });
}

bool same_secret(std::string_view given, std::string_view expected) {
  unsigned char differ = given.size() == expected.size() ? 0 : 1;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const unsigned char g = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    differ |= static_cast<unsigned char>(g ^ static_cast<unsigned char>(expected[i]));
  }
  return differ == 0;
}

}  // namespace tower::distribute::detail
