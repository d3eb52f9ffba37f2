/*
 * The placement plan: where every structure of the data path lives (GPU memory, a GPU cache,
 * pinned host memory read over PCIe, host memory) with its bytes and the reason, as a pure
 * function of the dataset's sizes, what was asked and the machine (a GPU or not, the GPU memory
 * budget, the locked-memory limit, the host memory budget). auto mode's choice is the plan's; the data path places by
 * it (datapath.c); `graphdirect info` prints it (gd_trainer_plan). A new tier (an SSD, a peer
 * GPU) is a new `where` of the rows, not a new mode.
 */
#ifndef GD_TRAIN_PLAN_H
#define GD_TRAIN_PLAN_H

#include "train/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* GPU memory kept free beyond the estimate (cuBLAS workspaces, kernels' own buffers). */
#define GD__PLAN_GPU_RESERVE (INT64_C(768) << 20)
#define GD__PLAN_MAX_ROWS 24

typedef struct {
    /* The dataset. */
    int64_t num_nodes, num_edges;
    int64_t row_bytes;     /* one feature row */
    int64_t feature_dtype_bytes;
    gd_dtype feature_dtype; /* the table's (0: float32); the plan names a half one */
    int64_t index_bytes;   /* an entry of indices as a GPU copy holds it (4 when ids fit) */
    /* The data path: what every GPU mode allocates (ring, sampler scratch, model, reserve). */
    int64_t fixed_bytes;
    /* What was asked. */
    gd__train_mode mode;
    int64_t gpu_cache_bytes;   /* feature rows (-1: what is left) */
    int64_t graph_cache_bytes; /* neighbour lists (-1: a quarter of what the budget leaves) */
    /*
     * zero-copy with the host rows copied by CPU threads (--host-gather cpu, split or auto):
     * the default neighbour-list cache takes up to three quarters of what the budget leaves.
     */
    int host_rows_by_cpu;
    int64_t gpu_mem_budget;    /* 0: none asked (the budget is then what is free) */
    /* The machine. */
    int have_gpu;    /* a GPU is visible (and CUDA built) */
    int cuda_built;
    int64_t budget;  /* GPU memory the data path may use: min(asked, free) */
    int64_t gpu_free; /* GPU memory free before the data path (0 without a GPU) */
    int64_t memlock; /* host memory that may be page-locked (INT64_MAX: unlimited) */
    /*
     * Host memory: what the run allocates there beyond the dataset (which is already open),
     * and what it may take (core/hostmem.h; <= 0: unknown, not checked).
     */
    int64_t host_model_bytes; /* the model, when it lives in host memory (cpu mode) */
    int64_t host_batch_bytes; /* the minibatch buffers of the modes that fill them on the CPU */
    int64_t host_budget;
    const char *host_source; /* where host_budget comes from, for the message */
    /*
     * The SSD tier: the features are a file the I/O engine can read (a dataset directory's
     * features.npy), and the rows of the largest minibatch (its staging in pinned memory).
     */
    int features_file;
    int64_t max_input_rows;
} gd__plan_input;

typedef struct {
    /* "indptr", "indices", "neighbour-list cache", "features", "feature cache: paper ..." */
    char structure[64];
    const char *where;     /* "gpu", "gpu cache", "pinned host", "host" */
    int64_t bytes;         /* -1: decided at creation (what the budget leaves) */
} gd__plan_row;

typedef struct {
    gd__train_mode mode; /* resolved (never auto) */
    char text[512];      /* the reason, as auto and the trainer report it */
    gd_placement indptr, indices; /* where the sampler reads the graph (GPU modes) */
    int64_t graph_cache_bytes;    /* zero-copy: the neighbour-list cache */
    int64_t feature_cache_bytes;  /* zero-copy: the feature cache (-1: what is left) */
    int64_t host_bytes;           /* host memory the run allocates (the dataset excluded) */
    int64_t budget, gpu_free;     /* the input's: the GPU memory budget, what was free */
    int64_t gpu_bytes;            /* GPU memory of the rows known at planning (caches "what is
                                     left" excluded) */
    /*
     * The features on disk (zero-copy and cpu, when the table exceeds the host memory budget
     * and is a file): host_buffer_rows of the hottest rows in host memory (pinned for the GPU,
     * the CPU path's dynamic cache in cpu mode), staging_bytes of pinned staging for a
     * minibatch's misses (GPU), the rest read from the file.
     */
    int features_on_disk;
    int64_t host_buffer_rows, staging_bytes;
    /*
     * A heterogeneous dataset in zero-copy (train/hetero.c): whether each array of the typed
     * graph (indptr, indices, edge types) is in GPU memory (else pinned host memory, read by the
     * CUDA typed sampler over UVA), and how many of each node type's hottest rows its GPU cache
     * holds, in cache_bytes of GPU memory (the rows and the types' location maps).
     */
    int hgraph_gpu[3];
    int64_t hcached[GD_MAX_NODE_TYPES];
    int64_t hcache_bytes;
    int num_rows;
    gd__plan_row rows[GD__PLAN_MAX_ROWS];
} gd__plan;

