#pragma once
// History: what fit() returns, as in Keras: the epochs run and, per log key, one value per epoch.
#include <map>
#include <string>
#include <vector>

#include "api/training/callback.h"

namespace tower::callbacks {

class History : public Callback {
 public:
  void on_train_begin(const Logs&) override;
  void on_epoch_end(int epoch, const Logs& logs) override;

  const std::vector<int>& epoch() const { return epoch_; }
  // Keys in the order they first appeared ("loss", metrics, "val_loss", ...).
  const std::vector<std::string>& keys() const { return keys_; }
  // Throws std::out_of_range naming the key and the known keys.
  const std::vector<double>& operator[](const std::string& key) const;
  bool contains(const std::string& key) const { return values_.count(key) > 0; }

 private:
  std::vector<int> epoch_;
  std::vector<std::string> keys_;
  std::map<std::string, std::vector<double>> values_;
};

}  // namespace tower::callbacks
