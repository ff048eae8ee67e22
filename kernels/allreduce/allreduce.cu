// The custom all-reduce (aiter_custom_all_reduce) and its fusion with residual
// add + RMSNorm (+ per-row quantization), over buffers every rank maps.
//
// push (one-shot, small messages, and the fused op): every rank writes its x
//   straight into its slot of every peer's push area (allreduce_params.h) and
//   sums what the peers pushed into its own as it arrives.  No flag and no
//   barrier: an empty slot holds a word no message holds, so the data is its own
//   signal; the receiver empties the slot after reading it.  Two stages,
//   alternating by call: a peer writes a stage again only two calls later, after
//   this rank's next call has pushed to it, i.e. after this call ended.
// one-shot (pull) and two-shot, for larger messages: each call first copies this
//   rank's x into its own buffer (so the input can live anywhere and a captured
//   graph replays with new contents), then
//     one-shot: every rank sums every peer's copy (reads world x n elements);
//     two-shot: rank r sums shard r of every peer's copy into its reduced area,
//               then gathers the other shards from the peers' reduced areas.
// Sums are in fp32, in rank order 0, 1, ..., world - 1 on every rank, so the
// ranks' results are bitwise identical.
//
// The pull kernels' barriers are per block: block b of every rank handles the
// same elements in every phase, so block b only waits for block b of the peers
// (flags in ArSignals).  Their end barrier keeps a rank from overwriting its
// buffer in its next call while a peer still reads it: a rank's next kernel
// starts only after all its blocks passed it, i.e. after every peer's block
// finished reading from this rank.
#include "../common/numeric.h"
#include "../common/quant_store.h"
#include "allreduce_params.h"
#include "ar_sync.h"

