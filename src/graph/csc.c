/*
 * The CSC graph every sampler reads: for each destination node, its sorted, duplicate-free list
 * of in-neighbours (an edge src -> dst puts src in dst's list). This file builds it from a COO
 * edge list and checks an existing one; degree.c summarises and scores its degrees.
 *
 * The build is made for graphs of billions of edges on few cores, so it never sorts the edge
 * list as a whole and never keeps a second copy of it:
 *   count    one pass over the edges checks every id and counts in-degrees (atomic increments
 *            straight into indptr, so no separate count array);
 *   scan     a parallel prefix sum turns the counts into list starts;
 *   scatter  a second pass writes each source into its destination's list through atomic
 *            cursors (indptr itself again);
 *   sort     each list is sorted and deduplicated in place, in parallel over chunks of nodes
 *            balanced by edge count, and packed to the front of its chunk;
 *   compact  the chunks are moved together and the index buffer shrunk to the edges kept.
 * Peak memory is the output (indptr + one index per edge before deduplication) plus a few
 * kilobytes. Edges are processed in slices so progress can be reported, and an interruption
 * honoured, between slices.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* Edges per slice between two progress reports. */
#define CSC_SLICE ((int64_t)1 << 24)
/* Sort chunks per thread: enough that a hub's long list does not leave the others idle. */
#define CSC_CHUNKS_PER_THREAD 16
/* Nodes per parallel block of the prefix sum and of the indptr checks. */

/*
 * Bump a counter or cursor and return its old value. Several threads need an atomic increment;
 * one thread does not, and the plain one lets the processor overlap the cache misses of
 * consecutive edges (a locked increment waits for each). The branch is loop-invariant.
 */
static inline int64_t bump(int64_t *p, int atomic) {
    return atomic ? __atomic_fetch_add(p, 1, __ATOMIC_RELAXED) : (*p)++;
}

#define CSC_T int32_t
#define CSC_NAME(x) x##_i32
#include "graph/csc_impl.h"
#undef CSC_T
#undef CSC_NAME

#define CSC_T int64_t
#define CSC_NAME(x) x##_i64
#include "graph/csc_impl.h"
#undef CSC_T
#undef CSC_NAME

/*
 * Count in-degrees of edges [begin, end) into cnt and return the position of the first edge with
 * an id outside [0, num_nodes) (end if none). Bad edges are skipped so the caller can report the
 * first one exactly.
 */
static int64_t count_slice(const int64_t *src, const int64_t *dst, int64_t begin, int64_t end,
                           int64_t num_nodes, int symmetrize, int drop_loops, int64_t *cnt,
                           int threads) {
    int64_t bad = end;
    uint64_t n = (uint64_t)num_nodes;
    int atomic = threads > 1;
#pragma omp parallel for schedule(static) reduction(min : bad) num_threads(threads)
    for (int64_t i = begin; i < end; i++) {
        int64_t s = src[i], d = dst[i];
        /* One unsigned comparison rejects negative ids as well as ids that are too large. */
        if ((uint64_t)s >= n || (uint64_t)d >= n) {
            if (i < bad) bad = i;
            continue;
        }
        if (s == d) {
            if (!drop_loops) bump(&cnt[d], atomic);
            continue;
        }
        bump(&cnt[d], atomic);
        if (symmetrize) bump(&cnt[s], atomic);
    }
    return bad;
}

/* First node v in [0, n] with indptr[v] >= target (indptr is monotone). */
static int64_t lower_bound_node(const int64_t *indptr, int64_t n, int64_t target) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (indptr[mid] < target) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/*
 * The count pass: indptr[v] becomes the number of list slots of v. An edge with an id outside
 * [0, num_nodes) stops the build with a message naming the edge and the id.
 */
