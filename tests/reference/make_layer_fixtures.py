#!/usr/bin/env python3
"""Reference values for Tower's layers, computed by Keras itself.

Install and run (from the repository root; any machine, CPU only):

    python3 -m pip install tensorflow-cpu keras      # Keras 3 on the TensorFlow backend
    python3 tests/reference/make_layer_fixtures.py    # rewrites tests/reference/layers/*.json

For each case in CASES below the script builds the Keras layer from a kwargs dict, builds it on the given
input shapes, sets deterministic weights (seeded numpy: kernels and biases in [-0.5, 0.5], BatchNormalization
gamma and moving_variance in [0.5, 1.5]), draws seeded inputs, runs the layer with the case's `training` flag
and, with tf.GradientTape, takes the gradients of

    L = sum_i sum(output_i * R_i)        (R_i seeded random, one per output)

with respect to every input and every trainable weight. One JSON file per case, tests/reference/layers/<case>.json:

    layer          {"class_name", "config"}: config is exactly the kwargs given to Keras (Tower reads the same keys),
                   plus the case's Keras call arguments (use_causal_mask, ...) and use_attention_mask, which Tower
                   reads as options
    training       bool
    inputs         [{"shape", "data"}]            data flattened row-major (channels-last, as Keras)
    weights        [{"name", "shape", "data"}]    layer.weights order, values before the step; name without the
                                                  layer prefix ("kernel", "gamma", "moving_mean", ...; a
                                                  sublayer's weight keeps the sublayer: "query/kernel")
    upstream       [{"shape", "data"}]            R_i, one per output
    outputs        [{"shape", "data"}]
    input_grads    [{"shape", "data"}]            dL/d input, one per input
    weight_grads   [{"name", "shape", "data"}]    dL/d weight, layer.trainable_weights order
    weights_after  [{"name", "shape", "data"}]    (BatchNormalization with training only) every weight after
                                                  the step, i.e. with the moving statistics updated

Floats are written as the shortest decimal string that reads back as the same float32. Layers whose gradient
has kinks (ReLU, the piecewise activations, max pooling) get inputs that are a random permutation of a spaced
grid, so values are distinct and away from the kinks. The C++ test tests/reference/keras_layers_test.cpp reads
every file. Dropout is random and has no fixture here.
"""
import json
import os
import sys
import zlib

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "layers")

# Points where a layer's derivative jumps (relu 0, relu6 6, ReLU threshold 0.5, hard_sigmoid +-3).
KINKS = (0.0, 0.5, 6.0, -3.0, 3.0)


def case(name, class_name, config, input_shapes, training=False, inputs="uniform", low=-1.0, high=1.0, call=None,
         mask=False, initial_state=False):
    """inputs: "uniform" (seeded uniform in [low, high)), "grid" (a permutation of a spaced grid in [low, high]) or
    "ids" (seeded integers in [low, high), fed to Keras as int32 and written as floats; their gradient is zero).
    call: Keras call arguments (use_causal_mask, return_attention_scores), which Tower reads as options: they are
    written into the fixture's config. mask: the last input is an attention mask of 0s and 1s (each row keeping at
    least one position), given to Keras as attention_mask and to Tower as its last input (use_attention_mask).
    initial_state: the inputs after the first are a recurrent layer's initial_state (Tower takes them as inputs)."""
    return dict(name=name, class_name=class_name, config=config, input_shapes=input_shapes, training=training,
                inputs=inputs, low=low, high=high, call=call or {}, mask=mask, initial_state=initial_state)


ACTIVATIONS = ["relu", "relu6", "sigmoid", "tanh", "softmax", "gelu", "swish", "elu", "leaky_relu", "selu",
               "softplus", "softsign", "hard_sigmoid", "linear"]

