/*
 * The CUDA sampler. The same kernels read the graph from GPU memory or, over PCIe, from pinned
 * host memory (UVA): sampling is latency-bound, and thousands of threads with independent
 * reads in flight hide the latency of the link. What crosses PCIe is only what a draw needs:
 * each frontier node's two indptr entries (one 16-byte load when aligned) and, per list, either
 * the drawn entries (Floyd's algorithm picks positions without reading the list) or, for a list
 * short against its fanout, the whole list in a few full-width coalesced loads (see
 * WHOLE_LIST_BYTES_PER_PICK), so the traffic is O(fanout) per node, not O(degree).
 *
 * One hop, all queued on the caller's stream, sizes read from device memory by the kernels
 * (launched for the worst case, idle threads exit), so the host never waits:
 *   sort      (a hop read in address order only: large pinned graphs, large hops) the frontier's
 *             positions by node id, with a CUB radix sort: the schedule in which count and sample
 *             read indptr and the lists, so that the GPU's reads of pinned memory walk it in
 *             address order (address translation, not the link, bounds random reads of a large
 *             pinned region); results still go to each node's frontier position
 *   count     degree and neighbour count of every frontier node; scan -> block indptr. It also
 *             clears the part of the hash table the previous hop used (lazily, so no kernel
 *             clears the whole worst-case table)
 *   sample    a group of 8, 16 or 32 lanes (by fanout) per node: the draws of Floyd's
 *             algorithm in parallel, resolved in order with ballots, then the reads in parallel
 *             (biased sampling: bias_sample_kernel, a warp per node reading its whole list)
 *   relabel   open-addressing hash table (atomicCAS on keys), sized for the hop's actual
 *             positions, holding each node's smallest position (atomicMin); a scan over "this
 *             position holds its node's minimum" (first appearances, computed inside the scan)
 *             gives the local ids, in the canonical first-appearance order that the CPU sampler
 *             produces too; finalize writes them.
 * After the last hop one small copy brings the sizes back; gd_minibatch_block waits for it.
 * Every CUDA call is checked; scratch buffers are shared by the calls of a sampler, which are
 * ordered with an event.
 */
#include "core/cuda.h"
#include "core/dev_error.h"
#include "internal.h"

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* After CUB, whose templates name parameters like the kernels' macros. */
#include "sample_kernels.cuh"

/*
 * A hop is read in address order only if its worst-case frontier, which the sort must cover
 * (the actual size stays on the device), is at most this many times its expected size (from the
 * mean degree), or at most SORT_SMALL nodes, where the sort is cheap whatever the hop holds.
 * This keeps the sort from costing more than the reads (fanout -1 next to a hub makes the worst
 * case the whole graph) and bounds the memory of its buffers.
 */
#define SORT_WORST_OVER_EXPECTED 8
#define SORT_SMALL (1 << 16)
/*
 * GD__SORT_AUTO sorts a hop only when the pinned arrays span at least this many bytes: random
 * reads of pinned memory lose their rate to address translation as the region grows (the feature
 * store's 256-byte gather: 51 GB/s over 64 MiB, 27 over 1 GiB, 11 over 4 GiB), and on the H100
 * sorting gained nothing on a 0.27 GB graph and 17-28 % on a 6.5-7.4 GB one (docs/sampling.md).
 */
#define SORT_MIN_PINNED_BYTES ((long long)1 << 30)
/* ... and only a hop whose worst-case frontier exceeds this many waves of the sample kernel. */
#define SORT_MIN_WAVES 2

