#include "cpu/gemm_amx_kernels.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define AITER_AMX_KERNELS 1
#endif

namespace aiter {
namespace cpu {
namespace amx {

#ifdef AITER_AMX_KERNELS
namespace {

#define AITER_TARGET_AMX "amx-tile,amx-bf16,amx-int8"

// Tiles 0-1: A rows 0-15 and 16-31; 2-3: W columns 0-15 and 16-31; 4-7: the
// sums (rows 0-15 x columns 0-15, 0-15 x 16-31, 16-31 x 0-15, 16-31 x 16-31).
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

constexpr int kRowBytes = kChunk * 4;
constexpr int64_t kPanelBytes = avx512::kPanelW * 4;  // a W panel row: 32 columns of slots

template <bool kInt8>
__attribute__((target(AITER_TARGET_AMX))) void block_tiles(const uint32_t *a, const uint32_t *w, int64_t chunks,
                                                            void *acc, int64_t ldc, bool accumulate) {
  char *c = static_cast<char *>(acc);
  const int64_t ld = ldc * 4, half = 16 * ld;
  if (accumulate) {
    _tile_loadd(4, c, ld);
    _tile_loadd(5, c + kRowBytes, ld);
    _tile_loadd(6, c + half, ld);
    _tile_loadd(7, c + half + kRowBytes, ld);
  } else {
    _tile_zero(4);
    _tile_zero(5);
    _tile_zero(6);
    _tile_zero(7);
  }
  for (int64_t step = 0; step < chunks; ++step) {
    const char *ak = reinterpret_cast<const char *>(a + step * kRows * kChunk);
    const char *wk = reinterpret_cast<const char *>(w + step * kChunk * avx512::kPanelW);
    _tile_loadd(0, ak, kRowBytes);
    _tile_loadd(1, ak + 16 * kRowBytes, kRowBytes);
    _tile_loadd(2, wk, kPanelBytes);
    _tile_loadd(3, wk + kRowBytes, kPanelBytes);
    if (kInt8) {
      _tile_dpbsud(4, 0, 2);
      _tile_dpbsud(5, 0, 3);
      _tile_dpbsud(6, 1, 2);
      _tile_dpbsud(7, 1, 3);
    } else {
      _tile_dpbf16ps(4, 0, 2);
      _tile_dpbf16ps(5, 0, 3);
      _tile_dpbf16ps(6, 1, 2);
      _tile_dpbf16ps(7, 1, 3);
    }
  }
  _tile_stored(4, c, ld);
  _tile_stored(5, c + kRowBytes, ld);
  _tile_stored(6, c + half, ld);
  _tile_stored(7, c + half + kRowBytes, ld);
}

}  // namespace

__attribute__((target(AITER_TARGET_AMX))) void configure() {
  TileConfig config;
  for (int t = 0; t < 8; ++t) config.colsb[t] = kRowBytes, config.rows[t] = 16;
  _tile_loadconfig(&config);
}

__attribute__((target(AITER_TARGET_AMX))) void release() { _tile_release(); }

void block(avx512::Slots slots, const uint32_t *a_block, const uint32_t *w_panel, int64_t chunks, void *acc,
           int64_t ldc, bool accumulate) {
  if (slots == avx512::Slots::int8_quads)
    block_tiles<true>(a_block, w_panel, chunks, acc, ldc, accumulate);
  else
    block_tiles<false>(a_block, w_panel, chunks, acc, ldc, accumulate);
}

#else  // not x86-64: the AMX level is never reached

void configure() {}
void release() {}
void block(avx512::Slots, const uint32_t *, const uint32_t *, int64_t, void *, int64_t, bool) {}

#endif

}  // namespace amx
}  // namespace cpu
}  // namespace aiter
