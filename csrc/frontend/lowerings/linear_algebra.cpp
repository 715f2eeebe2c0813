// Linear algebra beyond products: matrix_power by products, and the matrix
// decompositions, inverses and solves (Cholesky, LU, QR, SVD, eigenvalues,
// determinants), which popsim recognises to refuse them with the reason and
// what to do instead: the IPU's libraries (PopLibs) have no such kernels,
// and PopTorch does not run them either.

#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

namespace popsim::frontend::lowerings {
namespace {

ir::Value* product(LoweringContext& ctx, ir::Value* a, ir::Value* b) {
  return ctx.emit(ir::OpKind::MatMul, {a, b});
}

// matrix_power(A, n) / linalg_matrix_power of square matrices (batched), for
// n >= 0 with PyTorch's products: the identity, A, A A, (A A) A, and beyond
// by the binary digits of n (repeated squaring), in its order.
void lowerMatrixPower(LoweringContext& ctx) {
  ir::Value* a = floatTensor(ctx, 0);
  int64_t n = ctx.toInt(1);
  const ir::Shape& shape = a->type().shape;
  if (n < 0) {
    ctx.unsupported("matrix_power with a negative exponent (" + std::to_string(n) +
                    "), which needs the matrix's inverse; popsim has no matrix inverse");
  }
  if (n == 0) {
    const int64_t size = shape.back();
    std::vector<float> identity(static_cast<size_t>(size * size), 0.0f);
    for (int64_t i = 0; i < size; ++i)
      identity[static_cast<size_t>(i * size + i)] = 1.0f;
    ir::Value* eye =
        castTo(ctx, floatConstant(ctx, identity, ir::Shape{size, size}), a->type().dtype);
    ctx.setOutput(0, broadcastTo(ctx, eye, shape));
    return;
  }
  if (n <= 3) {
    ir::Value* result = a;
    for (int64_t k = 1; k < n; ++k)
      result = product(ctx, result, a);
    ctx.setOutput(0, result); // (n = 1: A itself, as clone() is)
    return;
  }
  ir::Value* square = nullptr;
  ir::Value* result = nullptr;
  while (n > 0) {
    const bool bit = n % 2 == 1;
    n /= 2;
    square = square == nullptr ? a : product(ctx, square, square);
    if (bit) result = result == nullptr ? square : product(ctx, result, square);
  }
  ctx.setOutput(0, result);
}

} // namespace

void registerLinearAlgebra(LoweringRegistry& registry) {
  registry.add("aten::matrix_power", lowerMatrixPower);
  registry.add("aten::linalg_matrix_power", lowerMatrixPower);
  for (const char* op : {"aten::cholesky",
                         "aten::cholesky_inverse",
                         "aten::cholesky_solve",
                         "aten::det",
                         "aten::geqrf",
                         "aten::inverse",
                         "aten::linalg_cholesky",
                         "aten::linalg_cholesky_ex",
                         "aten::linalg_det",
                         "aten::linalg_eig",
                         "aten::linalg_eigh",
                         "aten::linalg_eigvals",
                         "aten::linalg_eigvalsh",
                         "aten::linalg_householder_product",
                         "aten::linalg_inv",
                         "aten::linalg_inv_ex",
                         "aten::linalg_lstsq",
                         "aten::linalg_lu",
                         "aten::linalg_lu_factor",
                         "aten::linalg_lu_factor_ex",
                         "aten::linalg_lu_solve",
                         "aten::linalg_matrix_exp",
                         "aten::linalg_pinv",
                         "aten::linalg_qr",
                         "aten::linalg_slogdet",
                         "aten::linalg_solve",
                         "aten::linalg_solve_ex",
                         "aten::linalg_solve_triangular",
                         "aten::linalg_svd",
                         "aten::linalg_svdvals",
                         "aten::logdet",
                         "aten::lu_solve",
                         "aten::matrix_exp",
                         "aten::orgqr",
                         "aten::ormqr",
                         "aten::pinverse",
                         "aten::qr",
                         "aten::slogdet",
                         "aten::svd",
                         "aten::triangular_solve"}) {
    registry.refuse(op,
                    "matrix decompositions, inverses, solves and determinants have no IPU "
                    "kernels (PopLibs has none, and PopTorch does not run them): compute this on "
                    "the host, before or after the popsim model, or parameterise the model "
                    "without it (a covariance by its lower-triangular factor, torch.tril of a "
                    "parameter with a positive diagonal, whose log-determinant is 2 * the sum of "
                    "the log of that diagonal)");
  }
}

} // namespace popsim::frontend::lowerings