static gd_status csc_count(const gd_csc_options *opt, int64_t num_nodes, int64_t num_edges,
                           const int64_t *src, const int64_t *dst, int64_t *indptr, int threads) {
    gd_status st = GD_OK;
    for (int64_t b = 0; b < num_edges; b += CSC_SLICE) {
        int64_t e = b + CSC_SLICE < num_edges ? b + CSC_SLICE : num_edges;
        GD_CHECK(gd__progress(opt->progress, opt->progress_user, "csc: count", (uint64_t)b,
                              (uint64_t)num_edges));
        int64_t bad = count_slice(src, dst, b, e, num_nodes, opt->symmetrize,
                                  opt->remove_self_loops, indptr, threads);
        if (bad < e) {
            int bad_src = (uint64_t)src[bad] >= (uint64_t)num_nodes;
            int64_t v = bad_src ? src[bad] : dst[bad];
            GD_REQUIRE(0, GD_ERR_RANGE,
                       "edge %lld (%lld -> %lld): %s = %lld is outside [0, %lld): %s",
                       (long long)bad, (long long)src[bad], (long long)dst[bad],
                       bad_src ? "src" : "dst", (long long)v, (long long)num_nodes,
                       v < 0 ? "node ids must not be negative"
                             : "raise the node count or relabel the ids to 0..n-1");
        }
    }
    GD_CHECK(gd__progress(opt->progress, opt->progress_user, "csc: count", (uint64_t)num_edges,
                          (uint64_t)num_edges));
fail:
    return st;
}

/*
 * The scatter pass, over indptr holding each list's start: afterwards indptr[v] has advanced to
 * the end of v's list, i.e. the start of v + 1.
 */
static gd_status csc_scatter(const gd_csc_options *opt, gd_dtype dtype, int64_t num_edges,
                             const int64_t *src, const int64_t *dst, int64_t *indptr, void *idx,
                             int threads) {
    gd_status st = GD_OK;
    for (int64_t b = 0; b < num_edges; b += CSC_SLICE) {
        int64_t e = b + CSC_SLICE < num_edges ? b + CSC_SLICE : num_edges;
        GD_CHECK(gd__progress(opt->progress, opt->progress_user, "csc: scatter", (uint64_t)b,
                              (uint64_t)num_edges));
        if (dtype == GD_DTYPE_INT32)
            scatter_i32(src, dst, b, e, opt->symmetrize, opt->remove_self_loops, indptr, idx,
                        threads);
        else
            scatter_i64(src, dst, b, e, opt->symmetrize, opt->remove_self_loops, indptr, idx,
                        threads);
    }
fail:
    return st;
}

/*
 * Sort every list and drop its duplicates, in chunks of consecutive nodes with about the same
 * number of slots each (of slots in all), then compact the lists and shift indptr to match.
 * *idx may be replaced by a smaller buffer; *kept_out is the number of entries left.
 */
