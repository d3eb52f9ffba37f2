/*
 * The nn module's internals: a small 2-D tensor type, the op table that a backend fills (the CPU
 * reference in ops_cpu.c always exists; a CUDA one joins it in builds with GD_WITH_CUDA), the
 * checked front-ends every caller goes through (ops.c) and the flat parameter / gradient / Adam
 * buffers, on which the models (model.h) are built. It is the "train" stage of the data path:
 * it takes the blocks of a sampled minibatch and the gathered rows of its input nodes and
 * produces logits, a loss, gradients and an optimizer step.
 *
 * Element types: float32 for training, float64 for the finite-difference gradient checks (the CPU
 * backend implements every op for both; a CUDA backend may serve float32 only and refuse the
 * rest with GD_ERR_UNSUPPORTED). The header is plain C so that a .cu file can include it.
 */
#ifndef GD_NN_INTERNAL_H
#define GD_NN_INTERNAL_H

#include "core/internal.h"
#include "core/philox.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ tensor */

/* Where a tensor's memory lives: host memory, or the memory of CUDA device `device`. */
#define GD__NN_HOST (-1)

/*
 * A dense row-major matrix of rows x cols elements of dtype (float32 or float64), contiguous
 * (row stride = cols). A tensor is a view: it owns its memory only when `owned` is set (made by
 * gd__nn_tensor_alloc and released by gd__nn_tensor_free). Views of the first k rows of another
 * tensor are free (gd__nn_rows), which is how a layer reads its destination nodes: they are the
 * first num_dst of its source nodes.
 */
typedef struct {
    void *data;
    gd_dtype dtype;
    int device; /* GD__NN_HOST or a CUDA device */
    int owned;
    int64_t rows, cols;
} gd__nn_tensor;

static inline int64_t gd__nn_numel(const gd__nn_tensor *t) {
    return t->rows * t->cols;
}
/* A view of the first `rows` rows of t (rows <= t->rows is the caller's promise). */
static inline gd__nn_tensor gd__nn_rows(const gd__nn_tensor *t, int64_t rows) {
    gd__nn_tensor v = *t;
    v.owned = 0;
    v.rows = rows;
    return v;
}
/* A view of `rows` x `cols` elements of dtype at data. */
static inline gd__nn_tensor gd__nn_view(void *data, gd_dtype dtype, int device, int64_t rows,
                                        int64_t cols) {
    gd__nn_tensor v = {data, dtype, device, 0, rows, cols};
    return v;
}
/* Rows [r0, r1) of a contiguous tensor, as a view. */
static inline gd__nn_tensor gd__nn_row_range(const gd__nn_tensor *t, int64_t r0, int64_t r1) {
    char *base = (char *)t->data;
    return gd__nn_view(base ? base + (size_t)(r0 * t->cols) * gd_dtype_size(t->dtype) : NULL,
                       t->dtype, t->device, r1 - r0, t->cols);
}
/* A rows x cols view at the start of a flat buffer (the caller checked the capacity). */
static inline gd__nn_tensor gd__nn_shaped(const gd__nn_tensor *buf, int64_t rows, int64_t cols) {
    return gd__nn_view(buf->data, buf->dtype, buf->device, rows, cols);
}

/* ------------------------------------------------------------ the op table */

typedef struct gd__nn_backend gd__nn_backend;
typedef struct gd__nn_grouped gd__nn_grouped;
typedef struct gd__nn_gemm_group gd__nn_gemm_group;
typedef struct gd__nn_bias_grad_group gd__nn_bias_grad_group;

/*
 * What ops run with: the backend and its per-stream state. For the CPU backend stream, blas and
 * work are unused; the CUDA one keeps its cudaStream_t and cublasHandle_t here, and in work a
 * small device buffer for the loss reduction and the record of a bad label (ops_cuda.cu).
 */
typedef struct {
    const gd__nn_backend *be;
    int device; /* GD__NN_HOST for the CPU backend */
    void *stream;
    void *blas;
    void *work;
} gd__nn_ctx;

/* A transpose flag for GEMM. */
typedef enum { GD__NN_N = 0, GD__NN_T = 1 } gd__nn_trans;

