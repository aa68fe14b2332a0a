// experiment::Experiment::parse (YAML syntax, the document's marks, schema validation and defaults) on any text,
// then the resolved document written as YAML (a run directory's config.yaml) must parse back: a run resumes
// from it. Nothing is built or trained.
#include "tests/fuzz/fuzz_input.h"
#include "tools/experiment/experiment.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tower;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string resolved;
  fuzz::expect_clear_error([&] { resolved = experiment::Experiment::parse(text, "fuzz.yaml").document().to_yaml(); });
  if (resolved.empty()) return 0;
  try {
    experiment::Experiment::parse(resolved, "config.yaml");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "resolved document:\n%s\n", resolved.c_str());
    fuzz::finding("the resolved document does not parse back", e.what());
  }
  return 0;
}
