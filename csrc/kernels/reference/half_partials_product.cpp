#include "kernels/reference/half_partials_product.h"

#include "kernels/cpu_isa.h"
#include "kernels/reference/partial_sums.h"
#include "kernels/reference/scratch.h"

#if POPSIM_HAS_VECTOR_CLONES
// GCC 12's AVX-512 headers start some conversions from an undefined vector,
// which -Wmaybe-uninitialized reports where they are inlined (GCC PR 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

#include <algorithm>
#include <functional>
#include <numeric>
#include <utility>
#include <vector>

namespace popsim::kernels::reference {
namespace {

// A tile is some rows of C by one panel of B's columns, its shape set by the
// vector unit and the product's shape: the tile's running sums stay in
// registers. kMaxRows and kWidest bound every tile's shape, for buffers any
// tile fits.
constexpr int64_t kMaxRows = 6;
constexpr int64_t kWidest = 24;

// The lengths of the runs of partials along J, in order.
struct Runs {
  const int64_t* lengths;
  int64_t count;
};

// What computes one tile: for r < its rows, totals[r * width + q] = the
// float16-partials sum over j of rows[r][j] * panel[j * panelStride + q],
// the products summed in `runs`. A panel is B's own columns when B's rows
// are contiguous (panelStride its row stride), else a packed copy
// (panelStride the tile's width).
template <typename AElement>
using TileFn = void (*)(Runs runs, const AElement* const* rows, const float* panel,
                        int64_t panelStride, float* totals);

// Without a vector unit: each element summed as HalfSum does, run by run.
constexpr int64_t kScalarRows = 4;
constexpr int64_t kScalarWidth = 8;

template <typename AElement>
void tileScalar(Runs runs, const AElement* const* rows, const float* panel, int64_t panelStride,
                float* totals) {
  for (int64_t r = 0; r < kScalarRows; ++r) {
    for (int64_t q = 0; q < kScalarWidth; ++q) {
      float total = 0.0f;
      int64_t j = 0;
      for (int64_t run = 0; run < runs.count; ++run) {
        double sum = 0.0;
        for (const int64_t stop = j + runs.lengths[run]; j < stop; ++j)
          sum += static_cast<double>(rows[r][j]) * panel[j * panelStride + q];
        total = popsim::roundToHalf(total + popsim::roundToHalf(static_cast<float>(sum)));
      }
      totals[r * kScalarWidth + q] = total;
    }
  }
}

#if POPSIM_HAS_VECTOR_CLONES
#define POPSIM_TARGET_AVX512_FMA                                                                   \
  __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,fma,f16c")))
#define POPSIM_TARGET_AVX2_FMA __attribute__((target("avx2,fma,f16c")))

POPSIM_TARGET_AVX2_FMA inline __m256 roundedToHalf(__m256 values) {
  return _mm256_cvtph_ps(_mm256_cvtps_ph(values, _MM_FROUND_TO_NEAREST_INT));
}

POPSIM_TARGET_AVX512_FMA inline __m512 roundedToHalf16(__m512 values) {
  return _mm512_cvtph_ps(_mm512_cvtps_ph(values, _MM_FROUND_TO_NEAREST_INT));
}

// AVX-512: Vectors vectors of 8 doubles per row (24 or 16 columns), over
// Rows rows: 12 running sums in registers either way, so that a narrow C
// (10 or 12 columns, as a convolution's input gradient over 10 channels)
// pads fewer lanes with the narrower tile.
template <typename AElement, int Vectors, int64_t Rows>
POPSIM_TARGET_AVX512_FMA void tileAvx512(Runs runs, const AElement* const* rows, const float* panel,
                                         int64_t panelStride, float* totals) {
  static_assert(Vectors == 2 || Vectors == 3, "16 or 24 columns");
  constexpr int64_t width = 8 * Vectors;
  __m512d run[Rows][Vectors];
  // Each row's totals: columns 0-15 in one vector, 16-23 in another, so
  // that a run's roundings take two pairs of conversions a row, not three.
  __m512 low[Rows];
  __m256 high[Rows];
  for (int64_t r = 0; r < Rows; ++r) {
    for (int v = 0; v < Vectors; ++v)
      run[r][v] = _mm512_setzero_pd();
    low[r] = _mm512_setzero_ps();
    high[r] = _mm256_setzero_ps();
  }
  int64_t j = 0;
  for (int64_t index = 0; index < runs.count; ++index) {
    for (const int64_t stop = j + runs.lengths[index]; j < stop; ++j) {
      const float* b = panel + j * panelStride;
      // Row j of the panel after next: a panel read in place has its rows far
      // apart, which the hardware's prefetchers do not follow, and a panel's
      // pass is too short to hide a miss to memory behind the next panel's
      // alone (a prefetch past the end of B is harmless: it never faults).
      _mm_prefetch(reinterpret_cast<const char*>(b + 2 * width), _MM_HINT_T0);
      __m512d column[Vectors];
      for (int v = 0; v < Vectors; ++v)
        column[v] = _mm512_cvtps_pd(_mm256_loadu_ps(b + 8 * v));
      for (int64_t r = 0; r < Rows; ++r) {
        const __m512d a = _mm512_set1_pd(static_cast<double>(rows[r][j]));
        for (int v = 0; v < Vectors; ++v)
          run[r][v] = _mm512_fmadd_pd(a, column[v], run[r][v]);
      }
    }
    for (int64_t r = 0; r < Rows; ++r) {
      const __m512 partials = _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(run[r][0])),
                                                 _mm512_cvtpd_ps(run[r][1]), 1);
      low[r] = roundedToHalf16(_mm512_add_ps(low[r], roundedToHalf16(partials)));
      if constexpr (Vectors == 3) {
        high[r] = roundedToHalf(_mm256_add_ps(high[r], roundedToHalf(_mm512_cvtpd_ps(run[r][2]))));
      }
      for (int v = 0; v < Vectors; ++v)
        run[r][v] = _mm512_setzero_pd();
    }
  }
  for (int64_t r = 0; r < Rows; ++r) {
    _mm512_storeu_ps(totals + r * width, low[r]);
    if constexpr (Vectors == 3) _mm256_storeu_ps(totals + r * width + 16, high[r]);
  }
}

