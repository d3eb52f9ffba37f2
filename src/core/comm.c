/*
 * Communicators (comm.h): the front-ends every caller goes through, and the local CPU
 * implementation, the reference of the NCCL one (comm_nccl.cu): ranks are threads of one process
 * that meet at a barrier, publish their buffers and each add them up in rank order, so every rank
 * gets the same sums bit for bit.
 */
#include "core/comm_impl.h"

#include "core/cuda.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GD__COMM_DEFAULT_TIMEOUT_S 600.0
#define LOCAL_MAX_RANKS GD__COMM_MAX_GROUP

double gd__comm_default_timeout(void) {
    const char *e = getenv("GD_COMM_TIMEOUT");
    if (e && *e) {
        char *end;
        const double v = strtod(e, &end);
        if (*end == '\0' && v > 0) return v;
        GD_WARN("GD_COMM_TIMEOUT=%s is not a positive number of seconds: using %g", e,
                GD__COMM_DEFAULT_TIMEOUT_S);
    }
    return GD__COMM_DEFAULT_TIMEOUT_S;
}

gd_status gd__comm_new(const gd__comm_ops *ops, int rank, int world, double timeout_s,
                       gd__comm **out) {
    gd_status st = GD_OK;
    gd__comm *c = NULL;
    GD_ALLOC(c, sizeof *c, "a communicator");
    memset(c, 0, sizeof *c);
    if (pthread_mutex_init(&c->mu, NULL) != 0) {
        gd_free(c);
        return gd__error(GD_ERR_INTERNAL, "communicator: cannot create a mutex");
    }
    c->ops = ops;
    c->rank = rank;
    c->world = world;
    c->timeout_s = timeout_s > 0 ? timeout_s : gd__comm_default_timeout();
    *out = c;
fail:
    return st;
}

void gd__comm_abort_locked(gd__comm *c, const char *fmt, ...) {
    if (c->aborted) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->why, sizeof c->why, fmt, ap);
    va_end(ap);
    c->aborted = 1;
    c->ops->abort(c);
}

void gd__comm_abort(gd__comm *c, const char *why) {
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    gd__comm_abort_locked(c, "%s", why && *why ? why : "aborted by the program");
    pthread_mutex_unlock(&c->mu);
}

gd_status gd__comm_check(gd__comm *c) {
    if (!c || !c->aborted) return GD_OK;
    return gd__error(GD_ERR_COMM, "rank %d of %d: the ranks stopped: %s", c->rank, c->world,
                     c->why);
}

void gd__comm_destroy(gd__comm *c) {
    if (!c) return;
    c->ops->destroy(c);
    pthread_mutex_destroy(&c->mu);
    gd_free(c);
}

int gd__comm_rank(const gd__comm *c) {
    return c ? c->rank : 0;
}

int gd__comm_world(const gd__comm *c) {
    return c ? c->world : 1;
}

int gd__comm_on_device(const gd__comm *c) {
    return c && c->ops->on_device;
}

gd_status gd__comm_allreduce_f32(gd__comm *c, float *buf, int64_t n, void *stream) {
    gd_status st = GD_OK;
    GD_CHECK(gd__comm_check(c));
    if (n > 0) GD_CHECK(c->ops->allreduce_f32(c, buf, n, stream));
fail:
    return st;
}

gd_status gd__comm_sum_host(gd__comm *c, double *vals, int64_t n) {
    gd_status st = GD_OK;
    GD_CHECK(gd__comm_check(c));
    if (n > 0) GD_CHECK(c->ops->sum_host(c, vals, n));
fail:
    return st;
}

gd_status gd__comm_allgather_host(gd__comm *c, const void *mine, void *all, int64_t bytes) {
    gd_status st = GD_OK;
    GD_CHECK(gd__comm_check(c));
    if (bytes > 0) GD_CHECK(c->ops->allgather_host(c, mine, all, bytes));
fail:
    return st;
}

