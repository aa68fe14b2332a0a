#pragma once
// CSVLogger (Keras 3): streams epoch results to a CSV file. The header is "epoch" followed by the epoch-end
// log keys sorted by name, fixed at the first epoch; when those keys hold no "val_" entry, a "val_<key>"
// column is added for each (Keras does this so that validation run only every validation_freq epochs still
// has its columns). A key missing from an epoch's logs is written as "NA". Epochs are 0-based, values are
// written as Python's repr() of a float, and the file is flushed after every row.
//
// With append, rows are added to an existing file, and the header is written only when the file is missing
// or empty. Throws std::runtime_error naming the file when it cannot be opened or written.
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "api/training/callback.h"

namespace tower::callbacks {

class CSVLogger : public Callback {
 public:
  explicit CSVLogger(std::string filename, std::string separator = ",", bool append = false);

  void on_train_begin(const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_train_end(const Logs& logs) override;

 private:
  std::string field(const std::string& text) const;

  std::string filename_;
  std::string separator_;
  bool append_;
  bool append_header_ = true;
  std::optional<std::vector<std::string>> keys_;
  std::ofstream file_;
};

}  // namespace tower::callbacks