struct gd__cuda_sampler {
    void *d_base; /* one allocation holding every scratch array */
    long long *d_starts, *d_degs;
    int *d_counts;
    long long *d_edge_ids, *d_pos;
    unsigned long long *d_keys;
    int *d_vals, *d_slots, *d_scan;
    /* Table slots the last hop used, cleared by the next count kernel (0: the table is clear). */
    long long *d_dirty;
    void *d_cub;
    size_t cub_bytes;
    gd__dev_error *d_err;
    long long *h_seeds;       /* pinned staging for host seeds */
    cudaEvent_t done;         /* after each call's last operation */
    cudaEvent_t staging_free; /* after the copy that last read h_seeds */
    int events;
    int grid_cap;
    /* Blocks of the sample kernel (8, 16, 32 lanes per node) that are resident at once: its grid,
     * so that every block runs from the start (a grid-stride loop over more blocks than fit
     * would run as a second, mostly idle wave). */
    int sample_cap[3];
    /* The table's contents are unknown (a call failed with kernels queued, or nothing has run
     * yet): the next call's first count kernel clears all of it. */
    int table_unknown;
    int vec_indptr; /* indptr is 16-byte aligned: read a node's two entries in one
                       load */
    gd__tier_bases tiers; /* where the lists are: the graph's store, as the kernels take it */
    /* Reading in address order (see sort_keys_kernel): whether each hop may be sorted, whether a
     * graph array is pinned (GD__SORT_AUTO sorts then), 64-bit keys (more than 2^32 - 1 nodes),
     * the key bits sorted, and the sort's buffers, sized at create time for the largest hop that
     * may be sorted (sort_cap frontier nodes). */
    int sortable[GD_SAMPLER_MAX_LAYERS];
    int sort_auto[GD_SAMPLER_MAX_LAYERS]; /* what GD__SORT_AUTO does */
    int key64, begin_bit, end_bit;
    long long sort_cap;
    void *d_sort_keys[2];
    int *d_order[2];
    void *d_sort_tmp;
    size_t sort_tmp_bytes;
    /* Biased sampling: the sampler's bitmap of buffered nodes, copied to GPU memory at create
     * time (NULL when off). */
    unsigned char *d_bitmap;
};

struct gd__cuda_minibatch {
    long long *d_sizes;
    long long *h_sizes;
    cudaEvent_t ready;
    int has_event;
};

/* ------------------------------------------------------------------ host side */

static gd_status check_device(int device, const char *what) {
    return gd__cuda_check_device(device, what, "use the CPU sampler");
}

static gd_status pinned_alloc(void **p, size_t bytes, const char *what) {
    return gd__cuda_pinned_alloc(p, bytes, what, "lower the batch size");
}

static unsigned grid_for(long long threads, int cap) {
    long long b = (threads + BLOCK - 1) / BLOCK;
    if (b < 1) b = 1;
    return (unsigned)(b < cap ? b : cap);
}

static size_t align256(size_t x) {
    return (x + 255) / 256 * 256;
}

/* ---- sampler */

static void cuda_sampler_release(gd_sampler_t *s) {
    gd__cuda_sampler *c = s->cuda;
    int prev = -1;
    if (!c) return;
    /* Release is best effort: a failed free cannot be acted on, so errors are dropped. */
    if (gd__cuda_enter_device(s->graph->device, &prev) == GD_OK) {
        if (c->events >= 1) (void)cudaEventSynchronize(c->done);
        if (c->events >= 2) (void)cudaEventSynchronize(c->staging_free);
        if (c->events >= 1) (void)cudaEventDestroy(c->done);
        if (c->events >= 2) (void)cudaEventDestroy(c->staging_free);
        if (c->d_base) (void)cudaFree(c->d_base);
        if (c->d_err) (void)cudaFree(c->d_err);
        if (c->d_bitmap) (void)cudaFree(c->d_bitmap);
        if (c->h_seeds) (void)cudaFreeHost(c->h_seeds);
        (void)cudaGetLastError();
        gd__cuda_leave_device(s->graph->device, prev);
    }
    gd_free(c);
    s->cuda = NULL;
}

/* Bits that hold every value up to x (at least 1). */
static int bits_for(long long x) {
    int b = 1;
    while (b < 63 && (x >> b) != 0) b++;
    return b;
}

/*
 * The hops that may be read in address order: those whose worst-case frontier (what the sort
 * covers) is small, or at most SORT_WORST_OVER_EXPECTED times the frontier expected from the mean
 * degree, and the largest such frontier (the sort buffers' size). GD__SORT_AUTO sorts those of them
 * that read a large pinned region (SORT_MIN_PINNED_BYTES) and whose frontier can exceed twice the
 * groups the sample kernel holds at once (SORT_MIN_WAVES). While every node of a hop is read at
 * the same time, the order cannot change which pages are being read together, and the sort only
 * adds its cost (on the H100, papers' 26.6K-node hop 1 at {25, 10}, 2.5 waves, read as fast either
 * way; its 180K-node last hop at {15, 10, 5}, 8.5 waves, 17-28 % faster sorted). That leaves the
 * seeds unsorted (a batch of random training nodes is one wave at most), and the small hops next
 * to them.
 */
