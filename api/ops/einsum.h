#pragma once
// ops::einsum: numpy.einsum / keras.ops.einsum for one or two operands, differentiable, written with the ops of
// ops.h: letters summed away alone are reduced with sum, and a product of two operands becomes one batched matmul
// (the letters of both operands and of the result are its batch, the letters of both and not of the result its
// contraction), with transposes and reshapes around it:
//
//   Tensor scores = ops::einsum("bqhd,bkhd->bhqk", q, k);   // attention's query-key product
//   Tensor out = ops::einsum("bhqk,bkhd->bqhd", weights, v);
//   Tensor t = ops::einsum("ij->ji", x);                    // implicit form: "ij,jk" means "ij,jk->ik"
//
// Without "->" the result has the letters that appear once, in alphabetical order (NumPy's rule). A batch letter
// may have size 1 in one operand (it is broadcast). Not supported, each with an error naming the equation: the
// ellipsis, a letter repeated within one operand (diagonals), more than two operands.
#include <string>

#include "api/core/tensor.h"

namespace tower::ops {

Tensor einsum(const std::string& equation, const Tensor& a);
Tensor einsum(const std::string& equation, const Tensor& a, const Tensor& b);

}  // namespace tower::ops
