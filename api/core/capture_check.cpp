#include "api/core/capture_check.h"

#include <utility>

namespace tower::detail {

namespace {
thread_local CaptureCheck* current_check = nullptr;
}  // namespace

CaptureCheck::CaptureCheck(std::function<void(const std::string&)> report)
    : report_(std::move(report)), outer_(current_check) {
  current_check = this;
}

CaptureCheck::~CaptureCheck() { current_check = outer_; }

void report_to_capture_check(const std::string& what) {
  if (current_check) current_check->report_(what);
}

}  // namespace tower::detail
