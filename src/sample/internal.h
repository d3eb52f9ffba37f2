/*
 * The sampler module's internals: the sampler and minibatch objects, the worst-case sizes every
 * buffer is allocated from, the random draws that define which neighbours are picked (the
 * determinism contract of docs/sampling.md, shared by the CPU and the CUDA code so that both draw
 * exactly the same numbers), and the backend table. The graph the samplers read, with its
 * placement and its neighbour-list cache, is the graph module's (graph/internal.h). sampler.c
 * holds the public API; sample_cpu.c is the CPU backend and the oracle of the GPU tests;
 * sample_cuda.cu is the CUDA backend (GD_WITH_CUDA builds only). This header is plain C and its
 * inline functions also compile as CUDA device code.
 */
#ifndef GD_SAMPLE_INTERNAL_H
#define GD_SAMPLE_INTERNAL_H

#include "core/internal.h"
#include "core/philox.h"
#include "graph/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Sizes. Hops run from the seeds outward: hop h has max_dst[h] destination nodes (its frontier) and
 * max_edges[h] sampled edges; its source nodes are the frontier of hop h + 1, at most max_dst[h] +
 * max_edges[h] and at most the node count. Positions (destination nodes followed by edges, what the
 * relabelling ranks) must fit int32, as must the local ids.
 */
struct gd_sampler {
    gd_graph_t *graph;
    gd_sampler_backend backend;
    int num_layers;
    int fanouts[GD_SAMPLER_MAX_LAYERS]; /* hop order, -1 = all */
    int64_t max_batch;
    int replace;
    uint64_t seed;
    int threads;
    int64_t max_dst[GD_SAMPLER_MAX_LAYERS + 1]; /* [num_layers] = the input nodes */
    int64_t max_edges[GD_SAMPLER_MAX_LAYERS];
    int64_t table_cap[GD_SAMPLER_MAX_LAYERS]; /* hash table slots per hop (power
                                                 of two) */
    int64_t max_dst_all, max_edges_all, max_pos_all, max_table;
    /* Byte offsets of the arrays inside one minibatch allocation. */
    size_t off_nodes, off_indptr[GD_SAMPLER_MAX_LAYERS], off_indices[GD_SAMPLER_MAX_LAYERS];
    size_t minibatch_bytes;
    int64_t scratch_bytes;
    /* CUDA: which hops read the graph in address order (GD__SORT_*), from the sort_reads
     * option; tests and the benchmark set it to compare the two schedules, which give the same
     * minibatch. */
    int sort_reads;
    /* Locality-aware sampling (gd__bias_draws): the factor (1: off) and the library's host copy
     * of the caller's bitmap of buffered nodes, (num_nodes + 7) / 8 bytes (NULL when off). */
    int bias_factor;
    uint8_t *bias_bitmap;
    void *cpu;                     /* CPU backend scratch */
    struct gd__cuda_sampler *cuda; /* CUDA backend state */
};

/*
 * The CUDA sampler's read schedule (docs/sampling.md, "Reading in address order"). AUTO sorts the
 * frontier of every hop after the first when indptr or indices is pinned; NEVER reads in frontier
 * order; ALWAYS sorts every hop, the seeds' included, whatever the placement. Hops whose
 * worst-case frontier is far above the expected one are never sorted (the sort would cost more
 * than the reads). Only the order of the reads changes, never the result.
 */
enum {
    GD__SORT_AUTO = GD_SAMPLE_READS_AUTO,
    GD__SORT_NEVER = GD_SAMPLE_READS_FRONTIER,
    GD__SORT_ALWAYS = GD_SAMPLE_READS_SORTED
};

/* sizes[h] = frontier size of hop h (h <= num_layers); sizes[SIZES_EDGES + h] = edges of hop h. */
#define GD__SIZES_EDGES (GD_SAMPLER_MAX_LAYERS + 1)
#define GD__SIZES_COUNT (2 * GD_SAMPLER_MAX_LAYERS + 1)

struct gd_minibatch {
    const gd_sampler_t *sampler; /* identity only: checked by gd_sample, never dereferenced */
    gd_sampler_backend backend;
    int device;
    int num_layers;
    void *base; /* the one allocation holding every array (host or device) */
    int64_t *nodes;
    int32_t *indptr[GD_SAMPLER_MAX_LAYERS]; /* hop order */
    int32_t *indices[GD_SAMPLER_MAX_LAYERS];
    int64_t sizes[GD__SIZES_COUNT]; /* valid once `sampled` and not `pending` */
    int sampled;                    /* a gd_sample has written it */
    int pending;                    /* CUDA: the sizes are still being copied back */
    struct gd__cuda_minibatch *cuda;
};

/* ---- the determinism contract */

#define GD__RNG_EPOCH 0x45504f43u /* "EPOC": epoch key of the sampler */
#define GD__RNG_BATCH 0x42415443u /* "BATC": minibatch key */
#define GD__RNG_SHUFFLE                                                                            \
    0x53485546u /* "SHUF": epoch key of the seed shuffle                                           \
                 */

