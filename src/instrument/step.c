/*
 * The timed training step of `graphdirect bench step` (step.h): the default model on the CUDA
 * nn backend, the step the trainer runs for a minibatch (less the accuracy count) between two
 * events, and the per-op breakdown, a copy of the CUDA op table whose entries bracket every op
 * with a pair of events. The relational models' typed step (at the end) runs the heterogeneous
 * trainer's data path and step (train/hetero.c) between the marks of the same clock.
 */
#include "instrument/step.h"

#include "core/philox.h"
#include "nn/model.h"
#include "nn/rgat.h"
#include "nn/rsage.h"
#include "train/internal.h"

#include <string.h>

#ifdef GD_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

/* ---- the per-op breakdown: the kinds of op and their names */

enum {
    K_GEMM_NN,
    K_GEMM_NT,
    K_GEMM_TN,
    K_GEMM_TT,
    K_ADD_BIAS,
    K_BIAS_GRAD,
    K_AGG,
    K_AGG_BACKWARD,
    K_RELU,
    K_RELU_BACKWARD,
    K_DROPOUT,
    K_DROPOUT_BACKWARD,
    K_XENT,
    K_ZERO,
    K_ADAM,
    K_COUNT
};

static const char *const kind_names[K_COUNT] = {
    "gemm NN (forward)",       "gemm NT (input gradient)", "gemm TN (weight gradient)",
    "gemm TT",                 "bias add",                 "bias gradient",
    "mean aggregation",        "mean aggregation backward", "relu",
    "relu backward",           "dropout",                  "dropout backward",
    "softmax cross-entropy",   "zero (memset)",            "adam"};

const char *gd_instrument_step_model_title(void) {
    return gd__model_kind_iface(GD__MODEL_DEFAULT)->title;
}

int gd_instrument_step_op_kinds(void) { return K_COUNT; }

const char *gd_instrument_step_op_name(int kind) {
    return kind >= 0 && kind < K_COUNT ? kind_names[kind] : "";
}

/* The dropout key of global minibatch `step`, the same for every model ("bStp"). */
static uint64_t step_dropout_key(uint64_t seed, int64_t step) {
    const gd_philox_ctr key = gd_philox(seed, (uint32_t)step, 0, 0, 0x62537470u /* bStp */);
    return ((uint64_t)key.v[1] << 32) | key.v[0];
}

#ifdef GD_WITH_CUDA
/* A CUDA runtime result as a status naming the call (the error is read and cleared once). */
static gd_status cuda_status(cudaError_t ce, const char *call) {
    if (ce == cudaSuccess) return GD_OK;
    (void)cudaGetLastError();
    return gd__error(ce == cudaErrorMemoryAllocation ? GD_ERR_NO_MEMORY : GD_ERR_CUDA,
                     "%s failed: %s (%s)", call, cudaGetErrorString(ce), cudaGetErrorName(ce));
}
#define STEP_CUDA(call) GD_CHECK(cuda_status((call), #call))
#endif

/*
 * The clock of a step: two CUDA events on the model's stream, or the host clock for a model on
 * the CPU backend, whose ops return when they are done. Stopping waits for the step.
 */
typedef struct {
    int cuda;     /* 0: the host clock */
    void *stream; /* a cudaStream_t */
#ifdef GD_WITH_CUDA
    cudaEvent_t ev[2];
#endif
    int created; /* events made */
    double t0;
} step_clock;

static gd_status clock_init(step_clock *c, int cuda, void *stream) {
    gd_status st = GD_OK;
    c->cuda = cuda;
    c->stream = stream;
#ifdef GD_WITH_CUDA
    for (; cuda && c->created < 2; c->created++) STEP_CUDA(cudaEventCreate(&c->ev[c->created]));
fail:
#endif
    return st;
}

static void clock_destroy(step_clock *c) {
#ifdef GD_WITH_CUDA
    for (int i = 0; i < c->created; i++) (void)cudaEventDestroy(c->ev[i]);
#endif
    c->created = 0;
}

