// "cpu.avx512": the GotoBLAS / BLIS scheme on AVX-512, with K packed into
// 32-bit slots so that bf16 and int8 products run on their dot instructions
// (cpu/gemm_avx512_kernels.hpp):
//   bf16, fp8     bf16 pairs, vdpbf16ps (fp8 is exact in bf16); fp32 slots
//                 where the CPU lacks AVX512_BF16 (AITER_CPU_ISA=avx512)
//   int8          int8 quads, vpdpbusd on AVX512_VNNI (W made uint8 by adding
//                 128, whose 128 sum(a) comes off at the end; K <= 65536), else
//                 int16 pairs, vpdpwssd (or vpmaddwd): exact int32 sums
//   fp32, fp16    fp32 slots, vfmadd; so is blockscale, whose group scales are
//                 multiplied into the fp32 copies of A and W
// A is packed once per call into panels of up to 14 rows (all of K).  Work
// items are 128 columns of W by up to kMaxRowsM rows of A; per block of K an
// item packs its W into four panels of 32 columns (16 KB each, kept in L1
// while every panel of A streams past it from L2) and runs the kernel on each
// pair.  Sums stay in a 32-bit scratch across K blocks; the store scales,
// biases and rounds once.
//
// bf16, fp8 and int8 with at most dot_max_m() rows of A take the dot-product form
// instead (avx512::dot_kernel): strips of W rows meet every row of A straight
// from memory, so W is read once and never packed: with so few rows of A,
// packing W would cost as much as the products.  There W comes from memory in
// the six-rows-at-once order of the kernel, which the hardware's prefetchers
// do not follow: the kernels sweep prefetch requests through W in address
// order ahead of the reads (dot_ahead_bytes).
#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "core/parallel.hpp"
#include "cpu/gemm_amx_kernels.hpp"
#include "cpu/gemm_avx512_kernels.hpp"
#include "cpu/gemm_plan.hpp"
#include "cpu/isa.hpp"
#include "cpu/vec512.hpp"

namespace aiter {
namespace cpu {
namespace {

using namespace gemm;
using avx512::kMaxRowsA;
using avx512::kPanelW;
using avx512::Slots;

constexpr int64_t kSlotsK = 256;     // slots per K block: a W panel is 32 x 256 x 4 B = 32 KB
// Columns of W per work item: 64 rather than 128 gives twice the items, so the
// threads end closer together, at the same speed on one core.
constexpr int64_t kChunkN = 64;
constexpr int64_t kMaxRowsM = 770;   // rows of A per work item (55 panels of 14)
constexpr int64_t kDotMaxM = 16;     // the dot-product form up to here
// At level amx the tiles take over from 9 rows: on a Xeon host (AMX, 4 cores,
// N = K = 4096) M 16 bf16 ran 1.48-1.65 ms on tiles against 2.55-2.63 in the
// dot form, fp8 1.59-2.04 against 3.46-3.53, int8 0.90-1.06 against 1.14-1.40;
// M 1 0.48-0.54 in the dot form against 1.38-1.56 (its time grows about 0.14
// ms a row: level near M 8).  docs/performance_cpu.md, 2026-11-28.
constexpr int64_t kDotMaxMAmx = 8;
int64_t dot_max_m() { return isa_at_least(Isa::amx) ? kDotMaxMAmx : kDotMaxM; }
constexpr int64_t kDotStripN = 24;   // rows of W per work item of the dot-product form
constexpr int64_t kMaxExactInt8K = 131071;
constexpr int64_t kMaxQuadsK = 65536;  // K * 255 * 128 < 2^31: (w + 128) a sums stay exact  // K * 128 * 128 < 2^31: int32 sums stay exact
static_assert(kSlotsK % kScaleBlock == 0 || kScaleBlock % kSlotsK == 0, "K blocks hold whole scale groups");

// Words on 64-byte lines, kept from call to call, grown without copying or
// zeroing what they held (every call rewrites them whole), their fresh pages
// mapped by all threads at once (populate_range).  Lines: a zmm load from a
// W panel or a row of sums that straddles two lines costs two; malloc aligns
// to 16 bytes, so a GEMM's speed depended on where its buffers fell (bf16 M
// 240 N 1024 K 1024 on 2 threads: 1.21 or 1.35 ms from one process to the
// next).  Not std::vector: its resize copied the old packed A and zeroed the
// rest on the calling thread alone (the demo's first down GEMM, K 2816: 1.35
// MB, 330 page faults there).
//
// On Linux the words are a mapping of their own, grown by mremap: the pages
// already there move with it (page tables, not bytes), so only the new ones
// are mapped.  A new block from operator new took fresh pages for all of it:
// the demo's packed A grows from K = 1024 (qkv, o, gate_up) to K = 2816
// (down), 330 fresh pages where the growth is 210.
class Words {
 public:
  Words() = default;
  Words(const Words &) = delete;
  Words &operator=(const Words &) = delete;
  ~Words() { release(); }

  uint32_t *at_least(size_t n) { return at_least(n, n); }

