/*
 * The CUDA typed (heterogeneous) sampler: the minibatch of hetero.c, the same local ids in the
 * same order and the same blocks, computed on the GPU (docs/sampling.md, "Typed sampling").
 *
 * Where the graph is: gd_hetero_sampler_create copies the dataset's indptr, indices and
 * edge_type arrays to GPU memory, once. gd__hetero_sampler_create may instead name arrays the
 * caller registered in host memory (zero-copy training of a graph that does not fit its GPU
 * budget): the kernels then read those through their mapped device addresses, over UVA, as the
 * homogeneous sampler reads pinned lists; nothing else changes, since every read of the graph
 * goes through the three pointers. A graph whose copied part does not fit the GPU's free memory
 * fails with GD_ERR_NO_MEMORY, naming the bytes and the ways out.
 *
 * One call, all queued on the sampler's own stream, with the sizes kept in device memory (the
 * kernels are launched for the worst case of each step, from the capacities hetero.c computes,
 * and idle threads exit):
 *   clear     the relabelling table (every slot: the table is sized for the whole minibatch)
 *             and the sizes; the seeds (checked on the host) are copied in and inserted with
 *             their local ids
 * then for every hop and, within it, every edge type r in order (as the CPU sampler):
 *   count     each destination node (the nodes of r's destination type known before the hop)
 *             finds its run of type r in its list with two binary searches over edge_type and
 *             counts min(fanout, run); an exclusive scan gives the block's indptr
 *   draw      one thread per destination: the positions of gd__sample_positions (Floyd's
 *             algorithm, or with replacement) under the hop word gd__typed_hop(h, r), then the
 *             neighbours at those positions, in draw order
 *   relabel   the order-free method of the homogeneous sampler (sample_cuda.cu): one hash table
 *             keyed by global id holds, for a node already in the minibatch, its local id
 *             (stored as -id - 1), and for a new one the smallest edge position that drew it
 *             (atomicMin). An edge whose node holds its own position is that node's first
 *             appearance; an exclusive scan of those marks numbers the new nodes of the source
 *             type after its current count, which is exactly the CPU's sequential order (edge
 *             type, destination, draw). finalize writes the block's indices and appends the new
 *             nodes; commit turns the new nodes' entries into local ids and advances the count.
 * The call ends with one small copy of the sizes and waits for it: gd_hetero_sample is
 * synchronous on this backend (the trainer's typed path is synchronous), and the minibatch's
 * arrays are GPU memory (gd_hetero_minibatch_on_device).
 */
#include "core/cuda.h"
#include "internal.h"
#include "sample/hetero.h"
#include "sample/table_insert.cuh"

#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <limits.h>
#include <stdint.h>
#include <string.h>

#define HBLOCK 256

struct gd__hetero_cuda {
    cudaStream_t stream;
    int has_stream;
    int sms;
    /* The graph in GPU memory: one allocation holding indptr, indices and edge_type. */
    void *d_graph;
    const long long *d_indptr;
    const void *d_indices, *d_etype;
    int etype_kind; /* 0: int8, 1: uint8, 2: int16 (the dtypes edge_type.npy may have) */
    /* Scratch, one allocation: per destination its run start and length and its count; per
     * edge its node, table slot and first-appearance scan; the table; the sizes; CUB's. */
    void *d_scratch;
    long long *d_starts, *d_runs;
    int *d_counts;
    long long *d_draws;
    int *d_slots, *d_scan;
    unsigned long long *d_keys;
    int *d_vals;
    long long *d_sizes;
    void *d_cub;
    size_t cub_bytes;
    long long *h_seeds; /* pinned staging of the seeds */
    long long *h_sizes; /* pinned copy of the sizes */
};

/* The sizes array: count[h][t] at h * T + t (h = 0 .. L), then edges[h][r] at edges_at(h, r). */
static int sizes_count(const gd_hetero_sampler_t *s) {
    return (s->num_layers + 1) * s->T + s->num_layers * s->R;
}

static int edges_at(const gd_hetero_sampler_t *s, int h, int r) {
    return (s->num_layers + 1) * s->T + h * s->R + r;
}

static size_t align256(size_t x) {
    return (x + 255) / 256 * 256;
}