static gd_status clock_start(step_clock *c) {
    gd_status st = GD_OK;
    c->t0 = gd__now();
#ifdef GD_WITH_CUDA
    if (c->cuda) STEP_CUDA(cudaEventRecord(c->ev[0], (cudaStream_t)c->stream));
fail:
#endif
    return st;
}

static gd_status clock_stop(step_clock *c, float *ms) {
    gd_status st = GD_OK;
    *ms = (float)(1e3 * (gd__now() - c->t0));
#ifdef GD_WITH_CUDA
    if (c->cuda) {
        STEP_CUDA(cudaEventRecord(c->ev[1], (cudaStream_t)c->stream));
        STEP_CUDA(cudaEventSynchronize(c->ev[1]));
        STEP_CUDA(cudaEventElapsedTime(ms, c->ev[0], c->ev[1]));
    }
fail:
#endif
    return st;
}

#ifdef GD_WITH_CUDA

enum { MAX_TIMED_OPS = 512 };

/*
 * The events of one step's ops. The wrappers cannot fail the op for a timing problem, so a
 * failed event call is remembered and reported after the step.
 */
typedef struct {
    cudaEvent_t ev[2 * MAX_TIMED_OPS];
    int kind[MAX_TIMED_OPS];
    int created, used;
    cudaError_t error;
    double ms[K_COUNT];
    int64_t calls[K_COUNT];
} op_timing;

struct gd_instrument_step {
    gd__nn_ctx ctx;
    int have_ctx;
    gd__model *model;
    gd__nn_adam_options adam;
    gd__nn_tensor x, loss, dlogits;
    int64_t *labels_dev;
    int64_t batch;
    uint64_t seed;
    step_clock clock;
    op_timing bd;
};

/* The op timing of the step being run with timed_ops: the wrappers see only the nn context. */
static _Thread_local op_timing *timing;


static void bd_mark(const gd__nn_ctx *ctx, int end) {
    op_timing *bd = timing;
    if (!bd || bd->used >= MAX_TIMED_OPS) return;
    cudaError_t ce = cudaEventRecord(bd->ev[2 * bd->used + end], (cudaStream_t)ctx->stream);
    if (ce != cudaSuccess && bd->error == cudaSuccess) bd->error = ce;
}

static gd_status bd_done(gd_status st, int kind) {
    op_timing *bd = timing;
    if (bd && bd->used < MAX_TIMED_OPS) bd->kind[bd->used++] = kind;
    return st;
}

#define CUDA_BE gd__nn_cuda_backend
#define TIMED(kind, call)                                                                          \
    do {                                                                                           \
        bd_mark(ctx, 0);                                                                           \
        gd_status st_ = (call);                                                                    \
        bd_mark(ctx, 1);                                                                           \
        return bd_done(st_, (kind));                                                               \
    } while (0)