static void plan_sort(const gd_sampler_t *s, gd__cuda_sampler *c) {
    const gd_graph_t *g = s->graph;
    const double mean = g->num_nodes > 0 ? (double)g->num_edges / (double)g->num_nodes : 0;
    const double node_cap = (double)(g->num_nodes + s->max_dst[0]);
    double expect = (double)s->max_dst[0];
    c->sort_cap = 0;
    for (int h = 0; h < s->num_layers; h++) {
        const long long worst = s->max_dst[h];
        c->sortable[h] = worst > 0 && (worst <= SORT_SMALL ||
                                       (double)worst <= SORT_WORST_OVER_EXPECTED * expect);
        if (c->sortable[h] && worst > c->sort_cap) c->sort_cap = worst;
        const int f = s->fanouts[h];
        const int G = gd__sample_group_lanes(f);
        const long long wave = (long long)c->sample_cap[G == 32 ? 2 : G == 16] * (BLOCK / G);
        c->sort_auto[h] = c->sortable[h] && g->pinned_bytes >= SORT_MIN_PINNED_BYTES &&
                          worst > SORT_MIN_WAVES * wave;
        const double k = f < 0 ? mean : s->replace ? (mean > 0 ? f : 0) : (f < mean ? f : mean);
        expect = expect * (1 + k) < node_cap ? expect * (1 + k) : node_cap;
    }
    c->key64 = g->num_nodes > (long long)UINT_MAX - 1;
    /* Keys hold num_nodes too (positions past the frontier). The low end_bit % 8 bits are left
     * out, so the sort is whole 8-bit digit passes: runs of up to 128 consecutive ids keep their
     * frontier order, far finer than the reads in flight at once. */
    c->end_bit = bits_for(g->num_nodes);
    c->begin_bit = c->end_bit > 8 ? c->end_bit % 8 : 0;
}

/* Does hop h of this call read in address order? (docs/sampling.md, "Reading in address order") */
static int sort_hop(const gd_sampler_t *s, const gd__cuda_sampler *c, int h) {
    if (!c->sortable[h] || s->sort_reads == GD__SORT_NEVER) return 0;
    if (s->sort_reads == GD__SORT_ALWAYS) return 1;
    return c->sort_auto[h];
}

/* Temporary storage of the schedule sort of items keys (of the sampler's key width). */
static cudaError_t sort_bytes(const gd__cuda_sampler *c, long long items, size_t *bytes) {
    *bytes = 0;
    if (c->key64) {
        cub::DoubleBuffer<unsigned long long> k(NULL, NULL);
        cub::DoubleBuffer<int> v(NULL, NULL);
        return cub::DeviceRadixSort::SortPairs((void *)NULL, *bytes, k, v, (int)items, c->begin_bit,
                                               c->end_bit, (cudaStream_t)0);
    }
    cub::DoubleBuffer<unsigned int> k(NULL, NULL);
    cub::DoubleBuffer<int> v(NULL, NULL);
    return cub::DeviceRadixSort::SortPairs((void *)NULL, *bytes, k, v, (int)items, c->begin_bit,
                                           c->end_bit, (cudaStream_t)0);
}

/* The bitmap of the biased draws in GPU memory (allocated once a factor above 1 asks for it). */
static gd_status copy_bitmap(gd_sampler_t *s, gd__cuda_sampler *c) {
    gd_status st = GD_OK;
    const size_t bytes = (size_t)(s->graph->num_nodes + 7) / 8;
    if (s->bias_factor <= 1) return GD_OK;
    if (!c->d_bitmap) {
        GD_CUDA_CHECK(cudaMalloc((void **)&c->d_bitmap, bytes ? bytes : 1));
        s->scratch_bytes += (int64_t)bytes;
    }
    if (bytes)
        GD_CUDA_CHECK(cudaMemcpy(c->d_bitmap, s->bias_bitmap, bytes, cudaMemcpyHostToDevice));
fail:
    return st;
}