  // n words, of which the first `used` are mapped now (the rest, where they
  // are ever written, fault as they are first touched).
  uint32_t *at_least(size_t n, size_t used) {
    if (n > size_) grow(n);
    if (used > populated_) {
      populate_range(data_, int64_t(used * sizeof(uint32_t)));  // pages already there are left alone
      populated_ = used;
    }
    return data_;
  }

 private:
#if defined(__linux__)
  void grow(size_t n) {
    static const size_t page = size_t(sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096);
    const size_t bytes = (n * sizeof(uint32_t) + page - 1) / page * page;
    void *p = data_ == nullptr ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                               : mremap(data_, bytes_, bytes, MREMAP_MAYMOVE);
    if (p == MAP_FAILED) throw std::bad_alloc();  // the old mapping, if any, is still whole
    data_ = static_cast<uint32_t *>(p);
    bytes_ = bytes;
    size_ = bytes / sizeof(uint32_t);
  }
  void release() {
    if (data_ != nullptr) munmap(data_, bytes_);
  }
#else
  void grow(size_t n) {
    release();
    data_ = nullptr, size_ = 0, populated_ = 0;
    data_ = static_cast<uint32_t *>(::operator new(n * sizeof(uint32_t), std::align_val_t(64)));
    size_ = n;
  }
  void release() { ::operator delete(data_, std::align_val_t(64)); }
#endif