CASES = [
    # Recurrent layers: [batch, timesteps, features]; initial states as further inputs.
    case("LSTM_last", "LSTM", {"units": 3}, [(2, 4, 5)]),
    case("LSTM_sequences", "LSTM", {"units": 4, "return_sequences": True}, [(3, 5, 2)]),
    case("LSTM_sequences_state", "LSTM", {"units": 3, "return_sequences": True, "return_state": True},
         [(2, 3, 4)]),
    case("LSTM_backwards", "LSTM", {"units": 3, "return_sequences": True, "go_backwards": True}, [(2, 4, 3)]),
    case("LSTM_initial_state", "LSTM", {"units": 3, "return_state": True}, [(2, 4, 3), (2, 3), (2, 3)],
         initial_state=True),
    case("LSTM_no_bias", "LSTM", {"units": 2, "use_bias": False, "return_sequences": True}, [(2, 3, 3)]),
    case("LSTM_other_activations", "LSTM",
         {"units": 3, "activation": "softsign", "recurrent_activation": "tanh", "return_sequences": True},
         [(2, 4, 3)]),
    case("GRU_last", "GRU", {"units": 3}, [(2, 4, 5)]),
    case("GRU_sequences_state", "GRU", {"units": 4, "return_sequences": True, "return_state": True}, [(3, 5, 2)]),
    case("GRU_backwards", "GRU", {"units": 3, "return_sequences": True, "go_backwards": True}, [(2, 4, 3)]),
    case("GRU_initial_state", "GRU", {"units": 3, "return_state": True}, [(2, 4, 3), (2, 3)], initial_state=True),
    case("GRU_no_bias", "GRU", {"units": 2, "use_bias": False, "return_sequences": True}, [(2, 3, 3)]),
    case("GRU_reset_before", "GRU", {"units": 3, "reset_after": False, "return_sequences": True}, [(2, 4, 3)]),
    case("GRU_reset_before_state", "GRU", {"units": 2, "reset_after": False, "return_state": True,
                                           "go_backwards": True}, [(2, 3, 4), (2, 2)], initial_state=True),
    case("GRU_other_activations", "GRU", {"units": 3, "activation": "softsign", "return_sequences": True},
         [(2, 4, 3)]),
    case("Bidirectional_lstm_concat", "Bidirectional",
         {"layer": {"class_name": "LSTM", "config": {"units": 3, "return_sequences": True, "name": "lstm"}}},
         [(2, 4, 3)]),
    case("Bidirectional_gru_sum_last", "Bidirectional",
         {"layer": {"class_name": "GRU", "config": {"units": 3, "name": "gru"}}, "merge_mode": "sum"}, [(2, 4, 3)]),
    case("Bidirectional_lstm_state_none", "Bidirectional",
         {"layer": {"class_name": "LSTM", "config": {"units": 2, "return_sequences": True, "return_state": True,
                                                      "name": "lstm"}}, "merge_mode": None}, [(2, 3, 3)]),
    case("Bidirectional_rnn_ave", "Bidirectional",
         {"layer": {"class_name": "SimpleRNN", "config": {"units": 3, "return_sequences": True, "name": "rnn"}},
          "merge_mode": "ave"}, [(2, 4, 2)]),
    case("Bidirectional_gru_mul_sequences", "Bidirectional",
         {"layer": {"class_name": "GRU", "config": {"units": 2, "return_sequences": True, "name": "gru"}},
          "merge_mode": "mul"}, [(2, 3, 3)]),
    case("SimpleRNN_last", "SimpleRNN", {"units": 3}, [(2, 4, 5)]),
    case("SimpleRNN_sequences_softsign", "SimpleRNN", {"units": 4, "activation": "softsign",
                                                       "return_sequences": True}, [(3, 5, 2)]),
    case("SimpleRNN_state_backwards", "SimpleRNN", {"units": 3, "return_state": True, "go_backwards": True},
         [(2, 4, 3)]),
    case("SimpleRNN_initial_state", "SimpleRNN", {"units": 3, "return_sequences": True, "return_state": True},
         [(2, 4, 3), (2, 3)], initial_state=True),
    # Dense
    case("Dense_linear", "Dense", {"units": 3}, [(2, 4)]),
    case("Dense_no_bias", "Dense", {"units": 3, "use_bias": False}, [(2, 4)]),
    case("Dense_relu", "Dense", {"units": 4, "activation": "relu"}, [(2, 5)]),
    case("Dense_softmax", "Dense", {"units": 4, "activation": "softmax"}, [(2, 3)]),
    case("Dense_gelu", "Dense", {"units": 3, "activation": "gelu"}, [(2, 4)]),
    case("Dense_rank3", "Dense", {"units": 2, "activation": "tanh"}, [(2, 3, 4)]),
    case("Dense_rank3_no_bias", "Dense", {"units": 3, "use_bias": False}, [(2, 2, 4)]),
    # Conv2D
    case("Conv2D_valid", "Conv2D", {"filters": 2, "kernel_size": 3, "padding": "valid"}, [(2, 5, 5, 3)]),
    case("Conv2D_same_nonsquare", "Conv2D", {"filters": 3, "kernel_size": [3, 2], "padding": "same"},
         [(2, 5, 4, 2)]),
    case("Conv2D_strides2_same_odd", "Conv2D", {"filters": 2, "kernel_size": 3, "strides": 2, "padding": "same"},
         [(2, 5, 5, 2)]),
    case("Conv2D_strides2_same_even", "Conv2D", {"filters": 2, "kernel_size": 3, "strides": 2, "padding": "same"},
         [(2, 6, 6, 2)]),
    case("Conv2D_strides_1x2_valid", "Conv2D", {"filters": 2, "kernel_size": 2, "strides": [1, 2]},
         [(2, 4, 5, 2)]),
    case("Conv2D_dilation2_valid", "Conv2D", {"filters": 2, "kernel_size": 3, "dilation_rate": 2},
         [(2, 6, 6, 2)]),
    case("Conv2D_dilation2_same", "Conv2D", {"filters": 2, "kernel_size": 3, "dilation_rate": 2, "padding": "same"},
         [(2, 5, 5, 2)]),
    case("Conv2D_groups2", "Conv2D", {"filters": 4, "kernel_size": 3, "groups": 2, "padding": "same"},
         [(2, 4, 4, 4)]),
    case("Conv2D_relu_no_bias", "Conv2D",
         {"filters": 3, "kernel_size": 3, "padding": "same", "activation": "relu", "use_bias": False},
         [(2, 4, 4, 2)]),
    case("Conv2D_1x1", "Conv2D", {"filters": 4, "kernel_size": 1}, [(2, 3, 3, 3)]),
    # DepthwiseConv2D
    case("DepthwiseConv2D_mult1_same", "DepthwiseConv2D", {"kernel_size": 3, "padding": "same"}, [(2, 5, 5, 3)]),
    case("DepthwiseConv2D_mult2_valid", "DepthwiseConv2D", {"kernel_size": 3, "depth_multiplier": 2},
         [(2, 5, 5, 2)]),
    case("DepthwiseConv2D_strides2_same", "DepthwiseConv2D", {"kernel_size": 3, "strides": 2, "padding": "same"},
         [(2, 6, 6, 3)]),
    case("DepthwiseConv2D_no_bias", "DepthwiseConv2D",
         {"kernel_size": [2, 3], "padding": "same", "use_bias": False, "depth_multiplier": 2}, [(2, 4, 5, 2)]),
    case("DepthwiseConv2D_relu6", "DepthwiseConv2D", {"kernel_size": 3, "activation": "relu6"}, [(2, 5, 5, 2)],
         low=-4.0, high=4.0),
    # BatchNormalization
    case("BatchNormalization_train", "BatchNormalization", {"momentum": 0.9, "epsilon": 1e-3}, [(2, 3, 3, 4)],
         training=True),
    case("BatchNormalization_infer", "BatchNormalization", {"momentum": 0.9, "epsilon": 1e-3}, [(2, 3, 3, 4)],
         training=False),
    case("BatchNormalization_train_no_center_scale", "BatchNormalization", {"center": False, "scale": False},
         [(2, 3, 3, 3)], training=True),
    case("BatchNormalization_infer_no_center_scale", "BatchNormalization", {"center": False, "scale": False},
         [(2, 3, 3, 3)], training=False),
    case("BatchNormalization_train_defaults", "BatchNormalization", {}, [(2, 2, 2, 3)], training=True),
    case("BatchNormalization_train_rank2", "BatchNormalization", {"momentum": 0.9, "epsilon": 1e-3}, [(2, 4)],
         training=True),
    # ReLU
    case("ReLU_plain", "ReLU", {}, [(2, 3, 4)], inputs="grid", low=-3.0, high=3.0),
    case("ReLU_max_value6", "ReLU", {"max_value": 6.0}, [(2, 3, 4)], inputs="grid", low=-4.0, high=9.0),
    case("ReLU_slope_threshold", "ReLU", {"negative_slope": 0.1, "threshold": 0.5}, [(2, 3, 4)], inputs="grid",
         low=-2.0, high=3.0),
    case("ReLU_all_options", "ReLU", {"max_value": 6.0, "negative_slope": 0.1, "threshold": 0.5}, [(2, 3, 4)],
         inputs="grid", low=-3.0, high=9.0),
] + [
    case("Activation_" + a, "Activation", {"activation": a}, [(2, 3, 4)], inputs="grid", low=-4.5, high=7.5)
    for a in ACTIVATIONS
] + [
    # Softmax
    case("Softmax_axis_last", "Softmax", {"axis": -1}, [(2, 3, 4)], low=-2.0, high=2.0),
    case("Softmax_axis_1", "Softmax", {"axis": 1}, [(2, 3, 4)], low=-2.0, high=2.0),
    # Shape layers
    case("Flatten_rank4", "Flatten", {}, [(2, 3, 2, 2)]),
    case("Reshape_explicit", "Reshape", {"target_shape": [4, 3]}, [(2, 3, 4)]),
    case("Reshape_minus_one", "Reshape", {"target_shape": [-1, 2]}, [(2, 3, 4)]),
    case("Permute_2_1_3", "Permute", {"dims": [2, 1, 3]}, [(2, 2, 3, 4)]),
    case("Permute_3_1_2", "Permute", {"dims": [3, 1, 2]}, [(2, 2, 3, 4)]),
    # MaxPooling2D
    case("MaxPooling2D_valid", "MaxPooling2D", {"pool_size": 2}, [(2, 5, 5, 2)], inputs="grid"),
    case("MaxPooling2D_same_strides2_odd", "MaxPooling2D", {"pool_size": 2, "strides": 2, "padding": "same"},
         [(2, 5, 5, 2)], inputs="grid"),
    case("MaxPooling2D_pool3_strides2", "MaxPooling2D", {"pool_size": 3, "strides": 2}, [(2, 6, 5, 2)],
         inputs="grid"),
    case("MaxPooling2D_pool3_strides2_same", "MaxPooling2D", {"pool_size": 3, "strides": 2, "padding": "same"},
         [(2, 6, 6, 2)], inputs="grid"),
    case("MaxPooling2D_nonsquare_strides1", "MaxPooling2D", {"pool_size": [2, 3], "strides": 1},
         [(2, 4, 5, 2)], inputs="grid"),
    # AveragePooling2D
    case("AveragePooling2D_valid", "AveragePooling2D", {"pool_size": 2}, [(2, 5, 5, 2)]),
    case("AveragePooling2D_same_pool3_strides2", "AveragePooling2D",
         {"pool_size": 3, "strides": 2, "padding": "same"}, [(2, 5, 5, 2)]),
    case("AveragePooling2D_same_pool3_strides2_even", "AveragePooling2D",
         {"pool_size": 3, "strides": 2, "padding": "same"}, [(2, 6, 6, 2)]),
    case("AveragePooling2D_same_strides1", "AveragePooling2D", {"pool_size": 2, "strides": 1, "padding": "same"},
         [(2, 4, 4, 2)]),
    case("AveragePooling2D_pool3_strides2_valid", "AveragePooling2D", {"pool_size": 3, "strides": 2},
         [(2, 6, 5, 2)]),
    # Global pooling
    case("GlobalAveragePooling2D", "GlobalAveragePooling2D", {}, [(2, 3, 4, 3)]),
    case("GlobalAveragePooling2D_keepdims", "GlobalAveragePooling2D", {"keepdims": True}, [(2, 3, 4, 3)]),
    case("GlobalMaxPooling2D", "GlobalMaxPooling2D", {}, [(2, 3, 4, 3)], inputs="grid"),
    case("GlobalMaxPooling2D_keepdims", "GlobalMaxPooling2D", {"keepdims": True}, [(2, 3, 4, 3)], inputs="grid"),
    # Padding, cropping, upsampling
    case("ZeroPadding2D_int", "ZeroPadding2D", {"padding": 1}, [(2, 3, 3, 2)]),
    case("ZeroPadding2D_pairs", "ZeroPadding2D", {"padding": [[1, 2], [0, 1]]}, [(2, 3, 4, 2)]),
    case("ZeroPadding2D_hw", "ZeroPadding2D", {"padding": [2, 1]}, [(2, 2, 3, 2)]),
    case("Cropping2D_int", "Cropping2D", {"cropping": 1}, [(2, 5, 5, 2)]),
    case("Cropping2D_pairs", "Cropping2D", {"cropping": [[1, 0], [0, 2]]}, [(2, 4, 5, 2)]),
    case("UpSampling2D_size2", "UpSampling2D", {"size": 2}, [(2, 2, 3, 2)]),
    case("UpSampling2D_size_2x3", "UpSampling2D", {"size": [2, 3]}, [(2, 2, 2, 3)]),
    # Merge layers
    case("Add_2", "Add", {}, [(2, 3, 4), (2, 3, 4)]),
    case("Add_3", "Add", {}, [(2, 3, 4), (2, 3, 4), (2, 3, 4)]),
    case("Subtract", "Subtract", {}, [(2, 3, 4), (2, 3, 4)]),
    case("Multiply_2", "Multiply", {}, [(2, 3, 4), (2, 3, 4)]),
    case("Multiply_3", "Multiply", {}, [(2, 2, 2, 3), (2, 2, 2, 3), (2, 2, 2, 3)]),
    case("Average_2", "Average", {}, [(2, 3, 4), (2, 3, 4)]),
    case("Average_3", "Average", {}, [(2, 3, 4), (2, 3, 4), (2, 3, 4)]),
    case("Maximum_2", "Maximum", {}, [(2, 3, 4), (2, 3, 4)]),
    case("Minimum_3", "Minimum", {}, [(2, 3, 4), (2, 3, 4), (2, 3, 4)]),
    # Broadcasting (Keras' Merge: the non-batch axes aligned at the end, a lower rank expanded after the batch
    # axis, size-1 axes stretched): a squeeze-and-excitation product, a bias-like [1, c] row, both stretched.
    case("Multiply_broadcast_channels", "Multiply", {}, [(2, 3, 4, 5), (2, 5)]),
    case("Multiply_broadcast_3", "Multiply", {}, [(2, 3, 1, 5), (2, 1, 4, 1), (2, 5)]),
    case("Add_broadcast", "Add", {}, [(2, 3, 4), (2, 1, 4)]),
    case("Add_broadcast_both", "Add", {}, [(2, 3, 1), (2, 1, 4), (2, 4)]),
    case("Subtract_broadcast", "Subtract", {}, [(2, 4), (2, 3, 4)]),
    case("Average_broadcast", "Average", {}, [(2, 3, 4), (2, 3, 1)]),
    case("Maximum_broadcast", "Maximum", {}, [(2, 3, 4), (2, 4), (2, 3, 1)]),
    case("Minimum_broadcast", "Minimum", {}, [(2, 1, 4), (2, 3, 4)]),
    case("Concatenate_axis_last", "Concatenate", {"axis": -1}, [(2, 3, 2), (2, 3, 4)]),
    case("Concatenate_axis_1", "Concatenate", {"axis": 1}, [(2, 2, 3), (2, 3, 3)]),
    case("Concatenate_3_inputs_rank4", "Concatenate", {}, [(2, 2, 2, 1), (2, 2, 2, 3), (2, 2, 2, 2)]),
    # Embedding: ids drawn from a range smaller than the batch's count of ids, so ids repeat and their rows'
    # gradients add up.
    case("Embedding_2d", "Embedding", {"input_dim": 5, "output_dim": 3}, [(3, 4)], inputs="ids", low=0, high=5),
    case("Embedding_3d", "Embedding", {"input_dim": 7, "output_dim": 2}, [(2, 3, 4)], inputs="ids", low=0,
         high=4),
    # LayerNormalization
    case("LayerNormalization_axis_last", "LayerNormalization", {}, [(2, 3, 5)]),
    case("LayerNormalization_axis_1_2", "LayerNormalization", {"axis": [1, 2]}, [(2, 3, 4, 2)]),
    case("LayerNormalization_no_center", "LayerNormalization", {"center": False}, [(3, 4)]),
    case("LayerNormalization_no_scale", "LayerNormalization", {"scale": False}, [(2, 2, 4)]),
    case("LayerNormalization_rms_scaling", "LayerNormalization", {"rms_scaling": True}, [(2, 3, 4)]),
    case("LayerNormalization_epsilon", "LayerNormalization", {"epsilon": 0.1, "axis": -2}, [(2, 3, 4)],
         low=-0.3, high=0.3),
    # 1-D layers
    case("Conv1D_valid", "Conv1D", {"filters": 3, "kernel_size": 3}, [(2, 7, 2)]),
    case("Conv1D_same", "Conv1D", {"filters": 2, "kernel_size": 4, "padding": "same"}, [(2, 6, 3)]),
    case("Conv1D_causal", "Conv1D", {"filters": 2, "kernel_size": 3, "padding": "causal"}, [(2, 6, 2)]),
    case("Conv1D_causal_dilation2", "Conv1D",
         {"filters": 3, "kernel_size": 2, "padding": "causal", "dilation_rate": 2}, [(2, 7, 2)]),
    case("Conv1D_causal_strides2", "Conv1D", {"filters": 2, "kernel_size": 3, "padding": "causal", "strides": 2},
         [(2, 7, 2)]),
    case("Conv1D_dilation2_same", "Conv1D", {"filters": 2, "kernel_size": 3, "dilation_rate": [2], "padding": "same"},
         [(2, 6, 2)]),
    case("Conv1D_strides2_same", "Conv1D", {"filters": 2, "kernel_size": [3], "strides": 2, "padding": "same"},
         [(2, 8, 3)]),
    case("Conv1D_strides3_valid", "Conv1D", {"filters": 2, "kernel_size": 2, "strides": 3}, [(2, 8, 2)]),
    case("Conv1D_groups2_relu", "Conv1D",
         {"filters": 4, "kernel_size": 3, "groups": 2, "padding": "same", "activation": "relu"}, [(2, 5, 4)],
         inputs="grid"),
    case("Conv1D_no_bias_tanh", "Conv1D", {"filters": 3, "kernel_size": 1, "use_bias": False, "activation": "tanh"},
         [(2, 4, 3)]),
    case("SeparableConv1D_valid", "SeparableConv1D", {"filters": 3, "kernel_size": 3}, [(2, 6, 2)]),
    case("SeparableConv1D_same_mult2", "SeparableConv1D",
         {"filters": 2, "kernel_size": 3, "padding": "same", "depth_multiplier": 2}, [(2, 5, 3)]),
    case("SeparableConv1D_strides2_no_bias", "SeparableConv1D",
         {"filters": 4, "kernel_size": 2, "strides": 2, "use_bias": False}, [(2, 7, 2)]),
    case("SeparableConv1D_dilation2_same_sigmoid", "SeparableConv1D",
         {"filters": 2, "kernel_size": 3, "dilation_rate": 2, "padding": "same", "activation": "sigmoid"},
         [(2, 6, 2)]),
    case("MaxPooling1D_valid", "MaxPooling1D", {}, [(2, 7, 3)], inputs="grid"),
    case("MaxPooling1D_same_pool3_strides2", "MaxPooling1D", {"pool_size": 3, "strides": 2, "padding": "same"},
         [(2, 6, 2)], inputs="grid"),
    case("MaxPooling1D_pool3_strides1", "MaxPooling1D", {"pool_size": [3], "strides": 1}, [(2, 5, 2)],
         inputs="grid"),
    case("AveragePooling1D_valid", "AveragePooling1D", {"pool_size": 2}, [(2, 7, 3)]),
    case("AveragePooling1D_same_pool3_strides2", "AveragePooling1D",
         {"pool_size": 3, "strides": 2, "padding": "same"}, [(2, 6, 2)]),
    case("AveragePooling1D_same_strides1", "AveragePooling1D", {"pool_size": 2, "strides": 1, "padding": "same"},
         [(2, 5, 2)]),
    case("GlobalAveragePooling1D", "GlobalAveragePooling1D", {}, [(2, 5, 3)]),
    case("GlobalAveragePooling1D_keepdims", "GlobalAveragePooling1D", {"keepdims": True}, [(2, 5, 3)]),
    case("GlobalMaxPooling1D", "GlobalMaxPooling1D", {}, [(2, 5, 3)], inputs="grid"),
    case("GlobalMaxPooling1D_keepdims", "GlobalMaxPooling1D", {"keepdims": True}, [(2, 5, 3)], inputs="grid"),
    case("UpSampling1D_default", "UpSampling1D", {}, [(2, 3, 2)]),
    case("UpSampling1D_size3", "UpSampling1D", {"size": 3}, [(2, 2, 3)]),
    case("ZeroPadding1D_int", "ZeroPadding1D", {"padding": 2}, [(2, 3, 2)]),
    case("ZeroPadding1D_pair", "ZeroPadding1D", {"padding": [1, 3]}, [(2, 3, 2)]),
    case("ZeroPadding1D_channels_first", "ZeroPadding1D", {"padding": [2, 1], "data_format": "channels_first"},
         [(2, 3, 4)]),
    case("Cropping1D_default", "Cropping1D", {}, [(2, 5, 2)]),
    case("Cropping1D_pair", "Cropping1D", {"cropping": [2, 0]}, [(2, 5, 3)]),
    case("RepeatVector", "RepeatVector", {"n": 3}, [(2, 4)]),
    case("GroupNormalization_groups2", "GroupNormalization", {"groups": 2}, [(2, 5, 4)]),
    case("GroupNormalization_rank4_groups3", "GroupNormalization", {"groups": 3, "epsilon": 0.01}, [(2, 3, 2, 6)]),
    case("GroupNormalization_instance", "GroupNormalization", {"groups": -1, "center": False}, [(2, 4, 3)]),
    case("GroupNormalization_axis1_no_scale", "GroupNormalization", {"groups": 2, "axis": 1, "scale": False},
         [(2, 4, 3)]),
    case("UnitNormalization_last", "UnitNormalization", {}, [(2, 3, 4)]),
    case("UnitNormalization_axes_1_2", "UnitNormalization", {"axis": [1, 2]}, [(2, 3, 2, 2)]),
    case("TimeDistributed_Dense", "TimeDistributed", {"layer": {"class_name": "Dense", "config": {"units": 3}}},
         [(2, 4, 5)]),
    case("TimeDistributed_Conv2D", "TimeDistributed",
         {"layer": {"class_name": "Conv2D", "config": {"filters": 2, "kernel_size": 2, "activation": "relu"}}},
         [(2, 3, 4, 4, 2)], inputs="grid"),
    case("TimeDistributed_Conv1D_causal", "TimeDistributed",
         {"layer": {"class_name": "Conv1D", "config": {"filters": 2, "kernel_size": 2, "padding": "causal"}}},
         [(2, 2, 5, 3)]),
    # Rescaling
    case("Rescaling_to_unit", "Rescaling", {"scale": 1.0 / 127.5, "offset": -1.0}, [(2, 3, 3, 2)], low=0.0,
         high=255.0),
    case("Rescaling_scale_only", "Rescaling", {"scale": 0.5}, [(2, 3, 4)]),
    # Attention: MultiHeadAttention is called as Keras calls it, layer(query, value, key=..., attention_mask=...),
    # with the Tower inputs [query, value, (key), (mask)]; Attention and AdditiveAttention on the list.
    case("MultiHeadAttention_self", "MultiHeadAttention", {"num_heads": 2, "key_dim": 3}, [(2, 4, 6), (2, 4, 6)]),
    case("MultiHeadAttention_cross", "MultiHeadAttention", {"num_heads": 2, "key_dim": 3, "value_dim": 2},
         [(2, 3, 6), (2, 5, 4)]),
    case("MultiHeadAttention_with_key", "MultiHeadAttention", {"num_heads": 3, "key_dim": 2},
         [(2, 3, 4), (2, 5, 3), (2, 5, 6)]),
    case("MultiHeadAttention_causal", "MultiHeadAttention", {"num_heads": 2, "key_dim": 3}, [(2, 4, 6), (2, 4, 6)],
         call={"use_causal_mask": True}),
    case("MultiHeadAttention_causal_cross", "MultiHeadAttention", {"num_heads": 2, "key_dim": 2},
         [(2, 4, 3), (2, 6, 5)], call={"use_causal_mask": True}),
    case("MultiHeadAttention_attention_mask", "MultiHeadAttention", {"num_heads": 2, "key_dim": 2},
         [(2, 3, 4), (2, 5, 4), (2, 3, 5)], mask=True),
    case("MultiHeadAttention_scores", "MultiHeadAttention", {"num_heads": 2, "key_dim": 3}, [(2, 3, 4), (2, 5, 4)],
         call={"return_attention_scores": True}),
    case("MultiHeadAttention_scores_causal_mask_key", "MultiHeadAttention", {"num_heads": 2, "key_dim": 2},
         [(2, 4, 3), (2, 4, 5), (2, 4, 2), (2, 4, 4)], call={"return_attention_scores": True, "use_causal_mask": True},
         mask=True),
    case("MultiHeadAttention_output_shape", "MultiHeadAttention", {"num_heads": 2, "key_dim": 2, "output_shape": [2, 3]},
         [(2, 3, 4), (2, 4, 4)]),
    case("MultiHeadAttention_output_shape_int", "MultiHeadAttention",
         {"num_heads": 2, "key_dim": 2, "value_dim": 3, "output_shape": 5}, [(2, 3, 4), (2, 4, 4)]),
    case("MultiHeadAttention_no_bias", "MultiHeadAttention", {"num_heads": 2, "key_dim": 3, "use_bias": False},
         [(2, 4, 5), (2, 3, 5)]),
    case("Attention_dot", "Attention", {}, [(2, 3, 4), (2, 5, 4)]),
    case("Attention_dot_scale", "Attention", {"use_scale": True}, [(2, 3, 4), (2, 5, 2), (2, 5, 4)]),
    case("Attention_concat", "Attention", {"score_mode": "concat"}, [(2, 3, 4), (2, 5, 4)]),
    case("Attention_concat_scale", "Attention", {"score_mode": "concat", "use_scale": True},
         [(2, 3, 4), (2, 5, 3), (2, 5, 4)]),
    case("Attention_causal_scores", "Attention", {"use_scale": True}, [(2, 4, 3), (2, 4, 3)],
         call={"use_causal_mask": True, "return_attention_scores": True}),
    case("AdditiveAttention_scale", "AdditiveAttention", {}, [(2, 3, 4), (2, 5, 4)]),
    case("AdditiveAttention_no_scale", "AdditiveAttention", {"use_scale": False}, [(2, 3, 4), (2, 5, 2), (2, 5, 4)]),
    case("AdditiveAttention_causal_scores", "AdditiveAttention", {}, [(2, 4, 3), (2, 4, 3)],
         call={"use_causal_mask": True, "return_attention_scores": True}),
]