static gd_status cuda_bias_update(gd_sampler_t *s) {
    gd_status st = GD_OK;
    int prev = -1;
    GD_CHECK(gd__cuda_enter_device(s->graph->device, &prev));
    GD_CHECK(copy_bitmap(s, s->cuda));
    /* The copy from pageable memory may return before it lands; the sampler's kernels run on
     * other streams. */
    GD_CUDA_CHECK(cudaDeviceSynchronize());
fail:
    if (prev >= 0) gd__cuda_leave_device(s->graph->device, prev);
    return st;
}

static gd_status cuda_sampler_init(gd_sampler_t *s) {
    gd_status st = GD_OK;
    gd__cuda_sampler *c = NULL;
    const int device = s->graph->device;
    int prev = -1, sms = 0;
    GD_CHECK(check_device(device, "the CUDA sampler"));
    GD_CHECK(gd__cuda_enter_device(device, &prev));
    c = (gd__cuda_sampler *)gd_calloc(1, sizeof *c);
    GD_REQUIRE(c, GD_ERR_NO_MEMORY, "the CUDA sampler: out of memory for its state");
    s->cuda = c;
    GD_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    c->grid_cap = sms * (2048 / BLOCK);
    c->vec_indptr = ((uintptr_t)s->graph->d_indptr & 15) == 0;
    c->tiers = gd__tier_store_bases(s->graph->store);
    {
        const int is32 = s->graph->indices_dtype == GD_DTYPE_INT32;
        int per_sm[3] = {0, 0, 0};
        if (is32) {
            GD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                &per_sm[0], sample_kernel<8, int>, BLOCK, 0));
            GD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                &per_sm[1], sample_kernel<16, int>, BLOCK, 0));
            GD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                &per_sm[2], sample_kernel<32, int>, BLOCK, 0));
        } else {
            GD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                &per_sm[0], sample_kernel<8, long long>, BLOCK, 0));
            GD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                &per_sm[1], sample_kernel<16, long long>, BLOCK, 0));
            GD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                &per_sm[2], sample_kernel<32, long long>, BLOCK, 0));
        }
        for (int k = 0; k < 3; k++) c->sample_cap[k] = sms * (per_sm[k] > 0 ? per_sm[k] : 1);
    }
    GD_CUDA_CHECK(cudaEventCreateWithFlags(&c->done, cudaEventDisableTiming));
    c->events = 1;
    GD_CUDA_CHECK(cudaEventCreateWithFlags(&c->staging_free, cudaEventDisableTiming));
    c->events = 2;
    {
        const size_t d = (size_t)s->max_dst_all, e = (size_t)s->max_edges_all,
                     t = (size_t)s->max_table, p = (size_t)s->max_pos_all;
        /* Scratch for the largest scan of either kind; temporary storage grows with the item
         * count, so it fits every smaller scan and the calls pass it without asking again. */
        size_t counts_bytes = 0, ids_bytes = 0;
        GD_CUDA_CHECK(cub::DeviceScan::ExclusiveSum((void *)NULL, counts_bytes, (const int *)NULL,
                                                    (int *)NULL, (int)(p + 1), (cudaStream_t)0));
        GD_CUDA_CHECK(cub::DeviceScan::ExclusiveSum((void *)NULL, ids_bytes,
                                                    first_marks(NULL, NULL, NULL, NULL),
                                                    (int *)NULL, (int)(p + 1), (cudaStream_t)0));
        c->cub_bytes = counts_bytes > ids_bytes ? counts_bytes : ids_bytes;
        plan_sort(s, c);
        const size_t sc = (size_t)c->sort_cap, kb = c->key64 ? 8 : 4;
        if (sc) GD_CUDA_CHECK(sort_bytes(c, c->sort_cap, &c->sort_tmp_bytes));
        size_t off[17], total = 0;
        const size_t sizes[17] = {
            d * 8,  d * 8,  (d + 1) * 4,      e * 8,        e * 8, t * 8,   t * 4,
            p * 4,  8,      (p + 1) * 4,      c->cub_bytes, 16,    sc * kb, sc * kb,
            sc * 4, sc * 4, c->sort_tmp_bytes};
        for (int k = 0; k < 17; k++) {
            off[k] = total;
            total = align256(total + (sizes[k] ? sizes[k] : 16));
        }
        GD_CUDA_CHECK(cudaMalloc(&c->d_base, total));
        unsigned char *b = (unsigned char *)c->d_base;
        c->d_starts = (long long *)(b + off[0]);
        c->d_degs = (long long *)(b + off[1]);
        c->d_counts = (int *)(b + off[2]);
        c->d_edge_ids = (long long *)(b + off[3]);
        c->d_pos = (long long *)(b + off[4]);
        c->d_keys = (unsigned long long *)(b + off[5]);
        c->d_vals = (int *)(b + off[6]);
        c->d_slots = (int *)(b + off[7]);
        c->d_dirty = (long long *)(b + off[8]);
        c->d_scan = (int *)(b + off[9]);
        c->d_cub = b + off[10];
        c->d_sort_keys[0] = b + off[12];
        c->d_sort_keys[1] = b + off[13];
        c->d_order[0] = (int *)(b + off[14]);
        c->d_order[1] = (int *)(b + off[15]);
        c->d_sort_tmp = b + off[16];
        s->scratch_bytes = (int64_t)total;
    }
    /* The table memory is not cleared here: the first call's first count kernel clears it. */
    c->table_unknown = 1;
    GD_CUDA_CHECK(cudaMalloc((void **)&c->d_err, sizeof(gd__dev_error)));
    GD_CUDA_CHECK(cudaMemset(c->d_err, 0, sizeof(gd__dev_error)));
    GD_CHECK(pinned_alloc((void **)&c->h_seeds, (size_t)s->max_dst[0] * sizeof(long long),
                          "the sampler's seed staging buffer"));
    GD_CHECK(copy_bitmap(s, c));
    GD_CUDA_CHECK(cudaDeviceSynchronize());
    gd__cuda_leave_device(device, prev);
    return GD_OK;
