/*
 * The kernels of the CUDA sampler (sample_cuda.cu, which alone includes this file, says how a
 * hop runs them): count, the read schedule's sort keys, sample, and the relabelling (insert,
 * the first-appearance scan's input, finalize), with the constants they share. CUDA only.
 */
#ifndef GD_SAMPLE_KERNELS_CUH
#define GD_SAMPLE_KERNELS_CUH

#include "core/dev_error.h"
#include "internal.h"
#include "list_read.cuh"
#include "table_insert.cuh"

#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <limits.h>
#include <stdint.h>

namespace cg = cooperative_groups;

#define BLOCK 256
/* The smallest relabelling table (slots); the CPU sampler starts from the same size. */
#define MIN_TABLE 64

/*
 * When a node's list is read whole instead of entry by entry. Over PCIe the cost of a read is
 * mostly the request, not its bytes: the GPU sends at most about 1G read requests a second, and
 * a scattered read of one 4-byte entry is a whole 32-byte sector request, so drawing `cnt`
 * entries from a long list costs `cnt` requests. A list that spans at most
 * WHOLE_LIST_BYTES_PER_PICK bytes per neighbour taken (degree <= 8 x cnt with int32 indices,
 * 4 x cnt with int64) is instead read whole by the node's lanes with 16-byte loads of
 * consecutive addresses (one load of a group of 8 lanes covers 128 bytes, a full request),
 * kept in the group's window in shared memory, and the chosen entries are picked from there.
 * At 32 bytes per pick the whole list spans no more sectors than the scattered reads would
 * touch, so the bytes read do not grow (reads stay O(fanout) per node) while the requests drop
 * from `cnt` to about cnt / 4 + 1. Longer lists (hubs) keep the scattered reads. Lists taken
 * whole (fanout -1, or degree <= fanout) are always read this way, straight into the output.
 * The rule depends only on the degree and the count, so every placement picks the same entries
 * (the window holds exact copies): only the reads change, never the result.
 */
#define WHOLE_LIST_BYTES_PER_PICK GD__WHOLE_LIST_BYTES_PER_PICK

/*
 * The kinds of seed error a kernel records (core/dev_error.h); the record's values are the
 * position, the seed and, for a duplicate, the seed's first position.
 */
enum { ERR_RANGE = 1, ERR_DUPLICATE = 2 };

/* ------------------------------------------------------------------ kernels */

/*
 * Slots of the relabelling table of a hop with P positions: the next power of two at or above
 * 2P (load at most one half), at least MIN_TABLE, at most the worst case sized at create time.
 * Sizing by the actual positions keeps the table small (often inside L2) and makes clearing it
 * cheap.
 */
__device__ __forceinline__ long long table_slots(long long P, long long cap) {
    const unsigned long long x = 2ull * (unsigned long long)P;
    long long t =
        x <= MIN_TABLE ? MIN_TABLE : (long long)(1ull << (64 - __clzll((long long)(x - 1))));
    return t < cap ? t : cap;
}

/*
 * counts[i] = neighbours of frontier node i (0 past the frontier, up to items), and its list
 * location (feature/tier.h: from the map loc with the hot-list cache, else in the home tier at
 * indptr[v]) and degree for the sample
 * kernel, stored at the node's slot of the read schedule: slot t reads node order[t] (with order
 * NULL, node t). With a sorted schedule, consecutive threads read the indptr entries of nodes in
 * increasing id order; the slots past the frontier hold the positions past it (see
 * sort_keys_kernel), and slot items - 1 is position items - 1. Hop 0 takes its frontier size (the
 * seed count) as an argument and stores it for the later kernels; later hops read it. Every hop
 * checks the range of its nodes (only seeds from device memory can be bad); the first one reports a
 * bad seed. The kernel also clears the table slots the previous hop (of this call or of the
 * sampler's previous call) used, which nothing reads any more: the previous hop's finalize has run
 * (or, with clear_all, the first clear_all slots).
 */