  uint32_t *data_ = nullptr;
  size_t size_ = 0, bytes_ = 0, populated_ = 0;
};

// ---- the slots of a dtype ----------------------------------------------------------
Slots slots_for(const Plan &p) {
  if (p.int8) {
    const bool quads = isa_at_least(Isa::avx512_bf16) && p.k <= kMaxQuadsK && p.m > dot_max_m();  // dot form: pairs
    return quads ? Slots::int8_quads : Slots::int16_pairs;
  }
  const DType dt = p.a.dtype;
  const bool bf16_exact = dt == DType::bf16 || dt == DType::e4m3fn || dt == DType::e4m3fnuz || dt == DType::e5m2;
  if (bf16_exact && !p.block_scaled() && isa_at_least(Isa::avx512_bf16)) return Slots::bf16_pairs;
  return Slots::fp32;
}

int64_t per_slot(Slots s) { return s == Slots::fp32 ? 1 : s == Slots::int8_quads ? 4 : 2; }
bool int32_sums(Slots s) { return s == Slots::int16_pairs || s == Slots::int8_quads; }

// bf16 bits of every fp8 byte (exact: fp8's 2-3 mantissa bits and exponent range fit bf16).
template <class F8>
const uint16_t *fp8_to_bf16_table() {
  static const std::vector<uint16_t> table = [] {
    std::vector<uint16_t> t(256);
    for (int byte = 0; byte < 256; ++byte) {
      F8 x;
      std::memcpy(&x, &byte, 1);
      t[size_t(byte)] = uint16_t(f32_to_bits(to_f32(x)) >> 16);
    }
    return t;
  }();
  return table.data();
}


// The fp8 decoding table of the kernels (avx512::decode_fp8_row, the dot kernels): the bf16 bits of bytes 0..127, then of byte
// 0x80; null for other dtypes.
const uint16_t *dot_w_table(DType dt) {
  static const auto make = [](const uint16_t *full) {
    std::vector<uint16_t> t(full, full + 128);
    t.push_back(full[0x80]);
    return t;
  };
  static const std::vector<uint16_t> e4m3fn = make(fp8_to_bf16_table<e4m3fn_t>());
  static const std::vector<uint16_t> e4m3fnuz = make(fp8_to_bf16_table<e4m3fnuz_t>());
  static const std::vector<uint16_t> e5m2 = make(fp8_to_bf16_table<e5m2_t>());
  switch (dt) {
    case DType::e4m3fn: return e4m3fn.data();
    case DType::e4m3fnuz: return e4m3fnuz.data();
    case DType::e5m2: return e5m2.data();
    default: return nullptr;
  }
}

// One row's kc elements as pairs of 16-bit values in `dst` (a zero pads an odd kc).
void pair_row(const Operand &op, const char *src, int64_t kc, uint16_t *dst) {
  if (op.dtype == DType::bf16) {
    std::memcpy(dst, src, size_t(kc) * 2);
  } else if (op.dtype == DType::i8) {
    const int8_t *s = reinterpret_cast<const int8_t *>(src);
    for (int64_t k = 0; k < kc; ++k) dst[k] = uint16_t(int16_t(s[k]));
  } else {
    avx512::decode_fp8_row(reinterpret_cast<const uint8_t *>(src), kc, dot_w_table(op.dtype), dst);
  }
  if (kc % 2) dst[kc] = 0;
}

// Rows [row0, row0 + rows), columns [k0, k0 + kc) of matrix b as rows of slots,
// `*ld` slots apart: in place where the operand already is in slot form, else
// converted into `scratch` (rows kSlotsK apart).
// One row's kc int8 as quads in `dst`: W's made uint8 (+ 128, the top bit
// flipped), A's as they are; zeros pad the last quad.
void quad_row(const char *src, int64_t kc, bool is_w, uint8_t *dst) {
  const uint8_t flip = is_w ? 0x80 : 0x00;
  for (int64_t k = 0; k < kc; ++k) dst[k] = uint8_t(src[k]) ^ flip;
  for (int64_t k = kc; k % 4; ++k) dst[k] = 0;
}

const uint32_t *slot_rows(const Operand &op, Slots slots, int64_t b, int64_t row0, int64_t rows, int64_t k0,
                          int64_t kc, uint32_t *scratch, int64_t *ld, bool is_w) {
  if (slots == Slots::int8_quads) {
    if (!is_w && kc % 4 == 0 && op.row_bytes % 4 == 0) {
      *ld = op.row_bytes / 4;
      return reinterpret_cast<const uint32_t *>(op.row(b, row0) + k0);
    }
    for (int64_t r = 0; r < rows; ++r)
      quad_row(op.row(b, row0 + r) + k0, kc, is_w, reinterpret_cast<uint8_t *>(scratch + r * kSlotsK));
    *ld = kSlotsK;
    return scratch;
  }
  if (slots == Slots::fp32) {
    const float *f = fp32_rows(op, b, row0, rows, k0, kc, reinterpret_cast<float *>(scratch), kSlotsK, true, ld);
    return reinterpret_cast<const uint32_t *>(f);
  }
  if (op.dtype == DType::bf16 && kc % 2 == 0 && op.row_bytes % 4 == 0) {
    *ld = op.row_bytes / 4;
    return reinterpret_cast<const uint32_t *>(op.row(b, row0) + k0 * op.elem_bytes);
  }
  for (int64_t r = 0; r < rows; ++r)
    pair_row(op, op.row(b, row0 + r) + k0 * op.elem_bytes, kc, reinterpret_cast<uint16_t *>(scratch + r * kSlotsK));
  *ld = kSlotsK;
  return scratch;
}

// ---- the panels of A -------------------------------------------------------------------
// M rows in panels of as even a size as possible, none above kMaxRowsA; for
// the AMX kernel of amx::kRows rows each but the last, so that the padding
// rows a call writes past a short panel never fall on the next panel's sums.
struct Panels {
  int64_t m, count, base, extra;  // panel p starts at p * base + min(p, extra)
  Panels(int64_t rows, int64_t max_rows, bool even)
      : m(rows), count((rows + max_rows - 1) / max_rows), base(even ? rows / count : max_rows),
        extra(even ? rows % count : 0) {}
  int64_t start(int64_t p) const { return p * base + std::min(p, extra); }
  int64_t rows(int64_t p) const { return std::min(base + (p < extra ? 1 : 0), m - start(p)); }
};

struct Layout {
  Slots slots;
  int64_t per_slot, slots_k;  // K in slots
  Panels panels;
  int64_t blocks_m;  // work items along M
  int64_t panels_per_block;
  bool vnni;
  bool amx;  // the AMX tile kernel (bf16 pairs, int8 quads) in place of the AVX-512 one
};

Layout layout_for(const Plan &p) {
  const Slots slots = slots_for(p);
  const bool amx = isa_at_least(Isa::amx) && (slots == Slots::bf16_pairs || slots == Slots::int8_quads);
  const int64_t panel_rows = amx ? amx::kRows : kMaxRowsA;
  Layout l{slots, 0, 0, Panels(p.m, panel_rows, !amx), 0, 0, isa_at_least(Isa::avx512_bf16), amx};
  l.per_slot = per_slot(l.slots);
  l.slots_k = (p.k + l.per_slot - 1) / l.per_slot;
  l.panels_per_block = kMaxRowsM / panel_rows;
  l.blocks_m = (l.panels.count + l.panels_per_block - 1) / l.panels_per_block;
  return l;
}

int64_t k_blocks(const Layout &l) { return (l.slots_k + kSlotsK - 1) / kSlotsK; }

// The packed A: AVX-512, panel q of matrix b rows(q) x slots_k slots, K block
// kb at kb * kSlotsK * rows(q) from its start; AMX, every panel amx::kRows
// rows (zeros past the matrix) by kSlotsK slots a K block (zeros past K), a
// block in chunks of amx::kChunk slots, each chunk's rows 64 bytes apart (a
// tile load).
size_t packed_a_words(const Plan &p, const Layout &l) {
  if (l.amx) return size_t(p.batch * l.panels.count * k_blocks(l) * kSlotsK * amx::kRows);
  return size_t(p.batch * p.m * l.slots_k);
}

int64_t a_block(const Layout &l, int64_t m, int64_t b, int64_t q, int64_t kb) {
  if (l.amx) return ((b * l.panels.count + q) * k_blocks(l) + kb) * kSlotsK * amx::kRows;
  return (b * m + l.panels.start(q)) * l.slots_k + kb * kSlotsK * l.panels.rows(q);
}

// `rows` rows of `groups` slots, `ld` apart, as an AMX block: each row's 16
// slots of a chunk copied whole (64 bytes), zeros past the rows and K.
void pack_amx_block(const uint32_t *src, int64_t ld, int64_t rows, int64_t groups, uint32_t *block) {
  const int64_t chunks = (groups + amx::kChunk - 1) / amx::kChunk;
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t g = c * amx::kChunk, slots = std::min<int64_t>(amx::kChunk, groups - g);
    for (int64_t i = 0; i < amx::kRows; ++i) {
      uint32_t *dst = block + (c * amx::kRows + i) * amx::kChunk;
      const int64_t copied = i < rows ? slots : 0;
      if (copied > 0) std::memcpy(dst, src + i * ld + g, size_t(copied) * 4);
      std::fill(dst + copied, dst + amx::kChunk, 0u);
    }
  }
}

void pack_a(const Plan &p, const Layout &l, uint32_t *packed) {
  const int64_t k_elems = kSlotsK * l.per_slot;
  parallel_for(p.batch * l.panels.count, 1, [&](int64_t begin, int64_t end) {
    std::vector<uint32_t> scratch(size_t(std::max<int64_t>(kMaxRowsA, amx::kRows) * kSlotsK));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / l.panels.count, q = item % l.panels.count, rows = l.panels.rows(q);
      for (int64_t k0 = 0, kb = 0; k0 < p.k; k0 += k_elems, ++kb) {
        const int64_t kc = std::min(k_elems, p.k - k0), groups = (kc + l.per_slot - 1) / l.per_slot;
        int64_t ld;
        const uint32_t *src =
            slot_rows(p.a, l.slots, b, l.panels.start(q), rows, k0, kc, scratch.data(), &ld, false);
        uint32_t *block = packed + a_block(l, p.m, b, q, kb);
        if (l.amx)
          pack_amx_block(src, ld, rows, groups, block);
        else
          avx512::pack_panel(src, ld, int(rows), groups, int(rows), block);
      }
    }
  });
}

// ---- the store ------------------------------------------------------------------------
// store_tile (gemm_plan.cpp) 16 columns at a time: the same operations in the
// same order (a float sum, times a_scale, times w_scale, plus the bias, each
// rounded to fp32, then rounded once to the output type), so both give the
// same bits.  A row of 128 scalar conversions cost 5% of a bf16 GEMM of K 1024.
#ifdef AITER_VEC512
AITER_VEC512_FN __m512 sums16(const float *acc, __mmask16 mask) { return _mm512_maskz_loadu_ps(mask, acc); }
AITER_VEC512_FN __m512 sums16(const int32_t *acc, __mmask16 mask) {
  return _mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(mask, acc));  // rounds to nearest even, as float(int) does
}

