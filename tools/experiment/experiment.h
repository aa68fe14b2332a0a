#pragma once
// An experiment: a YAML file (see docs/experiments.md and schema.h), command-line overrides applied, validated,
// and completed with the defaults, so that document() is the resolved configuration a run directory keeps.
#include <string>
#include <vector>

#include "tools/experiment/document.h"
#include "tools/experiment/located_config.h"

namespace tower::experiment {

class Experiment {
 public:
  // Reads `path`, applies each "key.path=value" override in order, validates and resolves. Throws
  // ExperimentError at the first problem (file:line:column, or the override).
  static Experiment load(const std::string& path, const std::vector<std::string>& overrides = {});
  // The same from YAML text; `file` names it in errors (tests).
  static Experiment parse(const std::string& text, const std::string& file,
                          const std::vector<std::string>& overrides = {});
  // A resolved document as is (a run directory's config.yaml, already validated when it was written).
  static Experiment from_document(Document doc);

  const Document& document() const { return doc_; }
  // A view of the value at `path` ("" is the whole file).
  LocatedConfig at(const std::string& path) const { return LocatedConfig(doc_, path); }
  const std::string& name() const;
  std::uint64_t seed() const;

 private:
  static Experiment finish(Document doc, const std::string& default_name, const std::vector<std::string>& overrides);
  Document doc_;
};

}  // namespace tower::experiment