static unsigned grid_for(long long items, int sms) {
    const long long cap = (long long)sms * (2048 / HBLOCK);
    long long b = (items + HBLOCK - 1) / HBLOCK;
    if (b < 1) b = 1;
    return (unsigned)(b < cap ? b : cap);
}

/* ------------------------------------------------------------------ device code */

__device__ __forceinline__ int het_etype(const void *et, int kind, long long i) {
    switch (kind) {
    case 0:
        return ((const signed char *)et)[i];
    case 1:
        return ((const unsigned char *)et)[i];
    default:
        return ((const short *)et)[i];
    }
}

/* The first position of [lo, hi) whose edge type is at least r (hetero.c's run_start). */
__device__ long long het_run_start(const void *et, int kind, long long lo, long long hi, int r) {
    while (lo < hi) {
        const long long mid = lo + (hi - lo) / 2;
        if (het_etype(et, kind, mid) < r)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

__device__ __forceinline__ long long het_index(const void *ix, int is32, long long i) {
    return is32 ? (long long)((const int *)ix)[i] : ((const long long *)ix)[i];
}

/* gd__sample_positions (sample_cpu.c), statement for statement, for one thread. */
__device__ void het_positions(unsigned long long key, unsigned hop, int replace, long long v,
                              long long deg, long long cnt, long long *out) {
    if (replace) {
        for (long long j = 0; j < cnt; j++)
            out[j] = (long long)gd__sample_draw(key, (uint64_t)v, hop, (uint32_t)j, (uint64_t)deg);
        return;
    }
    for (long long j = 0; j < cnt; j++) {
        const long long upper = deg - cnt + j;
        const long long t =
            (long long)gd__sample_draw(key, (uint64_t)v, hop, (uint32_t)j, (uint64_t)upper + 1);
        int hit = 0;
        for (long long q = 0; q < j; q++) hit |= out[q] == t;
        out[j] = hit ? upper : t;
    }
}

/* Every table slot empty (value INT_MAX, above every position), the sizes zero but the seeds'. */
__global__ void __launch_bounds__(HBLOCK)
    het_clear_kernel(unsigned long long *keys, int *vals, long long cap, long long *sizes,
                     int nsizes, int seeds_at, long long seeds) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (long long i = tid; i < cap; i += stride) {
        keys[i] = GD__TABLE_EMPTY;
        vals[i] = INT_MAX;
    }
    if (tid < nsizes) sizes[tid] = tid == seeds_at ? seeds : 0;
}

/* Seed i (distinct: checked on the host) has local id i. */
__global__ void __launch_bounds__(HBLOCK)
    het_seed_kernel(const long long *__restrict__ seeds, long long n, unsigned long long *keys,
                    int *vals, unsigned long long mask) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const unsigned long long slot = gd__table_insert(keys, mask, (unsigned long long)seeds[i]);
        vals[slot] = -(int)i - 1;
    }
}

/* The counts of hop h start from those before it: row h + 1 of the sizes = row h. */
__global__ void het_advance_kernel(long long *sizes, int h, int T) {
    const int t = (int)threadIdx.x;
    if (t < T) sizes[(h + 1) * T + t] = sizes[h * T + t];
}

/*
 * counts[d] = the neighbours drawn for destination d (0 past the nd = sizes[nd_at] destinations,
 * up to items), with its run of edge type r: starts[d] and runs[d].
 */
__global__ void __launch_bounds__(HBLOCK)
    het_count_kernel(const long long *__restrict__ indptr, const void *etype, int kind, int r,
                     const long long *__restrict__ nodes, const long long *sizes, int nd_at,
                     int fanout, int replace, long long *__restrict__ starts,
                     long long *__restrict__ runs, int *__restrict__ counts, long long items) {
    const long long nd = sizes[nd_at];
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long d = (long long)blockIdx.x * blockDim.x + threadIdx.x; d < items; d += stride) {
        int c = 0;
        if (d < nd) {
            const long long v = nodes[d];
            const long long hi = indptr[v + 1];
            const long long a = het_run_start(etype, kind, indptr[v], hi, r);
            const long long b = het_run_start(etype, kind, a, hi, r + 1);
            starts[d] = a;
            runs[d] = b - a;
            c = fanout == 0 ? 0 : (int)gd__sample_count(b - a, fanout, replace);
        }
        counts[d] = c;
    }
}