gd_status gd__comm_sync(gd__comm *c, void *stream) {
    gd_status st = GD_OK;
    GD_CHECK(gd__comm_check(c));
    if (c->ops->sync) GD_CHECK(c->ops->sync(c, stream));
fail:
    return st;
}

/* ------------------------------------------------------------- local (CPU) */

/* What the threads of a local group share: a generation barrier and the published buffers. */
typedef struct {
    int world, refs;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int arrived;
    uint64_t generation;
    int aborted;
    char why[448];
    const void *slot[LOCAL_MAX_RANKS];
} local_shared;

typedef struct {
    local_shared *sh;
    void *tmp; /* this rank's sums before they overwrite its buffer */
    size_t tmp_bytes;
    void *stage; /* staged group: the GPU buffer's copy in host memory */
    size_t stage_bytes;
} local_rank;

/*
 * Wait until every rank of the group has arrived; GD_ERR_COMM when the group is aborted or the
 * others do not come within the timeout (which aborts the group: they would wait for this one).
 */
static gd_status local_barrier(gd__comm *c) {
    local_rank *lr = c->impl;
    local_shared *sh = lr->sh;
    gd_status st = GD_OK;
    pthread_mutex_lock(&sh->mu);
    const uint64_t gen = sh->generation;
    if (++sh->arrived == sh->world) {
        sh->arrived = 0;
        sh->generation++;
        pthread_cond_broadcast(&sh->cv);
    } else {
        const double deadline = gd__now() + c->timeout_s;
        while (sh->generation == gen && !sh->aborted) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1;
            (void)pthread_cond_timedwait(&sh->cv, &sh->mu, &ts);
            if (sh->generation == gen && !sh->aborted && gd__now() > deadline) {
                snprintf(sh->why, sizeof sh->why,
                         "rank %d waited %g s at a collective for the other ranks", c->rank,
                         c->timeout_s);
                sh->aborted = 1;
                pthread_cond_broadcast(&sh->cv);
            }
        }
    }
    if (sh->aborted && sh->generation == gen) {
        pthread_mutex_lock(&c->mu);
        if (!c->aborted) {
            snprintf(c->why, sizeof c->why, "%.380s", sh->why);
            c->aborted = 1;
        }
        pthread_mutex_unlock(&c->mu);
        st = gd__comm_check(c);
    }
    pthread_mutex_unlock(&sh->mu);
    return st;
}

static gd_status grow(void **buf, size_t *have, size_t bytes) {
    if (bytes <= *have) return GD_OK;
    void *p = gd_realloc(*buf, bytes);
    if (!p) return gd__error(GD_ERR_NO_MEMORY, "communicator: out of memory for %zu bytes", bytes);
    *buf = p;
    *have = bytes;
    return GD_OK;
}

static gd_status local_tmp(local_rank *lr, size_t bytes) {
    return grow(&lr->tmp, &lr->tmp_bytes, bytes);
}

/*
 * Publish mine, wait for every rank, let combine read every rank's buffer into this rank's
 * scratch, wait again (so no rank overwrites a buffer another still reads), and copy the scratch
 * to out.
 */
static gd_status local_exchange(gd__comm *c, const void *mine, void *out, size_t out_bytes,
                                void (*combine)(const local_shared *, void *, int64_t),
                                int64_t n) {
    gd_status st = GD_OK;
    local_rank *lr = c->impl;
    GD_CHECK(local_tmp(lr, out_bytes));
    lr->sh->slot[c->rank] = mine;
    GD_CHECK(local_barrier(c));
    combine(lr->sh, lr->tmp, n);
    GD_CHECK(local_barrier(c));
    memcpy(out, lr->tmp, out_bytes);
fail:
    return st;
}

static void sum_f32(const local_shared *sh, void *out, int64_t n) {
    float *o = out;
    for (int64_t i = 0; i < n; i++) {
        float s = ((const float *)sh->slot[0])[i];
        for (int r = 1; r < sh->world; r++) s += ((const float *)sh->slot[r])[i];
        o[i] = s;
    }
}

