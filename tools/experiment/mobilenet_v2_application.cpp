// `model: {application: MobileNetV2, ...}`: applications::MobileNetV2 with keras.applications.MobileNetV2's
// arguments. input_shape defaults to the data's example shape; null for weights, pooling or
// classifier_activation means Keras' None (random initialisation, no pooling, a linear classifier).
#include "applications/mobilenet_v2.h"
#include "api/engine/layer_options.h"
#include "tools/experiment/applications.h"

namespace tower::experiment {

namespace {

struct MobileNetV2Args {
  applications::MobileNetV2Options o;
  std::optional<Shape> input_shape;
  std::optional<std::string> weights = std::string("imagenet"), pooling, classifier_activation = std::string("softmax");
  template <class V> void visit(V&& v) {
    v("input_shape", input_shape);
    v("alpha", o.alpha);
    v("include_top", o.include_top);
    v("weights", weights);
    v("pooling", pooling);
    v("classes", o.classes);
    v("classifier_activation", classifier_activation);
    v("name", o.name);
  }
};

Model build(const Config& options, const Shape& data_shape) {
  MobileNetV2Args a = options_from_config<MobileNetV2Args>(options, "MobileNetV2");
  a.o.input_shape = a.input_shape ? *a.input_shape : data_shape;
  a.o.weights = a.weights.value_or("");
  a.o.pooling = a.pooling.value_or("");
  a.o.classifier_activation = a.classifier_activation.value_or("linear");
  return applications::MobileNetV2(a.o);
}

const bool registered = (register_application("MobileNetV2", {build}), true);

}  // namespace

}  // namespace tower::experiment