def seed_of(name, salt):
    return zlib.crc32(f"{name}/{salt}".encode())


def f32_str(v):
    # numpy prints the shortest string that reads back as the same float32.
    s = str(np.float32(v))
    if not np.isfinite(np.float32(v)):
        raise ValueError(f"non-finite value {s}")
    return s


def tensor_json(a, name=None):
    a = np.asarray(a, dtype=np.float32)
    d = {}
    if name is not None:
        d["name"] = name
    d["shape"] = list(a.shape)
    d["data"] = "[" + ", ".join(f32_str(v) for v in a.reshape(-1)) + "]"
    return d


def draw_input(c, shape, index):
    rng = np.random.default_rng(seed_of(c["name"], f"input{index}"))
    if c["mask"] and index == len(c["input_shapes"]) - 1:
        m = rng.integers(0, 2, size=shape)
        m[..., 0] = np.where(m.sum(axis=-1) == 0, 1, m[..., 0])  # every row keeps a position
        return m.astype(np.float32)
    n = int(np.prod(shape))
    low, high = c["low"], c["high"]
    if c["inputs"] == "uniform":
        return rng.uniform(low, high, size=shape).astype(np.float32)
    if c["inputs"] == "ids":
        return rng.integers(low, high, size=shape).astype(np.int32)
    # A permutation of n evenly spaced values, shifted so that no value is near a kink (within a quarter step,
    # at most 0.01) and every value is distinct (max pooling picks a unique maximum; tf's gradient of ties
    # would split).
    step = (high - low) / max(n - 1, 1)
    margin = min(0.01, step / 4)
    for shift in np.linspace(0.0, step, 41)[1:-1]:
        grid = low + np.arange(n) * step + shift
        if all(np.min(np.abs(grid - k)) > margin for k in KINKS):
            break
    else:
        raise RuntimeError(f"{c['name']}: no grid avoids the kinks")
    grid = grid.astype(np.float32)
    assert len(np.unique(grid)) == n
    return rng.permutation(grid).reshape(shape)