static gd_status csc_sort_compact(const gd_csc_options *opt, gd_dtype dtype, int64_t num_nodes,
                                  int64_t slots, int64_t *indptr, void **idx, int threads,
                                  int64_t *kept_out) {
    gd_status st = GD_OK;
    int64_t *chunk_node = NULL, *chunk_first = NULL, *chunk_kept = NULL;
    const size_t esize = gd_dtype_size(dtype);
    int64_t nchunks = (int64_t)threads * CSC_CHUNKS_PER_THREAD;
    if (nchunks > num_nodes) nchunks = num_nodes > 0 ? num_nodes : 1;
    GD_ALLOC(chunk_node, (size_t)(nchunks + 1) * sizeof(int64_t), "CSC sort chunks");
    GD_ALLOC(chunk_first, (size_t)(nchunks + 1) * sizeof(int64_t), "CSC sort chunks");
    GD_ALLOC(chunk_kept, (size_t)(nchunks + 1) * sizeof(int64_t), "CSC sort chunks");
    for (int64_t k = 0; k <= nchunks; k++) {
        int64_t target = (int64_t)((double)slots * (double)k / (double)nchunks);
        chunk_node[k] = k == nchunks ? num_nodes : lower_bound_node(indptr, num_nodes, target);
        if (k > 0 && chunk_node[k] < chunk_node[k - 1]) chunk_node[k] = chunk_node[k - 1];
        chunk_first[k] = indptr[chunk_node[k]];
    }
    int64_t wave = (int64_t)threads * 4;
    for (int64_t k0 = 0; k0 < nchunks; k0 += wave) {
        int64_t k1 = k0 + wave < nchunks ? k0 + wave : nchunks;
        GD_CHECK(gd__progress(opt->progress, opt->progress_user, "csc: sort",
                              (uint64_t)chunk_first[k0], (uint64_t)slots));
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
        for (int64_t k = k0; k < k1; k++) {
            if (dtype == GD_DTYPE_INT32)
                chunk_kept[k] = sort_chunk_i32(indptr, *idx, chunk_node[k], chunk_node[k + 1],
                                               chunk_first[k], chunk_first[k + 1]);
            else
                chunk_kept[k] = sort_chunk_i64(indptr, *idx, chunk_node[k], chunk_node[k + 1],
                                               chunk_first[k], chunk_first[k + 1]);
        }
    }
    GD_CHECK(gd__progress(opt->progress, opt->progress_user, "csc: sort", (uint64_t)slots,
                          (uint64_t)slots));

    /* compact: chunk k's kept ids sit at chunk_first[k]; move them to their final start. Moving
     * in increasing order never overwrites a chunk that has not moved yet. */
    int64_t kept = 0;
    for (int64_t k = 0; k < nchunks; k++) {
        int64_t from = chunk_first[k];
        chunk_first[k] = from - kept; /* now: how far chunk k moves down */
        if (from != kept && chunk_kept[k] > 0)
            memmove((char *)*idx + (size_t)kept * esize, (char *)*idx + (size_t)from * esize,
                    (size_t)chunk_kept[k] * esize);
        kept += chunk_kept[k];
    }
    if (kept != slots) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
        for (int64_t k = 0; k < nchunks; k++) {
            int64_t shift = chunk_first[k];
            for (int64_t v = chunk_node[k]; v < chunk_node[k + 1]; v++) indptr[v] -= shift;
        }
        void *smaller = gd_realloc(*idx, (size_t)(kept > 0 ? kept : 1) * esize);
        if (smaller) *idx = smaller; /* shrinking is only an economy: keep the buffer otherwise */
    }
    indptr[num_nodes] = kept;
    *kept_out = kept;
fail:
    gd_free(chunk_node);
    gd_free(chunk_first);
    gd_free(chunk_kept);
    return st;
}