__global__ void __launch_bounds__(BLOCK)
    count_kernel(const long long *__restrict__ nodes, long long *sizes, int hop, long long seeds,
                 const long long *__restrict__ indptr, const long long *__restrict__ loc,
                 int home, long long num_nodes, int fanout, int replace, int vec,
                 const int *__restrict__ order, long long *__restrict__ starts,
                 long long *__restrict__ degs, int *__restrict__ counts, long long items,
                 gd__dev_error *err, unsigned long long *keys, int *vals,
                 const long long *__restrict__ dirty, long long clear_all) {
    const long long nf = hop == 0 ? seeds : sizes[hop];
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (hop == 0 && tid == 0) sizes[0] = seeds;
    const long long used = clear_all ? clear_all : *dirty;
    for (long long i = tid; i < used; i += stride) {
        keys[i] = GD__TABLE_EMPTY;
        vals[i] = INT_MAX;
    }
    for (long long t = tid; t < items; t += stride) {
        const long long i = order && t + 1 < items ? (long long)order[t] : t;
        int c = 0;
        if (t < nf) {
            const long long v = nodes[i];
            long long start = 0, end = 0;
            if (v < 0 || v >= num_nodes) {
                /* A bad device seed stays in the frontier of every hop as a node without
                 * neighbours; the first hop reports it. */
                if (hop == 0) gd__dev_error_record(err, ERR_RANGE, i, v, 0);
            } else {
                gd__read_indptr(indptr, v, vec, &start, &end);
            }
            /* The start is the list's location: from the map with the hot-list cache, else
             * the offset into the home tier's indices. */
            starts[t] = loc && end > start ? __ldg(loc + v) : gd__loc_make(home, start);
            degs[t] = end - start;
            c = (int)gd__sample_count(end - start, fanout, replace);
        }
        counts[i] = c;
    }
}

/*
 * The keys of the read schedule's sort: slot t of [0, items) gets frontier position t and its
 * node id as key, or num_nodes for a position past the frontier (items is the worst case) and
 * for a bad device seed. Sorted stably by key, the positions of the frontier come first (a key of
 * num_nodes is only ever the largest, and among equal keys the frontier's smaller positions stay
 * first), so the slots [0, nf) of the sorted order are exactly the frontier, by increasing node
 * id, and indptr and the lists (whose starts grow with the node id) are read in address order.
 */
template <typename KeyT>
__global__ void __launch_bounds__(BLOCK)
    sort_keys_kernel(const long long *__restrict__ nodes, const long long *__restrict__ sizes,
                     int hop, long long seeds, long long num_nodes, KeyT *__restrict__ keys,
                     int *__restrict__ order, long long items) {
    const long long nf = hop == 0 ? seeds : sizes[hop];
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < items; t += stride) {
        const long long v = t < nf ? nodes[t] : -1;
        keys[t] = (KeyT)(v >= 0 && v < num_nodes ? v : num_nodes);
        order[t] = (int)t;
    }
}

/* Entries [start, start + len) of a list into dst[0 .. len), by the G lanes of a group. */
template <int G, typename IdxT, typename DstT>
__device__ __forceinline__ void read_list(const IdxT *__restrict__ indices, long long num_edges,
                                          long long start, long long len, int lane, DstT *dst) {
    gd__read_list<G>(indices, num_edges, start, len, lane,
                     [dst](long long k, IdxT e) { dst[k] = (DstT)e; });
}

/*
 * The node at schedule slot t of a sample kernel: frontier node i = order[t] (order NULL: i = t),
 * its neighbours' offset and count in the block, and, from slot t, its degree and its list. A list
 * lives in the hot-list cache, a peer GPU's cache or indices (pinned or GPU memory), as the tier
 * of its location says (feature/tier.h); only the base pointer differs. A node with no neighbours
 * to take (cnt 0) gets no list.
 */
struct slot_node {
    long long i, deg;
    int off, cnt;
    int64_t list_n, start; /* entries of the list's tier, and where the list starts in it */
    const void *list;      /* the tier's base */
};

__device__ __forceinline__ slot_node node_at_slot(long long t, const int *__restrict__ order,
                                                  const int *__restrict__ bindptr,
                                                  const long long *__restrict__ starts,
                                                  const long long *__restrict__ degs,
                                                  gd__tier_bases tiers) {
    slot_node n;
    n.i = order ? (long long)order[t] : t;
    n.off = bindptr[n.i];
    n.cnt = bindptr[n.i + 1] - n.off;
    n.deg = 0;
    n.list_n = n.start = 0;
    n.list = NULL;
    if (n.cnt == 0) return n;
    n.deg = degs[t];
    n.list = gd__tier_base_of(tiers, starts[t], &n.start, &n.list_n);
    return n;
}