def weight_name(v, class_name):
    # Keras 3 variable names carry no layer prefix; Keras 2 style paths are stripped just in case. A weight of a
    # Keras sublayer (MultiHeadAttention's "multi_head_attention/query/kernel") keeps the sublayer: "query/kernel".
    # A recurrent layer's cell and a wrapper's layer (TimeDistributed's "time_distributed/dense/kernel") hold the
    # layer's own weights, named as the layer's in Tower: "kernel". Bidirectional's are named by their layer's path:
    # "forward_lstm/kernel".
    parts = v.path.split("/")
    if len(parts) > 2 and class_name == "Bidirectional":  # "bidirectional/forward_lstm/lstm_cell/kernel"
        return parts[1] + "/" + parts[-1]
    if len(parts) > 2 and class_name in SUBLAYER_WEIGHTS:
        return "/".join(parts[1:])
    return v.name.split("/")[-1].split(":")[0]


# The layers whose weights Tower names "<sublayer>/<weight>", as Keras' sublayers hold them.
SUBLAYER_WEIGHTS = ("MultiHeadAttention",)


def call_layer(c, layer, xs, **kwargs):
    """Calls the Keras layer on the Tower inputs xs as Keras takes them."""
    kwargs.update(c["call"])
    if c["class_name"] == "MultiHeadAttention":
        xs = list(xs)
        if c["mask"]:
            kwargs["attention_mask"] = xs.pop()
        if len(xs) == 3:
            kwargs["key"] = xs[2]
        return layer(xs[0], xs[1], **kwargs)
    if c["initial_state"]:
        return layer(xs[0], initial_state=list(xs[1:]), **kwargs)
    return layer(xs if len(xs) > 1 else xs[0], **kwargs)


