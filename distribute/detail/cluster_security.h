#pragma once
// What a ParameterServerStrategy process needs to prove itself and to check its peers ("Security" in
// parameter_server_strategy.h), and the checks that need no network: the files the spec names, read once when
// the strategy is made; the loopback rule; the constant-time comparison of tokens.
#include <string>
#include <string_view>

#include "distribute/parameter_server_strategy.h"

namespace tower::distribute::detail {

// The metadata key of the cluster token on every call.
inline constexpr const char* kTokenMetadataKey = "tower-cluster-token";

struct ClusterSecrets {
  std::string ca, certificate, key;  // PEM text; all empty without TLS
  std::string token;                 // empty without a token
  bool tls() const { return !ca.empty(); }
  bool secured() const { return tls() || !token.empty(); }
};

// Reads the files `security` names. Throws std::invalid_argument naming the spec key and the file when one cannot
// be read or is empty, and when the token file may be read or written by anyone but its owner.
ClusterSecrets read_cluster_secrets(const ClusterSecurity& security);

// True when the host of `address` ("host:port", "[v6]:port") is a loopback address: localhost, 127.0.0.0/8, ::1.
bool is_loopback_address(const std::string& address);

// Throws std::invalid_argument, naming the address, when the spec has neither TLS nor a token, does not say
// "insecure": true, and an address of the cluster is not a loopback address. When the cluster is open (no TLS,
// no token), says so once per process on std::cerr.
void check_exposure(const ClusterSpec& spec);

// given == expected, in a time that depends on expected's length only (not on where they first differ, nor on
// given's length).
bool same_secret(std::string_view given, std::string_view expected);

}  // namespace tower::distribute::detail
