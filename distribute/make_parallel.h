#pragma once
// make_parallel: the tower pattern of the Keras make_parallel recipe, for any batched function and for a model.
//
//   auto f = distribute::make_parallel(fn, {"cpu:0", "cpu:1"});   // fn: inputs -> outputs, rows along axis 0
//   std::vector<Tensor> y = f({x});                                // = fn({x}), computed in two towers
//
//   Model towers = distribute::make_parallel(model, {"gpu:0", "gpu:1"});
//   towers.compile(...); towers.fit(data, 5); towers.predict(x);  // the model's layers, run as towers
//
// The function form: each call splits every input along axis 0 into one consecutive piece per device, as evenly
// as possible (the first n % towers pieces take one row more, so every tower has rows), copies each piece to its
// device, runs fn on every device in parallel (one thread per device, backend::num_threads() / towers OpenMP
// threads each), and concatenates the towers' outputs along axis 0, in tower order, on the first device. fn is
// called concurrently from several threads, so it must not share mutable state between calls; it gets its
// tower's inputs on its device and may return outputs on any device.
//
// The model form: a model made of `model`'s layers (sharing its weights: training one trains the other) that
// belongs to a MirroredStrategy over `devices`. compile, fit, evaluate and predict on it split each batch over the
// devices, run a replica per device and merge the outputs; its loss on the merged outputs is the loss of the
// towers' outputs concatenated, so its gradient is the sum of the towers' gradients, which is what the strategy
// takes (see strategy.h): the model trains as the model alone does on the same batches.
//
// Throws std::invalid_argument, starting with "make_parallel: ", for an empty device list, an unknown device
// (listing the available ones), a device listed twice, CPU and GPU devices mixed; the function form also when
// called with no input, inputs of rank 0 or of different batch sizes, a batch smaller than the number of towers,
// and towers returning different numbers of outputs, outputs of rank 0, or outputs whose dtypes or shapes beyond
// axis 0 differ between towers. An exception fn throws in a tower is rethrown by the call.
#include <functional>
#include <string>
#include <vector>

#include "api/core/tensor.h"
#include "api/models/model.h"

namespace tower::distribute {

using BatchedFunction = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs)>;

BatchedFunction make_parallel(BatchedFunction fn, const std::vector<std::string>& devices);
Model make_parallel(const Model& model, const std::vector<std::string>& devices);

namespace detail {
// Rows [begin, end) of a batch of n that tower t of `towers` takes: consecutive, as even as possible.
std::pair<Index, Index> tower_rows(Index n, int t, int towers);
}  // namespace detail

}  // namespace tower::distribute
