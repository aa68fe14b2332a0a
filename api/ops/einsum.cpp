#include "api/ops/einsum.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <stdexcept>
#include <vector>

#include "api/ops/ops.h"

namespace tower::ops {

namespace {

struct Equation {
  std::string text;
  std::vector<std::string> inputs;
  std::string output;
};

[[noreturn]] void fail(const std::string& equation, const std::string& what) {
  throw std::invalid_argument("ops.einsum(\"" + equation + "\"): " + what);
}

bool has(const std::string& letters, char c) { return letters.find(c) != std::string::npos; }

Equation parse(const std::string& text, const std::vector<const Tensor*>& operands) {
  Equation eq{text, {}, {}};
  std::string lhs = text, rhs;
  bool explicit_output = false;
  if (const auto arrow = text.find("->"); arrow != std::string::npos) {
    lhs = text.substr(0, arrow);
    rhs = text.substr(arrow + 2);
    explicit_output = true;
  }
  std::string current;
  const auto letters_of = [&](const std::string& part, bool is_output) {
    std::string out;
    for (char c : part) {
      if (c == ' ') continue;
      if (c == '.') fail(text, "the ellipsis is not supported; name every axis");
      if (!std::isalpha(static_cast<unsigned char>(c)))
        fail(text, std::string("'") + c + "' is not a letter" + (is_output ? " of the result" : ""));
      if (has(out, c))
        fail(text, std::string("the letter '") + c + "' appears twice in " +
                       (is_output ? "the result" : "one operand") + " (diagonals are not supported)");
      out += c;
    }
    return out;
  };
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = lhs.find(',', start);
    eq.inputs.push_back(letters_of(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start), false));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (eq.inputs.size() != operands.size())
    fail(text, std::to_string(eq.inputs.size()) + " operand(s) in the equation, " + std::to_string(operands.size()) +
                   " given");
  for (std::size_t i = 0; i < operands.size(); ++i)
    if (static_cast<int>(eq.inputs[i].size()) != operands[i]->shape().rank())
      fail(text, "operand " + std::to_string(i) + " has shape " + operands[i]->shape().to_string() + ", not " +
                     std::to_string(eq.inputs[i].size()) + " axes ('" + eq.inputs[i] + "')");
  if (explicit_output) {
    eq.output = letters_of(rhs, true);
    for (char c : eq.output)
      if (std::none_of(eq.inputs.begin(), eq.inputs.end(), [c](const std::string& s) { return has(s, c); }))
        fail(text, std::string("the result's letter '") + c + "' is not in any operand");
  } else {
    std::map<char, int> count;
    for (const std::string& s : eq.inputs)
      for (char c : s) ++count[c];
    for (const auto& [c, n] : count)
      if (n == 1) eq.output += c;
  }
  return eq;
}

// x (with axes `have`) with its axes in the order `want` (the same letters).
Tensor arrange(const Tensor& x, const std::string& have, const std::string& want) {
  if (have == want) return x;
  std::vector<int> perm;
  for (char c : want) perm.push_back(static_cast<int>(have.find(c)));
  return transpose(x, perm);
}

// x summed over its letters not in `keep`; `letters` becomes the letters left.
Tensor sum_away(const Tensor& x, std::string& letters, const std::string& keep) {
  std::vector<int> axes;
  std::string left;
  for (std::size_t k = 0; k < letters.size(); ++k)
    if (has(keep, letters[k])) left += letters[k];
    else axes.push_back(static_cast<int>(k));
  letters = left;
  return axes.empty() ? x : sum(x, axes);
}

Index size_of(const Tensor& x, const std::string& letters, char c) {
  return x.shape()[static_cast<int>(letters.find(c))];
}

}  // namespace

Tensor einsum(const std::string& equation, const Tensor& a) {
  const Equation eq = parse(equation, {&a});
  std::string letters = eq.inputs[0];
  const Tensor reduced = sum_away(a, letters, eq.output);
  return arrange(reduced, letters, eq.output);
}

Tensor einsum(const std::string& equation, const Tensor& a, const Tensor& b) {
  const Equation eq = parse(equation, {&a, &b});
  std::string la = eq.inputs[0], lb = eq.inputs[1];
  // Letters of one operand alone that the result drops are summed away first.
  Tensor x = sum_away(a, la, eq.output + lb), y = sum_away(b, lb, eq.output + la);
  std::string batch, contracted, rows, cols;
  for (char c : la) {
    if (has(lb, c)) (has(eq.output, c) ? batch : contracted) += c;
    else rows += c;
  }
  for (char c : lb)
    if (!has(la, c)) cols += c;
  // Sizes: a batch letter of size 1 in one operand is broadcast; others must agree.
  std::vector<Index> batch_dims;
  for (char c : batch + contracted) {
    const Index sa = size_of(x, la, c), sb = size_of(y, lb, c);
    if (sa != sb && (has(contracted, c) || (sa != 1 && sb != 1)))
      fail(equation, std::string("the letter '") + c + "' has size " + std::to_string(sa) + " in the first operand and " +
                         std::to_string(sb) + " in the second (shapes " + a.shape().to_string() + " and " +
                         b.shape().to_string() + ")");
    if (has(batch, c)) batch_dims.push_back(std::max(sa, sb));
  }
  Index nb = 1, m = 1, k = 1, n = 1;
  std::vector<Index> out_dims = batch_dims;
  for (Index d : batch_dims) nb *= d;
  for (char c : rows) {
    m *= size_of(x, la, c);
    out_dims.push_back(size_of(x, la, c));
  }
  for (char c : contracted) k *= size_of(x, la, c);
  for (char c : cols) {
    n *= size_of(y, lb, c);
    out_dims.push_back(size_of(y, lb, c));
  }
  // x as [batch, rows, contracted] and y as [batch, contracted, cols], the batch stretched to its full size.
  const auto as_matrices = [&](const Tensor& t, const std::string& letters, const std::string& order, Index r, Index c) {
    Tensor arranged = arrange(t, letters, order);
    std::vector<Index> full = arranged.shape().dims();
    for (std::size_t i = 0; i < batch_dims.size(); ++i) full[i] = batch_dims[i];
    if (Shape(full) != arranged.shape()) arranged = broadcast_to(arranged, Shape(full));
    return batch.empty() ? reshape(arranged, Shape{r, c}) : reshape(arranged, Shape{nb, r, c});
  };
  const Tensor product = matmul(as_matrices(x, la, batch + rows + contracted, m, k),
                                as_matrices(y, lb, batch + contracted + cols, k, n));
  return arrange(reshape(product, Shape(out_dims)), batch + rows + cols, eq.output);
}

}  // namespace tower::ops