def tower_config(c):
    """The case's Keras config plus the call arguments, which Tower reads as options."""
    config = dict(c["config"], **c["call"])
    if c["mask"]:
        config["use_attention_mask"] = True
    return config


def make_case(c):
    keras.utils.clear_session()
    cls = getattr(keras.layers, c["class_name"])
    kwargs = dict(c["config"])
    if isinstance(kwargs.get("layer"), dict):  # a wrapper's layer (TimeDistributed), in Keras' serialized form
        inner = kwargs["layer"]
        kwargs["layer"] = getattr(keras.layers, inner["class_name"])(**inner["config"])
    layer = cls(**kwargs)
    shapes = c["input_shapes"]
    dtype = "int32" if c["inputs"] == "ids" else "float32"
    sym = [keras.Input(shape=s[1:], batch_size=None, dtype=dtype) for s in shapes]
    call_layer(c, layer, sym)

    # Deterministic weights.
    wrng = np.random.default_rng(seed_of(c["name"], "weights"))
    for v in layer.weights:
        n = weight_name(v, c["class_name"])
        if n in ("gamma", "moving_variance"):
            val = wrng.uniform(0.5, 1.5, size=v.shape)
        else:
            val = wrng.uniform(-0.5, 0.5, size=v.shape)
        v.assign(val.astype(np.float32))
    weights_before = [tensor_json(v.numpy(), weight_name(v, c["class_name"])) for v in layer.weights]

    xs = [tf.constant(draw_input(c, s, i)) for i, s in enumerate(shapes)]
    with tf.GradientTape(persistent=True) as tape:
        for x in xs:
            if x.dtype.is_floating:
                tape.watch(x)
        out = call_layer(c, layer, xs, training=c["training"])
        outs = out if isinstance(out, (list, tuple)) else [out]
        rrng = np.random.default_rng(seed_of(c["name"], "upstream"))
        rs = [rrng.uniform(-1.0, 1.0, size=tuple(o.shape)).astype(np.float32) for o in outs]
        loss = tf.add_n([tf.reduce_sum(o * r) for o, r in zip(outs, rs)])
    tw = list(layer.trainable_weights)
    grads = tape.gradient(loss, xs + tw)
    del tape
    in_grads = grads[: len(xs)]
    w_grads = grads[len(xs):]

    def as_np(g, like):
        if g is None:
            return np.zeros(like.shape, np.float32)
        if isinstance(g, tf.IndexedSlices):
            g = tf.convert_to_tensor(g)
        return np.asarray(g)

    doc = {
        "layer": {"class_name": c["class_name"], "config": tower_config(c)},
        "training": bool(c["training"]),
        "keras_version": keras.__version__,
        "inputs": [tensor_json(x.numpy()) for x in xs],
        "weights": weights_before,
        "upstream": [tensor_json(r) for r in rs],
        "outputs": [tensor_json(o.numpy()) for o in outs],
        "input_grads": [tensor_json(as_np(g, x)) for g, x in zip(in_grads, xs)],
        "weight_grads": [tensor_json(as_np(g, v), weight_name(v, c["class_name"])) for g, v in zip(w_grads, tw)],
    }
    if c["class_name"] == "BatchNormalization" and c["training"]:
        doc["weights_after"] = [tensor_json(v.numpy(), weight_name(v, c["class_name"])) for v in layer.weights]
    return doc