POPSIM_TARGET_AVX2_FMA inline __m128 roundedToHalf4(__m128 values) {
  return _mm_cvtph_ps(_mm_cvtps_ph(values, _MM_FROUND_TO_NEAREST_INT));
}

// AVX2: Vectors vectors of 4 doubles per row (8 or 12 columns), over Rows
// rows: the 12-column tile over 4 rows spends fewer conversions and
// broadcasts per multiply-add (16 registers hold its 12 running sums and 3
// columns); the 8-column ones pad fewer lanes when C is 8 or 16 wide, over 4
// rows, or, over 6 (12 running sums again), when C has 5 or 6 rows (the
// input gradient of a convolution over 5 channels pads 3 rows of 8 with 4).
template <typename AElement, int Vectors, int64_t Rows>
POPSIM_TARGET_AVX2_FMA void tileAvx2(Runs runs, const AElement* const* rows, const float* panel,
                                     int64_t panelStride, float* totals) {
  static_assert(Vectors == 2 || Vectors == 3, "8 or 12 columns");
  static_assert(Vectors * Rows <= 12, "the running sums fit the 16 registers");
  static_assert(Rows <= kMaxRows, "the tile fits the buffers");
  constexpr int64_t width = 4 * Vectors;
  __m256d run[Rows][Vectors];
  // Each row's totals: columns 0-7 in one vector, 8-11 in another.
  __m256 low[Rows];
  __m128 high[Rows];
  for (int64_t r = 0; r < Rows; ++r) {
    for (int v = 0; v < Vectors; ++v)
      run[r][v] = _mm256_setzero_pd();
    low[r] = _mm256_setzero_ps();
    high[r] = _mm_setzero_ps();
  }
  int64_t j = 0;
  for (int64_t index = 0; index < runs.count; ++index) {
    for (const int64_t stop = j + runs.lengths[index]; j < stop; ++j) {
      const float* b = panel + j * panelStride;
      _mm_prefetch(reinterpret_cast<const char*>(b + 2 * width), _MM_HINT_T0); // as tileAvx512's
      __m256d column[Vectors];
      for (int v = 0; v < Vectors; ++v)
        column[v] = _mm256_cvtps_pd(_mm_loadu_ps(b + 4 * v));
      for (int64_t r = 0; r < Rows; ++r) {
        const __m256d a = _mm256_set1_pd(static_cast<double>(rows[r][j]));
        for (int v = 0; v < Vectors; ++v)
          run[r][v] = _mm256_fmadd_pd(a, column[v], run[r][v]);
      }
    }
    for (int64_t r = 0; r < Rows; ++r) {
      const __m256 partials =
          roundedToHalf(_mm256_set_m128(_mm256_cvtpd_ps(run[r][1]), _mm256_cvtpd_ps(run[r][0])));
      low[r] = roundedToHalf(_mm256_add_ps(low[r], partials));
      if constexpr (Vectors == 3) {
        high[r] = roundedToHalf4(_mm_add_ps(high[r], roundedToHalf4(_mm256_cvtpd_ps(run[r][2]))));
      }
      for (int v = 0; v < Vectors; ++v)
        run[r][v] = _mm256_setzero_pd();
    }
  }
  for (int64_t r = 0; r < Rows; ++r) {
    _mm256_storeu_ps(totals + r * width, low[r]);
    if constexpr (Vectors == 3) _mm_storeu_ps(totals + r * width + 8, high[r]);
  }
}
#endif