template <class Out, class Acc>
__attribute__((target(AITER_TARGET_VEC512))) void store_rows_avx512(const Plan &p, int64_t b, int64_t m0,
                                                                   int64_t rows, int64_t n0, int64_t cols,
                                                                   const Acc *acc, int64_t ld) {
  const float *w_scale = p.w_scale ? p.w_scale + b * p.w_scale_batch : nullptr;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t m = m0 + i;
    Out *out = reinterpret_cast<Out *>(p.out + b * p.out_batch_bytes + m * p.out_row_bytes) + n0;
    const __m512 a_scale = _mm512_set1_ps(p.a_scale ? p.a_scale[b * p.a_scale_batch + m * p.a_scale_step] : 1.0f);
    for (int64_t j = 0; j < cols; j += 16) {
      const __mmask16 mask = vec512::first(cols - j);
      __m512 v = sums16(acc + i * ld + j, mask);
      if (w_scale) {
        const __m512 ws = p.w_scale_step == 0 ? _mm512_set1_ps(w_scale[0]) : _mm512_maskz_loadu_ps(mask, w_scale + n0 + j);
        v = _mm512_mul_ps(_mm512_mul_ps(v, a_scale), ws);
      }
      if (p.bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, p.bias + n0 + j));
      vec512::store(out + j, v, cols - j);
    }
  }
}
#endif

template <class Acc>
void store_rows(const Plan &p, int64_t b, int64_t m0, int64_t rows, int64_t n0, int64_t cols, const Acc *acc,
                int64_t ld) {
#ifdef AITER_VEC512
  const bool vector_scales = p.w_scale == nullptr || p.w_scale_step <= 1;
  if (vector_scales && p.out_dtype == DType::bf16) return store_rows_avx512<bf16_t>(p, b, m0, rows, n0, cols, acc, ld);
  if (vector_scales && p.out_dtype == DType::f32) return store_rows_avx512<float>(p, b, m0, rows, n0, cols, acc, ld);
  if (vector_scales && p.out_dtype == DType::f16) return store_rows_avx512<half_t>(p, b, m0, rows, n0, cols, acc, ld);
#endif
  store_tile(p, b, m0, rows, n0, cols, acc, ld);
}