fail:
    cuda_sampler_release(s);
    gd__cuda_leave_device(device, prev);
    return st;
}

/* ---- minibatch buffers */

static void cuda_minibatch_release(gd_minibatch_t *mb) {
    gd__cuda_minibatch *m = mb->cuda;
    int prev = -1;
    if (gd__cuda_enter_device(mb->device, &prev) == GD_OK) {
        if (m && m->has_event) {
            (void)cudaEventSynchronize(m->ready);
            (void)cudaEventDestroy(m->ready);
        }
        if (mb->base) (void)cudaFree(mb->base);
        if (m && m->d_sizes) (void)cudaFree(m->d_sizes);
        if (m && m->h_sizes) (void)cudaFreeHost(m->h_sizes);
        (void)cudaGetLastError();
        gd__cuda_leave_device(mb->device, prev);
    }
    mb->base = NULL;
    gd_free(m);
    mb->cuda = NULL;
}

static gd_status cuda_minibatch_init(const gd_sampler_t *s, gd_minibatch_t *mb) {
    gd_status st = GD_OK;
    gd__cuda_minibatch *m = NULL;
    int prev = -1;
    const size_t sizes_bytes = GD__SIZES_COUNT * sizeof(long long);
    GD_CHECK(gd__cuda_enter_device(mb->device, &prev));
    m = (gd__cuda_minibatch *)gd_calloc(1, sizeof *m);
    GD_REQUIRE(m, GD_ERR_NO_MEMORY, "gd_minibatch_create: out of memory for the handle");
    mb->cuda = m;
    GD_CUDA_CHECK(cudaMalloc(&mb->base, s->minibatch_bytes));
    GD_CUDA_CHECK(cudaMalloc((void **)&m->d_sizes, sizes_bytes));
    GD_CUDA_CHECK(cudaMemset(m->d_sizes, 0, sizes_bytes));
    GD_CHECK(pinned_alloc((void **)&m->h_sizes, sizes_bytes, "a minibatch's sizes"));
    GD_CUDA_CHECK(cudaEventCreateWithFlags(&m->ready, cudaEventDisableTiming));
    m->has_event = 1;
    GD_CUDA_CHECK(cudaDeviceSynchronize());
    gd__cuda_leave_device(mb->device, prev);
    return GD_OK;
fail:
    cuda_minibatch_release(mb);
    gd__cuda_leave_device(mb->device, prev);
    return st;
}