namespace {

__device__ __forceinline__ ArSignals *signals(char *buf) { return reinterpret_cast<ArSignals *>(buf); }

// bufs[i] for an i known only at run time, by selects: indexing the kernel's
// by-value argument with a run-time index copies it to local memory.
__device__ __forceinline__ char *pick(char *const (&bufs)[kArMaxRanks], int i) {
  char *b = bufs[0];
#pragma unroll
  for (int k = 1; k < kArMaxRanks; ++k) b = i == k ? bufs[k] : b;
  return b;
}

template <class T>
__device__ __forceinline__ T *input_area(char *buf) {
  return reinterpret_cast<T *>(buf + kArDataOffset);
}

// This call's number for block b: one more than its last (read before the first barrier).
__device__ __forceinline__ unsigned next_epoch(char *own) { return signals(own)->epochs[block_x()] + 1; }

// The block's writes (and reads) so far are done; tell every peer's block b.
template <class P>
__device__ __forceinline__ void arrive(const P &p, int slot, unsigned epoch) {
  sync_block();
  const unsigned t = thread_x();
  if (t < unsigned(p.world)) flag_store(&signals(pick(p.bufs, int(t)))->flags[block_x()][slot][p.rank], epoch);
}

// Every peer's block b has arrived at `slot` of this call: their earlier writes are visible.
template <class P>
__device__ __forceinline__ void await(const P &p, int slot, unsigned epoch) {
  const unsigned t = thread_x();
  if (t < unsigned(p.world)) wait_flag(&signals(pick(p.bufs, p.rank))->flags[block_x()][slot][t], epoch);
  sync_block();
}

template <class P>
__device__ __forceinline__ void finish(const P &p, unsigned epoch) {
  arrive(p, kArEnd, epoch);
  await(p, kArEnd, epoch);
  if (thread_x() == 0) signals(pick(p.bufs, p.rank))->epochs[block_x()] = epoch;
}

// Vector u of n elements at src: one 16-byte load where src is aligned and the
// vector whole, else element by element (zeros past n).
template <class T, int N>
__device__ __forceinline__ Vec<T, N> load_unit(const T *src, long long u, long long n, int aligned) {
  const long long base = u * N;
  if (aligned && base + N <= n) return load_vec<T, N>(src + base);
  Vec<T, N> v;
#pragma unroll
  for (int i = 0; i < N; ++i) v.v[i] = base + i < n ? src[base + i] : T{};
  return v;
}

template <class T, int N>
__device__ __forceinline__ void store_unit(T *dst, long long u, long long n, int aligned, const Vec<T, N> &v) {
  const long long base = u * N;
  if (aligned && base + N <= n) {
    *reinterpret_cast<Vec<T, N> *>(dst + base) = v;
    return;
  }
#pragma unroll
  for (int i = 0; i < N; ++i)
    if (base + i < n) dst[base + i] = v.v[i];
}

// The sum of the ranks' parts, in rank order, rounded to T.
template <class T, int N>
__device__ __forceinline__ Vec<T, N> sum_parts(const Vec<T, N> (&parts)[kArMaxRanks], int world) {
  float acc[N];
#pragma unroll
  for (int i = 0; i < N; ++i) acc[i] = to_f32(parts[0].v[i]);
#pragma unroll
  for (int r = 1; r < kArMaxRanks; ++r)
    if (r < world)
#pragma unroll
      for (int i = 0; i < N; ++i) acc[i] += to_f32(parts[r].v[i]);
  Vec<T, N> out;
#pragma unroll
  for (int i = 0; i < N; ++i) out.v[i] = from_f32<T>(acc[i]);
  return out;
}

// The sum over the ranks of vector u of their input areas.
template <class T, int N>
__device__ __forceinline__ Vec<T, N> sum_unit(char *const (&bufs)[kArMaxRanks], int world, long long u) {
  Vec<T, N> parts[kArMaxRanks];
#pragma unroll
  for (int r = 0; r < kArMaxRanks; ++r)
    if (r < world) parts[r] = load_vec<T, N>(input_area<T>(bufs[r]) + u * N);
  return sum_parts<T, N>(parts, world);
}

template <class T, int N>
__device__ void one_shot(const AllReduceParams &p) {
  const unsigned epoch = next_epoch(pick(p.bufs, p.rank));
  const long long units = (p.n + N - 1) / N, first = (long long)block_x() * block_dim_x() + thread_x();
  const long long step = (long long)grid_dim_x() * block_dim_x();
  T *mine = input_area<T>(pick(p.bufs, p.rank));
  const T *x = static_cast<const T *>(p.x);
  for (long long u = first; u < units; u += step)
    *reinterpret_cast<Vec<T, N> *>(mine + u * N) = load_unit<T, N>(x, u, p.n, p.x_aligned);
  arrive(p, kArStart, epoch);
  await(p, kArStart, epoch);
  for (long long u = first; u < units; u += step)
    store_unit<T, N>(static_cast<T *>(p.out), u, p.n, p.out_aligned, sum_unit<T, N>(p.bufs, p.world, u));
  finish(p, epoch);
}

template <class T, int N>
__device__ void two_shot(const AllReduceParams &p) {
  const unsigned epoch = next_epoch(pick(p.bufs, p.rank));
  const long long units = (p.n + N - 1) / N, first = (long long)block_x() * block_dim_x() + thread_x();
  const long long step = (long long)grid_dim_x() * block_dim_x(), shard = p.shard_units;
  T *mine = input_area<T>(pick(p.bufs, p.rank));
  const T *x = static_cast<const T *>(p.x);
  T *out = static_cast<T *>(p.out);
  // Block b copies, reduces and gathers the same offsets u of every shard.
  for (long long u = first; u < shard; u += step)
    for (int s = 0; s < p.world; ++s) {
      const long long g = s * shard + u;
      if (g < units) *reinterpret_cast<Vec<T, N> *>(mine + g * N) = load_unit<T, N>(x, g, p.n, p.x_aligned);
    }
  arrive(p, kArStart, epoch);
  await(p, kArStart, epoch);
  T *reduced = reinterpret_cast<T *>(pick(p.bufs, p.rank) + p.reduced_offset);
  for (long long u = first; u < shard; u += step) {
    const long long g = p.rank * shard + u;
    if (g >= units) break;
    const Vec<T, N> sum = sum_unit<T, N>(p.bufs, p.world, g);
    *reinterpret_cast<Vec<T, N> *>(reduced + g * N) = sum;
    store_unit<T, N>(out, g, p.n, p.out_aligned, sum);
  }
  arrive(p, kArMid, epoch);
  await(p, kArMid, epoch);
  for (long long u = first; u < shard; u += step)
    for (int s = 0; s < p.world; ++s) {
      const long long g = s * shard + u;
      if (s == p.rank || g >= units) continue;
      const T *theirs = reinterpret_cast<const T *>(pick(p.bufs, s) + p.reduced_offset);
      store_unit<T, N>(out, g, p.n, p.out_aligned, load_vec<T, N>(theirs + g * N));
    }
  finish(p, epoch);
}


// ---- push: no barrier ----------------------------------------------------------

template <class T, int N>
__device__ __forceinline__ uint4 as_words(const Vec<T, N> &v) {
  static_assert(sizeof(Vec<T, N>) == sizeof(uint4), "16-byte vectors");
  return reinterpret_cast<const uint4 &>(v);
}
template <class T, int N>
__device__ __forceinline__ Vec<T, N> from_words(const uint4 &w) {
  return reinterpret_cast<const Vec<T, N> &>(w);
}
// What this rank sends and sums as its own part: kArPushEmpty words as 0, the
// same value (-0.0f as +0.0f; a 16-bit pair (+0, -0) as (+0, +0)).
__device__ __forceinline__ uint4 sendable(uint4 w) {
  w.x = w.x == kArPushEmpty ? 0u : w.x;
  w.y = w.y == kArPushEmpty ? 0u : w.y;
  w.z = w.z == kArPushEmpty ? 0u : w.z;
  w.w = w.w == kArPushEmpty ? 0u : w.w;
  return w;
}

// The push calls before this one; their parity is this call's stage (0 or 1).
__device__ __forceinline__ unsigned push_calls_before(char *own) { return counter_load(&signals(own)->push_calls); }

// Vector u of sender's slot of `stage` in buffer buf.
__device__ __forceinline__ uint4 *push_slot(char *buf, const PushLayout &l, int world, unsigned stage, int sender,
                                            long long u) {
  return reinterpret_cast<uint4 *>(buf + l.offset + ((long long)stage * world + sender) * l.slot_bytes) + u;
}

// Writes this rank's vector u into its slot of every peer's stage.
template <class P>
__device__ __forceinline__ void push_to_peers(const P &p, unsigned stage, long long u, const uint4 &w) {
#pragma unroll
  for (int q = 0; q < kArMaxRanks; ++q)
    if (q < p.world && q != p.rank) *push_slot(p.bufs[q], p.push, p.world, stage, p.rank, u) = w;
}

// The sum of vector u over the ranks, as sum_parts adds them: this rank's own
// part `mine`, the peers' as they arrive in this rank's stage.  Preload: read
// every peer's at once first, so that the loads overlap (16 more registers a
// peer: not for the fused kernel's 1024-thread blocks), then wait one by one
// where not all there.
template <class T, int N, bool Preload, class P>
__device__ __forceinline__ Vec<T, N> sum_pushed(const P &p, char *own, unsigned stage, long long u, const uint4 &mine) {
  uint4 got[kArMaxRanks];
  if (Preload) {
#pragma unroll
    for (int q = 0; q < kArMaxRanks; ++q)
      if (q < p.world && q != p.rank) got[q] = load_words_volatile(push_slot(own, p.push, p.world, stage, q, u));
  }
  float acc[N];
#pragma unroll
  for (int q = 0; q < kArMaxRanks; ++q) {
    if (q >= p.world) break;
    uint4 *slot = push_slot(own, p.push, p.world, stage, q, u);
    const Vec<T, N> part =
        from_words<T, N>(q == p.rank ? mine : take_pushed(slot, Preload ? got[q] : load_words_volatile(slot)));
#pragma unroll
    for (int i = 0; i < N; ++i) acc[i] = q == 0 ? to_f32(part.v[i]) : acc[i] + to_f32(part.v[i]);
  }
  Vec<T, N> out;
#pragma unroll
  for (int i = 0; i < N; ++i) out.v[i] = from_f32<T>(acc[i]);
  return out;
}

// The block is done with call number `calls`; the last block of the grid moves
// the next call to the other stage (the next kernel sees it: stream order).
__device__ __forceinline__ void push_done(char *own, unsigned calls) {
  sync_block();  // every thread of the block has read the count
  if (thread_x() != 0) return;
  ArSignals *s = signals(own);
  if (counter_add(&s->push_arrived) + 1 == grid_dim_x()) {
    s->push_arrived = 0;
    s->push_calls = calls + 1;
  }
}

template <class T, int N>
__device__ void push_all_reduce(const AllReduceParams &p) {
  char *own = pick(p.bufs, p.rank);
  const unsigned calls = push_calls_before(own), stage = calls & 1u;
  const long long units = (p.n + N - 1) / N, first = (long long)block_x() * block_dim_x() + thread_x();
  const long long step = (long long)grid_dim_x() * block_dim_x();
  const T *x = static_cast<const T *>(p.x);
  for (long long u = first; u < units; u += step)
    push_to_peers(p, stage, u, sendable(as_words(load_unit<T, N>(x, u, p.n, p.x_aligned))));
  // x is read again (not kept from the loop above, which may cover several
  // vectors a thread) before out, which may be x, is written.
  for (long long u = first; u < units; u += step) {
    const uint4 mine = sendable(as_words(load_unit<T, N>(x, u, p.n, p.x_aligned)));
    store_unit<T, N>(static_cast<T *>(p.out), u, p.n, p.out_aligned, sum_pushed<T, N, true>(p, own, stage, u, mine));
  }
  push_done(own, calls);
}

// ---- all-reduce + residual add + RMSNorm (+ quantization) ---------------------
// Thread t holds chunk t of a row (N elements at t * N), as the norm's few-rows
// kernel (kernels/norm/norm.cu, vec.r1.t1024.prefetch.add[_q]) does with the same
// block size, and does the same arithmetic in the same order: the same values as
// all-reduce then aiter_add_rmsnorm(_quant) when the norm picks that kernel
// (fewer rows than twice the multiprocessors).

template <class T, int N>
__device__ __forceinline__ void load_weights(const AllReduceNormParams &p, long long c, float (&w)[N]) {
  if (p.params_f32) {
#pragma unroll
    for (int i = 0; i < N; i += 4) {
      float part[4];
      load_f32<float, 4>(static_cast<const float *>(p.weight) + c + i, part);
#pragma unroll
      for (int j = 0; j < 4; ++j) w[i + j] = part[j];
    }
  } else {
    load_f32<T, N>(static_cast<const T *>(p.weight) + c, w);
  }
}

// y (0 past the row) stored as T, or quantized with one scale for the row.
template <class T, int N>
__device__ __forceinline__ void store_normed(const AllReduceNormParams &p, long long row, long long c,
                                             const float (&y)[N], float *scratch) {
  if (p.quant == kQuantNone) {
    if (c < p.cols) store_f32<T, N>(static_cast<T *>(p.out) + row * p.cols + c, y);
    return;
  }
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < N; ++i) amax = fmaxf(amax, fabsf(y[i]));
  amax = block_max(amax, scratch);
  const float scale = dynamic_scale(amax, p.quant);
  const float inv = 1.0f / scale;
  if (thread_x() == 0) p.scale_out[row] = scale;
  with_kind(p.quant, [&](auto kind) {
    if (c < p.cols) store_quantized<decltype(kind)::value, N>(static_cast<uint8_t *>(p.out) + row * p.cols + c, y, inv);
  });
}