// One shape of tile, the function that computes it and roughly what it
// costs a step of j, in cycles (its multiply-adds and its share of the
// float16 roundings).
struct Tiling {
  TileFn<float> tile;
  TileFn<double> tileOfDoubles; // the same with A's rows converted to double
  int64_t rows;
  int64_t width;
  double stepCycles;
};

// The tiles this CPU computes, the one preferred on a tie first.
std::vector<Tiling> tilingsOfThisCpu() {
#if POPSIM_HAS_VECTOR_CLONES
  const bool fused = __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  if (fused && vectorIsa() == VectorIsa::Avx512) // 12 vectors of running sums either way
    return {{tileAvx512<float, 3, 4>, tileAvx512<double, 3, 4>, 4, 24, 10.0},
            {tileAvx512<float, 2, 6>, tileAvx512<double, 2, 6>, 6, 16, 10.0}};
  if (fused && vectorIsa() != VectorIsa::Baseline)
    return {{tileAvx2<float, 3, 4>, tileAvx2<double, 3, 4>, 4, 12, 14.0},
            {tileAvx2<float, 2, 4>, tileAvx2<double, 2, 4>, 4, 8, 10.0},
            {tileAvx2<float, 2, 6>, tileAvx2<double, 2, 6>, 6, 8, 15.0}};
#endif
  return {{tileScalar<float>, tileScalar<double>, kScalarRows, kScalarWidth, 10.0}};
}

const std::vector<Tiling>& tilings() {
  static const std::vector<Tiling> ofThisCpu = tilingsOfThisCpu();
  return ofThisCpu;
}

// A's size in double up to which the product converts it once (RowsOfA):
// within a core's L2 cache beside the panels.
constexpr size_t kDoubleRowsBytes = size_t{512} << 10;

// A gathered block of panels (halfPartialsProduct's PanelGather form): at
// most this many panels side by side, in at most this many bytes (a share of
// a core's L2 cache that leaves room for A's rows).
constexpr int64_t kPanelsPerBlock = 8;
constexpr int64_t kGatheredBlockBytes = int64_t{256} << 10;

// Products smaller than this run on the calling thread.
constexpr int64_t kParallelProducts = int64_t{1} << 18;

// A strided operand is copied in square blocks of this many elements a side.
constexpr int64_t kCopyBlock = 16;

int64_t roundedUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

// Roughly what an M x P x J product costs on one core, in cycles, so that
// the cheaper of C and C^T, and of the tile shapes, is computed: each tile
// (padded rows and columns included) its stepCycles per j, and copying an
// operand's element about 1 cycle when its rows are contiguous and 4 when
// they are not (a strided gather). A's contiguous rows and B's whole panels
// of contiguous rows are read in place: B then copies only a last panel
// narrower than the tile.
double estimatedCycles(int64_t M, int64_t P, int64_t J, bool rowsOfAContiguous,
                       bool rowsOfBContiguous, const Tiling& t) {
  const int64_t width = t.width;
  const double tiles =
      static_cast<double>(roundedUp(M, t.rows) / t.rows * roundedUp(P, width) / width);
  const double gatherA = rowsOfAContiguous ? 0.0 : 4.0 * static_cast<double>(M);
  const double packB = rowsOfBContiguous ? (P % width == 0 ? 0.0 : static_cast<double>(width))
                                         : 4.0 * static_cast<double>(roundedUp(P, width));
  return static_cast<double>(J) * (t.stepCycles * tiles + gatherA + packB);
}