/* The 64-bit key of the draws of one minibatch: two Philox steps from (seed, epoch, batch). */
GD_HOST_DEVICE uint64_t gd__sample_key(uint64_t seed, int64_t epoch, int64_t batch) {
    const uint64_t e = (uint64_t)epoch, b = (uint64_t)batch;
    gd_philox_ctr k1 = gd_philox(seed, (uint32_t)e, (uint32_t)(e >> 32), 0, GD__RNG_EPOCH);
    const uint64_t ek = ((uint64_t)k1.v[1] << 32) | k1.v[0];
    gd_philox_ctr k2 = gd_philox(ek, (uint32_t)b, (uint32_t)(b >> 32), 0, GD__RNG_BATCH);
    return ((uint64_t)k2.v[1] << 32) | k2.v[0];
}

/*
 * Draw number j for node `node` of hop `hop`: an integer uniform in [0, n), from the counter (node
 * low, node high, j, hop) under the minibatch key, reduced by the 32-bit multiply-high
 * (gd_philox_below). Integer arithmetic only, so the CPU and the GPU agree exactly.
 */
GD_HOST_DEVICE uint64_t gd__sample_draw(uint64_t key, uint64_t node, uint32_t hop, uint32_t j,
                                        uint64_t n) {
    gd_philox_ctr r = gd_philox(key, (uint32_t)node, (uint32_t)(node >> 32), j, hop);
    return gd_philox_below(r.v[0], r.v[1], n);
}

/*
 * The hop word of the typed sampler's draws (hetero.c): hop h of edge type r. Above 255, so it
 * never equals a homogeneous hop's word, and distinct for every (h, r).
 */
GD_HOST_DEVICE uint32_t gd__typed_hop(int hop, int edge_type) {
    return 0x54000000u | ((uint32_t)hop << 16) | (uint32_t)edge_type;
}

/* How many neighbours a node of degree deg gets at a fanout (-1 = all). */
GD_HOST_DEVICE int64_t gd__sample_count(int64_t deg, int fanout, int replace) {
    if (fanout < 0 || deg == 0) return deg;
    if (replace) return fanout;
    return deg < fanout ? deg : fanout;
}

/*
 * How the CUDA sampler reads a node's list (docs/sampling.md, "Reading the lists"). The sample
 * kernel gives each node a group of gd__sample_group_lanes(fanout) lanes. A list read whole spans
 * at most GD__WHOLE_LIST_BYTES_PER_PICK bytes per neighbour taken (and per lane of the group,
 * the size of its window in shared memory); other lists are read entry by entry at the drawn
 * positions. Lists taken whole (fanout -1, or without replacement cnt == deg) are always read
 * whole. The rule depends only on the degree, the count and the entry size, so the output never
 * depends on it, and the read plan of the link ceiling (read_plan.c) follows the same rule.
 */
#define GD__WHOLE_LIST_BYTES_PER_PICK 32

GD_HOST_DEVICE int gd__sample_group_lanes(int fanout) {
    return fanout < 0 || fanout > 16 ? 32 : fanout > 8 ? 16 : 8;
}

/* Whether a list is taken whole: all its cnt == deg entries, in list order. */
GD_HOST_DEVICE int gd__sample_takes_all(int64_t deg, int64_t cnt, int fanout, int replace) {
    return fanout < 0 || (!replace && cnt == deg);
}

/* Whether the CUDA sampler reads the deg entries of a list (entry_bytes each) whole. */
GD_HOST_DEVICE int gd__sample_reads_whole(int64_t deg, int64_t cnt, int fanout, int replace,
                                          int64_t entry_bytes) {
    const int64_t g = gd__sample_group_lanes(fanout);
    if (gd__sample_takes_all(deg, cnt, fanout, replace)) return 1;
    return deg * entry_bytes <= (int64_t)GD__WHOLE_LIST_BYTES_PER_PICK * (cnt < g ? cnt : g);
}

/* The hash of the relabelling tables (fmix64 of MurmurHash3). */
GD_HOST_DEVICE uint64_t gd__sample_hash(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return k;
}

/*
 * The list positions (in [0, deg)) of the cnt neighbours that node v of hop `hop` draws, in draw
 * order, when its list is not taken whole (sample_cpu.c: with replacement cnt independent draws;
 * without, Floyd's algorithm). Both samplers read exactly these entries.
 */
void gd__sample_positions(uint64_t key, uint32_t hop, int replace, int64_t v, int64_t deg,
                          int64_t cnt, int64_t *out);

/* ---- locality-aware (biased) sampling: docs/sampling.md, "Biased sampling" */

/* Whether node u's bit is set in a bitmap of one bit per node (bit u % 8 of byte u / 8). */
GD_HOST_DEVICE int gd__bias_bit(const uint8_t *bitmap, int64_t u) {
    return (bitmap[u >> 3] >> (u & 7)) & 1;
}