// The new residual's chunk: the sum rounded to T plus the residual, rounded to T
// (normalized as stored).
template <class T, int N>
__device__ __forceinline__ Vec<T, N> add_residual(const Vec<T, N> &sum, const float (&res)[N]) {
  Vec<T, N> stored;
#pragma unroll
  for (int i = 0; i < N; ++i) stored.v[i] = from_f32<T>(to_f32(sum.v[i]) + res[i]);
  return stored;
}

// A thread's residual and weights chunks (c < cols), loaded before it waits for
// the peers so that the loads' latency overlaps the wait.
template <class T, int N>
struct RowChunk {
  float res[N], w[N];
};
template <class T, int N>
__device__ __forceinline__ RowChunk<T, N> load_row_chunk(const AllReduceNormParams &p, long long row, long long c) {
  RowChunk<T, N> r;
  load_f32<T, N>(static_cast<const T *>(p.residual) + row * p.cols + c, r.res);
  load_weights<T, N>(p, c, r.w);
  return r;
}

// Stores the new residual's chunk (c < cols) and normalizes the row it is part of
// (every thread of the block calls it; w: the weights where c < cols).
template <class T, int N>
__device__ void store_and_normalize(const AllReduceNormParams &p, long long row, const Vec<T, N> &stored,
                                    const float (&w)[N], float *scratch) {
  const long long c = (long long)thread_x() * N;
  float v[N];
  float squares = 0.0f;
  if (c < p.cols) {
    *reinterpret_cast<Vec<T, N> *>(static_cast<T *>(p.residual_out) + row * p.cols + c) = stored;
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = to_f32(stored.v[i]);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = 0.0f;
  }
#pragma unroll
  for (int i = 0; i < N; ++i) squares += v[i] * v[i];
  const float inv_std = fast_rsqrt(block_sum(squares, scratch) * p.inv_cols + p.eps);
  if (c < p.cols) {
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = v[i] * inv_std * w[i] + 0.0f;  // as the norm's (v - mean) * s * w + bias
  }
  store_normed<T, N>(p, row, c, v, scratch);
}