/* Adam hyper-parameters. The bias corrections are computed on the host from the step number. */
typedef struct {
    double lr;
    double beta1, beta2;
    double eps;
    double weight_decay;
    int decoupled; /* 0: Adam (L2 added to the gradient, torch.optim.Adam); 1: AdamW */
} gd__nn_adam_options;
#define GD__NN_ADAM_OPTIONS_INIT                                                                   \
    { 1e-3, 0.9, 0.999, 1e-8, 0.0, 0 }

/*
 * A backend's ops. Shapes and dtypes have been checked by the front-ends in ops.c before a
 * backend sees them, every tensor is on the backend's device, and outputs never alias inputs
 * unless the op says so. "accumulate" means out += result, otherwise out = result. All ops are
 * asynchronous on a stream-ordered backend; a status reports launch or argument errors only.
 */
struct gd__nn_backend {
    const char *name;
    int (*supports)(gd_dtype dtype);

    /* memory */
    gd_status (*alloc)(const gd__nn_ctx *ctx, size_t bytes, void **out);
    void (*release)(const gd__nn_ctx *ctx, void *ptr);
    gd_status (*zero)(const gd__nn_ctx *ctx, void *ptr, size_t bytes);
    /* Copies between the backend's memory and host memory (to_host: dst is host). */
    gd_status (*to_host)(const gd__nn_ctx *ctx, void *dst, const void *src, size_t bytes);
    gd_status (*from_host)(const gd__nn_ctx *ctx, void *dst, const void *src, size_t bytes);
    gd_status (*synchronize)(const gd__nn_ctx *ctx);
    /*
     * Wait for the queued ops and report an error that a device op recorded instead of
     * returning it (a label out of range), once; the CPU backend reports those at once.
     */
    gd_status (*check_errors)(const gd__nn_ctx *ctx);

    /*
     * C = alpha * op(A) op(B) + beta * C, all row-major and contiguous: op(A) is m x k, op(B)
     * k x n, C m x n. A is stored m x k (N) or k x m (T), likewise B.
     */
    gd_status (*gemm)(const gd__nn_ctx *ctx, gd__nn_trans ta, gd__nn_trans tb, double alpha,
                      const gd__nn_tensor *a, const gd__nn_tensor *b, double beta,
                      gd__nn_tensor *c);
    /* y[i, :] += bias[0, :] for every row. */
    gd_status (*add_bias)(const gd__nn_ctx *ctx, gd__nn_tensor *y, const gd__nn_tensor *bias);
    /* db[0, :] (+)= sum over rows of dy. */
    gd_status (*bias_grad)(const gd__nn_ctx *ctx, const gd__nn_tensor *dy, gd__nn_tensor *db,
                           int accumulate);

    /*
     * Mean over each destination node's in-neighbours in a block (CSC, local int32 ids into the
     * rows of x): out[d] = sum_{e in indptr[d]..indptr[d+1]} x[indices[e]] / deg(d), and 0 for
     * a node without neighbours (as PyG). The block arrays live on the backend's device.
     */
    gd_status (*mean_agg)(const gd__nn_ctx *ctx, const gd_block *blk, const gd__nn_tensor *x,
                          gd__nn_tensor *out);
    /* dx[indices[e]] += dout[d] / deg(d) for every edge (always accumulates). */
    gd_status (*mean_agg_backward)(const gd__nn_ctx *ctx, const gd_block *blk,
                                   const gd__nn_tensor *dout, gd__nn_tensor *dx);

    /* y = max(x, 0); y may be x. */
    gd_status (*relu)(const gd__nn_ctx *ctx, const gd__nn_tensor *x, gd__nn_tensor *y);
    /* dx = dy where y > 0, else 0; dx may be dy. */
    gd_status (*relu_backward)(const gd__nn_ctx *ctx, const gd__nn_tensor *y,
                               const gd__nn_tensor *dy, gd__nn_tensor *dx);
    /*
     * Inverted dropout with a counter-based mask: element (r, c) is kept when
     * gd__nn_dropout_keep(seed, stream, key, gd__nn_dropout_threshold(p)) (drop probability p,
     * rounded to a multiple of 2^-24), and kept elements are scaled by 1 / (1 - p). key is
     * gd__nn_dropout_key(row_ids, r, cols, c): the element's row-major index when row_ids is
     * NULL, else row_ids[r] * cols + c, so that a row keyed by its node id gets the same mask
     * wherever it sits in the tensor (data-parallel ranks hold different subsets of a
     * minibatch's nodes). row_ids (x->rows entries) is memory of the backend's device. The
     * backward pass recomputes the same mask: no mask is stored. y may be x (forward), dx may
     * be dy (backward).
     */
    gd_status (*dropout)(const gd__nn_ctx *ctx, double p, uint64_t seed, uint32_t stream,
                         const int64_t *row_ids, const gd__nn_tensor *x, gd__nn_tensor *y);
    gd_status (*dropout_backward)(const gd__nn_ctx *ctx, double p, uint64_t seed, uint32_t stream,
                                  const int64_t *row_ids, const gd__nn_tensor *dy,
                                  gd__nn_tensor *dx);

