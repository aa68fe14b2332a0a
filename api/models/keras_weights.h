#pragma once
// Keras weight files (HDF5), so weights move between Keras and Tower in both directions.
//
//   Keras 3 ".weights.h5" (model.save_weights / model.load_weights): one group per entry of model.layers,
//     layers/<class>/vars, where <class> is the snake_case Keras class name numbered per class in layer order
//     ("conv2d", "conv2d_1", ..., "batch_normalization"); the vars group carries the layer's name as attribute
//     "name" and holds datasets "0", "1", ...: the layer's variables created trainable, in creation order, then
//     the others (Conv2D and Dense: kernel, bias; DepthwiseConv2D: kernel, bias; BatchNormalization: gamma,
//     beta, moving_mean, moving_variance). A layer made of Keras sublayers keeps their variables in a group per
//     sublayer inside its own, each with its vars: MultiHeadAttention's weights "query/kernel", "query/bias", ...
//     lie in layers/multi_head_attention/query_dense/vars (key_dense, value_dense, output_dense for
//     "attention_output"). A nested model is a group layers/functional (or sequential) with its own vars and
//     layers/ below. The root holds vars with the model's name.
//   Legacy ".h5" / ".hdf5" (Keras 2 save_weights, Keras' applications weight files such as
//     mobilenet_v2_weights_tf_dim_ordering_tf_kernels_*.h5, and model.save("x.h5") below a model_weights
//     group): the root attribute layer_names lists every layer; a group per layer, whose attribute
//     weight_names lists its datasets as paths inside the group ("Conv1/kernel:0"), in the order
//     trainable_weights + non_trainable_weights (a nested model is one such group holding all its weights).
//     A list too long for one HDF5 attribute is split into layer_names0, layer_names1, ... as Keras does.
//
// Loading follows Keras, which matches by structure, never by layer name: a Keras 3 file's layer is read from the
// group its class and place in model.layers name (the "name" attributes are not read; the file may hold more
// groups than the model has layers), a legacy file's layers with weights are taken in order by the model's
// layers with weights (their counts must agree: Keras' "Layer count mismatch"), and within a layer weights go
// by position. A file therefore loads into any model of the same structure, whatever its layers are called;
// both rely on Tower listing layers in Keras' order (ModelImpl::layers). In a legacy file a nested model's
// group lists its weights by path ("inner_conv/kernel", Keras 2 "inner_conv/kernel:0"); when these name each of
// the nested model's weights once they are read by name, else by position as Keras reads them.
// Keras and Tower store kernels alike (Conv2D [kh, kw, in, out], DepthwiseConv2D [kh, kw, in, multiplier],
// Dense [in, out]), so values are copied unchanged. Only float32 tensors are written; any integer or float
// dataset is read (converted to float32).
#include <string>

namespace tower {
class ModelImpl;
}

namespace tower::io {

enum class KerasWeightsFormat { none, keras3, legacy };

// By the path's ending: ".weights.h5" is keras3, other ".h5" and ".hdf5" are legacy, anything else none.
KerasWeightsFormat keras_weights_format(const std::string& path);

// Writes `model`'s weights as a Keras 3 .weights.h5 file, atomically (built in memory, then written to a
// temporary file in the same directory, fsynced and renamed over `path`), so Keras' model.load_weights reads
// it into the same architecture. Throws std::invalid_argument for a path that does not end in ".weights.h5"
// (Keras 3 writes no other layout either) and std::runtime_error naming the path when writing fails.
void save_keras_weights(const ModelImpl& model, const std::string& path);

// Reads a Keras 3 .weights.h5 or legacy .h5 file (chosen by keras_weights_format) into `model`'s weights.
// Every weight is checked before any is assigned, so a failed load leaves the model unchanged. Throws
//   std::runtime_error      naming the path when the file is missing, not an HDF5 file, not in the expected
//                           layout, or unreadable;
//   std::invalid_argument   naming the path and the layer when a layer with weights has no group in a Keras 3
//                           file (the group expected and those there), when a legacy file holds another number
//                           of layers with weights (both counts and both lists of names), when the file holds
//                           another number of weights for a layer (both counts), or when a weight's shape
//                           differs (the weight and both shapes).
// The file is parsed by Tower's own HDF5 reader (io::Hdf5File), so a damaged file gives one of these errors,
// never a crash or a hang.
void load_keras_weights(ModelImpl& model, const std::string& path);

}  // namespace tower::io
