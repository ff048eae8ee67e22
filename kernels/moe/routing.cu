// MoE routing and sorting.
//
// Routing (topk_softmax, topk_sigmoid, grouped_topk): a team of 32 lanes per
// token (four a block; on AMD's 64-wide waves two teams share a wave, and
// shuffles with masks below 32 stay inside a team).  Expert e lives in lane
// e % 32, slot e / 32 of PER register slots.  Group values and the k winners
// come from team-wide arg-max reductions under the library's tie rule (larger
// first, then the lower id; NaN as -inf), the rule the CPU backend follows, so
// both choose the same experts.  Every team runs the same loops (tokens past
// the end compute on row 0 and store nothing), so the NVIDIA shuffles always
// see their whole warp.
//
// Sorting: one block of 1024 threads: expert counts in shared memory, a scan
// of the padded counts and of the local-expert flags, the block table, then
// every pair scattered to its expert's next row (shared atomics: the order
// within an expert is unspecified).  For many pairs (the fused MoE, which has
// scratch for it) the same in two kernels of one block per 4096 pairs:
// moe_sort_count (each block's expert counts, to global memory) and
// moe_sort_scatter (every block sums them, scans, and places its own pairs).
#include "../common/numeric.h"
#include "moe_params.h"

namespace {

constexpr int kTeam = 32;

__device__ __forceinline__ float rank_key(float v) { return v != v ? -__builtin_huge_valf() : v; }

// a before b: larger key, then lower id.
__device__ __forceinline__ bool before(float ka, int a, float kb, int b) { return ka > kb || (ka == kb && a < b); }

// e^x in double from double arithmetic only (AMD's -nogpulib build has no exp):
// x = n ln2 + r, |r| <= ln2 / 2, a degree-13 Taylor polynomial of e^r (error
// below 1e-16 relative), times 2^n built in two halves (n down to -1075).
__device__ __forceinline__ double exp_f64(double x) {
  x = x < -745.0 ? -745.0 : x > 709.0 ? 709.0 : x;
  const double n = __builtin_rint(x * 1.4426950408889634);
  const double r = (x - n * 6.93147180369123816490e-01) - n * 1.90821492927058770002e-10;
  double p = 1.0 / 6227020800.0;
  const double inv[] = {1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0, 1.0 / 40320.0,
                        1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0};
#pragma unroll
  for (int i = 0; i < 13; ++i) p = p * r + inv[i];
  const long long ni = (long long)n, half = ni / 2;
  const double s1 = __builtin_bit_cast(double, (unsigned long long)(half + 1023) << 52);
  const double s2 = __builtin_bit_cast(double, (unsigned long long)(ni - half + 1023) << 52);
  return p * s1 * s2;
}

// 1 / d for d >= 1. NVIDIA: the hardware's approximate reciprocal, then two
// Newton steps (relative error far below double's 2^-53), with no branch. IEEE
// division keeps a slow path behind a branch and a call, and that kept ptxas from
// interleaving a lane's 8 sigmoids at DeepSeek-V3's 256 experts: 8 chains of
// about 120 instructions ran one after another (SASS of 2026-11-29). Results
// below 2^-1022 flush to 0; float() flushes them to 0 anyway.
__device__ __forceinline__ double reciprocal_ge1(double d) {
#if defined(AITER_NVIDIA)
  double y;
  asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(y) : "d"(d));
  double e = __fma_rn(-d, y, 1.0);
  y = __fma_rn(y, e, y);
  e = __fma_rn(-d, y, 1.0);
  return __fma_rn(y, e, y);
#else
  return 1.0 / d;
#endif
}

// float(sigmoid(x)) through double, rounded once (as the CPU computes it).
// FAST: 1 / d by reciprocal_ge1, whose float differs from IEEE division's only
// where the double lies within an ulp of a float tie (as the exp polynomial's
// may); not at 32 slots a lane, where 32 interleaved sigmoids spilled registers.
template <bool FAST>
__device__ __forceinline__ float sigmoid_exact(float x) {
  const double d = 1.0 + exp_f64(-double(x));
  return float(FAST ? reciprocal_ge1(d) : 1.0 / d);
}

