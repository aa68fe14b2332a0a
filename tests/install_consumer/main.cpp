#include <tower/tower.h>

#include <iostream>

int main() {
  using namespace tower;
  Sequential model({InputLayer({.shape = {4}}), layers::Dense({.units = 3, .activation = "relu"}),
                    layers::Dense({.units = 2})});
  // A model rebuilt from its config proves the layer registry of the installed libraries is loaded.
  LayerPtr copy = layer_from_config(model.layers()[0]->serialize());
  std::cout << "params " << model.count_params() << " " << copy->type() << "\n";
  return model.count_params() == 4 * 3 + 3 + 3 * 2 + 2 && copy->type() == "Dense" ? 0 : 1;
}