/*
 * The neighbours of frontier node i, by a group of G lanes; the group at schedule slot t takes
 * node i = order[t] (order NULL: i = t) and its list start and degree from slot t (see sample_node
 * in sample_cpu.c for the sequential statement of the same draws). Control flow depends only on the
 * node, so it is uniform within a group and the group's collectives (shfl, any, sync) are safe. A
 * list read whole goes to the group's window in shared memory: WHOLE_LIST_BYTES_PER_PICK bytes per
 * lane, which holds every list that qualifies (degree * entry size <= WHOLE_LIST_BYTES_PER_PICK *
 * min(cnt, G)). A list lives in the hot-list cache or in indices (pinned or GPU memory), as the
 * tier of its location says (feature/tier.h); only the base pointer differs. The group syncs after
 * filling the window (every lane picks from any part of it) and after picking (before its next node
 * overwrites it).
 */
template <int G, typename IdxT>
__global__ void __launch_bounds__(BLOCK)
    sample_kernel(unsigned long long key, unsigned hop, int fanout, int replace,
                  const long long *__restrict__ nodes, const long long *__restrict__ nf_ptr,
                  const int *__restrict__ order, const long long *__restrict__ starts,
                  const long long *__restrict__ degs, const int *__restrict__ bindptr,
                  gd__tier_bases tiers, long long *__restrict__ edge_ids,
                  long long *pos_scratch) {
    __shared__ __align__(16) unsigned char windows[BLOCK * WHOLE_LIST_BYTES_PER_PICK];
    const cg::thread_block_tile<G> tile = cg::tiled_partition<G>(cg::this_thread_block());
    const int lane = (int)tile.thread_rank();
    IdxT *win = (IdxT *)(windows + (threadIdx.x / G) * (G * WHOLE_LIST_BYTES_PER_PICK));
    const long long nf = *nf_ptr;
    const long long groups = (long long)gridDim.x * (blockDim.x / G);
    for (long long t = (long long)blockIdx.x * (blockDim.x / G) + threadIdx.x / G; t < nf;
         t += groups) {
        const slot_node nd = node_at_slot(t, order, bindptr, starts, degs, tiers);
        const long long i = nd.i, deg = nd.deg, start = nd.start, list_n = nd.list_n;
        const int off = nd.off, cnt = nd.cnt;
        if (cnt == 0) continue;
        const IdxT *const list = (const IdxT *)nd.list;
        long long *out = edge_ids + off;
        if (gd__sample_takes_all(deg, cnt, fanout, replace)) {
            read_list<G>(list, list_n, start, (long long)cnt, lane, out);
            continue;
        }
        const unsigned long long v = (unsigned long long)nodes[i];
        const bool whole = gd__sample_reads_whole(deg, cnt, fanout, replace, sizeof(IdxT));
        if (replace) {
            if (whole) {
                read_list<G>(list, list_n, start, deg, lane, win);
                tile.sync();
            }
            for (int j = lane; j < cnt; j += G) {
                const long long p =
                    (long long)gd__sample_draw(key, v, hop, (unsigned)j, (unsigned long long)deg);
                out[j] = whole ? (long long)win[p] : (long long)__ldg(list + start + p);
            }
            if (whole) tile.sync();
            continue;
        }
        const long long base = deg - cnt;
        if (cnt <= G) {
            /* Lane j draws t_j; step j takes t_j unless an earlier step took it. */
            long long t = 0, c = 0;
            if (lane < cnt)
                t = (long long)gd__sample_draw(key, v, hop, (unsigned)lane,
                                               (unsigned long long)(base + lane + 1));
            for (int j = 0; j < cnt; j++) {
                const long long tj = tile.shfl(t, j);
                const bool hit = tile.any(lane < j && c == tj);
                if (lane == j) c = hit ? base + j : tj;
            }
            if (whole) {
                read_list<G>(list, list_n, start, deg, lane, win);
                tile.sync();
                if (lane < cnt) out[lane] = (long long)win[c];
                tile.sync();
            } else if (lane < cnt) {
                out[lane] = (long long)__ldg(list + start + c);
            }
            continue;
        }
        /* More draws than lanes: the positions taken so far live in scratch memory. */
        long long *pos = pos_scratch + off;
        for (int j0 = 0; j0 < cnt; j0 += G) {
            const int jl = j0 + lane;
            const long long t =
                jl < cnt ? (long long)gd__sample_draw(key, v, hop, (unsigned)jl,
                                                      (unsigned long long)(base + jl + 1))
                         : 0;
            const int jend = j0 + G < cnt ? j0 + G : cnt;
            for (int j = j0; j < jend; j++) {
                const long long tj = tile.shfl(t, j - j0);
                bool hit = false;
                for (int q = lane; q < j; q += G) hit |= pos[q] == tj;
                hit = tile.any(hit);
                if (lane == j - j0) pos[j] = hit ? base + j : tj;
                tile.sync();
            }
        }
        if (whole) {
            read_list<G>(list, list_n, start, deg, lane, win);
            tile.sync();
        }
        for (int j = lane; j < cnt; j += G)
            out[j] = whole ? (long long)win[pos[j]] : (long long)__ldg(list + start + pos[j]);
        if (whole) tile.sync();
    }
}