template <class T, int N>
__device__ __forceinline__ uint4 own_chunk(const AllReduceNormParams &p, long long at) {
  return sendable(as_words(load_vec<T, N>(static_cast<const T *>(p.x) + at)));
}

// One shot: every rank pushes its rows to every peer and sums and normalizes every row.
template <class T, int N>
__device__ void all_reduce_norm(const AllReduceNormParams &p) {
  char *own = pick(p.bufs, p.rank);
  const unsigned calls = push_calls_before(own), stage = calls & 1u;
  const long long c = (long long)thread_x() * N;
  for (long long row = block_x(); row < p.rows; row += grid_dim_x())
    if (c < p.cols) push_to_peers(p, stage, (row * p.cols + c) / N, own_chunk<T, N>(p, row * p.cols + c));
  __shared__ float scratch[32];
  for (long long row = block_x(); row < p.rows; row += grid_dim_x()) {
    const long long at = row * p.cols + c;
    Vec<T, N> stored{};
    RowChunk<T, N> in{};
    if (c < p.cols) {
      in = load_row_chunk<T, N>(p, row, c);
      stored = add_residual<T, N>(sum_pushed<T, N, false>(p, own, stage, at / N, own_chunk<T, N>(p, at)), in.res);
    }
    store_and_normalize<T, N>(p, row, stored, in.w, scratch);
  }
  push_done(own, calls);
}