/* The neighbours of destination d, in draw order, at draws[bindptr[d] ..] (hetero.c's loop). */
__global__ void __launch_bounds__(HBLOCK)
    het_draw_kernel(const void *indices, int is32, unsigned long long key, unsigned hop, int fanout,
                    int replace, const long long *__restrict__ nodes, const long long *sizes,
                    int nd_at, const long long *__restrict__ starts,
                    const long long *__restrict__ runs, const int *__restrict__ bindptr,
                    long long *draws, long long items) {
    const long long nd = sizes[nd_at];
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long d = (long long)blockIdx.x * blockDim.x + threadIdx.x; d < items && d < nd;
         d += stride) {
        const long long off = bindptr[d], cnt = bindptr[d + 1] - off;
        if (cnt == 0) continue;
        const long long a = starts[d], deg = runs[d];
        long long *out = draws + off;
        if (gd__sample_takes_all(deg, cnt, fanout, replace)) {
            for (long long j = 0; j < cnt; j++) out[j] = het_index(indices, is32, a + j);
            continue;
        }
        het_positions(key, hop, replace, nodes[d], deg, cnt, out);
        for (long long j = 0; j < cnt; j++) out[j] = het_index(indices, is32, a + out[j]);
    }
}

/*
 * Edge j records itself in its node's slot: a node already in the minibatch keeps its negative
 * value (atomicMin never raises it), a new one ends with the smallest position that drew it.
 */
__global__ void __launch_bounds__(HBLOCK)
    het_insert_kernel(const long long *__restrict__ draws, const int *__restrict__ bindptr,
                      const long long *sizes, int nd_at, unsigned long long *keys, int *vals,
                      unsigned long long mask, int *__restrict__ slots, long long items) {
    const long long e = bindptr[sizes[nd_at]];
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < items && j < e;
         j += stride) {
        const unsigned long long slot = gd__table_insert(keys, mask, (unsigned long long)draws[j]);
        /* Values only decrease, so a stale read that is already <= j is safe to trust. */
        if (*(volatile int *)&vals[slot] > (int)j) atomicMin(&vals[slot], (int)j);
        slots[j] = (int)slot;
    }
}

/* The scan's input: 1 where edge j is its node's first appearance in the minibatch. */
struct het_first {
    const long long *sizes;
    int nd_at;
    const int *bindptr, *vals, *slots;
    __device__ int operator()(int j) const {
        const long long e = bindptr[sizes[nd_at]];
        return (long long)j < e && vals[slots[j]] == j;
    }
};

typedef thrust::transform_iterator<het_first, thrust::counting_iterator<int>> het_first_iter;

/*
 * The block's indices and the new nodes of the source type, appended after its count
 * sizes[base_at] (which this kernel only reads).
 */
__global__ void __launch_bounds__(HBLOCK)
    het_finalize_kernel(const long long *__restrict__ draws, const int *__restrict__ bindptr,
                        const long long *sizes, int nd_at, int base_at,
                        const int *__restrict__ vals, const int *__restrict__ slots,
                        const int *__restrict__ scan, long long *__restrict__ src_nodes,
                        int *__restrict__ bindices, long long items) {
    const long long e = bindptr[sizes[nd_at]];
    const long long base = sizes[base_at];
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < items && j < e;
         j += stride) {
        const int v = vals[slots[j]];
        bindices[j] = v < 0 ? -(v + 1) : (int)(base + scan[v]);
        if (v == (int)j) src_nodes[base + scan[j]] = draws[j];
    }
}

/*
 * The new nodes' table entries become their local ids (only the first appearance writes its
 * slot, and no other edge of the slot can read its own position there), and thread 0 advances
 * the source type's count and records the edge count: no thread of this kernel reads either.
 */
__global__ void __launch_bounds__(HBLOCK)
    het_commit_kernel(const int *__restrict__ bindptr, long long *sizes, int nd_at, int base_at,
                      int edges_at, int *vals, const int *__restrict__ slots,
                      const int *__restrict__ scan, const int *__restrict__ bindices,
                      long long items) {
    const long long e = bindptr[sizes[nd_at]];
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (long long j = tid; j < items && j < e; j += stride) {
        const int slot = slots[j];
        if (vals[slot] == (int)j) vals[slot] = -bindices[j] - 1;
    }
    if (tid == 0) {
        sizes[base_at] += scan[e];
        sizes[edges_at] = e;
    }
}

