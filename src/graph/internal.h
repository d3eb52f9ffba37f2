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
};

/* The slot of a list location is its entry offset into the tier's array (tier.h). */
#define GD__LOC_OFFSET_MASK GD__LOC_SLOT_MASK

/* ---- CSC helpers shared by csc.c and degree.c */

/* First v in [1, n] with indptr[v] < indptr[v - 1], or n + 1 if indptr is monotone. */
int64_t gd__csc_first_descent(const int64_t *indptr, int64_t n, int threads);

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
} gd__graph_backend;

#ifdef GD_WITH_CUDA
extern const gd__graph_backend gd__graph_cuda_backend;
#endif

#ifdef __cplusplus
}
#endif

#endif /* GD_GRAPH_INTERNAL_H */