// The tile shape whose M x P x J product estimatedCycles finds cheapest (the
// first listed on a tie), and that estimate.
std::pair<const Tiling*, double> cheapestTiling(int64_t M, int64_t P, int64_t J,
                                                bool rowsOfAContiguous, bool rowsOfBContiguous) {
  const Tiling* best = nullptr;
  double cheapest = 0.0;
  for (const Tiling& candidate : tilings()) {
    const double cycles = estimatedCycles(M, P, J, rowsOfAContiguous, rowsOfBContiguous, candidate);
    if (best == nullptr || cycles < cheapest) {
      best = &candidate;
      cheapest = cycles;
    }
  }
  return {best, cheapest};
}

// out[r * outStride + c] = the view's element (row0 + r, column0 + c), for
// r < rows and c < columns: row by row when the view's rows are contiguous,
// otherwise in square blocks, so that both the reads and the writes stay in
// a few lines.
void copyOut(const MatrixView& in, int64_t row0, int64_t column0, int64_t rows, int64_t columns,
             float* out, int64_t outStride) {
  const float* origin = in.data + row0 * in.rowStride + column0 * in.columnStride;
  if (in.columnStride == 1) {
    for (int64_t r = 0; r < rows; ++r)
      std::copy(origin + r * in.rowStride, origin + r * in.rowStride + columns,
                out + r * outStride);
    return;
  }
  for (int64_t r0 = 0; r0 < rows; r0 += kCopyBlock) {
    for (int64_t c0 = 0; c0 < columns; c0 += kCopyBlock) {
      for (int64_t c = c0; c < std::min(columns, c0 + kCopyBlock); ++c)
        for (int64_t r = r0; r < std::min(rows, r0 + kCopyBlock); ++r)
          out[r * outStride + c] = origin[r * in.rowStride + c * in.columnStride];
    }
  }
}

// Zeros in a panel's columns count .. width of its J rows: the columns
// beyond P, whose sums are dropped.
void zeroColumnsBeyond(int64_t count, int64_t width, int64_t J, float* panel) {
  for (int64_t j = 0; count < width && j < J; ++j)
    std::fill(panel + j * width + count, panel + (j + 1) * width, 0.0f);
}

// Columns p0 .. p0 + count of B (count <= width) as a panel:
// out[j * width + q] = B[j][p0 + q], zeros for q >= count.
void packPanel(const MatrixView& B, int64_t p0, int64_t count, int64_t width, int64_t J,
               float* out) {
  copyOut(B, 0, p0, J, count, out, width);
  zeroColumnsBeyond(count, width, J, out);
}

// The rows of A the tiles read, and the tile that reads them. A small A
// (kDoubleRowsBytes in double) is converted to double once: every tile then
// broadcasts each element of it straight from memory, where from a float it
// would convert and broadcast it in two more operations, on the ports the
// multiply-adds use, for every panel. A larger A, which would not stay in
// cache, is read as floats: its own rows when contiguous, otherwise
// gathered into rows of J. Rows of the last tiles beyond M read zeros.
class RowsOfA {
public:
  RowsOfA(const MatrixView& A, int64_t M, int64_t J, bool parallel)
      : M_(M), J_(J), inDoubles_(static_cast<size_t>(M * J) * sizeof(double) <= kDoubleRowsBytes),
        doubles_(ScratchUse::ProductRows, inDoubles_ ? static_cast<size_t>(M * J) : 0),
        floats_(ScratchUse::ProductRowsOfFloats,
                !inDoubles_ && A.columnStride != 1 ? static_cast<size_t>(M * J) : 0),
        zeros_(ScratchUse::ProductZeros, static_cast<size_t>(J)), rows_(A.data),
        stride_(A.rowStride) {
    std::fill(zeros_.data(), zeros_.data() + J, 0.0);
    if (inDoubles_) {
      for (int64_t m = 0; m < M; ++m) {
        double* out = doubles_.data() + m * J;
        const float* in = A.data + m * A.rowStride;
        for (int64_t j = 0; j < J; ++j)
          out[j] = in[j * A.columnStride];
      }
      return;
    }
    if (A.columnStride == 1) return;
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t m0 = 0; m0 < M; m0 += kCopyBlock)
      copyOut(A, m0, 0, std::min(kCopyBlock, M - m0), J, floats_.data() + m0 * J, J);
    rows_ = floats_.data();
    stride_ = J;
  }

  // The tile of rows m0 .. m0 + t.rows of A and one panel.
  void tile(const Tiling& t, int64_t m0, Runs runs, const float* panel, int64_t panelStride,
            float* totals) const {
    if (inDoubles_) {
      const double* rows[kMaxRows];
      for (int64_t r = 0; r < t.rows; ++r)
        rows[r] = m0 + r < M_ ? doubles_.data() + (m0 + r) * J_ : zeros_.data();
      return t.tileOfDoubles(runs, rows, panel, panelStride, totals);
    }
    // Zero bits are the float zero too, and J doubles hold J floats.
    const auto* zeros = reinterpret_cast<const float*>(zeros_.data());
    const float* rows[kMaxRows];
    for (int64_t r = 0; r < t.rows; ++r)
      rows[r] = m0 + r < M_ ? rows_ + (m0 + r) * stride_ : zeros;
    t.tile(runs, rows, panel, panelStride, totals);
  }