/* The position of the n-th (from 0) set bit of mask, which has more than n set bits. */
__device__ __forceinline__ int nth_set_bit(unsigned mask, int n) {
    for (int k = 0; k < n; k++) mask &= mask - 1;
    return __ffs((int)mask) - 1;
}

/* Whether entry p (< deg) of a list is a buffered node (bit set in the sampler's bitmap). */
template <typename IdxT>
__device__ __forceinline__ bool entry_buffered(const unsigned char *__restrict__ bitmap,
                                               const IdxT *__restrict__ at, long long p) {
    return gd__bias_bit(bitmap, (int64_t)__ldg(at + p)) != 0;
}

/*
 * Biased (locality-aware) sampling, docs/sampling.md "Biased sampling": the neighbours of
 * frontier node i by one warp, the statement of sample_node_biased in sample_cpu.c. The group at
 * schedule slot t takes node i = order[t] (order NULL: i = t) and its list start and degree from
 * slot t, as sample_kernel does. Lists taken whole are read as there. Otherwise the warp counts
 * the buffered entries of the list (a ballot per 32 entries), lane 0 runs the draws
 * (gd__bias_draws, the same code as the CPU's) into pos_scratch, with the node's part of
 * edge_ids as its sorted scratch, and a second pass over the list, 32 entries at a time, gives
 * every draw its entry: the ballots of the buffered and of the other entries of a chunk say
 * which ranks of each class it holds, and the lane of draw j reads the entry whose rank is j's.
 * Control flow depends only on the node, so it is uniform within the warp; the sync after the
 * draws orders lane 0's writes before the other lanes read the codes and overwrite the scratch.
 */
template <typename IdxT>
__global__ void __launch_bounds__(BLOCK)
    bias_sample_kernel(unsigned long long key, unsigned hop, int fanout, int replace,
                       long long factor, const unsigned char *__restrict__ bitmap,
                       const long long *__restrict__ nodes, const long long *__restrict__ nf_ptr,
                       const int *__restrict__ order, const long long *__restrict__ starts,
                       const long long *__restrict__ degs, const int *__restrict__ bindptr,
                       gd__tier_bases tiers, long long *edge_ids, long long *pos_scratch) {
    const cg::thread_block_tile<32> tile = cg::tiled_partition<32>(cg::this_thread_block());
    const int lane = (int)tile.thread_rank();
    const long long nf = *nf_ptr;
    const long long groups = (long long)gridDim.x * (blockDim.x / 32);
    for (long long t = (long long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; t < nf;
         t += groups) {
        const slot_node nd = node_at_slot(t, order, bindptr, starts, degs, tiers);
        const long long deg = nd.deg;
        const int cnt = nd.cnt;
        if (cnt == 0) continue;
        const IdxT *const list = (const IdxT *)nd.list;
        const IdxT *const at = list + nd.start;
        long long *out = edge_ids + nd.off;
        if (gd__sample_takes_all(deg, cnt, fanout, replace)) {
            read_list<32>(list, nd.list_n, nd.start, (long long)cnt, lane, out);
            continue;
        }
        long long c = 0;
        for (long long b = 0; b < deg; b += 32)
            c += __popc(tile.ballot(b + lane < deg && entry_buffered(bitmap, at, b + lane)));
        int64_t *const codes = reinterpret_cast<int64_t *>(pos_scratch + nd.off);
        if (lane == 0)
            gd__bias_draws(key, hop, replace, factor, nodes[nd.i], deg, c, cnt, codes,
                           replace ? NULL : reinterpret_cast<int64_t *>(out));
        tile.sync();
        /* Ranks below rb (buffered) and ro (others) lie in the chunks already passed. */
        long long rb = 0, ro = 0;
        for (long long b = 0; b < deg; b += 32) {
            const bool in = b + lane < deg;
            const bool buf = in && entry_buffered(bitmap, at, b + lane);
            const unsigned mb = tile.ballot(buf), mo = tile.ballot(in && !buf);
            const int nb = __popc(mb), no = __popc(mo);
            for (int j = lane; j < cnt; j += 32) {
                const long long code = (long long)codes[j];
                const bool is_buf = code < GD__BIAS_OTHER;
                const long long r = is_buf ? code - rb : code - GD__BIAS_OTHER - ro;
                if (r >= 0 && r < (is_buf ? nb : no))
                    out[j] = (long long)__ldg(at + b + nth_set_bit(is_buf ? mb : mo, (int)r));
            }
            rb += nb;
            ro += no;
        }
    }
}

/*
 * Every position p of the hop (frontier nodes, then edges) records itself in its node's slot, in a
 * table of table_slots(P) slots (the first part of the table memory, clear at this point).
 */
__global__ void __launch_bounds__(BLOCK)
    insert_kernel(const long long *__restrict__ nodes, const long long *__restrict__ nf_ptr,
                  const int *__restrict__ bindptr, const long long *__restrict__ edge_ids,
                  unsigned long long *keys, int *vals, long long cap, int *__restrict__ slots,
                  long long items) {
    const long long nf = *nf_ptr;
    const long long P = nf + bindptr[nf];
    const unsigned long long mask = (unsigned long long)table_slots(P, cap) - 1;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x; p < items && p < P;
         p += stride) {
        const long long key = p < nf ? nodes[p] : edge_ids[p - nf];
        const unsigned long long slot = gd__table_insert(keys, mask, (unsigned long long)key);
        /* Minimums only decrease, so a stale read that is already <= p is safe to trust. */
        if (*(volatile int *)&vals[slot] > (int)p) atomicMin(&vals[slot], (int)p);
        slots[p] = (int)slot;
    }
}

