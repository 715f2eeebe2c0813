// Products named by the dimensions they pair: einsum, tensordot, outer,
// kron and bilinear. Each becomes permutes, reshapes, sums and batched matrix products
// (or broadcast multiplies), so their gradients come from those ops' rules.

#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <string>

namespace popsim::frontend::lowerings {
namespace {

int64_t product(const ir::Shape& shape, size_t from = 0, size_t to = SIZE_MAX) {
  to = std::min(to, shape.size());
  int64_t result = 1;
  for (size_t d = from; d < to; ++d)
    result *= shape[d];
  return result;
}

ir::Value* permutedTo(LoweringContext& ctx, ir::Value* x, const std::vector<int64_t>& perm) {
  return std::is_sorted(perm.begin(), perm.end()) ? x : permute(ctx, x, perm);
}

// A tensor whose dimensions are named by einsum labels (one char each).
struct Labelled {
  ir::Value* value;
  std::string labels;
};

// x with the dimensions whose labels are not in `keep` summed out.
Labelled sumOutside(LoweringContext& ctx, Labelled x, const std::set<char>& keep) {
  std::vector<int64_t> dims;
  std::string kept;
  for (size_t d = 0; d < x.labels.size(); ++d) {
    if (keep.count(x.labels[d]) != 0) {
      kept += x.labels[d];
    } else {
      dims.push_back(static_cast<int64_t>(d));
    }
  }
  if (dims.empty()) return x;
  ir::Value* summed =
      ctx.emit(ir::OpKind::ReduceSum, {x.value}, {{"dims", dims}, {"keepdim", false}});
  return {summed, kept};
}

// x's dimensions in the order of `labels` (a permutation of x's).
ir::Value* inOrder(LoweringContext& ctx, const Labelled& x, const std::string& labels) {
  std::vector<int64_t> perm;
  for (char label : labels)
    perm.push_back(static_cast<int64_t>(x.labels.find(label)));
  return permutedTo(ctx, x.value, perm);
}

// a and b contracted over the labels they share that `keep` does not hold;
// shared labels that `keep` holds pair up as a batch. One batched matmul of
// [batch, a's own, contracted] by [batch, contracted, b's own].
Labelled contract(LoweringContext& ctx, Labelled a, Labelled b, const std::set<char>& keep) {
  std::set<char> aKeep = keep, bKeep = keep;
  aKeep.insert(b.labels.begin(), b.labels.end());
  bKeep.insert(a.labels.begin(), a.labels.end());
  a = sumOutside(ctx, a, aKeep); // a label of a alone that nothing needs: summed first
  b = sumOutside(ctx, b, bKeep);
  std::string batch, contracted, aOwn, bOwn;
  for (char label : a.labels) {
    const bool shared = b.labels.find(label) != std::string::npos;
    (shared ? (keep.count(label) != 0 ? batch : contracted) : aOwn) += label;
  }
  for (char label : b.labels) {
    if (a.labels.find(label) == std::string::npos) bOwn += label;
  }
  const auto sizes = [&](const Labelled& x, const std::string& labels) {
    ir::Shape shape;
    for (char label : labels)
      shape.push_back(x.value->type().shape[x.labels.find(label)]);
    return shape;
  };
  const ir::Shape batchShape = sizes(a, batch), aShape = sizes(a, aOwn), bShape = sizes(b, bOwn);
  const int64_t B = product(batchShape), M = product(aShape), N = product(bShape);
  const int64_t K = product(sizes(a, contracted));
  ir::Value* left = reshape(ctx, inOrder(ctx, a, batch + aOwn + contracted), {B, M, K});
  ir::Value* right = reshape(ctx, inOrder(ctx, b, batch + contracted + bOwn), {B, K, N});
  ir::Shape shape = batchShape;
  shape.insert(shape.end(), aShape.begin(), aShape.end());
  shape.insert(shape.end(), bShape.begin(), bShape.end());
  ir::Value* y = ctx.emit(ir::OpKind::MatMul, {left, right});
  return {reshape(ctx, y, shape), batch + aOwn + bOwn};
}

// The labels of one operand, with "..." expanded to `ellipsis`' labels for
// the operand's remaining dimensions (the rightmost of them).
std::string expandedLabels(LoweringContext& ctx, const std::string& term, int64_t rank,
                           const std::string& ellipsis) {
  const size_t dots = term.find("...");
  if (dots == std::string::npos) return term;
  const int64_t named = static_cast<int64_t>(term.size()) - 3;
  const int64_t spread = rank - named;
  if (spread < 0 || spread > static_cast<int64_t>(ellipsis.size())) {
    ctx.unsupported("einsum term '" + term + "' for an operand of rank " + std::to_string(rank));
  }
  return term.substr(0, dots) + ellipsis.substr(ellipsis.size() - static_cast<size_t>(spread)) +
         term.substr(dots + 3);
}

// aten::einsum(equation, tensors, path=None): operands contracted left to
// right, each label summed as soon as nothing later needs it.
void lowerEinsum(LoweringContext& ctx) {
  std::string equation;
  for (char c : ctx.toString(0))
    if (c != ' ') equation += c;
  const std::vector<ir::Value*> tensors = ctx.tensorList(1);
  const size_t arrow = equation.find("->");
  const std::string inputs = equation.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = inputs.find(',', start);
    terms.push_back(inputs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != tensors.size()) {
    ctx.unsupported("einsum equation '" + equation + "' with " + std::to_string(terms.size()) +
                    " terms for " + std::to_string(tensors.size()) + " operands");
  }
  // "..." stands for the same dimensions in every operand: labels no term uses.
  int64_t spread = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (terms[i].find("...") != std::string::npos) {
      spread =
          std::max(spread, tensors[i]->type().rank() - static_cast<int64_t>(terms[i].size()) + 3);
    }
  }
  std::string ellipsis;
  for (char c = 'A'; static_cast<int64_t>(ellipsis.size()) < spread && c <= 'Z'; ++c) {
    if (equation.find(c) == std::string::npos) ellipsis += c;
  }
  std::vector<Labelled> operands;
  std::map<char, int64_t> sizes;
  for (size_t i = 0; i < terms.size(); ++i) {
    const ir::Shape& shape = tensors[i]->type().shape;
    const std::string labels =
        expandedLabels(ctx, terms[i], static_cast<int64_t>(shape.size()), ellipsis);
    if (labels.size() != shape.size()) {
      ctx.unsupported("einsum term '" + terms[i] + "' for an operand of rank " +
                      std::to_string(shape.size()));
    }
    for (size_t d = 0; d < labels.size(); ++d) {
      if (labels.find(labels[d], d + 1) != std::string::npos) {
        ctx.unsupported("einsum with a label repeated in one operand ('" + terms[i] +
                        "', a diagonal); take it with torch.diagonal first");
      }
      const auto known = sizes.emplace(labels[d], shape[d]);
      if (!known.second && known.first->second != shape[d]) {
        ctx.unsupported(std::string("einsum label '") + labels[d] + "' of sizes " +
                        std::to_string(known.first->second) + " and " + std::to_string(shape[d]) +
                        " (only '...' dimensions broadcast)");
      }
    }
    operands.push_back({tensors[i], labels});
  }
  std::string output;
  if (arrow != std::string::npos) {
    output = expandedLabels(ctx, equation.substr(arrow + 2), spread, ellipsis);
  } else { // implicit: "..." first, then the labels used once, alphabetically
    std::map<char, int> uses;
    for (const Labelled& operand : operands)
      for (char label : operand.labels)
        ++uses[label];
    output = ellipsis;
    for (const auto& [label, count] : uses)
      if (count == 1 && ellipsis.find(label) == std::string::npos) output += label;
  }
  for (char label : output) {
    if (sizes.count(label) == 0) {
      ctx.unsupported(std::string("einsum output label '") + label + "' that no operand has");
    }
  }
  Labelled result = operands[0];
  for (size_t i = 1; i < operands.size(); ++i) {
    std::set<char> later(output.begin(), output.end());
    for (size_t j = i + 1; j < operands.size(); ++j)
      later.insert(operands[j].labels.begin(), operands[j].labels.end());
    result = contract(ctx, result, operands[i], later);
  }
  result = sumOutside(ctx, result, std::set<char>(output.begin(), output.end()));
  ctx.setOutput(0, inOrder(ctx, result, output));
}

// aten::tensordot(self, other, dims_self, dims_other): the listed dimensions
// paired and summed; the others of self, then of other, remain.
void lowerTensordot(LoweringContext& ctx) {
  ir::Value* a = ctx.tensor(0);
  ir::Value* b = ctx.tensor(1);
  const std::vector<int64_t> dimsA = ctx.toIntList(2), dimsB = ctx.toIntList(3);
  if (dimsA.size() != dimsB.size()) {
    ctx.unsupported("tensordot with " + std::to_string(dimsA.size()) + " and " +
                    std::to_string(dimsB.size()) + " dimensions to pair");
  }
  const int64_t rankA = a->type().rank(), rankB = b->type().rank();
  std::vector<int64_t> pairedA, pairedB;
  for (size_t i = 0; i < dimsA.size(); ++i) {
    pairedA.push_back(normalizedDim(ctx, dimsA[i], rankA));
    pairedB.push_back(normalizedDim(ctx, dimsB[i], rankB));
    if (a->type().shape[pairedA.back()] != b->type().shape[pairedB.back()]) {
      ctx.unsupported("tensordot pairing dimensions of sizes " +
                      std::to_string(a->type().shape[pairedA.back()]) + " and " +
                      std::to_string(b->type().shape[pairedB.back()]));
    }
  }
  const auto rest = [](int64_t rank, const std::vector<int64_t>& paired) {
    std::vector<int64_t> others;
    for (int64_t d = 0; d < rank; ++d)
      if (std::find(paired.begin(), paired.end(), d) == paired.end()) others.push_back(d);
    return others;
  };
  std::vector<int64_t> permA = rest(rankA, pairedA), permB = pairedB;
  const size_t keptA = permA.size();
  permA.insert(permA.end(), pairedA.begin(), pairedA.end());
  const std::vector<int64_t> othersB = rest(rankB, pairedB);
  permB.insert(permB.end(), othersB.begin(), othersB.end());
  ir::Value* left = permutedTo(ctx, a, permA);
  ir::Value* right = permutedTo(ctx, b, permB);
  const ir::Shape& shapeA = left->type().shape;
  const ir::Shape& shapeB = right->type().shape;
  const size_t pairs = pairedA.size();
  ir::Shape shape(shapeA.begin(), shapeA.begin() + static_cast<int64_t>(keptA));
  shape.insert(shape.end(), shapeB.begin() + static_cast<int64_t>(pairs), shapeB.end());
  ir::Value* y =
      ctx.emit(ir::OpKind::MatMul,
               {reshape(ctx, left, {product(shapeA, 0, keptA), product(shapeA, keptA)}),
                reshape(ctx, right, {product(shapeB, 0, pairs), product(shapeB, pairs)})});
  ctx.setOutput(0, reshape(ctx, y, shape));
}

// aten::outer / ger(self, vec2): self[i] * vec2[j].
void lowerOuter(LoweringContext& ctx) {
  const ir::DType dtype = promotedDType(ctx, {0, 1});
  ir::Value* a = castTo(ctx, ctx.tensor(0), dtype);
  ir::Value* b = castTo(ctx, ctx.tensor(1), dtype);
  if (a->type().rank() != 1 || b->type().rank() != 1) {
    ctx.unsupported("outer of tensors of ranks " + std::to_string(a->type().rank()) + " and " +
                    std::to_string(b->type().rank()) + " (it takes two vectors)");
  }
  ctx.setOutput(0, ctx.emit(ir::OpKind::Mul, {reshape(ctx, a, {a->type().shape[0], 1}),
                                              reshape(ctx, b, {1, b->type().shape[0]})}));
}

// aten::kron(self, other): every element of self times the whole of other,
// as self's elements interleaved with other's: [a0, 1, a1, 1, ...] times
// [1, b0, 1, b1, ...], merged pairwise (the lower rank padded with 1s).
void lowerKron(LoweringContext& ctx) {
  const ir::DType dtype = promotedDType(ctx, {0, 1});
  ir::Value* a = castTo(ctx, ctx.tensor(0), dtype);
  ir::Value* b = castTo(ctx, ctx.tensor(1), dtype);
  ir::Shape shapeA = a->type().shape, shapeB = b->type().shape;
  const size_t rank = std::max(shapeA.size(), shapeB.size());
  shapeA.insert(shapeA.begin(), rank - shapeA.size(), 1);
  shapeB.insert(shapeB.begin(), rank - shapeB.size(), 1);
  ir::Shape spreadA, spreadB, merged;
  for (size_t d = 0; d < rank; ++d) {
    spreadA.insert(spreadA.end(), {shapeA[d], 1});
    spreadB.insert(spreadB.end(), {1, shapeB[d]});
    merged.push_back(shapeA[d] * shapeB[d]);
  }
  ir::Value* y = ctx.emit(ir::OpKind::Mul, {reshape(ctx, a, spreadA), reshape(ctx, b, spreadB)});
  ctx.setOutput(0, reshape(ctx, y, merged));
}

// aten::bilinear(input1, input2, weight, bias?): y[..., o] = sum over i, j of
// x1[..., i] * W[o, i, j] * x2[..., j] (+ bias[o]): x1 times W as [I, O * J]
// (one matmul), then each output's row of J times x2, summed.
void lowerBilinear(LoweringContext& ctx) {
  ir::Value* x1 = floatTensor(ctx, 0);
  ir::Value* x2 = floatTensor(ctx, 1);
  ir::Value* w = floatTensor(ctx, 2);
  const ir::Shape& ws = w->type().shape;
  if (ws.size() != 3 || x1->type().rank() < 1 || x2->type().rank() < 1 ||
      x1->type().shape.back() != ws[1] || x2->type().shape.back() != ws[2]) {
    ctx.unsupported("bilinear with inputs " + x1->type().str() + " and " + x2->type().str() +
                    " and a weight " + w->type().str() +
                    " (it takes [..., I], [..., J] and "
                    "[O, I, J])");
  }
  const int64_t O = ws[0], I = ws[1], J = ws[2];
  ir::Shape lead(x1->type().shape.begin(), x1->type().shape.end() - 1);
  const int64_t rows = product(lead);
  ir::Value* left = reshape(ctx, x1, {rows, I});
  ir::Value* weight = reshape(ctx, permutedTo(ctx, w, {1, 0, 2}), {I, O * J});
  ir::Value* u = reshape(ctx, ctx.emit(ir::OpKind::MatMul, {left, weight}), {rows, O, J});
  ir::Value* right = reshape(ctx, x2, {rows, 1, J});
  ir::Value* y = ctx.emit(ir::OpKind::ReduceSum, {ctx.emit(ir::OpKind::Mul, {u, right})},
                          {{"dims", std::vector<int64_t>{2}}, {"keepdim", false}});
  if (!ctx.isNone(3)) y = ctx.emit(ir::OpKind::Add, {y, floatTensor(ctx, 3)});
  ir::Shape shape = lead;
  shape.push_back(O);
  ctx.setOutput(0, reshape(ctx, y, shape));
}

} // namespace

void registerContractions(LoweringRegistry& registry) {
  registry.add("aten::einsum", lowerEinsum);
  registry.add("aten::tensordot", lowerTensordot);
  registry.add("aten::outer", lowerOuter);
  registry.add("aten::ger", lowerOuter);
  registry.add("aten::kron", lowerKron);
  registry.add("aten::bilinear", lowerBilinear);
}

} // namespace popsim::frontend::lowerings
