/*
 * The grouped ops of the CUDA backend (internal.h, "Grouped GEMM"): a list of products of
 * different shapes as one cublasGemmGroupedBatchedEx, and the bias gradients of a list of
 * outputs as one kernel. The relational models hand them a layer's products of every relation,
 * which were one cuBLAS launch each.
 *
 * cuBLAS reads the matrix pointers of a grouped call from device memory (the sizes, leading
 * dimensions and scalars from host memory). The plan keeps PTR_SLOTS sets of pointers in device
 * memory with their copies in pinned host memory: a call whose pointers one slot already holds
 * (the usual case: a model's buffers are allocated at create, and only their row counts, which
 * are host arguments, change from minibatch to minibatch) launches with no upload; another
 * call takes the next slot round the ring and queues a copy of at most 3 x GD__NN_GROUP_MAX
 * pointers on the stream before the GEMM, which the stream orders after every earlier use of
 * the slot. The host copy of a slot is rewritten only after the event recorded behind its last
 * upload, so the DMA never reads a half-written array; the wait is for a copy PTR_SLOTS calls
 * old, which has long finished, not for the GPU's work.
 *
 * Several groups may sum into one output (internal.h). cuBLAS runs its problems concurrently,
 * so only the first writer of an output writes it (with its own beta); the later ones write
 * their products into the plan's scratch, and one more launch (epilogue_kernel) adds those,
 * and every group's bias, to the outputs in group order: the order, and the roundings, of the
 * CPU's one-after-another sums. Products with an inner dimension of 0 are no GEMM at all: the
 * first writer's output is zeroed (or kept, accumulating), a later one adds nothing but its
 * bias. Everything is float32 with CUBLAS_COMPUTE_32F (no TF32), as cuda_gemm.
 */
#include "nn/ops_cuda.cuh"

#include <string.h>

/* Pointer sets kept on the device: a model's distinct grouped calls per step, several times. */
#define PTR_SLOTS 16
#define PTRS_PER_SLOT (3 * GD__NN_GROUP_MAX)

typedef struct {
    void **dev;  /* PTR_SLOTS x PTRS_PER_SLOT device pointers */
    void **host; /* what each slot holds, in pinned host memory (the upload's source) */
    int used[PTR_SLOTS];
    cudaEvent_t uploaded[PTR_SLOTS];
    int next;
} grouped_state;

/* ------------------------------------------------------------------ kernels */

/*
 * The epilogue's arguments, passed by value (kernel parameters, under 4 KiB): the outputs, and
 * the terms to add to them in order, each the partial product in src (NULL: none) and the bias
 * (NULL: none) over its first `rows` rows of output `out`.
 */
typedef struct {
    float *c;
    long long rows;
    int cols;
} epi_out;

typedef struct {
    const float *src;
    const float *bias;
    long long rows;
    int out;
} epi_term;

typedef struct {
    epi_out out[GD__NN_GROUP_MAX];
    epi_term term[GD__NN_GROUP_MAX];
    int terms;
} epi_args;
static_assert(sizeof(epi_args) <= 4000, "the epilogue's arguments outgrew a kernel's parameters");

/* blockIdx.y an output; a warp per row (threadIdx.y), lanes across its columns. */
__global__ void epilogue_kernel(const epi_args a) {
    const epi_out o = a.out[blockIdx.y];
    for (long long i = (long long)blockIdx.x * blockDim.y + threadIdx.y; i < o.rows;
         i += (long long)gridDim.x * blockDim.y) {
        float *ci = o.c + i * o.cols;
        for (int j = threadIdx.x; j < o.cols; j += 32) {
            float v = ci[j];
            for (int t = 0; t < a.terms; t++) {
                const epi_term e = a.term[t];
                if (e.out != (int)blockIdx.y || i >= e.rows) continue;
                if (e.src) v += e.src[i * o.cols + j];
                if (e.bias) v += e.bias[j];
            }
            ci[j] = v;
        }
    }
}

/* The grouped bias gradient's arguments, by value: one entry a group (bias_grad_block's). */
typedef struct {
    const float *dy;
    float *db;
    double *part; /* NULL: one chunk, summed straight into db */
    long long rows, cols, chunk_rows;
    int chunks, accumulate;
} bg_group;

typedef struct {
    bg_group g[GD__NN_GROUP_MAX];
} bg_args;
static_assert(sizeof(bg_args) <= 4000, "the bias gradient's arguments outgrew the parameters");