/*
 * The input of the local-id scan: 1 where position p is its node's first appearance (it holds its
 * node's minimum), 0 past the hop's positions. Computed inside the scan, so no kernel writes and no
 * kernel reads an array of marks.
 */
struct first_appearance {
    const long long *nf_ptr;
    const int *bindptr, *vals, *slots;
    __device__ int operator()(int p) const {
        const long long nf = *nf_ptr;
        return (long long)p < nf + bindptr[nf] && vals[slots[p]] == p;
    }
};

typedef thrust::transform_iterator<first_appearance, thrust::counting_iterator<int>> first_iter;

static first_iter first_marks(const long long *nf_ptr, const int *bindptr, const int *vals,
                              const int *slots) {
    const first_appearance f = {nf_ptr, bindptr, vals, slots};
    return first_iter(thrust::counting_iterator<int>(0), f);
}

/*
 * Local ids of the edges, the new source nodes appended to the node list, and the sizes. Hop 0
 * also reports a repeated seed (a destination position that is not its node's first appearance).
 * Thread 0 records how much of the table this hop used, for the next count kernel to clear.
 */
__global__ void __launch_bounds__(BLOCK)
    finalize_kernel(long long *nodes, long long *sizes, int hop, const int *__restrict__ bindptr,
                    const long long *__restrict__ edge_ids,
                    const unsigned long long *__restrict__ keys, const int *__restrict__ vals,
                    const int *__restrict__ slots, const int *__restrict__ scan,
                    int *__restrict__ bindices, long long items, long long cap, long long *dirty,
                    gd__dev_error *err) {
    const long long nf = sizes[hop];
    const long long ne = bindptr[nf];
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (long long j = tid; j < items && j < ne; j += stride) {
        const int first = vals[slots[nf + j]];
        bindices[j] = scan[first];
        if (first == (int)(nf + j)) nodes[scan[nf + j]] = edge_ids[j];
    }
    /* The id comes from the table: with repeated seeds, new nodes may be written over the
     * frontier's part of nodes by the loop above. */
    if (hop == 0)
        for (long long p = tid; p < nf; p += stride) {
            const int first = vals[slots[p]];
            if (first != (int)p)
                gd__dev_error_record(err, ERR_DUPLICATE, p, (long long)keys[slots[p]], first);
        }
    if (tid == 0) {
        sizes[GD__SIZES_EDGES + hop] = ne;
        *dirty = table_slots(nf + ne, cap);
        /* Written last by thread 0, read by the next hop's kernels only (stream order). */
        sizes[hop + 1] = scan[nf + ne];
    }
}

#endif /* GD_SAMPLE_KERNELS_CUH */
