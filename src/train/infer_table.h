/*
 * The pieces that the layer-wise inferences share (infer.c: homogeneous models; hetero_infer.c:
 * the relational ones): activation tables placed where the backend reads them, and a staging
 * buffer through which the host hands a chunk's graph slice to the GPU.
 *
 * A table holds rows x cols float32. On the CPU it is host memory (a view of given rows, or
 * allocated). On a GPU it is GPU memory, or pinned host memory registered for the GPU, which
 * kernels read zero-copy through its device address and which a chunk's own rows and outputs
 * reach by one contiguous DMA copy (gd__infer_table_rows, gd__infer_table_commit). A half
 * table (float16, bfloat16) is widened once into a float32 host copy (gd__infer_widen) that
 * inference owns: every pass reads each row about (degree + 1) times.
 *
 * A stage is a pinned host buffer and a device buffer of the same size (one host buffer on the
 * CPU). The host writes the host side only after the previous copy out of it has finished (an
 * event: gd__infer_stage_wait), queues copies of its ranges on the stream, then records the
 * event (gd__infer_stage_sent); the device side is rewritten in stream order, after the
 * kernels that read the previous contents.
 */
#ifndef GD_TRAIN_INFER_TABLE_H
#define GD_TRAIN_INFER_TABLE_H

#include "core/internal.h"
#include "feature/internal.h"
#include "nn/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int64_t rows, cols;
    float *host;              /* host address (CPU tables, pinned host tables), else NULL */
    float *dev;               /* the address the ops read */
    int on_device;            /* GPU: the table is in GPU memory */
    int direct;               /* chunks are views of the table (CPU, or GPU memory) */
    gd__nn_tensor owned;      /* a table allocated with the backend (CPU or GPU memory) */
    gd_host_tensor_t *pinned; /* a pinned host table created or adopted (GPU) */
} gd__infer_table;

/* A CPU table: a view of data (rows x cols float32, not owned), or allocated when data is NULL. */
gd_status gd__infer_table_cpu(const gd__nn_ctx *ctx, int64_t rows, int64_t cols, const float *data,
                              gd__infer_table *t);
/* A table in GPU memory, with a copy of init (host rows x cols) unless it is NULL. */
gd_status gd__infer_table_device(const gd__nn_ctx *ctx, int64_t rows, int64_t cols,
                                 const float *init, gd__infer_table *t);
/*
 * A table in pinned host memory that the GPU reads zero-copy: given (already registered for
 * ctx's GPU, not owned), else adopt (host rows, registered read-only in place), else new. what
 * names the table in the error when pinning fails.
 */
gd_status gd__infer_table_host(const gd__nn_ctx *ctx, int64_t rows, int64_t cols,
                               const float *adopt, gd_host_tensor_t *given, const char *what,
                               gd__infer_table *t);
/* Release what the table owns (after the stream's work on it), and clear it. */
void gd__infer_table_release(const gd__nn_ctx *ctx, gd__infer_table *t);
/*
 * Rows [lo, lo + k) of t as a tensor the ops read: a view of the table (direct), else copied
 * into scratch (device memory, k x cols floats at least) on the stream.
 */
gd_status gd__infer_table_rows(const gd__nn_ctx *ctx, const gd__infer_table *t, int64_t lo,
                               int64_t k, void *scratch, gd__nn_tensor *out);
/* Where rows [lo, lo + k) of t are written: a view of the table (direct), else scratch. */
gd__nn_tensor gd__infer_table_out(const gd__nn_ctx *ctx, const gd__infer_table *t, int64_t lo,
                                  int64_t k, void *scratch);
/* Rows written at gd__infer_table_out into t: copied to the pinned host table unless direct. */
gd_status gd__infer_table_commit(const gd__nn_ctx *ctx, const gd__infer_table *t, int64_t lo,
                                 const gd__nn_tensor *out);

/*
 * The last layer's rows z (k x classes, written on ctx's stream): their predictions into pred
 * (k) and, where logits is not NULL, the rows themselves (host memory). On a GPU z is copied
 * to staging (pinned host, k x classes floats at least) and the stream waited for.
 */
gd_status gd__infer_take_logits(const gd__nn_ctx *ctx, const gd__nn_tensor *z, float *staging,
                                int32_t *pred, float *logits, int threads);

/* A half table (fv: rows x cols float16 or bfloat16) widened into a new float32 host tensor. */
gd_status gd__infer_widen(const gd_array_view *fv, int threads, gd_host_tensor_t **out);

/* memcpy over the CPU threads when it is large. */
void gd__infer_par_copy(void *dst, const void *src, size_t bytes, int threads);

typedef struct {
    void *host, *dev; /* the same buffer on the CPU */
    void *event;      /* GPU: recorded after the last copy out of host */
    size_t bytes;
    int gpu;
} gd__infer_stage;

/* A stage of bytes for ctx's backend; what and instead name it in an allocation error. */
gd_status gd__infer_stage_create(const gd__nn_ctx *ctx, size_t bytes, const char *what,
                                 const char *instead, gd__infer_stage *s);
/* Wait until the host side may be rewritten (the last copy out of it has finished). */
gd_status gd__infer_stage_wait(const gd__infer_stage *s);
/* Queue the copy of bytes at offset from the host side to the device side (GPU). */
gd_status gd__infer_stage_send(const gd__nn_ctx *ctx, const gd__infer_stage *s, size_t offset,
                               size_t bytes);
/* The copies of this round are queued: record the event that gd__infer_stage_wait waits on. */
gd_status gd__infer_stage_sent(const gd__nn_ctx *ctx, const gd__infer_stage *s);
void gd__infer_stage_release(const gd__nn_ctx *ctx, gd__infer_stage *s);

/*
 * A stage that carries int32 blocks of up to max_dst destinations and max_edges edges: the
 * host writes indptr at host (max_dst + 1 entries) and the indices after them, between
 * gd__infer_stage_wait and gd__infer_stage_block, which sends both and gives the block as the
 * backend reads it (device addresses on a GPU).
 */
size_t gd__infer_block_bytes(int64_t max_dst, int64_t max_edges);
gd_status gd__infer_stage_block(const gd__nn_ctx *ctx, const gd__infer_stage *s, int64_t max_dst,
                                int64_t num_dst, int64_t num_src, int64_t num_edges, gd_block *b);

#ifdef __cplusplus
}
#endif

#endif /* GD_TRAIN_INFER_TABLE_H */