// ---- one work item -------------------------------------------------------------------
// Brings the next K block of the item's W rows towards L2, a few cache lines
// per kernel call, while this block computes: reading W is the one stream
// from memory, and packing it on demand would stall on every row.
class WPrefetch {
 public:
  WPrefetch(const Operand &w, int64_t b, int64_t n0, int64_t cols, int64_t k0, int64_t kc, int64_t calls)
      : w_(w), b_(b), n0_(n0), line_bytes_(64), lines_per_row_((kc * w.elem_bytes + 63) / 64), k_byte_(k0 * w.elem_bytes) {
    total_ = kc > 0 ? cols * lines_per_row_ : 0;
    per_call_ = calls > 0 ? (total_ + calls - 1) / calls : total_;
  }
  // (Row and line counted up, not divided out: an idiv per line cost 1-2% of a GEMM.)
  void step() {
    for (int64_t end = std::min(total_, next_ + per_call_); next_ < end; ++next_) {
      __builtin_prefetch(w_.row(b_, n0_ + row_) + k_byte_ + line_ * line_bytes_, 0, 2);
      if (++line_ == lines_per_row_) line_ = 0, ++row_;
    }
  }

 private:
  const Operand &w_;
  int64_t b_, n0_, line_bytes_, lines_per_row_, k_byte_;
  int64_t total_ = 0, per_call_ = 0, next_ = 0, row_ = 0, line_ = 0;
};

// A thread's buffers of run_item (Words: not zeroed, their pages mapped at
// once rather than a fault at a time): W's panels, the sums of the item's rows
// of A, and W's rows staged where they are not slot pairs in place (fp32 and
// int8 slots, fp8, odd K), mapped only where a call stages.  Sized by the
// item, not for 770 rows staged: the demo's 240 rows of bf16 map 128 KB of
// them, where a fixed 300 KB was 45 fresh pages more on each thread.
struct Scratch {
  static constexpr size_t kStaged = kPanelW * kSlotsK, kW = kChunkN * kSlotsK;
  Words buffer;
  uint32_t *w = nullptr, *acc = nullptr, *staged = nullptr;

  void reserve(const Plan &p, const Layout &l, int64_t rows) {
    // Room past the item's rows: the AMX kernel writes whole 32-row panels.
    const size_t acc_words = size_t(rows + std::max<int64_t>(kMaxRowsA, amx::kRows)) * kChunkN, used = kW + acc_words;
    const bool in_place = l.slots == Slots::bf16_pairs && p.w.dtype == DType::bf16 && p.k % 2 == 0 &&
                          p.w.row_bytes % 4 == 0;  // slot_rows hands out W itself, every K block
    w = buffer.at_least(used + kStaged, in_place ? used : used + kStaged);
    acc = w + kW;
    staged = acc + acc_words;
  }
};

// int8 quads: 128 sum(a) of each row of A, which the (w + 128) a sums hold too.
std::vector<int32_t> quad_offsets(const Plan &p, const Layout &l) {
  std::vector<int32_t> offsets;
  if (l.slots != Slots::int8_quads) return offsets;
  offsets.resize(size_t(p.batch * p.m));
  parallel_for(p.batch * p.m, 16, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const auto *a = reinterpret_cast<const int8_t *>(p.a.row(row / p.m, row % p.m));
      int32_t sum = 0;
      for (int64_t k = 0; k < p.k; ++k) sum += a[k];
      offsets[size_t(row)] = 128 * sum;
    }
  });
  return offsets;
}

// The finished sums of rows [m, m + rows) x columns [n, n + cols) at acc
// (kChunkN apart) to the output; int8 quads less their 128 sum(a) first.
void store_sums(const Plan &p, const Layout &l, const int32_t *quad_offsets, int64_t b, int64_t m, int64_t rows,
                int64_t n, int64_t cols, uint32_t *acc) {
  if (quad_offsets != nullptr) {
    auto *sums = reinterpret_cast<int32_t *>(acc);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) sums[i * kChunkN + j] -= quad_offsets[b * p.m + m + i];
  }
  if (int32_sums(l.slots))
    store_rows(p, b, m, rows, n, cols, reinterpret_cast<const int32_t *>(acc), kChunkN);
  else
    store_rows(p, b, m, rows, n, cols, reinterpret_cast<const float *>(acc), kChunkN);
}