static gd_status t_zero(const gd__nn_ctx *ctx, void *p, size_t bytes) {
    TIMED(K_ZERO, CUDA_BE.zero(ctx, p, bytes));
}
static gd_status t_gemm(const gd__nn_ctx *ctx, gd__nn_trans ta, gd__nn_trans tb, double alpha,
                        const gd__nn_tensor *a, const gd__nn_tensor *b, double beta,
                        gd__nn_tensor *c) {
    TIMED(K_GEMM_NN + 2 * (int)ta + (int)tb, CUDA_BE.gemm(ctx, ta, tb, alpha, a, b, beta, c));
}
static gd_status t_add_bias(const gd__nn_ctx *ctx, gd__nn_tensor *y, const gd__nn_tensor *b) {
    TIMED(K_ADD_BIAS, CUDA_BE.add_bias(ctx, y, b));
}
static gd_status t_bias_grad(const gd__nn_ctx *ctx, const gd__nn_tensor *dy, gd__nn_tensor *db,
                             int accumulate) {
    TIMED(K_BIAS_GRAD, CUDA_BE.bias_grad(ctx, dy, db, accumulate));
}
static gd_status t_mean_agg(const gd__nn_ctx *ctx, const gd_block *blk, const gd__nn_tensor *x,
                            gd__nn_tensor *out) {
    TIMED(K_AGG, CUDA_BE.mean_agg(ctx, blk, x, out));
}
static gd_status t_mean_agg_backward(const gd__nn_ctx *ctx, const gd_block *blk,
                                     const gd__nn_tensor *dout, gd__nn_tensor *dx) {
    TIMED(K_AGG_BACKWARD, CUDA_BE.mean_agg_backward(ctx, blk, dout, dx));
}
static gd_status t_relu(const gd__nn_ctx *ctx, const gd__nn_tensor *x, gd__nn_tensor *y) {
    TIMED(K_RELU, CUDA_BE.relu(ctx, x, y));
}
static gd_status t_relu_backward(const gd__nn_ctx *ctx, const gd__nn_tensor *y,
                                 const gd__nn_tensor *dy, gd__nn_tensor *dx) {
    TIMED(K_RELU_BACKWARD, CUDA_BE.relu_backward(ctx, y, dy, dx));
}
static gd_status t_dropout(const gd__nn_ctx *ctx, double p, uint64_t seed, uint32_t stream,
                           const int64_t *row_ids, const gd__nn_tensor *x, gd__nn_tensor *y) {
    TIMED(K_DROPOUT, CUDA_BE.dropout(ctx, p, seed, stream, row_ids, x, y));
}
static gd_status t_dropout_backward(const gd__nn_ctx *ctx, double p, uint64_t seed,
                                    uint32_t stream, const int64_t *row_ids,
                                    const gd__nn_tensor *dy, gd__nn_tensor *dx) {
    TIMED(K_DROPOUT_BACKWARD, CUDA_BE.dropout_backward(ctx, p, seed, stream, row_ids, dy, dx));
}
static gd_status t_softmax_xent(const gd__nn_ctx *ctx, const gd__nn_tensor *logits,
                                const int64_t *labels, double scale, gd__nn_tensor *loss,
                                gd__nn_tensor *dlogits) {
    TIMED(K_XENT, CUDA_BE.softmax_xent(ctx, logits, labels, scale, loss, dlogits));
}
static gd_status t_adam(const gd__nn_ctx *ctx, const gd__nn_adam_options *o, double bc1,
                        double bc2, gd__nn_tensor *param, const gd__nn_tensor *grad,
                        gd__nn_tensor *m, gd__nn_tensor *v) {
    TIMED(K_ADAM, CUDA_BE.adam(ctx, o, bc1, bc2, param, grad, m, v));
}

/* The CUDA table with the ops of a training step replaced by their timed wrappers. */
static gd__nn_backend timed_backend(void) {
    gd__nn_backend t = gd__nn_cuda_backend;
    t.name = "cuda (timed ops)";
    t.zero = t_zero;
    t.gemm = t_gemm;
    t.add_bias = t_add_bias;
    t.bias_grad = t_bias_grad;
    t.mean_agg = t_mean_agg;
    t.mean_agg_backward = t_mean_agg_backward;
    t.relu = t_relu;
    t.relu_backward = t_relu_backward;
    t.dropout = t_dropout;
    t.dropout_backward = t_dropout_backward;
    t.softmax_xent = t_softmax_xent;
    t.adam = t_adam;
    return t;
}

/* Add the op times of the step just waited for to the totals. */
static gd_status bd_collect(op_timing *bd) {
    gd_status st = GD_OK;
    GD_REQUIRE(bd->created == 2 * MAX_TIMED_OPS, GD_ERR_INVALID_ARG,
               "the op breakdown needs a model made with breakdown = 1");
    GD_REQUIRE(bd->used < MAX_TIMED_OPS, GD_ERR_RANGE, "--breakdown: a step ran more than %d ops",
               MAX_TIMED_OPS - 1);
    STEP_CUDA(bd->error);
    for (int i = 0; i < bd->used; i++) {
        float ms = 0;
        STEP_CUDA(cudaEventElapsedTime(&ms, bd->ev[2 * i], bd->ev[2 * i + 1]));
        bd->ms[bd->kind[i]] += ms;
        bd->calls[bd->kind[i]]++;
    }
    bd->used = 0;
fail:
    return st;
}