static gd_status cuda_minibatch_wait(gd_minibatch_t *mb) {
    gd_status st = GD_OK;
    gd__cuda_minibatch *m = mb->cuda;
    int prev = -1;
    GD_CHECK(gd__cuda_enter_device(mb->device, &prev));
    GD_CUDA_CHECK(cudaEventSynchronize(m->ready));
    memcpy(mb->sizes, m->h_sizes, sizeof mb->sizes);
    mb->pending = 0;
    gd__cuda_leave_device(mb->device, prev);
    return GD_OK;
fail:
    gd__cuda_leave_device(mb->device, prev);
    return st;
}

/* ---- sampling */

template <int G>
static void launch_sample(unsigned grid, cudaStream_t stream, int is32, unsigned long long key,
                          unsigned hop, int fanout, int replace, const long long *nodes,
                          const long long *nf_ptr, const gd__cuda_sampler *c, const int *order,
                          const int *bindptr) {
    if (is32)
        sample_kernel<G, int><<<grid, BLOCK, 0, stream>>>(
            key, hop, fanout, replace, nodes, nf_ptr, order, c->d_starts, c->d_degs, bindptr,
            c->tiers, c->d_edge_ids, c->d_pos);
    else
        sample_kernel<G, long long><<<grid, BLOCK, 0, stream>>>(
            key, hop, fanout, replace, nodes, nf_ptr, order, c->d_starts, c->d_degs, bindptr,
            c->tiers, c->d_edge_ids, c->d_pos);
}

/* The biased sampling kernel (one warp per node) in place of sample_kernel. */
static void launch_bias_sample(unsigned grid, cudaStream_t stream, int is32, unsigned long long key,
                               unsigned hop, int fanout, const gd_sampler_t *s,
                               const long long *nodes, const long long *nf_ptr,
                               const gd__cuda_sampler *c, const int *order, const int *bindptr) {
    if (is32)
        bias_sample_kernel<int><<<grid, BLOCK, 0, stream>>>(
            key, hop, fanout, s->replace, s->bias_factor, c->d_bitmap, nodes, nf_ptr, order,
            c->d_starts, c->d_degs, bindptr, c->tiers, c->d_edge_ids, c->d_pos);
    else
        bias_sample_kernel<long long><<<grid, BLOCK, 0, stream>>>(
            key, hop, fanout, s->replace, s->bias_factor, c->d_bitmap, nodes, nf_ptr, order,
            c->d_starts, c->d_degs, bindptr, c->tiers, c->d_edge_ids, c->d_pos);
}

/*
 * The read schedule of a hop of at most items frontier nodes: their positions sorted by node id
 * (a stable radix sort of the key bits [begin_bit, end_bit)), in the sort buffers sized at create
 * time. *order gets the sorted positions.
 */
template <typename KeyT>
static gd_status sort_frontier(gd__cuda_sampler *c, const long long *nodes, const long long *sizes,
                               int hop, long long seeds, long long num_nodes, long long items,
                               cudaStream_t stream, const int **order) {
    gd_status st = GD_OK;
    size_t need = 0;
    cub::DoubleBuffer<KeyT> keys((KeyT *)c->d_sort_keys[0], (KeyT *)c->d_sort_keys[1]);
    cub::DoubleBuffer<int> vals(c->d_order[0], c->d_order[1]);
    GD_CUDA_CHECK(sort_bytes(c, items, &need));
    GD_REQUIRE(items <= c->sort_cap && need <= c->sort_tmp_bytes, GD_ERR_INTERNAL,
               "sorting a frontier of %lld nodes needs %zu bytes of scratch; %lld nodes and %zu "
               "bytes were sized at create time",
               items, need, c->sort_cap, c->sort_tmp_bytes);
    sort_keys_kernel<KeyT><<<grid_for(items, c->grid_cap), BLOCK, 0, stream>>>(
        nodes, sizes, hop, seeds, num_nodes, keys.Current(), vals.Current(), items);
    GD_CUDA_CHECK_LAUNCH();
    GD_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(c->d_sort_tmp, need, keys, vals, (int)items,
                                                  c->begin_bit, c->end_bit, stream));
    *order = vals.Current();
    return GD_OK;