// A team's PER slots of p[0..n): lane's expert s x 32 + lane in slot s.
template <class T, int PER>
__device__ __forceinline__ void load_slots(const T *p, int lane, int n, float (&v)[PER]) {
#pragma unroll
  for (int s = 0; s < PER; ++s) v[s] = s * kTeam + lane < n ? to_f32(p[s * kTeam + lane]) : -__builtin_huge_valf();
}

// A team's PER slots of the row of n floats of kind 0 (fp32), 1 (fp16) or 2
// (bf16) at element `row` of p (past n: -inf).  The dtype is a parameter, not
// a template argument, so that 6 kernels cover the three dtypes (18 took the
// AMD build 10 s a target); its branch is outside the slots' loop, so that the
// loads go out together and the code after them (the sigmoids) can interleave
// the slots instead of taking them one at a time.
template <int PER>
__device__ __forceinline__ void load_kind_slots(const void *p, int kind, long long row, int lane, int n,
                                                float (&v)[PER]) {
  if (kind == 1) load_slots(static_cast<const half_t *>(p) + row, lane, n, v);
  else if (kind == 2) load_slots(static_cast<const bf16_t *>(p) + row, lane, n, v);
  else load_slots(static_cast<const float *>(p) + row, lane, n, v);
}

// The team's best (key, id); an empty candidate has key -inf and id INT_MAX.
// NVIDIA: two warp reductions (redux.sync, sm_80 and later) of the keys as
// unsigned integers in the floats' order, then of the ids that hold the best,
// instead of five dependent rounds of two shuffles: the k rounds of top-k are
// the routing kernel's serial path (5.4 us at Qwen3-30B's T 1 against 2.6 us
// at Mixtral's k 2, H200; docs/performance_moe.md, run 46).
__device__ __forceinline__ void team_best(float &key, int &id) {
#if defined(AITER_NVIDIA) && __CUDA_ARCH__ >= 800
  // (+0.0f: -0 and +0 compare equal, so they must map to one integer; NaN
  // never reaches here, rank_key)
  const unsigned bits = __float_as_uint(key + 0.0f);
  const unsigned order = bits & 0x80000000u ? ~bits : bits | 0x80000000u;
  const unsigned best = __reduce_max_sync(0xffffffffu, order);
  id = int(__reduce_min_sync(0xffffffffu, order == best ? unsigned(id) : 0xffffffffu));
  key = __uint_as_float(best & 0x80000000u ? best & 0x7fffffffu : ~best);
#else
#pragma unroll
  for (int m = kTeam / 2; m > 0; m >>= 1) {
    const float ok = shfl_xor(key, m);
    const int oid = __builtin_bit_cast(int, shfl_xor(__builtin_bit_cast(float, id), m));
    if (before(ok, oid, key, id)) key = ok, id = oid;
  }
#endif
}

__device__ __forceinline__ float team_max(float v) {
#pragma unroll
  for (int m = kTeam / 2; m > 0; m >>= 1) v = fmaxf(v, shfl_xor(v, m));
  return v;
}

__device__ __forceinline__ float team_sum(float v) {
#pragma unroll
  for (int m = kTeam / 2; m > 0; m >>= 1) v += shfl_xor(v, m);
  return v;
}

constexpr int kNone = 0x7fffffff;

template <int PER>
struct Token {
  float logit[PER], key[PER];
  unsigned allowed, taken;  // bit s: slot s
};

// Group values where each slot lies in one group (the group size a multiple
// of 32: DeepSeek-V3's 8 groups of 32): every group's best two in this lane,
// then all groups' team reductions side by side.  The loop below reduces one
// group at a time, 5 dependent shuffle steps each.
template <int PER>
__device__ __forceinline__ void group_values_by_slot(const RoutingParams &p, int lane, const Token<PER> &t,
                                                     const int (&gid)[PER], float (&gval)[PER]) {
  float b1[PER], b2[PER];
#pragma unroll
  for (int g = 0; g < PER; ++g) b1[g] = b2[g] = -__builtin_huge_valf();
#pragma unroll
  for (int g = 0; g < PER; ++g)
#pragma unroll
    for (int s = 0; s < PER; ++s)
      if (gid[s] == g) {
        const float v = t.key[s];
        if (v > b1[g]) b2[g] = b1[g], b1[g] = v;
        else if (v > b2[g]) b2[g] = v;
      }
#pragma unroll
  for (int m = kTeam / 2; m > 0; m >>= 1)
#pragma unroll
    for (int g = 0; g < PER; ++g) {
      const float c1 = shfl_xor(b1[g], m), c2 = shfl_xor(b2[g], m);
      const float top = fmaxf(b1[g], c1), second = fmaxf(fminf(b1[g], c1), fmaxf(b2[g], c2));
      b1[g] = top, b2[g] = second;
    }
  const bool pair = p.bias != nullptr && p.experts / p.groups > 1;
#pragma unroll
  for (int g = 0; g < PER; ++g)
    if (g == lane && g < p.groups) gval[0] = rank_key(pair ? b1[g] + b2[g] : b1[g]);  // group g: lane g, slot 0
}