private:
  int64_t M_;
  int64_t J_;
  bool inDoubles_;
  Scratch<double> doubles_;
  Scratch<float> floats_;
  Scratch<double> zeros_;
  const float* rows_;
  int64_t stride_;
};

// A tile's totals into C, without the padded rows and columns.
void storeTile(const float* totals, const Tiling& t, int64_t M, int64_t P, int64_t m0, int64_t p0,
               OutputView C) {
  for (int64_t r = 0; r < std::min(t.rows, M - m0); ++r)
    for (int64_t q = 0; q < std::min(t.width, P - p0); ++q)
      C.data[(m0 + r) * C.rowStride + (p0 + q) * C.columnStride] = totals[r * t.width + q];
}

// Without products (J = 0) every sum is zero.
void storeZeros(int64_t M, int64_t P, OutputView C) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t p = 0; p < P; ++p)
      C.data[m * C.rowStride + p * C.columnStride] = 0.0f;
}

} // namespace

void halfPartialsProduct(int64_t M, int64_t P, const std::vector<int64_t>& runLengths, MatrixView A,
                         MatrixView B, OutputView C) {
  const Runs runs{runLengths.data(), static_cast<int64_t>(runLengths.size())};
  const int64_t J = std::accumulate(runLengths.begin(), runLengths.end(), int64_t{0});
  if (M <= 0 || P <= 0) return;
  if (J == 0) return storeZeros(M, P, C);
  // The product either way round (a product of two floats is exact in
  // double, so B^T A^T sums the very same values in the same order), with the
  // tile shape that is cheapest.
  const auto [asGiven, asGivenCycles] =
      cheapestTiling(M, P, J, A.columnStride == 1, B.columnStride == 1);
  const auto [ofTranspose, ofTransposeCycles] =
      cheapestTiling(P, M, J, B.rowStride == 1, A.rowStride == 1);
  const bool transposed = ofTransposeCycles < asGivenCycles;
  const Tiling& t = transposed ? *ofTranspose : *asGiven;
  if (transposed) {
    std::swap(M, P);
    std::swap(A, B);
    std::swap(A.rowStride, A.columnStride);
    std::swap(B.rowStride, B.columnStride);
    std::swap(C.rowStride, C.columnStride);
  }
  const int64_t panels = (P + t.width - 1) / t.width;
  const int64_t rowTiles = (M + t.rows - 1) / t.rows;
  const bool parallel = M * P * J >= kParallelProducts;
  const RowsOfA rows(A, M, J, parallel);
  // B's columns in panels of the tile's width. When B's rows are contiguous,
  // the tiles read each whole panel in place, J rows of `width` columns at
  // B's row stride; the other panels are packed, each row `width` apart, the
  // columns beyond P zeros (their sums are dropped).
  const int64_t inPlacePanels = B.columnStride == 1 ? P / t.width : 0;
  const int64_t packedPanels = panels - inPlacePanels;
  Scratch<float> packed(ScratchUse::ProductPanels, static_cast<size_t>(packedPanels * J * t.width));
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t panel = inPlacePanels; panel < panels; ++panel)
    packPanel(B, panel * t.width, std::min(t.width, P - panel * t.width), t.width, J,
              packed.data() + (panel - inPlacePanels) * J * t.width);
  // Tiles in the order that reads the larger operand once: each of its parts
  // meets every part of the smaller one, which stays in cache. But when C has
  // more rows than B (it outweighs B) and they are contiguous, row tiles go
  // outer whatever A's size, so that each writes its rows of C as streams,
  // re-reading the smaller B: panel by panel, C was written a few columns at
  // a time in each of its rows, far apart (a linear layer's weight gradient
  // over a batch of 12, 100 x 41,772, took twice as long that way).
  const bool panelsOuter = rowTiles * t.rows <= panels * t.width && !(M > J && C.columnStride == 1);
  const int64_t tiles = panels * rowTiles;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t index = 0; index < tiles; ++index) {
    const int64_t panel = panelsOuter ? index / rowTiles : index % panels;
    const int64_t rowTile = panelsOuter ? index % rowTiles : index / panels;
    const int64_t m0 = rowTile * t.rows;
    const int64_t p0 = panel * t.width;
    float totals[kMaxRows * kWidest];
    if (panel < inPlacePanels)
      rows.tile(t, m0, runs, B.data + p0, B.rowStride, totals);
    else
      rows.tile(t, m0, runs, packed.data() + (panel - inPlacePanels) * J * t.width, t.width,
                totals);
    storeTile(totals, t, M, P, m0, p0, C);
  }
}