/* Grid (column blocks, chunks, group): the blocks past a group's columns or chunks return. */
__global__ void bias_grad_grouped_kernel(const bg_args a) {
    const bg_group x = a.g[blockIdx.z];
    if ((long long)blockIdx.x * 32 >= x.cols || (int)blockIdx.y >= x.chunks) return;
    bias_grad_block(x.dy, x.db, x.part, x.rows, x.cols, x.chunk_rows, x.accumulate, blockIdx.x,
                    blockIdx.y);
}

__global__ void bias_grad_grouped_finish_kernel(const bg_args a) {
    const bg_group x = a.g[blockIdx.z];
    if (!x.part) return;
    FOR_EACH(j, x.cols) bias_grad_finish(x.part, x.chunks, x.db, x.cols, j, x.accumulate);
}

/* ------------------------------------------------------------------ plan state */

void gd__nn_cuda_grouped_release(const gd__nn_ctx *ctx, gd__nn_grouped *plan) {
    int prev = -1;
    grouped_state *s = (grouped_state *)plan->state;
    if (!s) return;
    /* Best effort, after the stream's work that may still read the slots. */
    if (gd__cuda_enter_device(ctx->device, &prev) == GD_OK) {
        if (ctx->stream) (void)cudaStreamSynchronize(STREAM(ctx));
        for (int i = 0; i < PTR_SLOTS; i++)
            if (s->uploaded[i]) (void)cudaEventDestroy(s->uploaded[i]);
        if (s->dev) (void)cudaFree(s->dev);
        if (s->host) (void)cudaFreeHost(s->host);
        (void)cudaGetLastError();
        gd__cuda_leave_device(ctx->device, prev);
    }
    gd_free(s);
    plan->state = NULL;
}

gd_status gd__nn_cuda_grouped_init(const gd__nn_ctx *ctx, gd__nn_grouped *plan) {
    const size_t bytes = sizeof(void *) * PTR_SLOTS * PTRS_PER_SLOT;
    grouped_state *s = NULL;
    OP_ENTER();
    s = (grouped_state *)gd_calloc(1, sizeof *s);
    GD_REQUIRE(s, GD_ERR_NO_MEMORY, "out of memory allocating a grouped GEMM plan");
    plan->state = s;
    GD_CUDA_CHECK(cudaMalloc((void **)&s->dev, bytes));
    GD_CUDA_CHECK(cudaMallocHost((void **)&s->host, bytes));
    for (int i = 0; i < PTR_SLOTS; i++)
        GD_CUDA_CHECK(cudaEventCreateWithFlags(&s->uploaded[i], cudaEventDisableTiming));
fail:
    if (st != GD_OK) {
        gd__cuda_leave_device(ctx->device, prev_);
        gd__nn_cuda_grouped_release(ctx, plan);
        return st;
    }
    OP_LEAVE();
}

/*
 * The device copy of the pointers ptr[0..n): a slot that holds them already, else the next
 * slot of the ring, uploaded on the stream.
 */
static gd_status device_pointers(const gd__nn_ctx *ctx, grouped_state *s, void *const *ptr, int n,
                                 void ***out) {
    gd_status st = GD_OK;
    const size_t bytes = sizeof(void *) * (size_t)n;
    for (int i = 0; i < PTR_SLOTS; i++)
        if (s->used[i] == n && memcmp(s->host + (size_t)i * PTRS_PER_SLOT, ptr, bytes) == 0) {
            *out = s->dev + (size_t)i * PTRS_PER_SLOT;
            return GD_OK;
        }
    {
        const int i = s->next;
        s->next = (s->next + 1) % PTR_SLOTS;
        void **host = s->host + (size_t)i * PTRS_PER_SLOT,
             **dev = s->dev + (size_t)i * PTRS_PER_SLOT;
        s->used[i] = 0;
        GD_CUDA_CHECK(cudaEventSynchronize(s->uploaded[i]));
        memcpy(host, ptr, bytes);
        GD_CUDA_CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, STREAM(ctx)));
        GD_CUDA_CHECK(cudaEventRecord(s->uploaded[i], STREAM(ctx)));
        s->used[i] = n;
        *out = dev;
    }
fail:
    return st;
}

/* ------------------------------------------------------------------ ops */

/*
 * The problems of one call in cuBLAS's terms: row-major C = op(A) op(B) is column-major C^T =
 * op(B)^T op(A)^T, as cuda_gemm computes it; one cuBLAS group of one problem each.
 */