// Marks the experts of the topk_group best groups allowed (all where every group is kept).
template <int PER>
__device__ __forceinline__ void select_groups(const RoutingParams &p, int lane, Token<PER> &t) {
  t.allowed = 0;
#pragma unroll
  for (int s = 0; s < PER; ++s)
    if (s * kTeam + lane < p.experts) t.allowed |= 1u << s;
  if (p.topk_group == p.groups) return;
  const int size = p.experts / p.groups;
  int gid[PER];  // the group of slot s's expert, -1 past the experts
#pragma unroll
  for (int s = 0; s < PER; ++s) gid[s] = s * kTeam + lane < p.experts ? (s * kTeam + lane) / size : -1;
  float gval[PER];
#pragma unroll
  for (int s = 0; s < PER; ++s) gval[s] = -__builtin_huge_valf();
  if (size % kTeam == 0) {
    group_values_by_slot<PER>(p, lane, t, gid, gval);
  } else {
    for (int g = 0; g < p.groups; ++g) {
      float b1 = -__builtin_huge_valf(), b2 = -__builtin_huge_valf();
#pragma unroll
      for (int s = 0; s < PER; ++s) {
        if (gid[s] == g) {
          const float v = t.key[s];
          if (v > b1) b2 = b1, b1 = v;
          else if (v > b2) b2 = v;
        }
      }
#pragma unroll
      for (int m = kTeam / 2; m > 0; m >>= 1) {
        const float c1 = shfl_xor(b1, m), c2 = shfl_xor(b2, m);
        const float top = fmaxf(b1, c1), second = fmaxf(fminf(b1, c1), fmaxf(b2, c2));
        b1 = top, b2 = second;
      }
      const float v = rank_key(p.bias != nullptr && size > 1 ? b1 + b2 : b1);
#pragma unroll
      for (int s = 0; s < PER; ++s)
        if (g == s * kTeam + lane) gval[s] = v;
    }
  }
  t.allowed = 0;
  unsigned group_taken = 0;
  for (int i = 0; i < p.topk_group; ++i) {
    float key = -__builtin_huge_valf();
    int id = kNone;
#pragma unroll
    for (int s = 0; s < PER; ++s) {
      const int g = s * kTeam + lane;
      if (g < p.groups && !(group_taken >> s & 1u) && before(gval[s], g, key, id)) key = gval[s], id = g;
    }
    team_best(key, id);
#pragma unroll
    for (int s = 0; s < PER; ++s) {
      if (id == s * kTeam + lane) group_taken |= 1u << s;
      if (gid[s] == id) t.allowed |= 1u << s;
    }
  }
}