gd_status gd_instrument_step_create(int device, gd_instrument_step **out) {
    gd_status st = GD_OK;
    gd_instrument_step *s = NULL;
    GD_REQUIRE(out, GD_ERR_INVALID_ARG, "gd_instrument_step_create: NULL output handle");
    *out = NULL;
    s = gd_calloc(1, sizeof *s);
    GD_REQUIRE(s, GD_ERR_NO_MEMORY, "out of memory for the step's state");
    GD_CHECK(gd__nn_cuda_ctx_create(device, &s->ctx));
    s->have_ctx = 1;
    *out = s;
    return GD_OK;
fail:
    gd_instrument_step_destroy(s);
    return st;
}

void gd_instrument_step_destroy(gd_instrument_step *s) {
    if (!s) return;
    gd__model_destroy(s->model);
    if (s->have_ctx) {
        gd__nn_tensor_free(&s->ctx, &s->x);
        gd__nn_tensor_free(&s->ctx, &s->loss);
        gd__nn_tensor_free(&s->ctx, &s->dlogits);
        if (s->labels_dev) s->ctx.be->release(&s->ctx, s->labels_dev);
    }
    clock_destroy(&s->clock);
    for (int i = 0; i < s->bd.created; i++) (void)cudaEventDestroy(s->bd.ev[i]);
    if (s->have_ctx) gd__nn_cuda_ctx_destroy(&s->ctx);
    gd_free(s);
}

void *gd_instrument_step_stream(const gd_instrument_step *s) { return s ? s->ctx.stream : NULL; }

gd_status gd_instrument_step_model(gd_instrument_step *s, const gd_instrument_step_config *c) {
    gd_status st = GD_OK;
    GD_REQUIRE(s && c && !s->model, GD_ERR_INVALID_ARG,
               "gd_instrument_step_model: a step without a model and a config, please");
    /* The model, sized as the trainer sizes it (gd__model_capacity). */
    gd__model_kind kind = GD__MODEL_DEFAULT;
    if (c->model) GD_CHECK(gd__model_kind_parse(c->model, &kind));
    /* The breakdown brackets the ops of the backend's table; GAT's attention ops are not in it. */
    GD_REQUIRE(!c->breakdown || kind == GD__MODEL_SAGE, GD_ERR_UNSUPPORTED,
               "--breakdown times the ops of the nn backend's table, and %s's attention ops are "
               "not among them; time the %s step without it",
               gd__model_kind_iface(kind)->title, gd__model_kind_iface(kind)->title);
    gd__model_config mc = gd__model_config_make(kind, c->num_layers, c->in_dim, c->hidden,
                                                c->num_classes, c->dropout, GD_DTYPE_FLOAT32);
    mc.heads = c->heads;
    mc.attn_dropout = c->attn_dropout;
    const gd__model_shape shape = {.num_layers = c->num_layers,
                                   .fanouts = c->fanouts,
                                   .batch = c->batch,
                                   .max_degree = c->max_degree,
                                   .num_nodes = c->num_nodes,
                                   .max_input_nodes = c->max_input_nodes};
    gd__model_capacity(&shape, &mc);
    GD_CHECK(gd__model_create(&s->ctx, &mc, c->seed, &s->model));
    s->adam = (gd__nn_adam_options)GD__NN_ADAM_OPTIONS_INIT;
    s->adam.lr = c->lr;
    s->batch = c->batch;
    s->seed = c->seed;
    GD_CHECK(gd__nn_tensor_alloc(&s->ctx, GD_DTYPE_FLOAT32, c->max_input_nodes, c->in_dim, &s->x));
    GD_CHECK(gd__nn_tensor_alloc(&s->ctx, GD_DTYPE_FLOAT32, 1, 1, &s->loss));
    GD_CHECK(
        gd__nn_tensor_alloc(&s->ctx, GD_DTYPE_FLOAT32, c->batch, c->num_classes, &s->dlogits));
    GD_CHECK(s->ctx.be->alloc(&s->ctx, sizeof(int64_t) * (size_t)c->batch,
                              (void **)&s->labels_dev));
    GD_CHECK(clock_init(&s->clock, 1, s->ctx.stream));
    if (c->breakdown)
        for (; s->bd.created < 2 * MAX_TIMED_OPS; s->bd.created++)
            STEP_CUDA(cudaEventCreate(&s->bd.ev[s->bd.created]));
fail:
    return st;
}