    /*
     * Softmax cross-entropy averaged over the rows whose label is >= 0 (a negative label marks
     * a row to ignore): loss[0,0] = mean_i (logsumexp(z_i) - z_i[y_i]); with dz non-NULL also
     * dz = scale * (softmax(z) - onehot(y)) / count (0 on ignored rows). labels are int64 on
     * the backend's device; a label >= cols is reported (CPU) or recorded (device) as an error.
     */
    gd_status (*softmax_xent)(const gd__nn_ctx *ctx, const gd__nn_tensor *logits,
                              const int64_t *labels, double scale, gd__nn_tensor *loss,
                              gd__nn_tensor *dlogits);
    /* *correct (backend memory) = rows whose first maximal logit is at their label. */
    gd_status (*accuracy)(const gd__nn_ctx *ctx, const gd__nn_tensor *logits, const int64_t *labels,
                          int64_t *correct);

    /*
     * One Adam step over flat buffers of n elements: param, grad, and the state m and v (each
     * n elements; m and v both live in the optimizer's one state buffer). bc1 = 1 - beta1^t and
     * bc2 = 1 - beta2^t for step t >= 1.
     */
    gd_status (*adam)(const gd__nn_ctx *ctx, const gd__nn_adam_options *o, double bc1, double bc2,
                      gd__nn_tensor *param, const gd__nn_tensor *grad, gd__nn_tensor *m,
                      gd__nn_tensor *v);

    /*
     * The grouped ops (see "Grouped GEMM" below); a backend may leave them NULL, and the
     * front-ends then run each group with gemm, add_bias and bias_grad. grouped_init and
     * grouped_release make and free the backend's state of a plan (NULL: it has none).
     * gemm_grouped gets at most GD__NN_GROUP_MAX groups that the front-end checked (outputs
     * disjoint or row prefixes of one another, a later writer of an output accumulating);
     * bias_grad_grouped at most GD__NN_GROUP_MAX groups with disjoint db.
     */
    gd_status (*grouped_init)(const gd__nn_ctx *ctx, struct gd__nn_grouped *plan);
    void (*grouped_release)(const gd__nn_ctx *ctx, struct gd__nn_grouped *plan);
    gd_status (*gemm_grouped)(const gd__nn_ctx *ctx, struct gd__nn_grouped *plan, int count,
                              const struct gd__nn_gemm_group *g);
    gd_status (*bias_grad_grouped)(const gd__nn_ctx *ctx, int count,
                                   const struct gd__nn_bias_grad_group *g);
};

extern const gd__nn_backend gd__nn_cpu_backend;

/* The CPU context (no state). */
static inline gd__nn_ctx gd__nn_cpu_ctx(void) {
    gd__nn_ctx c = {&gd__nn_cpu_backend, GD__NN_HOST, NULL, NULL, NULL};
    return c;
}

#ifdef GD_WITH_CUDA
extern const gd__nn_backend gd__nn_cuda_backend;
/*
 * A context for the CUDA backend on GPU `device`: its own non-blocking stream, a cuBLAS handle
 * bound to it, and the device work buffer. float32 only. Destroy waits for the stream.
 */
gd_status gd__nn_cuda_ctx_create(int device, gd__nn_ctx *out);
void gd__nn_cuda_ctx_destroy(gd__nn_ctx *ctx);
#endif

/*
 * The dropout draw of element i: a uniform in [0, 1) from Philox keyed by seed, counter
 * (i / 4 low, i / 4 high, stream, GD__NN_RNG_DROPOUT), word i % 4. The same function runs in
 * CUDA kernels, so both backends drop the same elements.
 */
