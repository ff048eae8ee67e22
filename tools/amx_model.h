// A software model of the AMX tile instructions the CPU GEMM kernel uses
// (libaiter/cpu/gemm_amx_kernels.cpp), for tools/amx_model_check.sh: checks
// the packing, tile layouts and K / M tails on a CPU without AMX.  Not the
// hardware: its fp32 sums round in another order, and it proves nothing about
// the instructions themselves.
#pragma once
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <cstdlib>
struct EmuTile { int rows = 0, colsb = 0; unsigned char data[16][64]; };
static thread_local EmuTile emu_tiles[8];
static thread_local bool emu_configured = false;
inline void emu_loadconfig(const void *cfg) {
  const unsigned char *c = static_cast<const unsigned char *>(cfg);
  if (c[0] != 1) { fprintf(stderr, "emu: palette %d\n", c[0]); abort(); }
  for (int t = 0; t < 8; ++t) {
    uint16_t colsb; memcpy(&colsb, c + 16 + 2 * t, 2);
    emu_tiles[t].colsb = colsb; emu_tiles[t].rows = c[48 + t];
    if (colsb > 64 || c[48 + t] > 16) abort();
  }
  emu_configured = true;
}
inline void emu_need() { if (!emu_configured) { fprintf(stderr, "emu: tiles not configured\n"); abort(); } }
inline void emu_release() { emu_configured = false; }
inline void emu_zero(int t) { emu_need(); memset(emu_tiles[t].data, 0, sizeof emu_tiles[t].data); }
inline void emu_loadd(int t, const void *base, long long stride) {
  emu_need(); EmuTile &x = emu_tiles[t];
  for (int r = 0; r < x.rows; ++r) memcpy(x.data[r], static_cast<const char *>(base) + r * stride, x.colsb);
}
inline void emu_stored(int t, void *base, long long stride) {
  emu_need(); EmuTile &x = emu_tiles[t];
  for (int r = 0; r < x.rows; ++r) memcpy(static_cast<char *>(base) + r * stride, x.data[r], x.colsb);
}
inline float emu_bf16(const unsigned char *p) {
  uint16_t h; memcpy(&h, p, 2); uint32_t u = uint32_t(h) << 16;
  if (((u >> 23) & 0xff) == 0) u &= 0x80000000u;  // DAZ
  float f; memcpy(&f, &u, 4); return f;
}
inline void emu_dpbf16ps(int d, int a, int b) {
  emu_need(); EmuTile &D = emu_tiles[d], &A = emu_tiles[a], &B = emu_tiles[b];
  const int K = A.colsb / 4;
  if (B.rows != K || D.rows != A.rows || D.colsb != B.colsb) abort();
  for (int m = 0; m < D.rows; ++m)
    for (int n = 0; n < D.colsb / 4; ++n) {
      float acc; memcpy(&acc, &D.data[m][4 * n], 4);
      for (int k = 0; k < K; ++k)
        acc += emu_bf16(&A.data[m][4 * k]) * emu_bf16(&B.data[k][4 * n]) + emu_bf16(&A.data[m][4 * k + 2]) * emu_bf16(&B.data[k][4 * n + 2]);
      memcpy(&D.data[m][4 * n], &acc, 4);
    }
}
inline void emu_dpbsud(int d, int a, int b) {
  emu_need(); EmuTile &D = emu_tiles[d], &A = emu_tiles[a], &B = emu_tiles[b];
  const int K = A.colsb / 4;
  if (B.rows != K || D.rows != A.rows || D.colsb != B.colsb) abort();
  for (int m = 0; m < D.rows; ++m)
    for (int n = 0; n < D.colsb / 4; ++n) {
      int32_t acc; memcpy(&acc, &D.data[m][4 * n], 4);
      for (int k = 0; k < K; ++k)
        for (int i = 0; i < 4; ++i) acc += int32_t(int8_t(A.data[m][4 * k + i])) * int32_t(B.data[k][4 * n + i]);
      memcpy(&D.data[m][4 * n], &acc, 4);
    }
}
#define _tile_loadconfig(cfg) emu_loadconfig(cfg)
#define _tile_release() emu_release()
#define _tile_zero(t) emu_zero(t)
#define _tile_loadd(t, base, stride) emu_loadd(t, base, stride)
#define _tile_stored(t, base, stride) emu_stored(t, base, stride)
#define _tile_dpbf16ps(d, a, b) emu_dpbf16ps(d, a, b)
#define _tile_dpbsud(d, a, b) emu_dpbsud(d, a, b)