int64_t gd_instrument_step_num_params(const gd_instrument_step *s) {
    return s ? gd__model_num_params(s->model) : 0;
}

void *gd_instrument_step_input(gd_instrument_step *s) { return s ? s->x.data : NULL; }

gd_status gd_instrument_step_labels(gd_instrument_step *s, const int64_t *labels, int64_t n) {
    if (!s || !s->labels_dev || !labels || n < 0 || n > s->batch)
        return gd__error(GD_ERR_INVALID_ARG, "gd_instrument_step_labels: %lld labels for a "
                                             "model of batch %lld",
                         (long long)n, (long long)(s ? s->batch : 0));
    return s->ctx.be->from_host(&s->ctx, s->labels_dev, labels, sizeof(int64_t) * (size_t)n);
}

/* The timed work: one training step on the blocks of the minibatch in s->x. */
static gd_status nn_step(gd_instrument_step *s, const gd_block *blocks, int64_t num_in,
                         uint64_t dseed) {
    gd_status st = GD_OK;
    gd__model *m = s->model;
    gd__nn_params *params = gd__model_params(m);
    const gd__nn_ctx *ctx = gd__model_ctx(m);
    gd__nn_tensor x = gd__nn_rows(&s->x, num_in), logits, dl;
    GD_CHECK(gd__model_forward(m, blocks, &x, NULL, 1, dseed, &logits));
    dl = gd__nn_rows(&s->dlogits, logits.rows);
    GD_CHECK(gd__nn_softmax_xent(ctx, &logits, s->labels_dev, 1.0, &s->loss, &dl));
    GD_CHECK(gd__nn_params_zero_grad(ctx, params));
    GD_CHECK(gd__model_backward(m, blocks, &dl, NULL));
    GD_CHECK(gd__nn_params_adam(ctx, params, &s->adam));
fail:
    return st;
}

gd_status gd_instrument_step_run(gd_instrument_step *s, const gd_block *blocks, int64_t num_in,
                                 int64_t step, int timed_ops, float *ms, float *loss) {
    gd_status st = GD_OK;
    const gd__nn_backend timed = timed_backend();
    GD_REQUIRE(s && s->model && blocks && ms && loss, GD_ERR_INVALID_ARG,
               "gd_instrument_step_run: a step with a model, blocks and outputs, please");
    GD_REQUIRE(!timed_ops || s->bd.created == 2 * MAX_TIMED_OPS, GD_ERR_INVALID_ARG,
               "gd_instrument_step_run: timing the ops needs a model made with breakdown = 1");
    gd__model_set_backend(s->model, timed_ops ? &timed : &gd__nn_cuda_backend);
    s->bd.used = 0;
    timing = timed_ops ? &s->bd : NULL;
    GD_CHECK(clock_start(&s->clock));
    GD_CHECK(nn_step(s, blocks, num_in, step_dropout_key(s->seed, step)));
    GD_CHECK(clock_stop(&s->clock, ms));
    if (timed_ops) GD_CHECK(bd_collect(&s->bd));
    GD_CHECK(gd__nn_to_host(gd__model_ctx(s->model), &s->loss, loss));
fail:
    timing = NULL;
    if (s && s->model) gd__model_set_backend(s->model, &gd__nn_cuda_backend);
    return st;
}

gd_status gd_instrument_step_check_errors(gd_instrument_step *s) {
    if (!s) return gd__error(GD_ERR_INVALID_ARG, "gd_instrument_step_check_errors: NULL step");
    return gd__nn_check_errors(&s->ctx);
}

void gd_instrument_step_op_total(const gd_instrument_step *s, int kind, double *ms,
                                 int64_t *calls) {
    const int ok = s && kind >= 0 && kind < K_COUNT;
    if (ms) *ms = ok ? s->bd.ms[kind] : 0;
    if (calls) *calls = ok ? s->bd.calls[kind] : 0;
}

