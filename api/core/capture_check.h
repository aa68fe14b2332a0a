#pragma once
// What a step captured as a CUDA graph may not do, made visible on any device. A graph holds no host work: an
// upload or a read through host memory would happen once, at capture time (on a GPU they throw while the stream
// is capturing), and a replay allocates nothing. While a CaptureCheck is alive, core reports such operations of
// its thread to it: every copy_bytes and upload_after into or out of host memory, every read of a tensor into
// host memory (to_vector), every tensor allocation. On the CPU, where every copy is a host copy, this is how a test
// sees what a step would ask of a GPU's capture.
#include <functional>
#include <string>

namespace tower::detail {

class CaptureCheck {
 public:
  // `report` receives what was asked, with sizes and devices. Checks nest: the innermost receives.
  explicit CaptureCheck(std::function<void(const std::string&)> report);
  ~CaptureCheck();
  CaptureCheck(const CaptureCheck&) = delete;
  CaptureCheck& operator=(const CaptureCheck&) = delete;

 private:
  friend void report_to_capture_check(const std::string& what);
  std::function<void(const std::string&)> report_;
  CaptureCheck* outer_;
};

// Reports `what` to the current thread's CaptureCheck, if any.
void report_to_capture_check(const std::string& what);

}  // namespace tower::detail
