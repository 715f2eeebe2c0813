#pragma once

// The maths of the elementwise formulas (ir/pointwise_formulas.h,
// ir/binary_formulas.h) on one vector register of doubles, from SLEEF
// (1-ulp functions, as ATen uses; sqrt and fmod correctly rounded). The
// including translation unit is built for one instruction set, defines
// POPSIM_SLEEF_VECTOR (the register's type), POPSIM_SLEEF_LANES (doubles per
// register) and POPSIM_SLEEF_ISA (SLEEF's suffix), and includes this inside
// an anonymous namespace, so that every instantiation stays in that unit.

// Sleef_<f>d<lanes><accuracy><isa>, e.g. Sleef_expd4_u10avx2.
#define POPSIM_SLEEF_PASTE(f, lanes, accuracy, isa) Sleef_##f##d##lanes##accuracy##isa
#define POPSIM_SLEEF_EXPAND(f, lanes, accuracy, isa) POPSIM_SLEEF_PASTE(f, lanes, accuracy, isa)
#define POPSIM_SLEEF(f, accuracy)                                                                  \
  POPSIM_SLEEF_EXPAND(f, POPSIM_SLEEF_LANES, accuracy, POPSIM_SLEEF_ISA)

// As many floats as the register has doubles.
typedef float Floats __attribute__((vector_size(POPSIM_SLEEF_LANES * sizeof(float))));

struct SleefMath {
  using T = POPSIM_SLEEF_VECTOR; // __m256d or __m512d
  // Every lane c (c - 0 keeps the sign of a zero c, where c + 0 would not).
  static T constant(double c) { return c - T{}; }
  static T exp(T x) { return POPSIM_SLEEF(exp, _u10)(x); }
  static T expm1(T x) { return POPSIM_SLEEF(expm1, _u10)(x); }
  static T log(T x) { return POPSIM_SLEEF(log, _u10)(x); }
  static T log1p(T x) { return POPSIM_SLEEF(log1p, _u10)(x); }
  static T log2(T x) { return POPSIM_SLEEF(log2, _u10)(x); }
  static T log10(T x) { return POPSIM_SLEEF(log10, _u10)(x); }
  static T sin(T x) { return POPSIM_SLEEF(sin, _u10)(x); }
  static T cos(T x) { return POPSIM_SLEEF(cos, _u10)(x); }
  static T tan(T x) { return POPSIM_SLEEF(tan, _u10)(x); }
  static T asin(T x) { return POPSIM_SLEEF(asin, _u10)(x); }
  static T acos(T x) { return POPSIM_SLEEF(acos, _u10)(x); }
  static T atan(T x) { return POPSIM_SLEEF(atan, _u10)(x); }
  static T sinh(T x) { return POPSIM_SLEEF(sinh, _u10)(x); }
  static T cosh(T x) { return POPSIM_SLEEF(cosh, _u10)(x); }
  static T tanh(T x) { return POPSIM_SLEEF(tanh, _u10)(x); }
  static T asinh(T x) { return POPSIM_SLEEF(asinh, _u10)(x); }
  static T acosh(T x) { return POPSIM_SLEEF(acosh, _u10)(x); }
  static T atanh(T x) { return POPSIM_SLEEF(atanh, _u10)(x); }
  static T erf(T x) { return POPSIM_SLEEF(erf, _u10)(x); }
  static T erfc(T x) { return POPSIM_SLEEF(erfc, _u15)(x); }
  static T lgamma(T x) { return POPSIM_SLEEF(lgamma, _u10)(x); }
  static T sqrt(T x) { return POPSIM_SLEEF(sqrt, _u05)(x); }
  static T pow(T x, T y) { return POPSIM_SLEEF(pow, _u10)(x, y); }
  static T pow(T x, double y) { return pow(x, constant(y)); }
  static T pow(double x, T y) { return pow(constant(x), y); }
  static T floor(T x) { return POPSIM_SLEEF(floor, _)(x); }
  static T ceil(T x) { return POPSIM_SLEEF(ceil, _)(x); }
  static T trunc(T x) { return POPSIM_SLEEF(trunc, _)(x); }
  static T nearbyint(T x) { return POPSIM_SLEEF(rint, _)(x); } // half to even
  static T fabs(T x) { return POPSIM_SLEEF(fabs, _)(x); }
  static T fmin(T x, double y) { return POPSIM_SLEEF(fmin, _)(x, constant(y)); }
  static T fmax(T x, double y) { return POPSIM_SLEEF(fmax, _)(x, constant(y)); }
  static T copysign(T x, T y) { return POPSIM_SLEEF(copysign, _)(x, y); }
  static T fmod(T x, T y) { return POPSIM_SLEEF(fmod, _)(x, y); } // exact
  static T atan2(T y, T x) { return POPSIM_SLEEF(atan2, _u10)(y, x); }
  static T toFloat(T x) { return __builtin_convertvector(__builtin_convertvector(x, Floats), T); }
};