#else /* !GD_WITH_CUDA */

/* Without CUDA there is no nn backend to time: every entry says so, and nothing is made. */
static gd_status no_cuda(void) {
    return gd__error(GD_ERR_NO_DEVICE, "the timed training step runs on the CUDA nn backend, and "
                                       "this graphdirect was built without CUDA");
}

gd_status gd_instrument_step_create(int device, gd_instrument_step **out) {
    (void)device;
    if (out) *out = NULL;
    return no_cuda();
}
void gd_instrument_step_destroy(gd_instrument_step *s) { (void)s; }
void *gd_instrument_step_stream(const gd_instrument_step *s) { return (void)s, NULL; }
gd_status gd_instrument_step_model(gd_instrument_step *s, const gd_instrument_step_config *c) {
    (void)s, (void)c;
    return no_cuda();
}
int64_t gd_instrument_step_num_params(const gd_instrument_step *s) { return (void)s, 0; }
void *gd_instrument_step_input(gd_instrument_step *s) { return (void)s, NULL; }
gd_status gd_instrument_step_labels(gd_instrument_step *s, const int64_t *labels, int64_t n) {
    (void)s, (void)labels, (void)n;
    return no_cuda();
}
gd_status gd_instrument_step_run(gd_instrument_step *s, const gd_block *blocks, int64_t num_in,
                                 int64_t step, int timed_ops, float *ms, float *loss) {
    (void)s, (void)blocks, (void)num_in, (void)step, (void)timed_ops, (void)ms, (void)loss;
    return no_cuda();
}
gd_status gd_instrument_step_check_errors(gd_instrument_step *s) {
    (void)s;
    return no_cuda();
}
void gd_instrument_step_op_total(const gd_instrument_step *s, int kind, double *ms,
                                 int64_t *calls) {
    (void)s, (void)kind;
    if (ms) *ms = 0;
    if (calls) *calls = 0;
}

#endif /* GD_WITH_CUDA */

/* ---- the relational models: a typed step over the heterogeneous trainer's data path */

struct gd_instrument_tstep {
    gd__htrain *h;
    gd__htrain_batch mb; /* the last minibatch loaded */
    int T, R;
    gd__model_kind kind;
    uint64_t seed;
    step_clock clock;
};

gd_status gd_instrument_tstep_create(const gd_dataset_t *ds, const gd_instrument_tstep_config *c,
                                     gd_instrument_tstep **out) {
    gd_status st = GD_OK;
    gd_instrument_tstep *s = NULL;
    GD_REQUIRE(ds && c && out && c->fanouts && c->num_layers >= 1 &&
                   c->num_layers <= GD_SAMPLER_MAX_LAYERS,
               GD_ERR_INVALID_ARG, "gd_instrument_tstep_create: a dataset, a config with 1 to "
                                   "%d layers and an output handle, please",
               GD_SAMPLER_MAX_LAYERS);
    *out = NULL;
    gd__model_kind kind;
    GD_CHECK(gd__model_kind_parse(c->model ? c->model : "rsage", &kind));
    GD_REQUIRE(gd__model_kind_typed(kind), GD_ERR_INVALID_ARG,
               "the typed step times the relational models (rsage, rgcn, rgat), not %s", c->model);
    GD_ALLOC(s, sizeof *s, "the typed step's state");
    memset(s, 0, sizeof *s);
    /* The trainer's config: its data path sizes, samples and gathers as a training run does. */
    gd__train_config tc = GD__TRAIN_CONFIG_INIT;
    tc.model = kind;
    tc.num_layers = c->num_layers;
    memcpy(tc.fanouts, c->fanouts, sizeof(int) * (size_t)c->num_layers);
    tc.relation_fanouts = c->relation_fanouts;
    tc.batch_size = c->batch;
    tc.hidden_dim = c->hidden;
    tc.heads = c->heads;
    tc.attn_dropout = c->attn_dropout;
    tc.dropout = c->dropout;
    tc.lr = c->lr;
    tc.seed = c->seed;
    tc.mode = c->device >= 0 ? GD__TRAIN_CPU_CENTRIC : GD__TRAIN_CPU;
    tc.device = c->device >= 0 ? c->device : 0;
    GD_CHECK(gd__htrain_create(ds, &tc, &s->h));
    s->T = gd_dataset_num_node_types(ds);
    s->R = gd_dataset_num_edge_types(ds);
    s->kind = kind;
    s->seed = c->seed;
    GD_CHECK(clock_init(&s->clock, c->device >= 0, gd__htrain_ctx(s->h)->stream));
    *out = s;
    return GD_OK;
fail:
    gd_instrument_tstep_destroy(s);
    return st;
}