// Two shots, for more rows on more ranks (half the bytes a rank sends on four
// ranks, a quarter on eight): row r is summed by rank r % world from the chunks
// the others push to it; that rank pushes the new residual row back to every
// peer, and every rank normalizes every row.  The same sums, in the same order,
// as the one-shot kernel.  The new residual is sent as sendable() words (-0.0 as
// +0.0), and the owner keeps the same words, so the ranks' results agree.
template <class T, int N>
__device__ void all_reduce_norm_two_shot(const AllReduceNormParams &p) {
  char *own = pick(p.bufs, p.rank);
  const unsigned calls = push_calls_before(own), stage = calls & 1u;
  const long long c = (long long)thread_x() * N;
  for (long long row = block_x(); row < p.rows; row += grid_dim_x()) {
    const int owner = int(row % p.world);
    if (c < p.cols && owner != p.rank) {
      const long long at = row * p.cols + c;
      *push_slot(pick(p.bufs, owner), p.push, p.world, stage, p.rank, at / N) = own_chunk<T, N>(p, at);
    }
  }
  __shared__ float scratch[32];
  for (long long row = block_x(); row < p.rows; row += grid_dim_x()) {
    const int owner = int(row % p.world);
    const long long at = row * p.cols + c;
    Vec<T, N> stored{};
    RowChunk<T, N> in{};
    if (c < p.cols) in = load_row_chunk<T, N>(p, row, c);  // its residual used only where summed here
    if (c < p.cols && owner == p.rank) {
      const uint4 words = sendable(
          as_words(add_residual<T, N>(sum_pushed<T, N, false>(p, own, stage, at / N, own_chunk<T, N>(p, at)), in.res)));
      push_to_peers(p, stage, at / N, words);
      stored = from_words<T, N>(words);
    } else if (c < p.cols) {
      uint4 *slot = push_slot(own, p.push, p.world, stage, owner, at / N);
      stored = from_words<T, N>(take_pushed(slot, load_words_volatile(slot)));
    }
    store_and_normalize<T, N>(p, row, stored, in.w, scratch);
  }
  push_done(own, calls);
}

}  // namespace

#define AITER_ALLREDUCE_KERNELS(tag, T, N)                                                        \
  AITER_ENTRY(aiter_allreduce_##tag##_one_shot, 512, AllReduceParams, one_shot<T, N>)             \
  AITER_ENTRY(aiter_allreduce_##tag##_two_shot, 512, AllReduceParams, two_shot<T, N>)             \
  AITER_ENTRY(aiter_allreduce_##tag##_push, 512, AllReduceParams, push_all_reduce<T, N>)           \
  AITER_ENTRY(aiter_allreduce_norm_##tag, 1024, AllReduceNormParams, all_reduce_norm<T, N>)        \
  AITER_ENTRY(aiter_allreduce_norm_##tag##_two_shot, 1024, AllReduceNormParams, all_reduce_norm_two_shot<T, N>)

AITER_ALLREDUCE_KERNELS(f32, float, 4)
AITER_ALLREDUCE_KERNELS(f16, half_t, 8)
AITER_ALLREDUCE_KERNELS(bf16, bf16_t, 8)

// aiter-kernel-family: op=allreduce variant={dt}.{algo} symbol=aiter_allreduce_{dt}_{algo} block=512 smem=0 dt=f32,f16,bf16 algo=one_shot,two_shot,push
// aiter-kernel-family: op=allreduce_norm variant={dt} symbol=aiter_allreduce_norm_{dt} block=1024 smem=0 dt=f32,f16,bf16
// aiter-kernel-family: op=allreduce_norm variant={dt}.two_shot symbol=aiter_allreduce_norm_{dt}_two_shot block=1024 smem=0 dt=f32,f16,bf16