/* ------------------------------------------------------------------ host side */

extern "C" void gd__hetero_cuda_release(gd_hetero_sampler_t *s) {
    gd__hetero_cuda *c = s->cuda;
    int prev = -1;
    if (!c) return;
    /* Release is best effort: a failed free cannot be acted on, so errors are dropped. */
    if (gd__cuda_enter_device(s->device, &prev) == GD_OK) {
        if (c->has_stream) {
            (void)cudaStreamSynchronize(c->stream);
            (void)cudaStreamDestroy(c->stream);
        }
        if (c->d_graph) (void)cudaFree(c->d_graph);
        if (c->d_scratch) (void)cudaFree(c->d_scratch);
        if (c->h_seeds) (void)cudaFreeHost(c->h_seeds);
        if (c->h_sizes) (void)cudaFreeHost(c->h_sizes);
        (void)cudaGetLastError();
        gd__cuda_leave_device(s->device, prev);
    }
    gd_free(c);
    s->cuda = NULL;
}

/*
 * The graph's three arrays as the kernels read them: those the caller mapped (registered host
 * memory, read over UVA) in place, the others copied to GPU memory in one allocation.
 */
static gd_status copy_graph(gd_hetero_sampler_t *s, gd__hetero_cuda *c) {
    gd_status st = GD_OK;
    const long long n = gd_dataset_num_nodes(s->ds), m = gd_dataset_num_edges(s->ds);
    const void *const mapped[3] = {s->mapped.indptr, s->mapped.indices, s->mapped.etype};
    const void *const host[3] = {s->indptr, s->indices, s->etype.data};
    const size_t bytes[3] = {(size_t)(n + 1) * sizeof(long long),
                             (size_t)m * (s->is32 ? sizeof(int) : sizeof(long long)),
                             (size_t)m * gd_dtype_size(s->etype.dtype)};
    const void *dev[3] = {NULL, NULL, NULL};
    size_t off[3], total = 0, free_bytes = 0, total_bytes = 0;
    cudaError_t ce = cudaSuccess;
    c->etype_kind = s->etype.dtype == GD_DTYPE_INT8 ? 0 : s->etype.dtype == GD_DTYPE_UINT8 ? 1 : 2;
    for (int k = 0; k < 3; k++) {
        off[k] = total;
        if (!mapped[k]) total += align256(bytes[k]);
    }
    if (total > 0) {
        GD_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
        ce = total <= free_bytes ? cudaMalloc(&c->d_graph, total) : cudaErrorMemoryAllocation;
    }
    if (ce != cudaSuccess) {
        (void)cudaGetLastError();
        c->d_graph = NULL;
        GD_REQUIRE(ce != cudaErrorMemoryAllocation, GD_ERR_NO_MEMORY,
                   "the CUDA typed sampler copies the graph of '%s' to GPU memory: %zu bytes "
                   "(indptr %zu, indices %zu, edge types %zu, those not read in place) do not fit "
                   "the %zu bytes free on GPU %d; use the CPU typed sampler (GD_SAMPLER_CPU), "
                   "zero-copy training (which keeps the graph in pinned host memory), or a GPU "
                   "with more memory",
                   gd_dataset_name(s->ds), total, mapped[0] ? 0 : bytes[0],
                   mapped[1] ? 0 : bytes[1], mapped[2] ? 0 : bytes[2], free_bytes, s->device);
        GD_CUDA_CHECK(ce);
    }
    for (int k = 0; k < 3; k++) {
        if (mapped[k]) {
            dev[k] = mapped[k];
            continue;
        }
        unsigned char *to = (unsigned char *)c->d_graph + off[k];
        dev[k] = to;
        if (bytes[k] > 0) GD_CUDA_CHECK(cudaMemcpy(to, host[k], bytes[k], cudaMemcpyHostToDevice));
    }
    c->d_indptr = (const long long *)dev[0];
    c->d_indices = dev[1];
    c->d_etype = dev[2];
    /* A copy from pageable memory may return before its data lands, and the kernels that read
     * the graph run on the sampler's non-blocking stream: wait for the copies here. */
    if (total > 0) GD_CUDA_CHECK(cudaDeviceSynchronize());
fail:
    return st;
}