void gd_instrument_tstep_destroy(gd_instrument_tstep *s) {
    if (!s) return;
    clock_destroy(&s->clock);
    gd__htrain_destroy(s->h);
    gd_free(s);
}

const char *gd_instrument_tstep_title(const gd_instrument_tstep *s) {
    return s ? gd__model_kind_iface(s->kind)->title : "";
}

int64_t gd_instrument_tstep_num_params(const gd_instrument_tstep *s) {
    return s ? gd__model_num_params(gd__htrain_model(s->h)) : 0;
}

/* Load a minibatch and wait for its copies, so that the clock starts on an idle stream. */
static gd_status tstep_load(gd_instrument_tstep *s, const int64_t *seeds, int64_t n,
                            int64_t epoch, int64_t batch) {
    gd_status st = GD_OK;
    GD_REQUIRE(s && seeds && n > 0, GD_ERR_INVALID_ARG,
               "the typed step: a step object and seeds, please");
    const gd__nn_ctx *ctx = gd__htrain_ctx(s->h);
    GD_CHECK(gd__htrain_load(s->h, seeds, n, epoch, batch, NULL, &s->mb));
    GD_CHECK(ctx->be->synchronize(ctx));
fail:
    return st;
}

gd_status gd_instrument_tstep_run(gd_instrument_tstep *s, const int64_t *seeds, int64_t n,
                                  int64_t epoch, int64_t batch, int64_t step, float *ms,
                                  float *loss) {
    gd_status st = GD_OK;
    GD_REQUIRE(ms && loss, GD_ERR_INVALID_ARG, "gd_instrument_tstep_run: outputs, please");
    GD_CHECK(tstep_load(s, seeds, n, epoch, batch));
    GD_CHECK(clock_start(&s->clock));
    GD_CHECK(gd__htrain_step(s->h, &s->mb, GD__HSTEP_TRAIN, step_dropout_key(s->seed, step), 0));
    GD_CHECK(clock_stop(&s->clock, ms));
    GD_CHECK(gd__htrain_loss(s->h, loss));
fail:
    return st;
}

gd_status gd_instrument_tstep_eval_loss(gd_instrument_tstep *s, const int64_t *seeds, int64_t n,
                                        int64_t epoch, int64_t batch, float *loss) {
    gd_status st = GD_OK;
    GD_REQUIRE(loss, GD_ERR_INVALID_ARG, "gd_instrument_tstep_eval_loss: an output, please");
    GD_CHECK(tstep_load(s, seeds, n, epoch, batch));
    GD_CHECK(gd__htrain_step(s->h, &s->mb, GD__HSTEP_LOSS, 0, 0));
    GD_CHECK(gd__htrain_loss(s->h, loss));
fail:
    return st;
}

gd_status gd_instrument_tstep_check_errors(gd_instrument_tstep *s) {
    if (!s) return gd__error(GD_ERR_INVALID_ARG, "gd_instrument_tstep_check_errors: NULL step");
    return gd__nn_check_errors(gd__htrain_ctx(s->h));
}

gd_status gd_instrument_tstep_block(const gd_instrument_tstep *s, int l, int r, gd_block *out) {
    if (!s || !out || !s->mb.host_blocks || l < 0 || r < 0 || r >= s->R ||
        l >= gd__model_get_config(gd__htrain_model(s->h))->num_layers)
        return gd__error(GD_ERR_INVALID_ARG, "gd_instrument_tstep_block: no block %d of layer %d "
                                             "in the last minibatch", r, l);
    *out = s->mb.host_blocks[l * s->R + r];
    return GD_OK;
}