#define GD__NN_RNG_DROPOUT 0x6e6e4450u /* "nnDP" */

/* The drop threshold: an element is dropped when the top 24 bits of its word are below it. */
static inline uint32_t gd__nn_dropout_threshold(double p) {
    return (uint32_t)(p * 16777216.0 + 0.5);
}
GD_HOST_DEVICE uint64_t gd__nn_dropout_key(const int64_t *row_ids, int64_t r, int64_t cols,
                                           int64_t c) {
    return (uint64_t)(row_ids ? row_ids[r] : r) * (uint64_t)cols + (uint64_t)c;
}
GD_HOST_DEVICE int gd__nn_dropout_keep(uint64_t seed, uint32_t stream, uint64_t i,
                                       uint32_t threshold) {
    uint64_t q = i >> 2;
    gd_philox_ctr r = gd_philox(seed, (uint32_t)q, (uint32_t)(q >> 32), stream, GD__NN_RNG_DROPOUT);
    return (r.v[i & 3] >> 8) >= threshold;
}

/* ---------------------------------------------------- checked front-ends */

/*
 * Every caller goes through these: they check dtypes, shapes, devices and sizes and name the
 * offending tensor in the message, then call ctx->be. Names follow the backend entries.
 */
gd_status gd__nn_tensor_alloc(const gd__nn_ctx *ctx, gd_dtype dtype, int64_t rows, int64_t cols,
                              gd__nn_tensor *out);
void gd__nn_tensor_free(const gd__nn_ctx *ctx, gd__nn_tensor *t);
gd_status gd__nn_zero(const gd__nn_ctx *ctx, gd__nn_tensor *t);
/* Copy a whole tensor to or from host memory of the same size. */
gd_status gd__nn_to_host(const gd__nn_ctx *ctx, const gd__nn_tensor *t, void *host);
gd_status gd__nn_from_host(const gd__nn_ctx *ctx, gd__nn_tensor *t, const void *host);
/* Wait for ctx's queued ops; report (once) an error a device op recorded, e.g. a bad label. */
gd_status gd__nn_check_errors(const gd__nn_ctx *ctx);

/* y = x W (+ b) with x n x in, W in x out, b 1 x out (NULL: no bias); accumulate: y += ... */
gd_status gd__nn_linear(const gd__nn_ctx *ctx, const gd__nn_tensor *x, const gd__nn_tensor *w,
                        const gd__nn_tensor *b, gd__nn_tensor *y, int accumulate);
/*
 * The backward of gd__nn_linear: dx (+)= dy W^T (dx NULL: not wanted), dW (+)= x^T dy,
 * db (+)= colsum(dy) (db NULL: no bias). accumulate_dx and accumulate_dw choose += or =.
 */
gd_status gd__nn_linear_backward(const gd__nn_ctx *ctx, const gd__nn_tensor *x,
                                 const gd__nn_tensor *w, const gd__nn_tensor *dy, gd__nn_tensor *dx,
                                 int accumulate_dx, gd__nn_tensor *dw, gd__nn_tensor *db,
                                 int accumulate_dw);
gd_status gd__nn_gemm(const gd__nn_ctx *ctx, gd__nn_trans ta, gd__nn_trans tb, double alpha,
                      const gd__nn_tensor *a, const gd__nn_tensor *b, double beta,
                      gd__nn_tensor *c);
/* out has blk->num_dst rows, x blk->num_src rows (or more), same cols. */
gd_status gd__nn_mean_agg(const gd__nn_ctx *ctx, const gd_block *blk, const gd__nn_tensor *x,
                          gd__nn_tensor *out);
gd_status gd__nn_mean_agg_backward(const gd__nn_ctx *ctx, const gd_block *blk,
                                   const gd__nn_tensor *dout, gd__nn_tensor *dx);
gd_status gd__nn_relu(const gd__nn_ctx *ctx, const gd__nn_tensor *x, gd__nn_tensor *y);
gd_status gd__nn_relu_backward(const gd__nn_ctx *ctx, const gd__nn_tensor *y,
                               const gd__nn_tensor *dy, gd__nn_tensor *dx);