// next_n0: the first column of the item this thread most likely runs next
// (its first K block of W is prefetched during this item's last), or p.n.
void run_item(const Plan &p, const Layout &l, const uint32_t *packed_a, const int32_t *quad_offsets, int64_t b,
              int64_t block_m, int64_t n0, int64_t next_item_n0) {
  thread_local Scratch s;
  const int64_t cols = std::min(kChunkN, p.n - n0), panels_w = (cols + kPanelW - 1) / kPanelW;
  const int64_t q0 = block_m * l.panels_per_block, q1 = std::min(l.panels.count, q0 + l.panels_per_block);
  const int64_t m0 = l.panels.start(q0), k_elems = kSlotsK * l.per_slot;
  const int64_t block_rows = l.panels.start(q1 - 1) + l.panels.rows(q1 - 1) - m0;
  s.reserve(p, l, block_rows);
  if (p.k == 0) {  // empty sums: zeros in fp32 and int32 alike
    std::fill(s.acc, s.acc + block_rows * kChunkN, 0u);
    return store_sums(p, l, quad_offsets, b, m0, block_rows, n0, cols, s.acc);
  }
  if (l.amx) amx::configure();
  for (int64_t k0 = 0, kb = 0; k0 < p.k; k0 += k_elems, ++kb) {
    const int64_t kc = std::min(k_elems, p.k - k0), groups = (kc + l.per_slot - 1) / l.per_slot;
    const int64_t chunks = (groups + amx::kChunk - 1) / amx::kChunk;  // AMX: K steps of 16 slots
    for (int64_t j = 0; j < panels_w; ++j) {
      const int64_t rows = std::min<int64_t>(kPanelW, cols - j * kPanelW);
      int64_t ld;
      const uint32_t *src = slot_rows(p.w, l.slots, b, n0 + j * kPanelW, rows, k0, kc, s.staged, &ld, true);
      uint32_t *panel = s.w + j * kSlotsK * kPanelW;
      avx512::pack_panel(src, ld, int(rows), groups, kPanelW, panel);
      if (l.amx) std::fill(panel + groups * kPanelW, panel + chunks * amx::kChunk * kPanelW, 0u);  // K's last step
    }
    // The next K block of these columns, or after the last the first block of
    // the next item's: the first block of an item would otherwise wait on
    // memory for every line of W it packs.
    int64_t next_n0 = n0, next_cols = cols, next_k0 = k0 + k_elems;
    if (next_k0 >= p.k)
      next_n0 = next_item_n0, next_cols = std::max<int64_t>(0, std::min(kChunkN, p.n - next_n0)), next_k0 = 0;
    WPrefetch prefetch(p.w, b, next_n0, next_cols, next_k0, std::min(k_elems, p.k - next_k0), panels_w * (q1 - q0));
    const bool last_k = next_k0 == 0;
    for (int64_t j = 0; j < panels_w; ++j)
      for (int64_t q = q0; q < q1; ++q) {
        prefetch.step();
        const int64_t rows = l.panels.rows(q);
        uint32_t *acc = s.acc + (l.panels.start(q) - m0) * kChunkN + j * kPanelW;
        const uint32_t *a = packed_a + a_block(l, p.m, b, q, kb), *w = s.w + j * kSlotsK * kPanelW;
        if (l.amx)
          amx::block(l.slots, a, w, chunks, acc, kChunkN, kb > 0);
        else
          avx512::kernel(l.slots, int(rows), l.vnni)(a, w, groups, acc, kChunkN, kb > 0);
        // Stored while the tile is still in L1 (from L2 after the item, the
        // store took 3% of a bf16 GEMM of K 1024).
        if (last_k)
          store_sums(p, l, quad_offsets, b, l.panels.start(q), rows, n0 + j * kPanelW,
                     std::min<int64_t>(kPanelW, cols - j * kPanelW), acc);
      }
  }
  if (l.amx) amx::release();
}

// ---- the dot-product form ---------------------------------------------------------------
bool use_dot_form(const Plan &p, const Layout &l) {
  return (l.slots == Slots::bf16_pairs || l.slots == Slots::int16_pairs) && p.m <= dot_max_m();
}

// A as the dot kernels read it, copied once per call (few rows) into rows
// kDotRowPad longer than K: bf16 as it is, int8 widened to int16, fp8 decoded
// to bf16.
struct DotA {
  std::vector<int16_t> widened;
  const char *data;
  int64_t ld, batch_bytes, elem_bytes;  // ld in elements
  const void *row(int64_t b, int64_t r) const { return data + b * batch_bytes + r * ld * elem_bytes; }
};

// Rows of the copy a cache line longer than K: rows a multiple of 4 KB apart
// (K = 4096 bf16) would all fall into the same L1 sets, and the 16 rows of A
// with the 4 of W would not stay in L1 (M16 bf16: 4.6 ms a core against 2.9).
constexpr int64_t kDotRowPad = 32;  // 16-bit elements

DotA dot_a(const Plan &p) {
  DotA a;
  a.ld = p.k + kDotRowPad, a.batch_bytes = p.m * a.ld * 2, a.elem_bytes = 2;
  a.widened.resize(size_t(p.batch * p.m * a.ld));
  const uint16_t *table = dot_w_table(p.a.dtype);  // fp8; null for bf16 and int8
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t r = 0; r < p.m; ++r) {
      const char *src = p.a.row(b, r);
      int16_t *dst = a.widened.data() + (b * p.m + r) * a.ld;
      if (p.a.dtype == DType::bf16)
        std::memcpy(dst, src, size_t(p.k) * 2);
      else if (table != nullptr)
        avx512::decode_fp8_row(reinterpret_cast<const uint8_t *>(src), p.k, table, reinterpret_cast<uint16_t *>(dst));
      else
        for (int64_t k = 0; k < p.k; ++k) dst[k] = int16_t(int8_t(src[k]));
    }
  a.data = reinterpret_cast<const char *>(a.widened.data());
  return a;
}