static void sum_f64(const local_shared *sh, void *out, int64_t n) {
    double *o = out;
    for (int64_t i = 0; i < n; i++) {
        double s = ((const double *)sh->slot[0])[i];
        for (int r = 1; r < sh->world; r++) s += ((const double *)sh->slot[r])[i];
        o[i] = s;
    }
}

/* n is the bytes of one rank's share here. */
static void gather_bytes(const local_shared *sh, void *out, int64_t n) {
    for (int r = 0; r < sh->world; r++) memcpy((char *)out + (size_t)r * (size_t)n, sh->slot[r], (size_t)n);
}

static gd_status local_allreduce_f32(gd__comm *c, float *buf, int64_t n, void *stream) {
    (void)stream;
    return local_exchange(c, buf, buf, (size_t)n * sizeof(float), sum_f32, n);
}

/*
 * The staged group: GPU buffers copied to host memory, summed as the local group sums, and
 * copied back, each copy finished before the next step. As slow as it sounds; it lets ranks
 * share one GPU (which NCCL refuses), so that one GPU tests the multi-rank GPU paths, and its
 * sums are the local group's, bit for bit.
 */
static gd_status staged_allreduce_f32(gd__comm *c, float *buf, int64_t n, void *stream) {
#ifdef GD_WITH_CUDA
    gd_status st = GD_OK;
    local_rank *lr = c->impl;
    const size_t bytes = (size_t)n * sizeof(float);
    GD_CHECK(grow(&lr->stage, &lr->stage_bytes, bytes));
    GD_CHECK(gd__cuda_memcpy_async(lr->stage, buf, bytes, stream));
    GD_CHECK(gd__cuda_stream_sync(stream));
    GD_CHECK(local_exchange(c, lr->stage, lr->stage, bytes, sum_f32, n));
    GD_CHECK(gd__cuda_memcpy_async(buf, lr->stage, bytes, stream));
    GD_CHECK(gd__cuda_stream_sync(stream));
fail:
    return st;
#else
    (void)c, (void)buf, (void)n, (void)stream;
    return gd__error(GD_ERR_NO_DEVICE, "a staged communicator group: this build has no CUDA");
#endif
}

static gd_status local_sum_host(gd__comm *c, double *vals, int64_t n) {
    return local_exchange(c, vals, vals, (size_t)n * sizeof(double), sum_f64, n);
}

static gd_status local_allgather_host(gd__comm *c, const void *mine, void *all, int64_t bytes) {
    return local_exchange(c, mine, all, (size_t)bytes * (size_t)c->world, gather_bytes, bytes);
}

static void local_abort(gd__comm *c) {
    local_shared *sh = ((local_rank *)c->impl)->sh;
    pthread_mutex_lock(&sh->mu);
    if (!sh->aborted) {
        snprintf(sh->why, sizeof sh->why, "rank %d: %.400s", c->rank, c->why);
        sh->aborted = 1;
    }
    pthread_cond_broadcast(&sh->cv);
    pthread_mutex_unlock(&sh->mu);
}

static void local_destroy(gd__comm *c) {
    local_rank *lr = c->impl;
    if (!lr) return;
    local_shared *sh = lr->sh;
    pthread_mutex_lock(&sh->mu);
    const int last = --sh->refs == 0;
    pthread_mutex_unlock(&sh->mu);
    if (last) {
        pthread_cond_destroy(&sh->cv);
        pthread_mutex_destroy(&sh->mu);
        gd_free(sh);
    }
    gd_free(lr->tmp);
    gd_free(lr->stage);
    gd_free(lr);
}

static const gd__comm_ops local_ops = {
    .name = "local",
    .on_device = 0,
    .allreduce_f32 = local_allreduce_f32,
    .sum_host = local_sum_host,
    .allgather_host = local_allgather_host,
    .sync = NULL,
    .abort = local_abort,
    .destroy = local_destroy,
};