extern "C" gd_status gd__hetero_cuda_init(gd_hetero_sampler_t *s) {
    gd_status st = GD_OK;
    gd__hetero_cuda *c = NULL;
    int prev = -1, entered = 0;
    GD_CHECK(gd__cuda_check_device(0, "the CUDA typed sampler", "use GD_SAMPLER_CPU"));
    GD_CUDA_CHECK(cudaGetDevice(&s->device));
    GD_CHECK(gd__cuda_enter_device(s->device, &prev));
    entered = 1;
    /* Positions and slots are int, and CUB scans count their items in int. */
    GD_REQUIRE(s->step_edges < INT_MAX && s->most_dst < INT_MAX &&
                   s->table_cap <= (int64_t)INT_MAX + 1,
               GD_ERR_RANGE,
               "the CUDA typed sampler: a step can draw %lld edges over %lld destinations (table "
               "of %lld slots), past its int32 positions; lower max_batch or the fanouts",
               (long long)s->step_edges, (long long)s->most_dst, (long long)s->table_cap);
    c = (gd__hetero_cuda *)gd_calloc(1, sizeof *c);
    GD_REQUIRE(c, GD_ERR_NO_MEMORY, "the CUDA typed sampler: out of memory for its state");
    s->cuda = c;
    GD_CUDA_CHECK(cudaDeviceGetAttribute(&c->sms, cudaDevAttrMultiProcessorCount, s->device));
    GD_CUDA_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    c->has_stream = 1;
    GD_CHECK(copy_graph(s, c));
    {
        const size_t d = (size_t)s->most_dst, e = (size_t)s->step_edges, t = (size_t)s->table_cap,
                     z = (size_t)sizes_count(s);
        /* Scratch for the larger scan of either kind; temporary storage grows with the item
         * count, so it fits every smaller scan. */
        const long long items = (long long)(d > e ? d : e) + 1;
        size_t counts_bytes = 0, marks_bytes = 0;
        const het_first f = {NULL, 0, NULL, NULL, NULL};
        GD_CUDA_CHECK(cub::DeviceScan::ExclusiveSum((void *)NULL, counts_bytes, (const int *)NULL,
                                                    (int *)NULL, (int)items, c->stream));
        GD_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(
            (void *)NULL, marks_bytes, het_first_iter(thrust::counting_iterator<int>(0), f),
            (int *)NULL, (int)items, c->stream));
        c->cub_bytes = counts_bytes > marks_bytes ? counts_bytes : marks_bytes;
        const size_t sizes[11] = {d * 8, d * 8, (d + 1) * 4, (e + 1) * 8,  (e + 1) * 4, (e + 1) * 4,
                                  t * 8, t * 4, z * 8,       c->cub_bytes, 16};
        size_t off[11], total = 0;
        for (int k = 0; k < 11; k++) {
            off[k] = total;
            total = align256(total + (sizes[k] ? sizes[k] : 16));
        }
        GD_CUDA_CHECK(cudaMalloc(&c->d_scratch, total));
        unsigned char *b = (unsigned char *)c->d_scratch;
        c->d_starts = (long long *)(b + off[0]);
        c->d_runs = (long long *)(b + off[1]);
        c->d_counts = (int *)(b + off[2]);
        c->d_draws = (long long *)(b + off[3]);
        c->d_slots = (int *)(b + off[4]);
        c->d_scan = (int *)(b + off[5]);
        c->d_keys = (unsigned long long *)(b + off[6]);
        c->d_vals = (int *)(b + off[7]);
        c->d_sizes = (long long *)(b + off[8]);
        c->d_cub = b + off[9];
    }
    GD_CHECK(gd__cuda_pinned_alloc((void **)&c->h_seeds, (size_t)s->max_batch * sizeof(long long),
                                   "the typed sampler's seed staging", "lower max_batch"));
    GD_CHECK(gd__cuda_pinned_alloc((void **)&c->h_sizes, (size_t)sizes_count(s) * sizeof(long long),
                                   "the typed sampler's sizes", "lower max_batch"));
    gd__cuda_leave_device(s->device, prev);
    return GD_OK;
fail:
    gd__hetero_cuda_release(s);
    if (entered) gd__cuda_leave_device(s->device, prev);
    return st;
}