def dump(doc):
    # Compact, one entry per line; "data" lists were pre-rendered as strings to control float formatting.
    def render(v, indent):
        pad = "  " * indent
        if isinstance(v, dict):
            items = []
            for k, x in v.items():
                if k == "data":
                    items.append(f'{pad}  "data": {x}')
                else:
                    items.append(f"{pad}  {json.dumps(k)}: {render(x, indent + 1).lstrip()}")
            return pad + "{\n" + ",\n".join(items) + "\n" + pad + "}"
        if isinstance(v, list) and v and isinstance(v[0], dict):
            return pad + "[\n" + ",\n".join(render(x, indent + 1) for x in v) + "\n" + pad + "]"
        return pad + json.dumps(v)

    return render(doc, 0) + "\n"


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    only = set(sys.argv[1:])
    names = [c["name"] for c in CASES]
    assert len(names) == len(set(names)), "duplicate case names"
    if not only:
        for f in os.listdir(OUT_DIR):
            if f.endswith(".json") and f[:-5] not in names:
                os.remove(os.path.join(OUT_DIR, f))
    total = 0
    for c in CASES:
        if only and c["name"] not in only:
            continue
        text = dump(make_case(c))
        json.loads(text)  # must be valid JSON
        path = os.path.join(OUT_DIR, c["name"] + ".json")
        with open(path, "w") as f:
            f.write(text)
        total += len(text)
        print(f"{c['name']}: {len(text)} bytes")
    print(f"{total} bytes in {OUT_DIR}")


if __name__ == "__main__":
    main()