template <int PER>
__device__ __forceinline__ void route_token(const RoutingParams &p) {
  const int lane = thread_x() % kTeam;
  const long long token = (long long)block_x() * (kRouteThreads / kTeam) + thread_x() / kTeam;
  const bool active = token < p.tokens;
  const long long row = (active ? token : 0) * p.gating_stride;
  Token<PER> t;
  float max = -__builtin_huge_valf();
  float source[PER];  // what a winner's score comes from: its sigmoid, or its logit (softmax)
  load_kind_slots(p.gating, p.gating_kind, row, lane, p.experts, t.logit);
  if (p.bias != nullptr) load_kind_slots(p.bias, p.bias_kind, 0, lane, p.experts, t.key);  // (the bias, for now)
  if (p.sigmoid) {
#pragma unroll
    for (int s = 0; s < PER; ++s) source[s] = sigmoid_exact<PER <= 16>(t.logit[s]);
  } else {
#pragma unroll
    for (int s = 0; s < PER; ++s) source[s] = t.logit[s];
  }
#pragma unroll
  for (int s = 0; s < PER; ++s) {
    t.key[s] = rank_key(p.bias != nullptr && s * kTeam + lane < p.experts ? source[s] + t.key[s] : t.logit[s]);
    max = fmaxf(max, t.logit[s]);
  }
  float sum = 0.0f;
  if (!p.sigmoid) {
    max = team_max(max);
#pragma unroll
    for (int s = 0; s < PER; ++s)
      if (s * kTeam + lane < p.experts) sum += fast_exp(t.logit[s] - max);
    sum = team_sum(sum);
  }
  select_groups<PER>(p, lane, t);
  t.taken = 0;
  float mine[PER];  // the score of winner j, in lane j % 32, slot j / 32
  int mine_id[PER];
  float total = 0.0f;
  for (int j = 0; j < p.k; ++j) {
    float key = -__builtin_huge_valf();
    int id = kNone;
    float src = 0.0f;
#pragma unroll
    for (int s = 0; s < PER; ++s) {
      const int e = s * kTeam + lane;
      if ((t.allowed & ~t.taken) >> s & 1u && before(t.key[s], e, key, id)) key = t.key[s], id = e, src = source[s];
    }
    team_best(key, id);
#pragma unroll
    for (int s = 0; s < PER; ++s)
      if (s * kTeam + lane == id) t.taken |= 1u << s;
    // The winner's source, from its lane (whose own best it is) to all; with no
    // winner (id kNone) every lane's src is 0.
    const float w = __builtin_bit_cast(float, shfl_from(__builtin_bit_cast(int, src), id % kTeam));
    const float score = p.sigmoid ? w : fast_exp(w - max) * (1.0f / sum);
    total += score;
#pragma unroll
    for (int s = 0; s < PER; ++s)
      if (j == s * kTeam + lane) mine[s] = score, mine_id[s] = id;
  }
  if (!active) return;
#pragma unroll
  for (int s = 0; s < PER; ++s) {
    const int j = s * kTeam + lane;
    if (j < p.k) {
      p.ids[token * p.ids_stride + j] = mine_id[s];
      p.weights[token * p.weights_stride + j] = p.renormalize ? mine[s] / total * p.scale : mine[s] * p.scale;
    }
  }
}

// ---- sorting ---------------------------------------------------------------------
__device__ __forceinline__ int shared_add(int *p, int v) {
#if defined(AITER_AMD)
  return __hip_atomic_fetch_add(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP);
#else
  return atomicAdd(p, v);
#endif
}

__device__ __forceinline__ bool is_local(const SortingParams &p, int e) {
  if (p.mask == nullptr) return true;
  return p.mask_bytes == 4 ? static_cast<const int *>(p.mask)[e] != 0
                           : static_cast<const unsigned char *>(p.mask)[e] != 0;
}

// The expert of pair q, or -1 where it is out of range or not local.  32-bit
// division where the pairs fit (a 64-bit one is several times as many
// instructions, and the sort's one block divides every pair twice).
__device__ __forceinline__ int pair_expert(const SortingParams &p, long long q) {
  long long t, j;
  if (p.tokens * p.topk <= 0x7fffffffLL) {
    const int qi = int(q);
    t = qi / p.topk, j = qi - int(t) * p.topk;
  } else {
    t = q / p.topk, j = q % p.topk;
  }
  const int e = p.ids[t * p.ids_stride + j];
  return e >= 0 && e < p.experts && is_local(p, e) ? e : -1;
}

// The experts of pairs q0 + j * kSortThreads (j < kSortPerThread), -1 past
// `end`: the loads issued together (a loop of load-then-atomic waits out one
// memory latency a pair; that was most of the one-block sort's 48 us at 32768 pairs).
__device__ __forceinline__ void pair_experts(const SortingParams &p, long long q0, long long end,
                                             int (&e)[kSortPerThread]) {
#pragma unroll
  for (int j = 0; j < kSortPerThread; ++j) {
    const long long q = q0 + (long long)j * kSortThreads;
    e[j] = q < end ? pair_expert(p, q) : -1;
  }
}

