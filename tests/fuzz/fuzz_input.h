#pragma once
// What every fuzz target shares: a private scratch folder for the input files, and the rule for exceptions.
//
// A reader given damaged bytes must throw an exception whose message says what is wrong (the contract of every
// Tower reader). Anything else is a finding: a crash or a sanitizer report (caught by ASan and UBSan), a hang or
// an allocation beyond the limits (caught by libFuzzer's -timeout and -rss_limit_mb), and also these exceptions,
// which mean a size was taken from the input without a check:
//   std::bad_alloc, std::length_error   an allocation sized by the input,
//   an exception with an empty message  not a clear error.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <new>
#include <stdexcept>
#include <string>
#include <typeinfo>

#include <unistd.h>

namespace tower::fuzz {

// A folder of this process's own, created on first use and removed at exit.
inline const std::filesystem::path& scratch_dir() {
  struct Dir {
    std::filesystem::path path;
    Dir() {
      const char* base = std::getenv("TMPDIR");
      path = std::filesystem::path(base && *base ? base : "/tmp") / ("tower-fuzz-" + std::to_string(::getpid()));
      std::filesystem::create_directories(path);
    }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Dir dir;
  return dir.path;
}

// Writes the input to scratch_dir() / name and returns the path.
inline std::string write_input(const std::string& name, const std::uint8_t* data, std::size_t size) {
  const std::filesystem::path path = scratch_dir() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) {
    std::fprintf(stderr, "fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
  return path.string();
}

[[noreturn]] inline void finding(const char* what, const char* message) {
  std::fprintf(stderr, "fuzz finding: %s: %s\n", what, message);
  std::abort();
}

// TOWER_FUZZ_VERBOSE=1 prints every outcome (to check that the seeds read, and what a reader says).
inline bool verbose() {
  static const bool on = [] {
    const char* v = std::getenv("TOWER_FUZZ_VERBOSE");
    return v && *v && *v != '0';
  }();
  return on;
}

// Runs read(): returns true when it returned, false when it threw a clear error, aborts on a finding.
template <class Read>
bool expect_clear_error(Read&& read) {
  try {
    read();
    if (verbose()) std::fprintf(stderr, "  read\n");
    return true;
  } catch (const std::bad_alloc& e) {
    finding("std::bad_alloc (an allocation sized by the input)", e.what());
  } catch (const std::length_error& e) {
    finding("std::length_error (a size taken from the input)", e.what());
  } catch (const std::exception& e) {
    if (e.what() == nullptr || *e.what() == '\0') finding("an exception without a message", typeid(e).name());
    if (verbose()) std::fprintf(stderr, "  error: %s\n", e.what());
    return false;
  }
}

}  // namespace tower::fuzz