gd_status gd_instrument_tstep_nodes(const gd_instrument_tstep *s, int l, int t,
                                    const int64_t **ids, int64_t *n) {
    if (!s || !ids || !n || !s->mb.host_ids || l < 0 || t < 0 || t >= s->T ||
        l > gd__model_get_config(gd__htrain_model(s->h))->num_layers)
        return gd__error(GD_ERR_INVALID_ARG, "gd_instrument_tstep_nodes: no nodes of type %d at "
                                             "layer %d in the last minibatch", t, l);
    *ids = s->mb.host_ids[t];
    *n = s->mb.num_nodes[l * s->T + t];
    return GD_OK;
}

const int64_t *gd_instrument_tstep_labels(const gd_instrument_tstep *s, int64_t *n) {
    if (n) *n = s ? s->mb.n : 0;
    return s ? s->mb.host_labels : NULL;
}

gd_status gd_instrument_tstep_params(gd_instrument_tstep *s, float *host) {
    if (!s || !host) return gd__error(GD_ERR_INVALID_ARG, "gd_instrument_tstep_params: NULL");
    gd__nn_params *p = gd__model_params(gd__htrain_model(s->h));
    return gd__nn_to_host(gd__htrain_ctx(s->h), &p->params, host);
}

/* A view of the flat parameter buffer as a named weight: its element offset and shape. */
static gd_instrument_weight weight_of(const gd__nn_params *p, const char *name,
                                      const gd__nn_tensor *v) {
    const int64_t at = v->rows > 0 ? ((const char *)v->data - (const char *)p->params.data) /
                                         (int64_t)gd_dtype_size(p->dtype)
                                   : 0;
    return (gd_instrument_weight){name, at, v->rows, v->cols};
}

int gd_instrument_tstep_type_weights(const gd_instrument_tstep *s, int l, int t,
                                     gd_instrument_weight *w) {
    if (!s || !w || s->kind != GD__MODEL_RGCN) return 0;
    gd__model *m = gd__htrain_model(s->h);
    gd__nn_tensor wr, b;
    if (gd__rsage_root_weights(gd__model_context(m), l, t, 0, &wr, &b) != GD_OK) {
        gd_clear_error(); /* no root: a type the last layer does not compute */
        return 0;
    }
    const gd__nn_params *p = gd__model_params(m);
    w[0] = weight_of(p, "w_root", &wr);
    w[1] = weight_of(p, "b", &b);
    return 2;
}

int gd_instrument_tstep_weights(const gd_instrument_tstep *s, int l, int r,
                                gd_instrument_weight *w) {
    if (!s || !w) return 0;
    gd__model *m = gd__htrain_model(s->h);
    const gd__nn_params *p = gd__model_params(m);
    int n = 0;
    if (s->kind == GD__MODEL_RSAGE || s->kind == GD__MODEL_RGCN) {
        gd__nn_tensor wl, b, wr;
        if (gd__rsage_weights(gd__model_context(m), l, r, 0, &wl, &b, &wr) != GD_OK) {
            gd_clear_error(); /* no parameters: a relation the last layer does not compute */
            return 0;
        }
        w[n++] = weight_of(p, "w_l", &wl);
        w[n++] = weight_of(p, "b", &b);
        w[n++] = weight_of(p, "w_root", &wr);
    } else {
        gd__rgat_rel g;
        if (gd__rgat_weights(gd__model_context(m), l, r, 0, &g) != GD_OK) {
            gd_clear_error();
            return 0;
        }
        w[n++] = weight_of(p, "w_src", &g.w_src);
        w[n++] = weight_of(p, "w_dst", &g.w_dst);
        w[n++] = weight_of(p, "att_src", &g.att_src);
        w[n++] = weight_of(p, "att_dst", &g.att_dst);
        w[n++] = weight_of(p, "bias", &g.bias);
    }
    return n;
}