// Rows [n0, n0 + cols) of W against every row of A: groups of up to 4 rows of
// A, as even as possible, meet blocks of 4 rows of W (the last row repeated
// past the edge).  Per block of 4 rows of W, K goes in blocks of kDotBlockK,
// so that the rows of A and W a block needs (16 x 1 KB + 4 x 1 KB) stay in L1
// while every group of A meets them; the 16-lane partial sums wait in `lanes`
// between blocks.  Sum: float (bf16) or int32_t (int8, exact).
constexpr int64_t kDotBlockK = 512;

// How far ahead of the reads the dot kernels' prefetch requests run, in
// bytes of W.  One thread reading evicted W of 5632 x 1024 bf16 (2-core EPYC,
// docs/performance_cpu.md): 11-12 GB/s with the hardware's prefetchers alone
// (six rows 2 KB apart defeat them), 19 GB/s with requests 12 KB ahead, 23-26
// at 32 KB, 25-28 at 64-256 KB, where one thread's sequential read makes
// 25-28; through the library on both threads 16-128 KB were within the noise.
// Short enough that a run of rows 256 KB long (o at M 4) is mostly covered:
// a run's first kDotAheadBytes get no requests.
constexpr int64_t kDotAheadBytes = 32 << 10;

// The dot kernels' prefetch requests (avx512::DotKernel's ahead_bytes) sweep
// through W in address order, kDotAheadBytes ahead of where the kernel
// reads.  Rows of W follow each other (with a padded row stride the requests
// cover kDotRowsW rows' length a call, not their stride: a few lines of each
// six rows go unasked-for), so the kDotRowsW rows of a kernel call are one
// range of bytes, read in that order block by block of K: the call for rows [row, row
// + kDotRowsW) and columns [k0, k0 + kc) asks for the bytes from row(row) +
// kDotAheadBytes + kDotRowsW k0 on, as many as it reads.  Where that range
// would pass run_end (the end of this thread's run of rows: the rows after it
// are another thread's to read) it asks for nothing; 0 says so.
int64_t dot_ahead_bytes(const Plan &p, int64_t row, int64_t k0, int64_t kc, int64_t run_end) {
  const int64_t elem = p.w.elem_bytes, distance = kDotAheadBytes;
  const int64_t start = row * p.w.row_bytes + distance + avx512::kDotRowsW * k0 * elem;
  const int64_t end = start + avx512::kDotRowsW * ((kc + 31) / 32 * 32) * elem;  // the kernel's steps of 32
  const int64_t run_bytes = (run_end - 1) * p.w.row_bytes + p.k * elem;
  return end <= run_bytes ? distance + (avx512::kDotRowsW - 1) * k0 * elem : 0;
}

// fp8 W decoded once per block: the kernel reads the decoded copy, so the
// block's share of the sweep is asked for here, before the decoding.
void prefetch_ahead_block(const Plan &p, int64_t b, int64_t row, int64_t k0, int64_t kc, int64_t ahead_bytes) {
  if (ahead_bytes == 0) return;
  const char *at = p.w.row(b, row) + k0 * p.w.elem_bytes + ahead_bytes;
  for (int64_t byte = 0; byte < avx512::kDotRowsW * kc * p.w.elem_bytes; byte += 64) __builtin_prefetch(at + byte, 0, 2);
}

