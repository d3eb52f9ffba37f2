/*
 * The graph module's internals: the placed graph (gd_graph_t) that the samplers read, with the
 * tier store (feature/tier.h) that holds its lists for GPU readers and their hot GPU cache, and
 * the backend table that puts the graph in GPU memory. csc.c builds and checks CSC arrays,
 * degree.c summarises and scores their degrees, graph.c holds the gd_graph_* API and places each
 * array in host, pinned or GPU memory, and graph_cuda.cu (GD_WITH_CUDA builds only) makes the
 * GPU copies. The sampler (src/sample/)
 * includes this header to read the placed arrays. This header is plain C so that .cu files can
 * include it.
 */
#ifndef GD_GRAPH_INTERNAL_H
#define GD_GRAPH_INTERNAL_H

#include "core/internal.h"
#include "feature/tier.h"

#ifdef __cplusplus
extern "C" {
#endif

struct gd__peer_view_s; /* core/peers.h */

struct gd_graph {
    int64_t num_nodes, num_edges, max_degree;
    gd_dtype indices_dtype; /* as stored */
    gd_placement indptr_place, indices_place;
    gd_context_t *context; /* of the gpu and pinned placements (a reference) */
    int device;            /* the context's */
    /* Host addresses (host and pinned placements), NULL for a gpu placement. */
    const int64_t *h_indptr;
    const void *h_indices;
    /* Addresses GPU kernels read (gpu and pinned placements), NULL for a host placement. */
    const int64_t *d_indptr;
    const void *d_indices;
    /*
     * pinned: the host tensors (adopted caller memory or a library-owned copy), registered
     * through the context's registry.
     */
    gd_host_tensor_t *pin_indptr, *pin_indices;
    /* gpu: device memory owned by the graph. */
    void *dev_indptr, *dev_indices;
    int64_t device_bytes, pinned_bytes;
    /*
     * The lists as GPU kernels read them (d_indptr and d_indices both set): a tier store of
     * variable rows (entries of indices, delimited by indptr) whose home tier is the pinned or
     * GPU indices, and which holds the hot neighbour-list GPU cache (pinned indices,
     * gpu_cache_bytes > 0). NULL when the CUDA sampler cannot read the graph.
     */
    gd__tier_store *store;
    /*
     * Views of the store's cache: d_loc (GPU memory, num_nodes entries) holds each node's list
     * location (gd__loc_make: the GPU cache and the entry offset into d_cache for a cached list,
     * else the home tier and indptr[v]); both NULL without a cache.
     */
    const int64_t *d_loc;
    const void *d_cache;
    int64_t cache_nodes, cache_edges, cache_bytes;
    int64_t cache_budget; /* the bytes the list cache was given */
    /*
     * A list cache placed over the GPUs of a group (gd__graph_cache_place) whose memory the other
     * ranks read: their caches as this GPU addresses them (gd__graph_keep_peers), closed by
     * gd_graph_destroy after a barrier of the context's communicator. NULL otherwise.
     */
    struct gd__peer_view_s *peers;
};

/* The slot of a list location is its entry offset into the tier's array (tier.h). */
#define GD__LOC_OFFSET_MASK GD__LOC_SLOT_MASK

/* ---- the hot neighbour-list cache (graph.c; docs/sampling.md) */

/*
 * The PCIe requests of one read of a list of d entries of es bytes: one per 128-byte line plus
 * one when it is read whole (short lists), about the fanout when its entries are read one by one
 * (long lists), so GD__GRAPH_TYPICAL_FANOUT at most.
 */
#define GD__GRAPH_TYPICAL_FANOUT 10

static inline int64_t gd__graph_list_requests(int64_t d, int64_t es) {
    const int64_t lines = (d * es + 127) / 128;
    return 1 + lines < GD__GRAPH_TYPICAL_FANOUT ? 1 + lines : GD__GRAPH_TYPICAL_FANOUT;
}

/*
 * The ranking of the lists for the cache, best first: from outdeg[v], v's out-degree (how often
 * v joins a frontier), score[v] = out-degree x requests / list bytes (times 4096, 0 for an empty
 * list), the requests a cached byte saves (score may be outdeg: ranked in place); rows[0 ..
 * *count) are every node by that score, ties by id (gd_hot_rows_select). indptr: the host
 * indptr. A list's share of the list-read requests, what a placement over several GPUs weighs
 * it by, is out-degree x requests.
 */
gd_status gd__graph_rank_lists(const gd_graph_t *g, const int64_t *indptr, const int64_t *outdeg,
                               int64_t *score, int64_t *rows, int64_t *count);

/*
 * The candidates of a list cache placed over several GPUs (train/placed.c, train/placement.h's
 * sized candidates): the lists in gd__graph_rank_lists's order that are read at all (out-degree
 * and entries above 0), until their bytes reach `bytes` (colder ones could only fill gaps), into
 * rows[0 .. *count) with size[i] = the list's bytes and prob[i] = its share of every list's
 * requests (out-degree x requests over their sum for all nodes). outdeg: the out-degrees; the
 * three outputs have room for every node. Every GPU computes the same candidates.
 */
gd_status gd__graph_list_candidates(const gd_graph_t *g, const int64_t *indptr,
                                    const int64_t *outdeg, int64_t bytes, int64_t *rows,
                                    double *prob, int64_t *size, int64_t *count);

/*
 * Rebuild g's list cache from a placement over the GPUs of a group (train/placed.c): own are the
 * lists this GPU caches, peers[q] those peer q caches (tier.h's gd__tier_cache_build_placed; the
 * budgets in bytes). The old cache is freed first. Lists only peers cache stay home until
 * gd__graph_set_peer installs the peer. A graph whose lists GPU kernels read (pinned indices)
 * gets a CUDA store; a host graph a CPU store, whose lists (in host memory, the peers' too) the
 * CPU sampler then reads through the map: the reference of the tests. indptr: the host indptr.
 */
gd_status gd__graph_cache_place(gd_graph_t *g, const int64_t *indptr,
                                const gd__tier_cache_rows *own, const gd__tier_cache_rows *peers,
                                int num_peers);
/* Slot 0 of g's list cache (NULL: it caches nothing) and its slots (entries). */
const void *gd__graph_cache_mem(const gd_graph_t *g, int64_t *units);
/* The slots peer q's list cache has under the placement (0: g reads no list from it). */
int64_t gd__graph_peer_units(const gd_graph_t *g, int peer);
/* Install peer q's list cache (base as g's device addresses it): gd__tier_store_set_peer. */
gd_status gd__graph_set_peer(gd_graph_t *g, int peer, const void *base, int64_t units);
/*
 * g takes view (gd_malloc'd, the ranks' list caches mapped by gd__peers_share): gd_graph_destroy
 * waits for every rank of the context's communicator (gd__peers_barrier) before it closes the
 * view and frees the cache the others read.
 */
void gd__graph_keep_peers(gd_graph_t *g, struct gd__peer_view_s *view);

/*
 * Every node's out-degree (gd_csc_degree_scores' GD_DEGREE_OUT) into scores: counted by the GPU
 * where its kernels read the indices (pinned or GPU placement, a CUDA build), else by the CPU
 * pass over the host indices. One result either way; the GPU pass is the start-up's (issue 19).
 */
gd_status gd__graph_out_degrees(const gd_graph_t *g, int64_t *scores);

/*
 * Build g's hot neighbour-list cache (gpu_cache_bytes of gd_graph_options) after the graph is
 * created without one: the graph's indices pinned, its indptr in GPU memory. out_degrees are
 * the nodes' out-degrees (gd__graph_out_degrees). indptr: the host indptr. A graph that has a
 * cache already is refused.
 */
gd_status gd__graph_build_cache(gd_graph_t *g, const int64_t *indptr, int64_t budget,
                                const int64_t *out_degrees);

/* ---- CSC helpers shared by csc.c and degree.c */

/*
 * The CPU out-degree pass of gd_csc_degree_scores over `edges` indices (int32 or int64, checked
 * by the caller) on every core; GD_ERR_RANGE names the first index outside [0, num_nodes).
 */
gd_status gd__csc_out_degrees(int64_t num_nodes, int64_t edges, const void *indices,
                              gd_dtype indices_dtype, int64_t *scores);
/* First v in [1, n] with indptr[v] < indptr[v - 1], or n + 1 if indptr is monotone. */
int64_t gd__csc_first_descent(const int64_t *indptr, int64_t n, int threads);
/* The largest degree of a monotone indptr of n nodes (one parallel pass; graph.c). */
int64_t gd__csc_max_degree(const int64_t *indptr, int64_t n);

/* ---- placement in GPU memory */

/*
 * What graph.c asks of the GPU. The CUDA table (graph_cuda.cu) serves CUDA builds and reports
 * GD_ERR_NO_DEVICE where no GPU is visible; graph.c's own table serves builds without CUDA and
 * says so. A failed call may leave device memory behind: the caller destroys the graph, which
 * releases it.
 */
typedef struct {
    /* gpu placement: copy indptr and/or indices (either may be NULL) to the device, narrowing
     * src_dtype indices to g->indices_dtype; sets g->d_* and g->dev_*. */
    gd_status (*to_device)(gd_graph_t *g, const int64_t *indptr, const void *indices,
                           gd_dtype src_dtype);
    /* Free every device array of g (best effort) and clear the dev_* pointers. */
    void (*release)(gd_graph_t *g);
    /* Every node's out-degree into scores (host, num_nodes entries), counted by the GPU over
     * g->d_indices; GD_ERR_RANGE names the first index outside the nodes, as
     * gd_csc_degree_scores does. */
    gd_status (*out_degrees)(const gd_graph_t *g, int64_t *scores);
} gd__graph_backend;

#ifdef GD_WITH_CUDA
extern const gd__graph_backend gd__graph_cuda_backend;
#endif

#ifdef __cplusplus
}
#endif

#endif /* GD_GRAPH_INTERNAL_H */