gd_status gd__nn_dropout(const gd__nn_ctx *ctx, double p, uint64_t seed, uint32_t stream,
                         const int64_t *row_ids, const gd__nn_tensor *x, gd__nn_tensor *y);
gd_status gd__nn_dropout_backward(const gd__nn_ctx *ctx, double p, uint64_t seed, uint32_t stream,
                                  const int64_t *row_ids, const gd__nn_tensor *dy,
                                  gd__nn_tensor *dx);
gd_status gd__nn_softmax_xent(const gd__nn_ctx *ctx, const gd__nn_tensor *logits,
                              const int64_t *labels, double scale, gd__nn_tensor *loss,
                              gd__nn_tensor *dlogits);
gd_status gd__nn_accuracy(const gd__nn_ctx *ctx, const gd__nn_tensor *logits, const int64_t *labels,
                          int64_t *correct);

/* ------------------------------------------------------- grouped GEMM */

/*
 * A grouped GEMM runs many independent-sized products as one call: the relational models
 * (rsage.c, rgat.c) give it a layer's products of every relation, which would otherwise be one
 * small GEMM launch each. Group g is C_g (+)= op(A_g) op(B_g), then + bias_g on every row of
 * C_g (has_bias), with the shapes and dtypes gd__nn_gemm asks. The result is that of running
 * the groups one after another in their order, which several groups may use to sum into one
 * output. Outputs must be disjoint or share their first element and width (one a row prefix of
 * the other: the same tensor, or a relation's destinations within its type's rows); a group
 * whose output overlaps an earlier group's must accumulate; no group's output may be one of its
 * inputs. The CPU backend runs the groups in waves of disjoint outputs, the groups of a wave in
 * parallel when they are too small to thread one by one; the CUDA backend runs every product in
 * one cublasGemmGroupedBatchedEx, the second and later writers of an output into the plan's
 * scratch, and adds those and the biases in one more launch (docs/nn.md, "Grouped GEMM").
 */
struct gd__nn_gemm_group {
    gd__nn_trans ta, tb;
    gd__nn_tensor a, b, c;
    gd__nn_tensor bias; /* 1 x c.cols, when has_bias */
    int has_bias;
    int accumulate; /* 1: C += ..., 0: C = ... */
};

/* db (+)= colsum(dy), as bias_grad; the db of a call's groups are disjoint. */
struct gd__nn_bias_grad_group {
    gd__nn_tensor dy, db;
    int accumulate;
};

/* The most groups one backend call takes; the front-ends cut longer lists, in order. */
#define GD__NN_GROUP_MAX 64
/* Scratch partial products start at multiples of this many elements (aligned vector loads). */
#define GD__NN_SCRATCH_ALIGN 64

/*
 * What a model keeps for its grouped calls, made at create: the scratch for partial products
 * (sized by the model from its capacities: the elements of the outputs that a call writes a
 * second time, each rounded up to GD__NN_SCRATCH_ALIGN; gd__nn_gemm_grouped_scratch says what
 * a call needs) and the backend's state (the CUDA backend's device arrays of matrix pointers).
 * grouped is 0 when GD_NN_GROUPED=0 asked for one product at a time, the path the front-ends
 * also take on a backend without the grouped ops; that path needs no scratch, so none is
 * allocated (scratch_elems is then ignored).
 */
struct gd__nn_grouped {
    int grouped;
    gd__nn_tensor scratch; /* 1 x elements, or empty */
    void *state;
};

gd_status gd__nn_grouped_create(const gd__nn_ctx *ctx, gd_dtype dtype, int64_t scratch_elems,
                                gd__nn_grouped *plan);
void gd__nn_grouped_destroy(const gd__nn_ctx *ctx, gd__nn_grouped *plan);
/* 1 when GD_NN_GROUPED asks for grouped calls (the models' memory estimates count the scratch). */
int gd__nn_grouped_wanted(void);
/* The scratch elements a call of these groups needs (the same on every backend). */
int64_t gd__nn_gemm_grouped_scratch(int count, const gd__nn_gemm_group *g);
/* A partial product of rows x cols in the scratch: its elements, rounded up. */
static inline int64_t gd__nn_scratch_elems(int64_t rows, int64_t cols) {
    const int64_t n = rows * cols;
    return (n + GD__NN_SCRATCH_ALIGN - 1) / GD__NN_SCRATCH_ALIGN * GD__NN_SCRATCH_ALIGN;
}
gd_status gd__nn_gemm_grouped(const gd__nn_ctx *ctx, gd__nn_grouped *plan, int count,
                              const gd__nn_gemm_group *g);
