#pragma once

// The loops of elementwise_loops.h over one instruction set's vectors of
// doubles (SleefMath, sleef_math.h): floats are widened, a formula runs on
// kLanes elements at once, and the results are rounded to float, as the
// reference tables' are one by one. The last, partial vector runs on a
// zero-padded copy, so every element takes the same path. Included inside
// an anonymous namespace, after sleef_math.h.

constexpr int kLanes = POPSIM_SLEEF_LANES;
using Vector = SleefMath::T;

// One float operand of a loop: element i is data[i * step].
struct Operand {
  const float* data;
  int64_t step;
};

Vector widened(const float* x) {
  Floats narrow;
  __builtin_memcpy(&narrow, x, sizeof(narrow));
  return __builtin_convertvector(narrow, Vector);
}

void narrowed(Vector value, float* y) {
  const Floats narrow = __builtin_convertvector(value, Floats);
  __builtin_memcpy(y, &narrow, sizeof(narrow));
}

// Elements first .. first + kLanes of an operand, widened.
Vector lanesOf(Operand operand, int64_t first) {
  const float* p = operand.data + first * operand.step;
  if (operand.step == 1) return widened(p);
  double lanes[kLanes];
  for (int k = 0; k < kLanes; ++k)
    lanes[k] = p[k * operand.step];
  Vector value;
  __builtin_memcpy(&value, lanes, sizeof(value));
  return value;
}

// y[i] = formula(operands' vectors) for i < count.
template <size_t N, class Formula>
void overVectors(int64_t count, const Operand (&operands)[N], float* y, Formula formula) {
  Vector lanes[N];
  int64_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    for (size_t k = 0; k < N; ++k)
      lanes[k] = lanesOf(operands[k], i);
    narrowed(formula(lanes), y + i);
  }
  if (i == count) return;
  const int64_t rest = count - i;
  float padded[N][kLanes] = {};
  for (size_t k = 0; k < N; ++k) {
    for (int64_t j = 0; j < rest; ++j)
      padded[k][j] = operands[k].data[(i + j) * operands[k].step];
    lanes[k] = widened(padded[k]);
  }
  float out[kLanes];
  narrowed(formula(lanes), out);
  __builtin_memcpy(y + i, out, rest * sizeof(float));
}

// sigmoid or SiLU as ATen writes them, (1 + exp(-x)).reciprocal() and
// x / (1 + exp(-x)), in float, but with exp(-x) rounded once from double
// precision: more accurate than ATen's float exp (1 ulp), which the
// efficientnets' squeeze-excitation gradients need to stay as close to
// float64 as eager PyTorch's.
void logistic(const float* x, float* y, int64_t count, bool silu) {
  overVectors(count, {Operand{x, 1}}, y, [silu](const Vector* v) -> Vector {
    const Floats value = __builtin_convertvector(v[0], Floats);
    const Floats e = __builtin_convertvector(SleefMath::exp(-v[0]), Floats);
    const Floats denominator = 1.0f + e;
    const Floats result = silu ? value / denominator : 1.0f / denominator;
    return __builtin_convertvector(result, Vector); // exact: narrowed back to the same floats
  });
}

// Lanes accumulate their own partial sums, added in lane order at the end:
// another order than the reference's one chain, within double rounding.
double sumOfExp(const float* x, double shift, int64_t count) {
  Vector partial = SleefMath::constant(0.0);
  int64_t i = 0;
  for (; i + kLanes <= count; i += kLanes)
    partial += SleefMath::exp(widened(x + i) - shift);
  double lanes[kLanes];
  __builtin_memcpy(lanes, &partial, sizeof(lanes));
  if (i < count) { // the partial last vector: only its first count - i lanes count
    float padded[kLanes] = {};
    __builtin_memcpy(padded, x + i, (count - i) * sizeof(float));
    double rest[kLanes];
    const Vector terms = SleefMath::exp(widened(padded) - shift);
    __builtin_memcpy(rest, &terms, sizeof(rest));
    for (int64_t k = 0; k < count - i; ++k)
      lanes[k] += rest[k];
  }
  double sum = 0.0;
  for (int k = 0; k < kLanes; ++k)
    sum += lanes[k];
  return sum;
}

