/*
 * The typed (heterogeneous) sampler's internals: the sampler and minibatch objects, shared by the
 * CPU code (hetero.c, which holds the public API and is the oracle of the GPU test) and the CUDA
 * backend (hetero_cuda.cu, GD_WITH_CUDA builds only), and what the trainer needs beyond the
 * public API: the capacities every buffer of a model over its minibatches is sized by. Plain C;
 * the CUDA file includes it too.
 */
#ifndef GD_SAMPLE_HETERO_H
#define GD_SAMPLE_HETERO_H

#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The typed graph's arrays as the CUDA sampler may read them where they are: the device
 * addresses of the dataset's indptr, indices and edge types registered in host memory (pinned,
 * read over UVA) by the caller, who keeps them registered while the sampler lives. A NULL
 * member: the sampler copies that array to GPU memory at create.
 */
typedef struct {
    const void *indptr, *indices, *etype;
} gd__hetero_graph_dev;

struct gd_hetero_sampler {
    const gd_dataset_t *ds;
    gd_sampler_backend backend;
    int num_layers, T, R, target;
    int fanouts[GD_SAMPLER_MAX_LAYERS][GD_MAX_EDGE_TYPES];
    int src[GD_MAX_EDGE_TYPES], dst[GD_MAX_EDGE_TYPES];
    int64_t max_batch;
    int replace;
    uint64_t seed;
    int threads;
    /* Capacities: nodes of type t after hop h (h = 0: the seeds), edges of (hop, type). */
    int64_t max_nodes[GD_SAMPLER_MAX_LAYERS + 1][GD_MAX_NODE_TYPES];
    int64_t max_edges[GD_SAMPLER_MAX_LAYERS][GD_MAX_EDGE_TYPES];
    int64_t table_cap;  /* relabelling table slots (a power of two) */
    int64_t all_nodes;  /* the most nodes of all types a minibatch holds */
    int64_t most_dst;   /* the largest frontier of one type (at least 1) */
    int64_t step_edges; /* the most edges of one (hop, edge type) */
    const int64_t *indptr, *offsets;
    const void *indices;
    int is32;
    gd_array_view etype;
    /* CPU scratch: relabelling table and the draws of one (hop, edge type). */
    int64_t *keys;
    int32_t *vals;
    int64_t *used; /* the table slots a minibatch filled, cleared after it */
    int64_t *draws, *starts, *degs;
    /* CUDA: a sorted copy of the seeds (max_batch), for the host's repeat check. */
    int64_t *sorted;
    /* CUDA: the GPU (the current one at create), the arrays it reads in place, its state. */
    int device;
    gd__hetero_graph_dev mapped;
    struct gd__hetero_cuda *cuda;
};

struct gd_hetero_minibatch {
    const gd_hetero_sampler_t *sampler;
    int num_layers, T, R;
    int64_t count[GD_SAMPLER_MAX_LAYERS + 1][GD_MAX_NODE_TYPES]; /* by hop, as max_nodes */
    /* Host memory, or GPU memory inside d_base for a CUDA sampler's minibatch. */
    int64_t *nodes[GD_MAX_NODE_TYPES];                         /* global ids, local order */
    int32_t *indptr[GD_SAMPLER_MAX_LAYERS][GD_MAX_EDGE_TYPES]; /* by hop */
    int32_t *indices[GD_SAMPLER_MAX_LAYERS][GD_MAX_EDGE_TYPES];
    int64_t edges[GD_SAMPLER_MAX_LAYERS][GD_MAX_EDGE_TYPES];
    int sampled;
    void *d_base; /* CUDA: the one device allocation holding every array (NULL on the CPU) */
    int device;   /* CUDA: the GPU of d_base */
};

/*
 * The most nodes of type t at layer l, into max_nodes[l * T + t] ((L + 1) * T entries; layer 0
 * the input nodes, layer L the seeds), and the most edges of edge type r's block in layer l,
 * into max_edges[l * R + r] (L * R entries), in training's layer order.
 */
gd_status gd__hetero_sampler_capacity(const gd_hetero_sampler_t *s, int64_t *max_nodes,
                                      int64_t *max_edges);

/*
 * gd_hetero_sampler_create with, for GD_SAMPLER_CUDA, the arrays of the graph it reads in place
 * (mapped; NULL or NULL members: copied to GPU memory), as heterogeneous zero-copy training
 * keeps a graph that does not fit its GPU budget in pinned host memory.
 */
gd_status gd__hetero_sampler_create(const gd_dataset_t *ds, const int *fanouts, int num_layers,
                                    const gd_sampler_options *options,
                                    const gd__hetero_graph_dev *mapped, gd_hetero_sampler_t **out);

#ifdef GD_WITH_CUDA
/*
 * The CUDA backend (hetero_cuda.cu). init copies the graph to GPU memory (the arrays not
 * mapped) and allocates every
 * scratch buffer from s's capacities; release frees them (s->cuda NULL: nothing). The minibatch
 * pair allocates and frees mb's arrays in GPU memory. sample writes the minibatch of the n
 * seeds (checked by the caller) with draws under key, and returns when it is written, with
 * mb->count and mb->edges filled on the host.
 */
gd_status gd__hetero_cuda_init(gd_hetero_sampler_t *s);
void gd__hetero_cuda_release(gd_hetero_sampler_t *s);
gd_status gd__hetero_cuda_minibatch_init(const gd_hetero_sampler_t *s, gd_hetero_minibatch_t *mb);
void gd__hetero_cuda_minibatch_release(gd_hetero_minibatch_t *mb);
gd_status gd__hetero_cuda_sample(gd_hetero_sampler_t *s, const int64_t *seeds, int64_t n,
                                 uint64_t key, gd_hetero_minibatch_t *mb);
#endif

#ifdef __cplusplus
}
#endif

#endif