static const gd__comm_ops staged_ops = {
    .name = "local-staged",
    .on_device = 1,
    .allreduce_f32 = staged_allreduce_f32,
    .sum_host = local_sum_host,
    .allgather_host = local_allgather_host,
    .sync = NULL,
    .abort = local_abort,
    .destroy = local_destroy,
};

static gd_status local_group(int world, const gd__comm_ops *ops, double timeout_s,
                             gd__comm **comms) {
    gd_status st = GD_OK;
    local_shared *sh = NULL;
    GD_ALLOC(sh, sizeof *sh, "a local communicator group");
    memset(sh, 0, sizeof *sh);
    sh->world = world;
    if (pthread_mutex_init(&sh->mu, NULL) != 0 || pthread_cond_init(&sh->cv, NULL) != 0) {
        gd_free(sh);
        return gd__error(GD_ERR_INTERNAL, "communicator: cannot create a mutex");
    }
    for (int r = 0; r < world; r++) {
        local_rank *lr = NULL;
        GD_ALLOC(lr, sizeof *lr, "a local communicator");
        memset(lr, 0, sizeof *lr);
        lr->sh = sh;
        sh->refs++;
        st = gd__comm_new(ops, r, world, timeout_s, &comms[r]);
        if (st != GD_OK) {
            sh->refs--;
            gd_free(lr);
            goto fail;
        }
        comms[r]->impl = lr;
    }
    return GD_OK;
fail:
    for (int r = 0; r < world; r++) {
        gd__comm_destroy(comms[r]);
        comms[r] = NULL;
    }
    if (sh && sh->refs == 0) {
        pthread_cond_destroy(&sh->cv);
        pthread_mutex_destroy(&sh->mu);
        gd_free(sh);
    }
    return st;
}

/* --------------------------------------------------------------- creation */

gd_status gd__comm_create(const gd__comm_config *cfg, gd__comm **out) {
    *out = NULL;
#ifdef GD_WITH_NCCL
    return gd__nccl_create(cfg, out);
#else
    (void)cfg;
    return gd__error(GD_ERR_UNSUPPORTED,
                     "training on several GPUs needs NCCL, and this build has none: install the "
                     "CUDA toolkit's NCCL (or Debian's libnccl-dev) and rebuild");
#endif
}

gd_status gd__comm_create_group(int world, const int *devices, double timeout_s,
                                gd__comm **comms) {
    gd_status st = GD_OK;
    GD_REQUIRE(world >= 2 && world <= LOCAL_MAX_RANKS, GD_ERR_INVALID_ARG,
               "communicator group: %d ranks; use 2 to %d", world, LOCAL_MAX_RANKS);
    for (int r = 0; r < world; r++) comms[r] = NULL;
    if (!devices) return local_group(world, &local_ops, timeout_s, comms);
#ifdef GD_WITH_NCCL
    return gd__nccl_create_group(world, devices, timeout_s, comms);
#else
    GD_CHECK(gd__comm_create(NULL, comms));
#endif
fail:
    return st;
}

gd_status gd__comm_create_staged_group(int world, double timeout_s, gd__comm **comms) {
    gd_status st = GD_OK;
    GD_REQUIRE(world >= 2 && world <= LOCAL_MAX_RANKS, GD_ERR_INVALID_ARG,
               "communicator group: %d ranks; use 2 to %d", world, LOCAL_MAX_RANKS);
    for (int r = 0; r < world; r++) comms[r] = NULL;
    GD_CHECK(local_group(world, &staged_ops, timeout_s, comms));
fail:
    return st;
}

int gd_comm_available(void) {
#ifdef GD_WITH_NCCL
    return 1;
#else
    return 0;
#endif
}

gd_status gd_comm_id_create(unsigned char id[GD_COMM_ID_BYTES]) {
    if (!id) return gd__error(GD_ERR_INVALID_ARG, "gd_comm_id_create: id is NULL");
#ifdef GD_WITH_NCCL
    return gd__nccl_id_create(id);
#else
    gd__comm *none;
    return gd__comm_create(NULL, &none);
#endif
}