gd_status gd__nn_bias_grad_grouped(const gd__nn_ctx *ctx, int count,
                                   const gd__nn_bias_grad_group *g);

/* gd__nn_linear over groups: y (+)= x W (+ b when has_bias), in order, as one grouped call. */
typedef struct {
    gd__nn_tensor x, w, b, y;
    int has_bias, accumulate;
} gd__nn_linear_group;
gd_status gd__nn_linear_grouped(const gd__nn_ctx *ctx, gd__nn_grouped *plan, int count,
                                const gd__nn_linear_group *g);
/*
 * gd__nn_linear_backward over groups: dx (+)= dy W^T (when want_dx), dW (+)= x^T dy, db (+)=
 * colsum(dy) (when has_db); every product in one grouped call (so a dx that several groups sum
 * into follows the rules above), then the bias gradients in one more.
 */
typedef struct {
    gd__nn_tensor x, w, dy, dx, dw, db;
    int want_dx, accumulate_dx, has_db, accumulate_dw;
} gd__nn_linear_grad_group;
gd_status gd__nn_linear_backward_grouped(const gd__nn_ctx *ctx, gd__nn_grouped *plan, int count,
                                         const gd__nn_linear_grad_group *g);

/* --------------------------------------------- flat parameter buffers */

/*
 * All the parameters of a model live in one buffer, their gradients in a second of the same
 * layout and Adam's m and v in a third (m in the first half, v in the second), so a multi-GPU
 * all-reduce of the gradients is one call and the optimizer step is one launch. Each tensor
 * starts at a multiple of GD__NN_PARAM_ALIGN elements (256 bytes in float32) for vector loads.
 */
#define GD__NN_PARAM_ALIGN 64
#define GD__NN_MAX_PARAMS 64

typedef struct {
    gd_dtype dtype;
    int count;                       /* tensors */
    int64_t rows[GD__NN_MAX_PARAMS]; /* their shapes */
    int64_t cols[GD__NN_MAX_PARAMS];
    int64_t offset[GD__NN_MAX_PARAMS];  /* element offsets in the flat buffers */
    int64_t fan_in[GD__NN_MAX_PARAMS];  /* for initialisation: bound = 1 / sqrt(fan_in) */
    int64_t numel;                      /* the flat size in elements, padding included */
    gd__nn_tensor params, grads, state; /* 1 x numel, 1 x numel, 1 x 2 numel */
    int64_t step;                       /* Adam steps taken */
} gd__nn_params;

/* Add a tensor to the layout (before gd__nn_params_alloc); *index gets its number. */
gd_status gd__nn_params_add(gd__nn_params *p, int64_t rows, int64_t cols, int64_t fan_in,
                            int *index);
/* Allocate the three buffers (zeroed) on ctx's device. */
gd_status gd__nn_params_alloc(const gd__nn_ctx *ctx, gd__nn_params *p);
void gd__nn_params_free(const gd__nn_ctx *ctx, gd__nn_params *p);
/* Views of tensor i in the parameter and gradient buffers. */
gd__nn_tensor gd__nn_param(const gd__nn_params *p, int i);
gd__nn_tensor gd__nn_grad(const gd__nn_params *p, int i);
/*
 * Fill every tensor uniformly in [-1/sqrt(fan_in), 1/sqrt(fan_in)] (PyTorch's default for
 * Linear weights and biases) from Philox keyed by seed: the same values on every backend. The
 * padding stays zero. Resets the Adam state and step.
 */
gd_status gd__nn_params_init(const gd__nn_ctx *ctx, gd__nn_params *p, uint64_t seed);
gd_status gd__nn_params_zero_grad(const gd__nn_ctx *ctx, gd__nn_params *p);
/* One Adam step with the gradients in p->grads (the step counter advances first). */
gd_status gd__nn_params_adam(const gd__nn_ctx *ctx, gd__nn_params *p, const gd__nn_adam_options *o);

#ifdef __cplusplus
}
#endif

#endif /* GD_NN_INTERNAL_H */