extern "C" void gd__hetero_cuda_minibatch_release(gd_hetero_minibatch_t *mb) {
    int prev = -1;
    if (mb->d_base && gd__cuda_enter_device(mb->device, &prev) == GD_OK) {
        (void)cudaFree(mb->d_base);
        (void)cudaGetLastError();
        gd__cuda_leave_device(mb->device, prev);
    }
    mb->d_base = NULL;
    memset(mb->nodes, 0, sizeof mb->nodes);
    memset(mb->indptr, 0, sizeof mb->indptr);
    memset(mb->indices, 0, sizeof mb->indices);
}

/* The minibatch's arrays, sized as the CPU ones, carved from one GPU allocation. */
extern "C" gd_status gd__hetero_cuda_minibatch_init(const gd_hetero_sampler_t *s,
                                                    gd_hetero_minibatch_t *mb) {
    gd_status st = GD_OK;
    const int L = s->num_layers;
    int prev = -1, entered = 0;
    size_t total = 0;
    for (int t = 0; t < s->T; t++)
        total += align256((size_t)(s->max_nodes[L][t] + 1) * sizeof(int64_t));
    for (int h = 0; h < L; h++)
        for (int r = 0; r < s->R; r++)
            total += align256((size_t)(s->max_nodes[h][s->dst[r]] + 1) * sizeof(int32_t)) +
                     align256((size_t)(s->max_edges[h][r] + 1) * sizeof(int32_t));
    mb->device = s->device;
    GD_CHECK(gd__cuda_enter_device(s->device, &prev));
    entered = 1;
    GD_CUDA_CHECK(cudaMalloc(&mb->d_base, total));
    {
        unsigned char *b = (unsigned char *)mb->d_base;
        for (int t = 0; t < s->T; t++) {
            mb->nodes[t] = (int64_t *)b;
            b += align256((size_t)(s->max_nodes[L][t] + 1) * sizeof(int64_t));
        }
        for (int h = 0; h < L; h++)
            for (int r = 0; r < s->R; r++) {
                mb->indptr[h][r] = (int32_t *)b;
                b += align256((size_t)(s->max_nodes[h][s->dst[r]] + 1) * sizeof(int32_t));
                mb->indices[h][r] = (int32_t *)b;
                b += align256((size_t)(s->max_edges[h][r] + 1) * sizeof(int32_t));
            }
    }
    gd__cuda_leave_device(s->device, prev);
    return GD_OK;
fail:
    mb->d_base = NULL;
    if (entered) gd__cuda_leave_device(s->device, prev);
    return st;
}

/* An exclusive scan of items values on the sampler's stream, in the scratch sized at create. */
template <typename In>
static gd_status het_scan(gd__hetero_cuda *c, In in, int *out, long long items) {
    gd_status st = GD_OK;
    size_t bytes = c->cub_bytes;
    GD_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(c->d_cub, bytes, in, out, (int)items, c->stream));
    return GD_OK;
fail:
    return st;
}