gd_status gd_csc_from_coo(int64_t num_nodes, int64_t num_edges, const int64_t *src,
                          const int64_t *dst, const gd_csc_options *options, int64_t **indptr_out,
                          void **indices_out, gd_dtype *indices_dtype, int64_t *num_csc_edges) {
    gd_status st = GD_OK;
    int64_t *indptr = NULL;
    void *idx = NULL;
    gd_csc_options opt = GD_CSC_OPTIONS_INIT;

    GD_REQUIRE(indptr_out && indices_out && indices_dtype && num_csc_edges, GD_ERR_INVALID_ARG,
               "gd_csc_from_coo: the output pointers must not be NULL");
    *indptr_out = NULL;
    *indices_out = NULL;
    *num_csc_edges = 0;
    if (options)
        GD_CHECK(gd__options_in(&opt, sizeof opt, options, 0, "gd_csc_from_coo: options",
                                "GD_CSC_OPTIONS_INIT"));
    GD_REQUIRE(num_nodes >= 0, GD_ERR_INVALID_ARG,
               "gd_csc_from_coo: num_nodes = %lld is negative", (long long)num_nodes);
    GD_REQUIRE(num_edges >= 0, GD_ERR_INVALID_ARG,
               "gd_csc_from_coo: num_edges = %lld is negative", (long long)num_edges);
    GD_REQUIRE(num_edges == 0 || (src && dst), GD_ERR_INVALID_ARG,
               "gd_csc_from_coo: src or dst is NULL with %lld edges", (long long)num_edges);

    gd_dtype dtype = opt.index_dtype;
    if (dtype == GD_DTYPE_INVALID)
        dtype = num_nodes <= INT32_MAX ? GD_DTYPE_INT32 : GD_DTYPE_INT64;
    GD_REQUIRE(dtype == GD_DTYPE_INT32 || dtype == GD_DTYPE_INT64, GD_ERR_INVALID_ARG,
               "gd_csc_from_coo: index dtype %s is not supported: use int32, int64 or leave it "
               "unset for the smallest that fits",
               gd_dtype_name(dtype));
    GD_REQUIRE(dtype == GD_DTYPE_INT64 || num_nodes <= INT32_MAX, GD_ERR_RANGE,
               "gd_csc_from_coo: %lld nodes do not fit int32 indices: ask for int64 indices",
               (long long)num_nodes);
    size_t esize = gd_dtype_size(dtype);

    /* Sizes: indptr has num_nodes + 1 entries, the lists at most 2 * num_edges before
     * deduplication. Check both in bytes before any allocation. */
    int64_t max_slots, idx_bytes, ptr_bytes;
    GD_REQUIRE(!gd__mul_overflow_i64(num_edges, opt.symmetrize ? 2 : 1, &max_slots) &&
                   !gd__mul_overflow_i64(max_slots, (int64_t)esize, &idx_bytes) &&
                   !gd__mul_overflow_i64(num_nodes + 1, 8, &ptr_bytes) &&
                   (uint64_t)idx_bytes <= SIZE_MAX && (uint64_t)ptr_bytes <= SIZE_MAX,
               GD_ERR_OVERFLOW, "gd_csc_from_coo: %lld nodes and %lld edges overflow the sizes",
               (long long)num_nodes, (long long)num_edges);

    int threads = gd__num_threads();
    double t0 = gd__now();
    GD_ALLOC(indptr, (size_t)ptr_bytes, "the CSC indptr");
    memset(indptr, 0, (size_t)ptr_bytes);
    GD_CHECK(csc_count(&opt, num_nodes, num_edges, src, dst, indptr, threads));

    double t_count = gd__now();
    indptr[num_nodes] = gd__exclusive_scan_i64(indptr, num_nodes, threads);
    int64_t slots = indptr[num_nodes];
    GD_ALLOC(idx, (size_t)slots * esize, "the CSC indices");
    GD_CHECK(csc_scatter(&opt, dtype, num_edges, src, dst, indptr, idx, threads));
    if (num_nodes > 0) memmove(indptr + 1, indptr, (size_t)num_nodes * sizeof *indptr);
    indptr[0] = 0;
    double t_scatter = gd__now();

    int64_t kept = 0;
    GD_CHECK(csc_sort_compact(&opt, dtype, num_nodes, slots, indptr, &idx, threads, &kept));
    double t1 = gd__now();
    GD_DEBUG("csc: %lld nodes, %lld edges -> %lld (%s indices) in %.3f s (count %.3f s, "
             "scatter %.3f s, sort and compact %.3f s), %d threads",
             (long long)num_nodes, (long long)num_edges, (long long)kept, gd_dtype_name(dtype),
             t1 - t0, t_count - t0, t_scatter - t_count, t1 - t_scatter, threads);

    *indptr_out = indptr;
    *indices_out = idx;
    *indices_dtype = dtype;
    *num_csc_edges = kept;
    return GD_OK;
fail:
    gd_free(indptr);
    gd_free(idx);
    return st;
}