template <class Sum>
void run_dot_strip(const Plan &p, const Layout &l, const DotA &a, int64_t b, int64_t n0, int64_t cols,
                   int64_t run_end) {
  constexpr int64_t kPair = avx512::kDotRowsA * avx512::kDotRowsW * 16;  // lanes of one group's kernel call
  Sum acc[kDotMaxM * kDotStripN];
  Sum lanes[(kDotMaxM / avx512::kDotRowsA) * kPair];
  const int64_t groups = (p.m + avx512::kDotRowsA - 1) / avx512::kDotRowsA;
  const auto *a_rows = static_cast<const char *>(a.row(b, 0));
  const uint16_t *w_table = dot_w_table(p.w.dtype);
  // One group of A meets each block of W once: nothing to keep in L1, K in one
  // go, fp8 W decoded in registers.  Several groups share each block: fp8 W is
  // decoded once into `decoded` (in L1) and read as bf16 by every group.
  const int64_t block_k = groups == 1 ? std::max<int64_t>(p.k, 1) : kDotBlockK;
  const bool decode_once = w_table != nullptr && groups > 1;
  uint16_t decoded[avx512::kDotRowsW * kDotBlockK];
  for (int64_t j0 = 0; j0 < cols; j0 += avx512::kDotRowsW) {
    const int64_t c = std::min<int64_t>(avx512::kDotRowsW, cols - j0);
    const void *w[avx512::kDotRowsW];
    for (int64_t k0 = 0; k0 < p.k; k0 += block_k) {
      const int64_t kc = std::min(block_k, p.k - k0);
      const int64_t ahead_bytes = dot_ahead_bytes(p, n0 + j0, k0, kc, run_end);
      if (decode_once) prefetch_ahead_block(p, b, n0 + j0, k0, kc, ahead_bytes);
      for (int64_t j = 0; j < avx512::kDotRowsW; ++j) {
        w[j] = p.w.row(b, n0 + j0 + std::min(j, c - 1)) + k0 * p.w.elem_bytes;
        if (decode_once) {
          avx512::decode_fp8_row(static_cast<const uint8_t *>(w[j]), kc, w_table, decoded + j * kDotBlockK);
          w[j] = decoded + j * kDotBlockK;
        }
      }
      const uint16_t *table = decode_once ? nullptr : w_table;
      for (int64_t g = 0, i0 = 0; g < groups; ++g) {
        const int64_t r = p.m / groups + (g < p.m % groups ? 1 : 0);
        avx512::dot_kernel(l.slots, int(r), l.vnni, table != nullptr)(
            a_rows + (i0 * a.ld + k0) * a.elem_bytes, a.ld, w, kc, lanes + g * kPair, k0 > 0, table,
            g == 0 && !decode_once ? ahead_bytes : 0);  // the other groups read the same rows
        i0 += r;
      }
    }
    for (int64_t g = 0, i0 = 0; g < groups; ++g) {
      const int64_t r = p.m / groups + (g < p.m % groups ? 1 : 0);
      const int outputs = int(r) * avx512::kDotRowsW;  // lanes (i * kDotRowsW + j) * 16 on
      Sum sums[avx512::kDotRowsA * avx512::kDotRowsW] = {};  // with K = 0 the lanes were never written
      for (int o = 0; p.k > 0 && o < outputs; o += 16)
        avx512::add_lanes(lanes + g * kPair + o * 16, std::min(16, outputs - o), sums + o);
      for (int64_t i = 0; i < r; ++i)
        for (int64_t j = 0; j < c; ++j) acc[(i0 + i) * kDotStripN + j0 + j] = sums[i * avx512::kDotRowsW + j];
      i0 += r;
    }
  }
  store_rows(p, b, 0, p.m, n0, cols, acc, kDotStripN);
}

void run_dot(const Plan &p, const Layout &l) {
  const DotA a = dot_a(p);
  const int64_t strips = (p.n + kDotStripN - 1) / kDotStripN;
  // Runs of consecutive strips (parallel_for's 4 chunks a thread), not
  // for_each_item's one strip at a time: W's rows follow each other in
  // memory, and a thread that reads one long run keeps its prefetches
  // (the kernels' requests ahead, the hardware's) on the rows it reads next.
  parallel_for(p.batch * strips, 1, [&](int64_t begin, int64_t end) {
    for (int64_t index = begin; index < end; ++index) {
      const int64_t b = index / strips, n0 = (index % strips) * kDotStripN, cols = std::min(kDotStripN, p.n - n0);
      const bool last_matrix = b == (end - 1) / strips;  // the run ends in this matrix
      const int64_t run_end = last_matrix ? std::min(p.n, ((end - 1) % strips + 1) * kDotStripN) : p.n;
      if (l.slots == Slots::int16_pairs)
        run_dot_strip<int32_t>(p, l, a, b, n0, cols, run_end);
      else
        run_dot_strip<float>(p, l, a, b, n0, cols, run_end);
    }
  });
}

void run(const Plan &p) {
  const Layout l = layout_for(p);
  if (use_dot_form(p, l)) return run_dot(p, l);
  // Kept from call to call: fresh pages every call cost more than small GEMMs.
  // (The workers reach it through `packed`: a lambda names its own thread's
  // thread_local, not the caller's.)
  thread_local Words packed_a;
  uint32_t *packed = packed_a.at_least(packed_a_words(p, l));
  pack_a(p, l, packed);
  const std::vector<int32_t> offsets = quad_offsets(p, l);
  const int32_t *offset = offsets.empty() ? nullptr : offsets.data();
  const int64_t chunks_n = (p.n + kChunkN - 1) / kChunkN, items = l.blocks_m * chunks_n;
  for_each_item(p, items, [&](int64_t b, int64_t item) {
    const int64_t next = item + cpu_threads();  // for_each_item: the threads take items in turn
    run_item(p, l, packed, offset, b, item % l.blocks_m, (item / l.blocks_m) * kChunkN,
             next < items ? (next / l.blocks_m) * kChunkN : p.n);
  });
}

}  // namespace

bool gemm_avx512_supports(const GemmArgs &g) {
  return isa_at_least(Isa::avx512) && (g.in_dtype != DType::i8 || g.k <= kMaxExactInt8K);
}

aiter_status gemm_avx512(const GemmArgs &g, const GpuCall *) {
  if (g.batch == 0 || g.m == 0 || g.n == 0) return AITER_OK;
  std::vector<float> bias;
  const Plan p = make_plan(g, bias);
  populate_output(p);
  run(p);
  return AITER_OK;
}

}  // namespace cpu
}  // namespace aiter