typedef struct {
    cublasOperation_t ta[GD__NN_GROUP_MAX], tb[GD__NN_GROUP_MAX];
    int m[GD__NN_GROUP_MAX], n[GD__NN_GROUP_MAX], k[GD__NN_GROUP_MAX];
    int lda[GD__NN_GROUP_MAX], ldb[GD__NN_GROUP_MAX], ldc[GD__NN_GROUP_MAX];
    int size[GD__NN_GROUP_MAX];
    float alpha[GD__NN_GROUP_MAX], beta[GD__NN_GROUP_MAX];
    void *ptr[PTRS_PER_SLOT]; /* A of every problem, then B, then C (packed after the call) */
    int count;
} problems;

static void add_problem(problems *p, const gd__nn_gemm_group *x, float *c, float beta) {
    const int i = p->count++;
    const int m = (int)x->c.rows, n = (int)x->c.cols, k = (int)(x->ta ? x->a.rows : x->a.cols);
    p->ta[i] = x->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    p->tb[i] = x->ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    p->m[i] = n;
    p->n[i] = m;
    p->k[i] = k;
    p->lda[i] = x->tb ? k : n;
    p->ldb[i] = x->ta ? m : k;
    p->ldc[i] = n;
    p->size[i] = 1;
    p->alpha[i] = 1.0f;
    p->beta[i] = beta;
    p->ptr[i] = x->b.data;
    p->ptr[GD__NN_GROUP_MAX + i] = x->a.data;
    p->ptr[2 * GD__NN_GROUP_MAX + i] = c;
}

static gd_status run_problems(const gd__nn_ctx *ctx, grouped_state *s, problems *p) {
    gd_status st = GD_OK;
    const int n = p->count;
    if (n == 0) return GD_OK;
    /* Pack the three lists of pointers next to one another. */
    memmove(p->ptr + n, p->ptr + GD__NN_GROUP_MAX, sizeof(void *) * (size_t)n);
    memmove(p->ptr + 2 * n, p->ptr + 2 * GD__NN_GROUP_MAX, sizeof(void *) * (size_t)n);
#if CUBLAS_VERSION >= 120500
    {
        void **dev = NULL;
        GD_CHECK(device_pointers(ctx, s, p->ptr, 3 * n, &dev));
        GD_CUBLAS_CHECK(cublasGemmGroupedBatchedEx(
            BLAS(ctx), p->ta, p->tb, p->m, p->n, p->k, p->alpha, (const void *const *)dev,
            CUDA_R_32F, p->lda, (const void *const *)(dev + n), CUDA_R_32F, p->ldb, p->beta,
            (void *const *)(dev + 2 * n), CUDA_R_32F, p->ldc, n, p->size, CUBLAS_COMPUTE_32F));
    }
#else
    /* cuBLAS before 12.5 has no grouped GEMM: one launch a problem, the same results. */
    (void)s;
    for (int i = 0; i < n; i++)
        GD_CUBLAS_CHECK(cublasSgemm(BLAS(ctx), p->ta[i], p->tb[i], p->m[i], p->n[i], p->k[i],
                                    &p->alpha[i], (const float *)p->ptr[i], p->lda[i],
                                    (const float *)p->ptr[n + i], p->ldb[i], &p->beta[i],
                                    (float *)p->ptr[2 * n + i], p->ldc[i]));
#endif
fail:
    return st;
}