int64_t gd__csc_first_descent(const int64_t *indptr, int64_t n, int threads) {
    int64_t bad = n + 1;
#pragma omp parallel for schedule(static) reduction(min : bad) num_threads(threads)
    for (int64_t v = 1; v <= n; v++)
        if (indptr[v] < indptr[v - 1] && v < bad) bad = v;
    return bad;
}

/* The node whose list holds position pos of a valid indptr (last v with indptr[v] <= pos). */
static int64_t owner_node(const int64_t *indptr, int64_t n, int64_t pos) {
    int64_t lo = 0, hi = n; /* invariant: indptr[lo] <= pos, answer in [lo, hi) */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (indptr[mid] <= pos) lo = mid;
        else hi = mid;
    }
    return lo;
}

gd_status gd_csc_validate(int64_t num_nodes, const int64_t *indptr, const void *indices,
                          gd_dtype indices_dtype, int64_t num_edges) {
    gd_status st = GD_OK;
    GD_REQUIRE(num_nodes >= 0 && num_edges >= 0, GD_ERR_INVALID_ARG,
               "gd_csc_validate: negative size (%lld nodes, %lld edges)", (long long)num_nodes,
               (long long)num_edges);
    GD_REQUIRE(indptr, GD_ERR_INVALID_ARG, "gd_csc_validate: indptr is NULL");
    GD_REQUIRE(indices || num_edges == 0, GD_ERR_INVALID_ARG,
               "gd_csc_validate: indices is NULL with %lld edges", (long long)num_edges);
    GD_REQUIRE(indices_dtype == GD_DTYPE_INT32 || indices_dtype == GD_DTYPE_INT64,
               GD_ERR_FORMAT, "indices have dtype %s: a CSC graph stores int32 or int64 indices",
               gd_dtype_name(indices_dtype));
    GD_REQUIRE(indices_dtype == GD_DTYPE_INT64 || num_nodes <= (int64_t)INT32_MAX + 1,
               GD_ERR_FORMAT, "int32 indices cannot address %lld nodes: store them as int64",
               (long long)num_nodes);
    GD_REQUIRE(indptr[0] == 0, GD_ERR_FORMAT,
               "indptr[0] = %lld, expected 0: the first node's list must start at offset 0",
               (long long)indptr[0]);
    int threads = gd__num_threads();
    int64_t v = gd__csc_first_descent(indptr, num_nodes, threads);
    GD_REQUIRE(v > num_nodes, GD_ERR_FORMAT,
               "indptr[%lld] = %lld < indptr[%lld] = %lld: not monotone (each node's list must "
               "start where the previous one ends); the graph file is corrupt",
               (long long)v, (long long)indptr[v], (long long)(v - 1), (long long)indptr[v - 1]);
    GD_REQUIRE(indptr[num_nodes] == num_edges, GD_ERR_FORMAT,
               "indptr[%lld] = %lld but indices holds %lld entries: indptr and indices do not "
               "belong to the same graph",
               (long long)num_nodes, (long long)indptr[num_nodes], (long long)num_edges);
    for (int64_t b = 0; b < num_edges; b += CSC_SLICE) {
        int64_t e = b + CSC_SLICE < num_edges ? b + CSC_SLICE : num_edges;
        int64_t bad = indices_dtype == GD_DTYPE_INT32
                          ? first_bad_index_i32(indices, b, e, num_nodes, threads)
                          : first_bad_index_i64(indices, b, e, num_nodes, threads);
        if (bad < e) {
            int64_t x = indices_dtype == GD_DTYPE_INT32 ? ((const int32_t *)indices)[bad]
                                                        : ((const int64_t *)indices)[bad];
            GD_REQUIRE(0, GD_ERR_FORMAT,
                       "indices[%lld] = %lld is outside [0, %lld) (in the list of node %lld): "
                       "the graph file is corrupt or belongs to another node count",
                       (long long)bad, (long long)x, (long long)num_nodes,
                       (long long)owner_node(indptr, num_nodes, bad));
        }
    }
    return GD_OK;
fail:
    return st;
}