extern "C" gd_status gd__hetero_cuda_sample(gd_hetero_sampler_t *s, const int64_t *seeds, int64_t n,
                                            uint64_t key, gd_hetero_minibatch_t *mb) {
    gd_status st = GD_OK;
    gd__hetero_cuda *c = s->cuda;
    const cudaStream_t stream = c->stream;
    const int L = s->num_layers, T = s->T, R = s->R, nsz = sizes_count(s);
    const unsigned long long mask = (unsigned long long)s->table_cap - 1;
    int prev = -1, entered = 0;
    GD_CHECK(gd__cuda_enter_device(s->device, &prev));
    entered = 1;
    het_clear_kernel<<<grid_for(s->table_cap, c->sms), HBLOCK, 0, stream>>>(
        c->d_keys, c->d_vals, s->table_cap, c->d_sizes, nsz, s->target, (long long)n);
    GD_CUDA_CHECK_LAUNCH();
    if (n > 0) {
        /* The previous call waited for its copies, so the staging buffer is free. */
        memcpy(c->h_seeds, seeds, (size_t)n * sizeof(long long));
        GD_CUDA_CHECK(cudaMemcpyAsync(mb->nodes[s->target], c->h_seeds,
                                      (size_t)n * sizeof(long long), cudaMemcpyHostToDevice,
                                      stream));
        het_seed_kernel<<<grid_for(n, c->sms), HBLOCK, 0, stream>>>(
            (const long long *)mb->nodes[s->target], (long long)n, c->d_keys, c->d_vals, mask);
        GD_CUDA_CHECK_LAUNCH();
    }
    for (int h = 0; h < L; h++) {
        het_advance_kernel<<<1, 32, 0, stream>>>(c->d_sizes, h, T);
        GD_CUDA_CHECK_LAUNCH();
        for (int r = 0; r < R; r++) {
            const int f = s->fanouts[h][r], dt = s->dst[r], su = s->src[r];
            const long long nd_max = s->max_nodes[h][dt], e_max = s->max_edges[h][r];
            const int nd_at = h * T + dt, base_at = (h + 1) * T + su;
            int *bip = (int *)mb->indptr[h][r], *bix = (int *)mb->indices[h][r];
            const long long *dst_nodes = (const long long *)mb->nodes[dt];
            if (e_max == 0) {
                /* Nothing can be drawn (fanout 0, or no destinations): an empty block, and the
                 * edge count keeps the 0 of the clear kernel. */
                GD_CUDA_CHECK(cudaMemsetAsync(bip, 0, (size_t)(nd_max + 1) * sizeof(int), stream));
                continue;
            }
            het_count_kernel<<<grid_for(nd_max + 1, c->sms), HBLOCK, 0, stream>>>(
                c->d_indptr, c->d_etype, c->etype_kind, r, dst_nodes, c->d_sizes, nd_at, f,
                s->replace, c->d_starts, c->d_runs, c->d_counts, nd_max + 1);
            GD_CUDA_CHECK_LAUNCH();
            GD_CHECK(het_scan(c, (const int *)c->d_counts, bip, nd_max + 1));
            het_draw_kernel<<<grid_for(nd_max, c->sms), HBLOCK, 0, stream>>>(
                c->d_indices, s->is32, (unsigned long long)key, gd__typed_hop(h, r), f, s->replace,
                dst_nodes, c->d_sizes, nd_at, c->d_starts, c->d_runs, bip, c->d_draws, nd_max);
            GD_CUDA_CHECK_LAUNCH();
            het_insert_kernel<<<grid_for(e_max, c->sms), HBLOCK, 0, stream>>>(
                c->d_draws, bip, c->d_sizes, nd_at, c->d_keys, c->d_vals, mask, c->d_slots, e_max);
            GD_CUDA_CHECK_LAUNCH();
            const het_first first = {c->d_sizes, nd_at, bip, c->d_vals, c->d_slots};
            GD_CHECK(het_scan(c, het_first_iter(thrust::counting_iterator<int>(0), first),
                              c->d_scan, e_max + 1));
            het_finalize_kernel<<<grid_for(e_max, c->sms), HBLOCK, 0, stream>>>(
                c->d_draws, bip, c->d_sizes, nd_at, base_at, c->d_vals, c->d_slots, c->d_scan,
                (long long *)mb->nodes[su], bix, e_max);
            GD_CUDA_CHECK_LAUNCH();
            het_commit_kernel<<<grid_for(e_max, c->sms), HBLOCK, 0, stream>>>(
                bip, c->d_sizes, nd_at, base_at, edges_at(s, h, r), c->d_vals, c->d_slots,
                c->d_scan, bix, e_max);
            GD_CUDA_CHECK_LAUNCH();
        }
    }
    GD_CUDA_CHECK(cudaMemcpyAsync(c->h_sizes, c->d_sizes, (size_t)nsz * sizeof(long long),
                                  cudaMemcpyDeviceToHost, stream));
    GD_CUDA_CHECK(cudaStreamSynchronize(stream));
    for (int h = 0; h <= L; h++)
        for (int t = 0; t < T; t++) mb->count[h][t] = c->h_sizes[h * T + t];
    for (int h = 0; h < L; h++)
        for (int r = 0; r < R; r++) mb->edges[h][r] = c->h_sizes[edges_at(s, h, r)];
    gd__cuda_leave_device(s->device, prev);
    return GD_OK;
fail:
    /* Nothing of this call may still run when the next one writes the staging buffer. */
    (void)cudaStreamSynchronize(stream);
    (void)cudaGetLastError();
    if (entered) gd__cuda_leave_device(s->device, prev);
    return st;
}