fail:
    return st;
}

/* An exclusive scan of items values on stream, in the scratch sized at create time. */
template <typename In>
static gd_status scan(gd__cuda_sampler *c, In in, int *out, long long items, cudaStream_t stream) {
    gd_status st = GD_OK;
    size_t bytes = c->cub_bytes;
    GD_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(c->d_cub, bytes, in, out, (int)items, stream));
    return GD_OK;
fail:
    return st;
}

static gd_status cuda_sample(gd_sampler_t *s, const int64_t *seeds, int64_t n, int seeds_on_device,
                             uint64_t key, void *stream_ptr, gd_minibatch_t *mb) {
    gd_status st = GD_OK;
    gd__cuda_sampler *c = s->cuda;
    gd__cuda_minibatch *m = mb->cuda;
    const gd_graph_t *g = s->graph;
    const cudaStream_t stream = (cudaStream_t)stream_ptr;
    const int is32 = g->indices_dtype == GD_DTYPE_INT32;
    long long *nodes = (long long *)mb->nodes;
    long long *sizes = m->d_sizes;
    int prev = -1, queued = 0;
    /* Where the lists are, taken at every call: a list cache placed over a group's GPUs is
     * rebuilt, and its peers installed, after the sampler is made (train/placed.c). */
    c->tiers = gd__tier_store_bases(g->store);
    GD_CHECK(gd__cuda_enter_device(g->device, &prev));
    /* The scratch buffers are shared by every call: order this call after the previous one. */
    GD_CUDA_CHECK(cudaStreamWaitEvent(stream, c->done, 0));
    if (n > 0) {
        if (seeds_on_device) {
            GD_CUDA_CHECK(cudaMemcpyAsync(nodes, seeds, (size_t)n * sizeof(long long),
                                          cudaMemcpyDeviceToDevice, stream));
        } else {
            GD_CUDA_CHECK(cudaEventSynchronize(c->staging_free));
            memcpy(c->h_seeds, seeds, (size_t)n * sizeof(long long));
            GD_CUDA_CHECK(cudaMemcpyAsync(nodes, c->h_seeds, (size_t)n * sizeof(long long),
                                          cudaMemcpyHostToDevice, stream));
            GD_CUDA_CHECK(cudaEventRecord(c->staging_free, stream));
        }
    }
    for (int h = 0; h < s->num_layers; h++) {
        const int fanout = s->fanouts[h];
        /* Hop 0's frontier is the seeds, whose count the host knows: exact sizes there. */
        const long long nf_max = h == 0 ? (long long)n : s->max_dst[h];
        const long long ne_max = s->max_edges[h];
        const long long pos_max = nf_max + ne_max;
        const long long *nf_ptr = sizes + h;
        /* The table slots this kernel may clear: the previous hop's table, or the previous
         * call's last hop's (any hop's, at most the whole table). */
        const long long clear_max = h == 0 ? s->max_table : s->table_cap[h - 1];
        const long long clear_all = h == 0 && c->table_unknown ? s->max_table : 0;
        int *bindptr = mb->indptr[h];
        /* The read schedule: frontier order, or sorted by node id (address order). */
        const int *order = NULL;
        if (nf_max > 0 && sort_hop(s, c, h)) {
            if (c->key64)
                GD_CHECK(sort_frontier<unsigned long long>(c, nodes, sizes, h, (long long)n,
                                                           g->num_nodes, nf_max, stream, &order));
            else
                GD_CHECK(sort_frontier<unsigned int>(c, nodes, sizes, h, (long long)n, g->num_nodes,
                                                     nf_max, stream, &order));
        }
        count_kernel<<<grid_for(nf_max + 1 > clear_max ? nf_max + 1 : clear_max, c->grid_cap),
                       BLOCK, 0, stream>>>(
            nodes, sizes, h, (long long)n, (const long long *)g->d_indptr,
            (const long long *)g->d_loc, c->tiers.home, g->num_nodes, fanout, s->replace,
            c->vec_indptr, order,
            c->d_starts, c->d_degs, c->d_counts, nf_max + 1, c->d_err, c->d_keys, c->d_vals,
            c->d_dirty, clear_all);
        GD_CUDA_CHECK_LAUNCH();
        /* From here on a failure may leave the table partly filled. */
        queued = 1;
        GD_CHECK(scan(c, (const int *)c->d_counts, bindptr, nf_max + 1, stream));
        if (s->bias_factor > 1) {
            launch_bias_sample(grid_for(nf_max * 32, c->grid_cap), stream, is32, key, (unsigned)h,
                               fanout, s, nodes, nf_ptr, c, order, bindptr);
            GD_CUDA_CHECK_LAUNCH();
        } else {
            const int G = gd__sample_group_lanes(fanout);
            const unsigned grid = grid_for(nf_max * G, c->sample_cap[G == 32 ? 2 : G == 16]);
            if (G == 32)
                launch_sample<32>(grid, stream, is32, key, (unsigned)h, fanout, s->replace, nodes,
                                  nf_ptr, c, order, bindptr);
            else if (G == 16)
                launch_sample<16>(grid, stream, is32, key, (unsigned)h, fanout, s->replace, nodes,
                                  nf_ptr, c, order, bindptr);
            else
                launch_sample<8>(grid, stream, is32, key, (unsigned)h, fanout, s->replace, nodes,
                                 nf_ptr, c, order, bindptr);
            GD_CUDA_CHECK_LAUNCH();
        }
        const long long cap = s->table_cap[h];
        insert_kernel<<<grid_for(pos_max, c->grid_cap), BLOCK, 0, stream>>>(
            nodes, nf_ptr, bindptr, c->d_edge_ids, c->d_keys, c->d_vals, cap, c->d_slots, pos_max);
        GD_CUDA_CHECK_LAUNCH();
        GD_CHECK(scan(c, first_marks(nf_ptr, bindptr, c->d_vals, c->d_slots), c->d_scan,
                      pos_max + 1, stream));
        finalize_kernel<<<grid_for(ne_max > nf_max ? ne_max : nf_max, c->grid_cap), BLOCK, 0,
                          stream>>>(nodes, sizes, h, bindptr, c->d_edge_ids, c->d_keys, c->d_vals,
                                    c->d_slots, c->d_scan, mb->indices[h], ne_max, cap, c->d_dirty,
                                    c->d_err);
        GD_CUDA_CHECK_LAUNCH();
    }
    c->table_unknown = 0;
    GD_CUDA_CHECK(cudaMemcpyAsync(m->h_sizes, sizes, GD__SIZES_COUNT * sizeof(long long),
                                  cudaMemcpyDeviceToHost, stream));
    GD_CUDA_CHECK(cudaEventRecord(m->ready, stream));
    GD_CUDA_CHECK(cudaEventRecord(c->done, stream));
    mb->pending = 1;
    gd__cuda_leave_device(g->device, prev);
    return GD_OK;
fail:
    if (queued) c->table_unknown = 1;
    gd__cuda_leave_device(g->device, prev);
    return st;
}

