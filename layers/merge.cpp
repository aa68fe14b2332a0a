#include "layers/merge.h"

namespace tower::layers {

std::string Merge::shapes_to_string(const std::vector<Shape>& shapes) {
  std::string s = "[";
  for (std::size_t i = 0; i < shapes.size(); ++i) s += (i ? ", " : "") + shapes[i].to_string();
  return s + "]";
}

void Merge::check_input_count(const std::vector<Shape>& in, int min, bool exact) const {
  const int n = static_cast<int>(in.size());
  if (exact ? n != min : n < min)
    shape_error("must be called on " + std::string(exact ? "exactly " : "at least ") + std::to_string(min) +
                " inputs, got " + std::to_string(n) + ": " + shapes_to_string(in));
}

std::vector<Shape> Merge::compute_output_shape(const std::vector<Shape>& in) const {
  check_input_count(in, 2);
  for (const Shape& s : in)
    if (s != in[0]) shape_error("inputs must all have the same shape, got " + shapes_to_string(in));
  return {in[0]};
}

}  // namespace tower::layers