/*
 * A drawn neighbour, before its list position is known: its class (buffered, bit set, or not)
 * and its rank within the class in list order. Buffered ones are coded as the rank, the others
 * as GD__BIAS_OTHER + rank, so the codes of one class are contiguous and sort by rank.
 */
#define GD__BIAS_OTHER ((int64_t)1 << 62)

/*
 * The cnt draws of node v of hop `hop` from a list of deg entries of which c are buffered, when
 * the list is not taken whole (cnt < deg without replacement, deg > 0 with). Buffered entries
 * weigh `factor`, the others 1. Step j (j = 0 .. cnt-1) draws r = draw(j, W) with W the weight
 * of the entries still available: factor * cb + ub, cb and ub the buffered and other entries
 * left (with replacement, always c and deg - c). r < factor * cb picks the buffered entry of
 * rank r / factor among those left, else the other entry of rank r - factor * cb among those
 * left; so each step picks an available entry with probability proportional to its weight.
 * Without replacement, a rank among those left becomes a rank among all of its class by
 * stepping over the taken ranks of the class at or below it, in increasing order; taken[0..j)
 * holds the codes taken so far, sorted. out[j] gets step j's code (GD__BIAS_OTHER above): the
 * draws in draw order. With replacement taken may be NULL (it is kept sorted when given). Only
 * integer arithmetic, and the same code on the CPU and the GPU: both get the same codes.
 */
GD_HOST_DEVICE void gd__bias_draws(uint64_t key, uint32_t hop, int replace, int64_t factor,
                                   int64_t v, int64_t deg, int64_t c, int64_t cnt, int64_t *out,
                                   int64_t *taken) {
    int64_t cb = c, ub = deg - c;
    for (int64_t j = 0; j < cnt; j++) {
        const int64_t wb = factor * cb;
        const int64_t r =
            (int64_t)gd__sample_draw(key, (uint64_t)v, hop, (uint32_t)j, (uint64_t)(wb + ub));
        const int buffered = r < wb;
        int64_t code = buffered ? r / factor : GD__BIAS_OTHER + (r - wb);
        int64_t q = 0;
        if (!replace) {
            /* Skip the other class's codes below this class, then step over the taken ranks at
             * or below the code: afterwards taken[q] is the first taken code above it. */
            const int64_t lo = buffered ? 0 : GD__BIAS_OTHER;
            while (q < j && taken[q] < lo) q++;
            while (q < j && taken[q] <= code) {
                code++;
                q++;
            }
            if (buffered)
                cb--;
            else
                ub--;
        } else if (taken) {
            while (q < j && taken[q] <= code) q++;
        }
        if (taken) {
            for (int64_t x = j; x > q; x--) taken[x] = taken[x - 1];
            taken[q] = code;
        }
        out[j] = code;
    }
}

/* ---- shared helpers (sampler.c) */

/* Point mb's arrays into the allocation at mb->base, using s's offsets. */
void gd__minibatch_carve(const gd_sampler_t *s, gd_minibatch_t *mb);

/* ---- backends */

typedef struct {
    const char *name;
    gd_status (*sampler_init)(gd_sampler_t *s);
    void (*sampler_release)(gd_sampler_t *s);
    gd_status (*minibatch_init)(const gd_sampler_t *s, gd_minibatch_t *mb);
    void (*minibatch_release)(gd_minibatch_t *mb);
    gd_status (*sample)(gd_sampler_t *s, const int64_t *seeds, int64_t n, int seeds_on_device,
                        uint64_t key, void *stream, gd_minibatch_t *mb);
    gd_status (*minibatch_wait)(gd_minibatch_t *mb);
    gd_status (*check_errors)(gd_sampler_t *s);
    /* s->bias_factor / bias_bitmap changed (gd__sampler_set_bias): the backend's scratch and
     * its copy of the bitmap follow. */
    gd_status (*bias_update)(gd_sampler_t *s);
} gd__sample_backend;

/*
 * Change the locality-aware bias of s after creation (the trainer sets it once its feature cache
 * exists, and the adaptive factor between epochs): factor 0 or 1 turns it off, 2 to
 * GD_SAMPLER_MAX_BIAS needs bitmap (one bit per node, copied; NULL keeps the current one). Call
 * it only when no sampling of s is in flight.
 */
gd_status gd__sampler_set_bias(gd_sampler_t *s, const uint8_t *bitmap, int factor);

extern const gd__sample_backend gd__sample_cpu_backend;
#ifdef GD_WITH_CUDA
extern const gd__sample_backend gd__sample_cuda_backend;
#endif

/*
 * The backend that serves a sampler backend in this build: the CUDA one in CUDA builds (it reports
 * GD_ERR_NO_DEVICE where no GPU is visible); otherwise the CPU table, whose GPU entries report that
 * graphdirect was built without CUDA.
 */
const gd__sample_backend *gd__sample_backend_for(gd_sampler_backend backend);

#ifdef __cplusplus
}
#endif

#endif /* GD_SAMPLE_INTERNAL_H */