gd_status gd__nn_cuda_gemm_grouped(const gd__nn_ctx *ctx, gd__nn_grouped *plan, int count,
                                   const gd__nn_gemm_group *g) {
    grouped_state *s = (grouped_state *)plan->state;
    problems p;
    epi_args e;
    int out_of[GD__NN_GROUP_MAX]; /* the epilogue output of the family group j heads (-1: none) */
    int outs = 0;
    long long max_rows = 0, used = 0;
    float *scratch = (float *)plan->scratch.data;
    OP_ENTER();
    GD_REQUIRE(s, GD_ERR_INVALID_ARG,
               "grouped GEMM: the plan was not made on the CUDA backend of this context");
    p.count = 0;
    e.terms = 0;
    for (int j = 0; j < count; j++) {
        const gd__nn_gemm_group *x = &g[j];
        const long long m = x->c.rows, n = x->c.cols, k = x->ta ? x->a.rows : x->a.cols;
        out_of[j] = -1;
        GD_REQUIRE(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX, GD_ERR_UNSUPPORTED,
                   "grouped GEMM: group %d is %lld x %lld x %lld, past cuBLAS's int dimensions", j,
                   m, n, k);
        if (m == 0 || n == 0) continue; /* nothing to write */
        /* The family head: the first earlier writer of this output (outputs that overlap share
         * their first element, the front-end checked). */
        int head = j;
        for (int i = 0; i < j && head == j; i++)
            if (g[i].c.data == x->c.data && g[i].c.rows > 0 && g[i].c.cols > 0) head = i;
        float *partial = NULL;
        if (head == j) {
            /* The first writer: straight into C, with its own beta. */
            if (k > 0)
                add_problem(&p, x, (float *)x->c.data, x->accumulate ? 1.0f : 0.0f);
            else if (!x->accumulate)
                GD_CUDA_CHECK(
                    cudaMemsetAsync(x->c.data, 0, (size_t)(m * n) * sizeof(float), STREAM(ctx)));
        } else if (k > 0) {
            /* A later writer: its product into the scratch, for the epilogue to add. */
            const long long need = gd__nn_scratch_elems(m, n);
            GD_REQUIRE(used + need <= gd__nn_numel(&plan->scratch), GD_ERR_RANGE,
                       "grouped GEMM: the plan's scratch of %lld elements is too small",
                       (long long)gd__nn_numel(&plan->scratch));
            partial = scratch + used;
            used += need;
            add_problem(&p, x, partial, 0.0f);
        }
        if (!partial && !x->has_bias) continue;
        /* A term of the epilogue: the partial product and the bias, over this group's rows. */
        if (out_of[head] < 0) {
            out_of[head] = outs++;
            e.out[out_of[head]].c = (float *)x->c.data;
            e.out[out_of[head]].rows = 0;
            e.out[out_of[head]].cols = (int)n;
        }
        epi_out *o = &e.out[out_of[head]];
        epi_term *t = &e.term[e.terms++];
        t->src = partial;
        t->bias = x->has_bias ? (const float *)x->bias.data : NULL;
        t->rows = m;
        t->out = out_of[head];
        if (m > o->rows) o->rows = m;
        if (m > max_rows) max_rows = m;
    }
    GD_CHECK(run_problems(ctx, s, &p));
    if (e.terms > 0) {
        epilogue_kernel<<<dim3(grid_for(max_rows, 8), (unsigned)outs), dim3(32, 8), 0,
                          STREAM(ctx)>>>(e);
        GD_CUDA_CHECK_LAUNCH();
    }
fail:
    OP_LEAVE();
}

gd_status gd__nn_cuda_bias_grad_grouped(const gd__nn_ctx *ctx, int count,
                                        const gd__nn_bias_grad_group *g) {
    bg_args a;
    long long col_blocks = 0, chunks = 0, cols = 0, off = 0;
    const long long budget = count > 0 ? WORK_PARTIALS / count : 0;
    OP_ENTER();
    for (int j = 0; j < count; j++) {
        bg_group *x = &a.g[j];
        x->dy = (const float *)g[j].dy.data;
        x->db = (float *)g[j].db.data;
        x->rows = g[j].dy.rows;
        x->cols = g[j].dy.cols;
        x->accumulate = g[j].accumulate;
        x->chunks = x->cols > 0 ? (int)bias_chunks(x->rows, x->cols, budget) : 0;
        x->chunk_rows = x->chunks > 0 ? (x->rows + x->chunks - 1) / x->chunks : 1;
        if (x->chunk_rows < 1) x->chunk_rows = 1;
        x->part = x->chunks > 1 ? PARTIALS(ctx) + off : NULL;
        if (x->chunks > 1) off += x->chunks * x->cols;
        if ((x->cols + 31) / 32 > col_blocks) col_blocks = (x->cols + 31) / 32;
        if (x->chunks > chunks) chunks = x->chunks;
        if (x->cols > cols) cols = x->cols;
    }
    GD_REQUIRE(col_blocks <= INT_MAX, GD_ERR_UNSUPPORTED, "grouped bias gradient: %lld columns",
               cols);
    if (col_blocks > 0) {
        bias_grad_grouped_kernel<<<dim3((unsigned)col_blocks, (unsigned)chunks, (unsigned)count),
                                   dim3(32, 32), 0, STREAM(ctx)>>>(a);
        GD_CUDA_CHECK_LAUNCH();
        if (chunks > 1) {
            bias_grad_grouped_finish_kernel<<<dim3(grid_for(cols, BLOCK_THREADS), 1,
                                                   (unsigned)count),
                                              BLOCK_THREADS, 0, STREAM(ctx)>>>(a);
            GD_CUDA_CHECK_LAUNCH();
        }
    }
fail:
    OP_LEAVE();
}