void logSoftmaxGradients(const float* dy, const float* y, double sum, float* dx, int64_t count) {
  overVectors(count, {Operand{dy, 1}, Operand{y, 1}}, dx,
              [sum](const Vector* v) { return v[0] - SleefMath::exp(v[1]) * sum; });
}

Vector loaded(const double* p) {
  Vector value;
  __builtin_memcpy(&value, p, sizeof(value));
  return value;
}

void stored(Vector value, double* p) { __builtin_memcpy(p, &value, sizeof(value)); }

void ctcLogSumExpRows(const double* a, const double* b, const double* c, const double* add,
                      double* out, int64_t count) {
  const auto step = [](Vector va, Vector vb, Vector vc, Vector vadd) {
    return popsim::kernels::reference::logSumExp3<SleefMath>(va, vb, vc) + vadd;
  };
  int64_t s = 0;
  for (; s + kLanes <= count; s += kLanes)
    stored(step(loaded(a + s), loaded(b + s), loaded(c + s), loaded(add + s)), out + s);
  if (s == count) return;
  const auto rest = static_cast<size_t>(count - s);
  double padded[4][kLanes] = {};
  for (size_t k = 0; k < rest; ++k) {
    padded[0][k] = a[s + k];
    padded[1][k] = b[s + k];
    padded[2][k] = c[s + k];
    padded[3][k] = add[s + k];
  }
  double result[kLanes];
  stored(step(loaded(padded[0]), loaded(padded[1]), loaded(padded[2]), loaded(padded[3])), result);
  __builtin_memcpy(out + s, result, rest * sizeof(double));
}

void ctcGradients(const float* lp, const double* posterior, double nll, double grad, float* dlp,
                  int64_t count) {
  const auto gradient = [nll, grad](Vector value, Vector sum) {
    return (SleefMath::exp(value) - SleefMath::exp(sum + nll - value)) * grad;
  };
  int64_t k = 0;
  for (; k + kLanes <= count; k += kLanes)
    narrowed(gradient(widened(lp + k), loaded(posterior + k)), dlp + k);
  if (k == count) return;
  const auto rest = static_cast<size_t>(count - k);
  float paddedLp[kLanes] = {};
  double paddedSum[kLanes] = {};
  __builtin_memcpy(paddedLp, lp + k, rest * sizeof(float));
  __builtin_memcpy(paddedSum, posterior + k, rest * sizeof(double));
  float result[kLanes];
  narrowed(gradient(widened(paddedLp), loaded(paddedSum)), result);
  __builtin_memcpy(dlp + k, result, rest * sizeof(float));
}

using Pointwise = popsim::ir::PointwiseFormulas<SleefMath>;
using Binary = popsim::ir::BinaryFormulas<SleefMath>;

void pointwiseValues(size_t index, const double* params, const float* x, float* y, int64_t count) {
  const auto value = Pointwise::all[index].value;
  overVectors(count, {Operand{x, 1}}, y, [&](const Vector* v) { return value(v[0], params); });
}

void pointwiseGradients(size_t index, const double* params, const float* dy, const float* x,
                        float* dx, int64_t count) {
  const auto derivative = Pointwise::all[index].derivative;
  overVectors(count, {Operand{dy, 1}, Operand{x, 1}}, dx,
              [&](const Vector* v) { return v[0] * derivative(v[1], params); });
}

void binaryValues(size_t formula, const float* a, int64_t sa, const float* b, int64_t sb, float* y,
                  int64_t count) {
  const auto value = Binary::all[formula].value;
  overVectors(count, {Operand{a, sa}, Operand{b, sb}}, y,
              [&](const Vector* v) { return value(v[0], v[1]); });
}

void binaryGradients(size_t formula, int64_t operand, const float* dy, int64_t sdy, const float* a,
                     int64_t sa, const float* b, int64_t sb, float* dx, int64_t count) {
  const auto derivative =
      operand == 0 ? Binary::all[formula].derivativeA : Binary::all[formula].derivativeB;
  overVectors(count, {Operand{dy, sdy}, Operand{a, sa}, Operand{b, sb}}, dx,
              [&](const Vector* v) -> Vector {
                const Vector d = derivative(v[1], v[2]);
                return d == 0.0 ? 0.0 : v[0] * d;
              });
}
