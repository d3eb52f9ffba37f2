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
#define GD__PLAN_MAX_ROWS 8

typedef struct {
    /* The dataset. */
    int64_t num_nodes, num_edges;
    int64_t row_bytes;     /* one feature row */
    int64_t feature_dtype_bytes;
    int64_t index_bytes;   /* an entry of indices as a GPU copy holds it (4 when ids fit) */
    /* The data path: what every GPU mode allocates (ring, sampler scratch, model, reserve). */
    int64_t fixed_bytes;
    /* What was asked. */
    gd__train_mode mode;
    int64_t gpu_cache_bytes;   /* feature rows (-1: what is left) */
    int64_t graph_cache_bytes; /* neighbour lists (-1: a quarter of what the budget leaves) */
    int64_t gpu_mem_budget;    /* 0: none asked (the budget is then what is free) */
    /* The machine. */
    int have_gpu;    /* a GPU is visible (and CUDA built) */
    int cuda_built;
    int64_t budget;  /* GPU memory the data path may use: min(asked, free) */
    int64_t memlock; /* host memory that may be page-locked (INT64_MAX: unlimited) */
    /*
     * Host memory: what the run allocates there beyond the dataset (which is already open),
     * and what it may take (core/hostmem.h; <= 0: unknown, not checked).
     */
    int64_t host_model_bytes; /* the model, when it lives in host memory (cpu mode) */
    int64_t host_batch_bytes; /* the minibatch buffers of the modes that fill them on the CPU */
    int64_t host_budget;
    const char *host_source; /* where host_budget comes from, for the message */
} gd__plan_input;

typedef struct {
    const char *structure; /* "indptr", "indices", "neighbour-list cache", "features", ... */
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
    int num_rows;
    gd__plan_row rows[GD__PLAN_MAX_ROWS];
} gd__plan;

/*
 * The plan for in. Fails (GD_ERR_NO_MEMORY) when all-gpu is asked under a budget the graph and
 * the features exceed, naming the sizes and zero-copy, and when what the mode allocates in host
 * memory exceeds the host budget, naming both and the fixes.
 */
gd_status gd__plan_make(const gd__plan_input *in, gd__plan *out);
/* The plan as a table, one row a line ("structure  where  bytes"), then the reason. */
void gd__plan_table(const gd__plan *p, char *buf, size_t n);
/*
 * The plan a trainer of cfg over ds would follow on this machine now, without building
 * anything (trainer.c): what `auto` picks and why; `graphdirect info` prints it.
 */
gd_status gd__trainer_plan(const gd_dataset_t *ds, const gd__train_config *cfg, gd__plan *out);
/* Host memory that may be page-locked (RLIMIT_MEMLOCK; INT64_MAX = unlimited). */
int64_t gd__plan_memlock_limit(void);
/* "%.2f GiB" of bytes, into buf. */
const char *gd__plan_gib(int64_t bytes, char *buf, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* GD_TRAIN_PLAN_H */
