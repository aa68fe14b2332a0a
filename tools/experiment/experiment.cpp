#include "tools/experiment/experiment.h"

#include <filesystem>

#include "tools/experiment/schema.h"

namespace tower::experiment {

Experiment Experiment::finish(Document doc, const std::string& default_name,
                              const std::vector<std::string>& overrides) {
  for (const std::string& o : overrides) doc.apply_override(o);
  validate_experiment(doc, default_name);
  Experiment e;
  e.doc_ = std::move(doc);
  return e;
}

Experiment Experiment::load(const std::string& path, const std::vector<std::string>& overrides) {
  return finish(Document::load_file(path), std::filesystem::path(path).stem().string(), overrides);
}

Experiment Experiment::parse(const std::string& text, const std::string& file,
                             const std::vector<std::string>& overrides) {
  return finish(Document::parse(text, file), std::filesystem::path(file).stem().string(), overrides);
}

Experiment Experiment::from_document(Document doc) { return finish(std::move(doc), "run", {}); }

const std::string& Experiment::name() const { return doc_.root().at("name").as_string(); }

std::uint64_t Experiment::seed() const { return static_cast<std::uint64_t>(doc_.root().at("seed").as_int()); }

}  // namespace tower::experiment