/*
 * The plan for in. Fails (GD_ERR_NO_MEMORY) when all-gpu is asked under a budget the graph and
 * the features exceed, naming the sizes and zero-copy, and when what the mode allocates in host
 * memory exceeds the host budget, naming both and the fixes.
 */
gd_status gd__plan_make(const gd__plan_input *in, gd__plan *out);
/*
 * Exact (layer-wise) inference on a GPU (infer.c), planned like the data path: the chunk
 * buffers first (at least reserve_rows rows of capacity), then the hidden tables, then the
 * features, each in GPU memory while it fits in the budget and in pinned host memory (read
 * zero-copy) otherwise; the chunk capacity then grows into what the budget leaves.
 */
#define GD__PLAN_INFER_MIN_CHUNK_ROWS (INT64_C(1) << 16)
#define GD__PLAN_INFER_MAX_CHUNK_ROWS (INT64_C(1) << 24)
typedef struct {
    int64_t num_nodes, num_edges;
    int num_layers;
    int64_t dims[GD__MODEL_MAX_LAYERS + 1]; /* layer widths: the features' ... the logits' */
    int64_t index_bytes;                    /* an entry of the dataset's indices */
    int64_t budget;                         /* GPU memory inference may use */
    int64_t max_chunk_rows;                 /* asked (0: sized from the budget) */
} gd__infer_plan_input;

typedef struct {
    int hidden_tables;      /* 0..2 activation tables of hidden_bytes each */
    int hidden_on_gpu[2];   /* table i + 1 in GPU memory (else pinned host) */
    int features_on_gpu;    /* the features copied into GPU memory (else read where they are) */
    int64_t hidden_bytes, feature_bytes;
    int64_t unit_bytes;     /* chunk buffers per row of chunk capacity */
    int64_t chunk_rows;     /* the chunk capacity */
    int64_t gpu_bytes;      /* tables and chunk buffers in GPU memory */
} gd__infer_plan;

/* The inference plan for in; GD_ERR_NO_MEMORY when the budget cannot hold the chunk buffers. */
gd_status gd__plan_infer(const gd__infer_plan_input *in, gd__infer_plan *out);
/* Its rows ("exact inference: ...") added to a plan, with gpu or pinned host as planned. */
void gd__plan_add_infer(gd__plan *p, const gd__infer_plan *ip);
/* The rows of an inference on the CPU (its hidden tables in host memory). */
void gd__plan_add_infer_cpu(gd__plan *p, int hidden_tables, int64_t hidden_bytes);
/* The row of a GPU inference whose chunk buffers (needed bytes) exceed its budget. */
void gd__plan_add_infer_none(gd__plan *p, int64_t needed);

/*
 * Heterogeneous zero-copy's GPU memory (pure; train/hetero.c plans with it): the half of what
 * budget leaves after the reserve that auto grants the data holds the typed graph's arrays
 * (graph[0..2]: indptr, indices, edge types) that fit, in the order indptr, edge types,
 * indices (their reads per byte), gpu[k] = 1 for those, and *cache gets what is left for the
 * per-type caches (>= 0). asked >= 0 (--gpu-cache) gives the caches that many bytes first and
 * the graph what remains.
 */
void gd__plan_hetero_zero_copy(const int64_t graph[3], int64_t budget, int64_t asked, int gpu[3],
                               int64_t *cache);
/* A row of the plan (dropped past GD__PLAN_MAX_ROWS; the structure is copied, cut at 63). */
void gd__plan_add_row(gd__plan *p, const char *structure, const char *where, int64_t bytes);
/* bytes in the largest unit that keeps the number >= 1 ("512 B", "1.50 MiB"), into buf. */
const char *gd__plan_bytes(int64_t bytes, char *buf, size_t n);
/* The plan as a table, one row a line ("structure  where  bytes"), then the reason. */
void gd__plan_table(const gd__plan *p, char *buf, size_t n);
/*
 * The plan a trainer of cfg over ds would follow on this machine now, without building
 * anything (trainer.c): what `auto` picks and why; `graphdirect info` prints it.
 */
gd_status gd__trainer_plan(const gd_dataset_t *ds, const gd__train_config *cfg, gd__plan *out);
/*
 * The plan of a heterogeneous dataset (train/hetero.c): the mode (auto's pick: all-gpu, else
 * zero-copy, else cpu-centric on a GPU; cpu without one), the graph's arrays and the per-type
 * feature tables with their place; a GPU mode asked by name without a GPU fails here.
 */
gd_status gd__htrain_plan(const gd_dataset_t *ds, const gd__train_config *cfg, gd__plan *out);
/* Host memory that may be page-locked (RLIMIT_MEMLOCK; INT64_MAX = unlimited). */
int64_t gd__plan_memlock_limit(void);
/* "%.2f GiB" of bytes, into buf. */
const char *gd__plan_gib(int64_t bytes, char *buf, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* GD_TRAIN_PLAN_H */