static gd_status cuda_check_errors(gd_sampler_t *s) {
    gd__dev_error e;
    gd_status st = gd__dev_error_take(s->graph->device, s->cuda->done, NULL, s->cuda->d_err, &e);
    if (st != GD_OK || !e.flag) return st;
    if (e.kind == ERR_RANGE)
        return gd__error(GD_ERR_RANGE,
                         "gd_sample: seed %lld at position %lld (seeds on the device) is not a "
                         "node of the graph [0, %lld): that minibatch is invalid",
                         e.v[1], e.v[0], (long long)s->graph->num_nodes);
    return gd__error(GD_ERR_INVALID_ARG,
                     "gd_sample: node id %lld appears twice among the seeds of one minibatch "
                     "(positions %lld and %lld): seeds must be distinct node ids. If they come "
                     "from a dataset split, that split holds the node twice: run `graphdirect info "
                     "--validate` on the dataset and deduplicate the split",
                     e.v[1], e.v[2], e.v[0]);
}

extern "C" const gd__sample_backend gd__sample_cuda_backend = {
    "cuda",
    cuda_sampler_init,
    cuda_sampler_release,
    cuda_minibatch_init,
    cuda_minibatch_release,
    cuda_sample,
    cuda_minibatch_wait,
    cuda_check_errors,
    cuda_bias_update,
};