void halfPartialsProduct(int64_t M, int64_t P, const std::vector<int64_t>& runLengths, MatrixView A,
                         const PanelGather& gatherPanel, OutputView C) {
  const Runs runs{runLengths.data(), static_cast<int64_t>(runLengths.size())};
  const int64_t J = std::accumulate(runLengths.begin(), runLengths.end(), int64_t{0});
  if (M <= 0 || P <= 0) return;
  if (J == 0) return storeZeros(M, P, C);
  // (B, gathered, costs the same per column whatever the tile.)
  const Tiling& t = *cheapestTiling(M, P, J, A.columnStride == 1, true).first;
  const int64_t panels = (P + t.width - 1) / t.width;
  const int64_t rowTiles = (M + t.rows - 1) / t.rows;
  const bool parallel = M * P * J >= kParallelProducts;
  const RowsOfA rows(A, M, J, parallel);
  // Each thread gathers a block of panels side by side into a buffer of its
  // own, then computes every tile of them while they are in cache. A block of
  // several panels costs the gather fewer, longer copies (a convolution's
  // rows are gathered a run of pixels at a time, and a panel alone cuts each
  // run at its 8 to 24 columns); its J rows stay within kGatheredBlockBytes.
  const int64_t panelsPerBlock =
      std::clamp<int64_t>(kGatheredBlockBytes / (J * t.width * static_cast<int64_t>(sizeof(float))),
                          1, kPanelsPerBlock);
  const int64_t blockWidth = panelsPerBlock * t.width;
  const int64_t blocks = (panels + panelsPerBlock - 1) / panelsPerBlock;
#pragma omp parallel if (parallel)
  {
    Scratch<float> block(ScratchUse::ProductPanels, static_cast<size_t>(J * blockWidth));
#pragma omp for schedule(static)
    for (int64_t index = 0; index < blocks; ++index) {
      const int64_t b0 = index * blockWidth;
      const int64_t count = std::min(blockWidth, P - b0);
      gatherPanel(b0, count, blockWidth, block.data());
      zeroColumnsBeyond(count, blockWidth, J, block.data());
      for (int64_t p0 = b0; p0 < b0 + count; p0 += t.width) {
        const float* panel = block.data() + (p0 - b0);
        for (int64_t rowTile = 0; rowTile < rowTiles; ++rowTile) {
          const int64_t m0 = rowTile * t.rows;
          float totals[kMaxRows * kWidest];
          rows.tile(t, m0, runs, panel, blockWidth, totals);
          storeTile(totals, t, M, P, m0, p0, C);
        }
      }
    }
  }
}

std::vector<int64_t> evenPartialRuns(int64_t J) {
  std::vector<int64_t> runs(static_cast<size_t>(J / kHalfPartialRun), kHalfPartialRun);
  if (J % kHalfPartialRun != 0) runs.push_back(J % kHalfPartialRun);
  return runs;
}

void halfPartialsProduct(int64_t M, int64_t P, int64_t J, MatrixView A, MatrixView B,
                         OutputView C) {
  halfPartialsProduct(M, P, evenPartialRuns(J), A, B, C);
}

} // namespace popsim::kernels::reference