// f(expert, pair) for each pair of [begin, end) with a local expert, kSortChunk a step.
template <class F>
__device__ __forceinline__ void for_each_pair(const SortingParams &p, long long begin, long long end, F f) {
  for (long long q0 = begin + thread_x(); q0 < end; q0 += kSortChunk) {
    int e[kSortPerThread];
    pair_experts(p, q0, end, e);
#pragma unroll
    for (int j = 0; j < kSortPerThread; ++j)
      if (e[j] >= 0) f(e[j], q0 + (long long)j * kSortThreads);
  }
}

// count[e] += the pairs of expert e in [begin, end).
__device__ __forceinline__ void count_pairs(const SortingParams &p, long long begin, long long end, int *count) {
  for_each_pair(p, begin, end, [&](int e, long long) { shared_add(&count[e], 1); });
}

// Each pair of [begin, end) to its expert's next row (next[e], a shared cursor).
__device__ __forceinline__ void scatter_pairs(const SortingParams &p, long long begin, long long end, int *next) {
  for_each_pair(p, begin, end, [&](int e, long long q) { p.sorted[shared_add(&next[e], 1)] = int(q); });
}

// Inclusive scans of a[] and b[] over their first n entries (one a thread;
// the entries past n come out meaningless).
__device__ __forceinline__ void scan2(int *a, int *b, int n) {
  const int i = thread_x();
  for (int d = 1; d < n; d <<= 1) {
    const int va = i >= d ? a[i - d] : 0, vb = i >= d ? b[i - d] : 0;
    sync_block();
    a[i] += va, b[i] += vb;
    sync_block();
  }
}

__device__ __forceinline__ int padded_count(const SortingParams &p, int n) { return (n + p.block - 1) / p.block * p.block; }

// Where expert i's rows start and end, from its pair count `mine` (thread i):
// a scan of the padded counts and of the local-expert flags (the block table
// names local experts).  Returns the rows in use; `local_id` gets i's local index.
__device__ __forceinline__ int expert_rows(const SortingParams &p, int mine, int &start, int &end, int &local_id) {
  __shared__ int padded[kSortThreads], local[kSortThreads];
  const int i = thread_x();
  padded[i] = padded_count(p, mine);
  local[i] = i < p.experts && is_local(p, i) ? 1 : 0;
  sync_block();  // every thread's entry written before the scan reads its neighbours'
  scan2(padded, local, p.experts);  // past the experts: mine = 0, so start = end, nothing placed
  end = padded[i], start = end - padded_count(p, mine), local_id = local[i] - 1;
  const int total = padded[p.experts - 1];
  sync_block();  // all read before a later call writes again
  return total;
}

// The block table of expert i's blocks, and -1 past the rows in use (one
// block's threads); with block_runs, each block's run: its expert's blocks,
// or the block alone past the rows in use (the fused MoE's stages group their
// row tiles by expert with it).
__device__ __forceinline__ void block_table(const SortingParams &p, int start, int end, int local_id, int total) {
  const int i = thread_x();
  if (i == 0) p.num_valid[0] = total;
  for (int b = start / p.block; b < end / p.block; ++b) {
    p.block_experts[b] = local_id;
    if (p.block_runs != nullptr)
      p.block_runs[2 * b] = start / p.block, p.block_runs[2 * b + 1] = (end - start) / p.block;
  }
  for (long long b = total / p.block + i; b < p.blocks; b += kSortThreads) {
    p.block_experts[b] = -1;
    if (p.block_runs != nullptr) p.block_runs[2 * b] = int(b), p.block_runs[2 * b + 1] = 1;
  }
}

// One block sorts every pair (the moe_sorting op; fused_moe's small calls).
__device__ __forceinline__ void sort_pairs(const SortingParams &p) {
  __shared__ int count[kSortThreads];
  const int i = thread_x();
  const long long pairs = p.tokens * p.topk;
  count[i] = 0;
  sync_block();
  count_pairs(p, 0, pairs, count);
  sync_block();
  const int mine = count[i];
  int start, end, local_id;
  const int total = expert_rows(p, mine, start, end, local_id);
  block_table(p, start, end, local_id, total);
  for (long long r = i; r < p.rows; r += kSortThreads) p.sorted[r] = int(pairs);
  sync_block();  // the sentinels land before the pairs overwrite them
  count[i] = start;  // now each expert's next row
  sync_block();
  scatter_pairs(p, 0, pairs, count);
}

struct alignas(16) Zero16 {
  unsigned v[4];
};

// 16-byte zero stores over p.zero by the zero_blocks blocks past p.parts.
__device__ __forceinline__ void zero_bytes(const SortingParams &p) {
  const long long workers = (long long)p.zero_blocks * kSortThreads;
  const long long first = (long long)(block_x() - p.parts) * kSortThreads + thread_x();
  Zero16 *vec = static_cast<Zero16 *>(p.zero);
  const long long n = p.zero_bytes / 16;
  for (long long v = first; v < n; v += workers) vec[v] = Zero16{{0u, 0u, 0u, 0u}};
  unsigned char *tail = static_cast<unsigned char *>(p.zero) + n * 16;
  if (first < p.zero_bytes % 16) tail[first] = 0;
}

// Multi-block sort, step 1: block b < parts counts the experts of its chunk of
// kSortChunk pairs into partial[b, :]; the blocks past parts zero p.zero.
__device__ __forceinline__ void sort_count(const SortingParams &p) {
  if ((int)block_x() >= p.parts) return zero_bytes(p);
  __shared__ int count[kSortThreads];
  const int i = thread_x();
  const long long pairs = p.tokens * p.topk, begin = (long long)block_x() * kSortChunk;
  count[i] = 0;
  sync_block();
  count_pairs(p, begin, begin + kSortChunk < pairs ? begin + kSortChunk : pairs, count);
  sync_block();
  if (i < p.experts) p.partial[(long long)block_x() * p.experts + i] = count[i];
}

// Multi-block sort, step 2: every block adds up the counts (partial) into each
// expert's rows, block b scatters its chunk after the pairs of chunks 0..b-1
// of the same expert; block 0 writes the block table, and the sentinel rows
// (the padding of each expert, the rows past the valid ones) are shared out
// among the blocks: they are disjoint from every pair's row, so no block waits
// for another.
__device__ __forceinline__ void sort_scatter(const SortingParams &p) {
  __shared__ int next[kSortThreads];
  const int i = thread_x(), b = int(block_x());
  int mine = 0, before = 0;
  if (i < p.experts) {
#pragma unroll 8
    for (int part = 0; part < p.parts; ++part) {  // unrolled: the loads in flight together
      const int c = p.partial[(long long)part * p.experts + i];
      mine += c;
      before += part < b ? c : 0;
    }
  }
  int start, end, local_id;
  const int total = expert_rows(p, mine, start, end, local_id);
  const long long pairs = p.tokens * p.topk, begin = (long long)b * kSortChunk;
  if (b == 0) block_table(p, start, end, local_id, total);
  if (i % p.parts == b)
    for (int r = start + mine; r < end; ++r) p.sorted[r] = int(pairs);
  for (long long r = total + (long long)b * kSortThreads + i; r < p.rows; r += (long long)p.parts * kSortThreads)
    p.sorted[r] = int(pairs);
  next[i] = start + before;
  sync_block();
  scatter_pairs(p, begin, begin + kSortChunk < pairs ? begin + kSortChunk : pairs, next);
}

}  // namespace

#define ROUTE(PER) AITER_ENTRY(aiter_moe_route_##PER, kRouteThreads, RoutingParams, route_token<PER>)
ROUTE(1) ROUTE(2) ROUTE(4) ROUTE(8) ROUTE(16) ROUTE(32)
AITER_ENTRY(aiter_moe_sort, kSortThreads, SortingParams, sort_pairs)
AITER_ENTRY(aiter_moe_sort_count, kSortThreads, SortingParams, sort_count)
AITER_ENTRY(aiter_moe_sort_scatter, kSortThreads, SortingParams, sort_scatter)

// Variant names: the slots a lane (experts <= 32 * slots); the dtypes are a parameter.
// aiter-kernel-family: op=moe_route variant={per} symbol=aiter_moe_route_{per} block=128 smem=0 per=1,2,4,8,16,32
// aiter-kernel: op=moe_sort variant=any symbol=aiter_moe_sort block=1024 smem=0
// aiter-kernel: op=moe_sort_count variant=any symbol=aiter_moe_sort_count block=1024 smem=0
// aiter-kernel: op=moe_sort_scatter variant=any symbol=aiter_moe_sort_scatter block=1024 smem=0
