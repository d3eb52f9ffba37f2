/*
 * The NCCL communicator (comm.h). Every communicator is non-blocking (ncclConfig_t.blocking =
 * 0): a call that answers ncclInProgress is settled by polling ncclCommGetAsyncError, so that no
 * NCCL call can block the host forever. A watchdog thread per communicator polls, every 20 ms:
 *   - the user's abort flag (a signal handler sets it): abort, "interrupted";
 *   - ncclCommGetAsyncError: an error of NCCL (a peer's network or NVLink failure): abort;
 *   - the last collective queued: if its event has not completed within the timeout after it was
 *     queued, another rank has stopped calling collectives (it failed, or was killed): abort.
 * ncclCommAbort stops the NCCL kernels in flight, so that streams waiting on them drain and every
 * host wait returns; the comm is then marked aborted and each later call fails with GD_ERR_COMM
 * naming the rank and the cause (gd__comm_check).
 */
#include "core/comm_impl.h"

#ifdef GD_WITH_NCCL
#include "core/cuda.h"

#include <nccl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* The watchdog's period. */
#define WATCH_MS 20
/* A finalize that does not finish in this time (s) is given up: the comm is aborted instead. */
#define FINALIZE_TIMEOUT_S 30.0

typedef struct {
    ncclComm_t comm;
    int device;
    volatile const int *abort_flag;
    cudaStream_t aux;      /* host collectives' copies */
    void *scratch;         /* their device buffer */
    size_t scratch_bytes;
    cudaEvent_t last;      /* recorded after the latest collective */
    double last_queued;    /* when it was queued (gd__now), 0: none in flight */
    pthread_t watch;
    int watching;
    volatile int stop;
    /*
     * Ranks that are threads of one process (gd__nccl_create_group): their host collectives go
     * through this local group (a barrier and shared buffers), not through NCCL kernels. A
     * kernel spinning on one GPU for the other rank, while that rank's thread allocates or
     * frees memory (the trainer's build does), deadlocks where the GPUs map each other's memory:
     * the driver's page-table update waits for the spinning GPU (issue 14: bench scale's
     * partition run hung 2 times in 9). NULL: ranks in separate processes.
     */
    gd__comm *host;
} nccl_rank;

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/*
 * One step of a poll that waits for a collective: the first steps only yield (a collective of
 * a step's gradients settles in tens of microseconds, and a 1 ms sleep on every one cost 1.1 ms
 * an all-reduce on the lent H200s), then 50 us naps, then 1 ms ones for long waits.
 */
static void poll_wait(int *spins) {
    const int n = (*spins)++;
    if (n < 2000) {
        sched_yield();
    } else {
        struct timespec ts = {0, n < 2200 ? 50000L : 1000000L};
        nanosleep(&ts, NULL);
    }
}

static gd_status nccl_error(const gd__comm *c, ncclResult_t r, const char *call) {
    const char *last = ncclGetLastError(NULL);
    return gd__error(GD_ERR_COMM, "rank %d of %d: %s failed: %s%s%s", c ? c->rank : 0,
                     c ? c->world : 0, call, ncclGetErrorString(r), last && *last ? ": " : "",
                     last ? last : "");
}

/*
 * Settle a call that answered r: wait while the communicator says ncclInProgress, until the
 * timeout (then abort). With c->mu held.
 */
static gd_status settle(gd__comm *c, ncclResult_t r, const char *call) {
    nccl_rank *nr = (nccl_rank *)c->impl;
    const double deadline = gd__now() + c->timeout_s;
    int spins = 0;
    while (r == ncclInProgress) {
        if (c->aborted) return gd__comm_check(c);
        if (gd__now() > deadline) {
            gd__comm_abort_locked(c, "%s did not finish within %g s", call, c->timeout_s);
            return gd__comm_check(c);
        }
        poll_wait(&spins);
        ncclResult_t a = ncclSuccess;
        (void)ncclCommGetAsyncError(nr->comm, &a);
        r = a;
    }
    if (r != ncclSuccess) {
        gd_status st = nccl_error(c, r, call);
        gd__comm_abort_locked(c, "%s", gd_last_error());
        return st;
    }
    return GD_OK;
}

static void *watchdog(void *arg) {
    gd__comm *c = (gd__comm *)arg;
    nccl_rank *nr = (nccl_rank *)c->impl;
    if (cudaSetDevice(nr->device) != cudaSuccess) (void)cudaGetLastError();
    while (!nr->stop) {
        sleep_ms(WATCH_MS);
        pthread_mutex_lock(&c->mu);
        if (!c->aborted && nr->comm) {
            ncclResult_t a = ncclSuccess;
            (void)ncclCommGetAsyncError(nr->comm, &a);
            if (nr->abort_flag && *nr->abort_flag) {
                gd__comm_abort_locked(c, "rank %d was interrupted (a signal)", c->rank);
            } else if (a != ncclSuccess && a != ncclInProgress) {
                const char *last = ncclGetLastError(nr->comm);
                gd__comm_abort_locked(c, "NCCL reported on rank %d: %s%s%s", c->rank,
                                      ncclGetErrorString(a), last && *last ? ": " : "",
                                      last ? last : "");
            } else if (nr->last_queued > 0) {
                cudaError_t q = cudaEventQuery(nr->last);
                if (q == cudaSuccess) {
                    nr->last_queued = 0;
                } else {
                    if (q != cudaErrorNotReady) (void)cudaGetLastError();
                    if (gd__now() - nr->last_queued > c->timeout_s)
                        gd__comm_abort_locked(
                            c,
                            "a collective on rank %d did not finish within %g s: another rank "
                            "stopped (see its error) or hangs (GD_COMM_TIMEOUT sets the limit)",
                            c->rank, c->timeout_s);
                }
            }
        }
        pthread_mutex_unlock(&c->mu);
    }
    return NULL;
}

static void nccl_abort(gd__comm *c) {
    nccl_rank *nr = (nccl_rank *)c->impl;
    if (nr && nr->comm) {
        (void)ncclCommAbort(nr->comm);
        nr->comm = NULL;
    }
    if (nr && nr->host) gd__comm_abort(nr->host, c->why); /* wakes the host collectives */
}

/* Wait for stream, polling, and fail once the comm is aborted. */
static gd_status nccl_sync(gd__comm *c, void *stream) {
    gd_status st = GD_OK;
    for (int spins = 0;;) {
        cudaError_t q = cudaStreamQuery((cudaStream_t)stream);
        if (q == cudaSuccess) break;
        if (q != cudaErrorNotReady) GD_CUDA_CHECK(q);
        (void)cudaGetLastError();
        GD_CHECK(gd__comm_check(c));
        poll_wait(&spins);
    }
    GD_CHECK(gd__comm_check(c));
fail:
    return st;
}

static gd_status nccl_allreduce_f32(gd__comm *c, float *buf, int64_t n, void *stream) {
    gd_status st = GD_OK;
    nccl_rank *nr = (nccl_rank *)c->impl;
    pthread_mutex_lock(&c->mu);
    GD_CHECK(gd__comm_check(c));
    GD_CHECK(settle(c, ncclAllReduce(buf, buf, (size_t)n, ncclFloat, ncclSum, nr->comm,
                                     (cudaStream_t)stream),
                    "ncclAllReduce"));
    GD_CUDA_CHECK(cudaEventRecord(nr->last, (cudaStream_t)stream));
    nr->last_queued = gd__now();
fail:
    pthread_mutex_unlock(&c->mu);
    return st;
}

static gd_status scratch(nccl_rank *nr, size_t bytes) {
    gd_status st = GD_OK;
    if (bytes <= nr->scratch_bytes) return GD_OK;
    if (nr->scratch) GD_CUDA_CHECK(cudaFree(nr->scratch));
    nr->scratch = NULL;
    nr->scratch_bytes = 0;
    GD_CUDA_CHECK(cudaMalloc(&nr->scratch, bytes));
    nr->scratch_bytes = bytes;
fail:
    return st;
}

/*
 * A host collective through the scratch buffer: copy in (bytes_in at offset in_off), queue the
 * collective by call, copy bytes_out back to out, wait (watched).
 */
static gd_status host_collective(gd__comm *c, const void *in, size_t in_off, size_t bytes_in,
                                 void *out, size_t bytes_out,
                                 ncclResult_t (*call)(gd__comm *, nccl_rank *, size_t),
                                 size_t count, const char *name) {
    gd_status st = GD_OK;
    nccl_rank *nr = (nccl_rank *)c->impl;
    int prev = -1;
    GD_CHECK(gd__cuda_enter_device(nr->device, &prev));
    pthread_mutex_lock(&c->mu);
    st = scratch(nr, bytes_out > in_off + bytes_in ? bytes_out : in_off + bytes_in);
    if (st == GD_OK && cudaMemcpyAsync((char *)nr->scratch + in_off, in, bytes_in,
                                       cudaMemcpyHostToDevice, nr->aux) != cudaSuccess) {
        (void)cudaGetLastError();
        st = gd__error(GD_ERR_CUDA, "rank %d: copying %s's input failed", c->rank, name);
    }
    if (st == GD_OK) st = gd__comm_check(c);
    if (st == GD_OK) st = settle(c, call(c, nr, count), name);
    if (st == GD_OK && cudaEventRecord(nr->last, nr->aux) == cudaSuccess)
        nr->last_queued = gd__now();
    pthread_mutex_unlock(&c->mu);
    GD_CHECK(st);
    GD_CUDA_CHECK(cudaMemcpyAsync(out, nr->scratch, bytes_out, cudaMemcpyDeviceToHost, nr->aux));
    GD_CHECK(nccl_sync(c, nr->aux));
fail:
    gd__cuda_leave_device(nr->device, prev);
    return st;
}

static ncclResult_t sum_f64_call(gd__comm *c, nccl_rank *nr, size_t n) {
    (void)c;
    return ncclAllReduce(nr->scratch, nr->scratch, n, ncclFloat64, ncclSum, nr->comm, nr->aux);
}

static ncclResult_t gather_call(gd__comm *c, nccl_rank *nr, size_t bytes) {
    return ncclAllGather((char *)nr->scratch + (size_t)c->rank * bytes, nr->scratch, bytes,
                         ncclChar, nr->comm, nr->aux);
}

/* A host collective of in-process ranks done: a failure (a rank gone) stops NCCL's too. */
static gd_status in_process_done(gd__comm *c, gd_status st) {
    if (st != GD_OK) {
        const nccl_rank *nr = (const nccl_rank *)c->impl;
        gd__comm_abort(c, nr->host->aborted ? nr->host->why : gd_last_error());
    }
    return st;
}

static gd_status nccl_sum_host(gd__comm *c, double *vals, int64_t n) {
    const size_t bytes = (size_t)n * sizeof(double);
    nccl_rank *nr = (nccl_rank *)c->impl;
    if (nr->host) {
        gd_status st = gd__comm_check(c);
        if (st == GD_OK) st = gd__comm_sum_host(nr->host, vals, n);
        return in_process_done(c, st);
    }
    return host_collective(c, vals, 0, bytes, vals, bytes, sum_f64_call, (size_t)n,
                           "ncclAllReduce");
}

static gd_status nccl_allgather_host(gd__comm *c, const void *mine, void *all, int64_t bytes) {
    const size_t b = (size_t)bytes;
    nccl_rank *nr = (nccl_rank *)c->impl;
    if (nr->host) {
        gd_status st = gd__comm_check(c);
        if (st == GD_OK) st = gd__comm_allgather_host(nr->host, mine, all, bytes);
        return in_process_done(c, st);
    }
    return host_collective(c, mine, (size_t)c->rank * b, b, all, b * (size_t)c->world,
                           gather_call, b, "ncclAllGather");
}

/* Finalize (flush), watched; abort instead when it does not finish. With c->mu held. */
static void finalize(gd__comm *c) {
    nccl_rank *nr = (nccl_rank *)c->impl;
    if (c->aborted || !nr->comm) return;
    ncclResult_t r = ncclCommFinalize(nr->comm);
    const double deadline = gd__now() + FINALIZE_TIMEOUT_S;
    while (r == ncclInProgress && gd__now() < deadline) {
        sleep_ms(1);
        (void)ncclCommGetAsyncError(nr->comm, &r);
    }
    if (r != ncclSuccess) {
        gd__comm_abort_locked(c, "finalizing the communicator of rank %d failed", c->rank);
        return;
    }
    (void)ncclCommDestroy(nr->comm);
    nr->comm = NULL;
}

static void nccl_destroy(gd__comm *c) {
    nccl_rank *nr = (nccl_rank *)c->impl;
    if (!nr) return;
    if (nr->watching) {
        nr->stop = 1;
        pthread_join(nr->watch, NULL);
    }
    int prev = -1;
    if (gd__cuda_enter_device(nr->device, &prev) != GD_OK) gd_clear_error();
    pthread_mutex_lock(&c->mu);
    finalize(c);
    pthread_mutex_unlock(&c->mu);
    if (nr->aux && cudaStreamDestroy(nr->aux) != cudaSuccess) (void)cudaGetLastError();
    if (nr->last && cudaEventDestroy(nr->last) != cudaSuccess) (void)cudaGetLastError();
    if (nr->scratch && cudaFree(nr->scratch) != cudaSuccess) (void)cudaGetLastError();
    gd__cuda_leave_device(nr->device, prev);
    gd__comm_destroy(nr->host);
    gd_free(nr);
    c->impl = NULL;
}

static const gd__comm_ops nccl_ops = {
    "nccl", 1, nccl_allreduce_f32, nccl_sum_host, nccl_allgather_host, nccl_sync,
    nccl_abort, nccl_destroy,
};

extern "C" gd_status gd__nccl_id_create(unsigned char *id) {
    ncclUniqueId u;
    ncclResult_t r = ncclGetUniqueId(&u);
    if (r != ncclSuccess) return nccl_error(NULL, r, "ncclGetUniqueId");
    memcpy(id, u.internal, GD_COMM_ID_BYTES);
    return GD_OK;
}

/* A rank's comm on device, its stream and event; the NCCL communicator is the caller's. */
static gd_status rank_new(int device, int rank, int world, double timeout_s,
                          volatile const int *abort_flag, gd__comm **out) {
    gd_status st = GD_OK;
    nccl_rank *nr = NULL;
    int prev = -1;
    *out = NULL;
    GD_CHECK(gd__cuda_check_device(device, "training on several GPUs", "use fewer GPUs"));
    nr = (nccl_rank *)gd_malloc(sizeof *nr);
    GD_REQUIRE(nr, GD_ERR_NO_MEMORY, "out of memory for a communicator");
    memset(nr, 0, sizeof *nr);
    nr->device = device;
    nr->abort_flag = abort_flag;
    GD_CHECK(gd__comm_new(&nccl_ops, rank, world, timeout_s, out));
    (*out)->impl = nr; /* from here on the comm owns it */
    GD_CHECK(gd__cuda_enter_device(device, &prev));
    GD_CUDA_CHECK(cudaStreamCreateWithFlags(&nr->aux, cudaStreamNonBlocking));
    GD_CUDA_CHECK(cudaEventCreateWithFlags(&nr->last, cudaEventDisableTiming));
    gd__cuda_leave_device(device, prev);
    return GD_OK;
fail:
    gd__cuda_leave_device(device, prev);
    if (*out) {
        gd__comm_destroy(*out);
        *out = NULL;
    } else {
        gd_free(nr);
    }
    return st;
}

/* Wait (watched by the timeout and the abort flag) until the comms have formed; then watch. */
static gd_status await_init(gd__comm **comms, int n) {
    gd_status st = GD_OK;
    for (int i = 0; i < n; i++) {
        gd__comm *c = comms[i];
        nccl_rank *nr = (nccl_rank *)c->impl;
        ncclResult_t r = ncclInProgress;
        const double deadline = gd__now() + c->timeout_s;
        for (;;) {
            (void)ncclCommGetAsyncError(nr->comm, &r);
            if (r != ncclInProgress) break;
            if (nr->abort_flag && *nr->abort_flag) {
                st = gd__error(GD_ERR_INTERRUPTED,
                               "rank %d of %d: interrupted while the ranks were joining", c->rank,
                               c->world);
                goto fail;
            }
            if (gd__now() > deadline) {
                st = gd__error(GD_ERR_COMM,
                               "rank %d of %d: the other ranks did not join within %g s (one of "
                               "them failed to start: see its error; GD_COMM_TIMEOUT sets the "
                               "limit)",
                               c->rank, c->world, c->timeout_s);
                goto fail;
            }
            sleep_ms(1);
        }
        if (r != ncclSuccess) {
            st = nccl_error(c, r, "joining the ranks (ncclCommInitRankConfig)");
            goto fail;
        }
    }
    for (int i = 0; i < n; i++) {
        nccl_rank *nr = (nccl_rank *)comms[i]->impl;
        GD_REQUIRE(pthread_create(&nr->watch, NULL, watchdog, comms[i]) == 0, GD_ERR_INTERNAL,
                   "rank %d: cannot start the communicator's watchdog thread", comms[i]->rank);
        nr->watching = 1;
    }
fail:
    return st;
}

static void abort_all(gd__comm **comms, int n) {
    for (int i = 0; i < n; i++) {
        if (!comms[i]) continue;
        gd__comm_abort(comms[i], "start-up failed");
        gd__comm_destroy(comms[i]);
        comms[i] = NULL;
    }
}

static ncclConfig_t nonblocking(void) {
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    return cfg;
}

extern "C" gd_status gd__nccl_create(const gd__comm_config *cfg, gd__comm **out) {
    gd_status st = GD_OK;
    gd__comm *c = NULL;
    int prev = -1;
    ncclUniqueId id;
    ncclConfig_t conf = nonblocking();
    *out = NULL;
    GD_CHECK(rank_new(cfg->device, cfg->rank, cfg->world, cfg->timeout_s, cfg->abort_flag, &c));
    memcpy(id.internal, cfg->id, GD_COMM_ID_BYTES);
    GD_CHECK(gd__cuda_enter_device(cfg->device, &prev));
    {
        nccl_rank *nr = (nccl_rank *)c->impl;
        ncclResult_t r = ncclCommInitRankConfig(&nr->comm, cfg->world, id, cfg->rank, &conf);
        if (r != ncclSuccess && r != ncclInProgress) {
            st = nccl_error(c, r, "joining the ranks (ncclCommInitRankConfig)");
            goto fail;
        }
    }
    GD_CHECK(await_init(&c, 1));
    gd__cuda_leave_device(cfg->device, prev);
    *out = c;
    return GD_OK;
fail:
    gd__cuda_leave_device(cfg->device, prev);
    abort_all(&c, 1);
    return st;
}

extern "C" gd_status gd__nccl_create_group(int world, const int *devices, double timeout_s,
                                           gd__comm **comms) {
    gd_status st = GD_OK;
    ncclUniqueId id;
    ncclConfig_t conf = nonblocking();
    int prev = -1, grouped = 0;
    for (int r = 0; r < world; r++)
        GD_CHECK(rank_new(devices[r], r, world, timeout_s, NULL, &comms[r]));
    {
        /* The ranks are threads of this process: their host collectives meet on the host. */
        gd__comm *host[GD__COMM_MAX_GROUP];
        GD_REQUIRE(world <= GD__COMM_MAX_GROUP, GD_ERR_INVALID_ARG,
                   "communicator group: %d ranks; at most %d in one process", world,
                   GD__COMM_MAX_GROUP);
        GD_CHECK(gd__comm_create_group(world, NULL, comms[0]->timeout_s, host));
        for (int r = 0; r < world; r++) ((nccl_rank *)comms[r]->impl)->host = host[r];
    }
    {
        ncclResult_t g = ncclGetUniqueId(&id);
        if (g != ncclSuccess) {
            st = nccl_error(NULL, g, "ncclGetUniqueId");
            goto fail;
        }
    }
    GD_CHECK(gd__cuda_enter_device(devices[0], &prev));
    if (ncclGroupStart() != ncclSuccess) {
        st = gd__error(GD_ERR_COMM, "ncclGroupStart failed");
        goto fail;
    }
    grouped = 1;
    for (int r = 0; r < world; r++) {
        nccl_rank *nr = (nccl_rank *)comms[r]->impl;
        GD_CUDA_CHECK(cudaSetDevice(devices[r]));
        ncclResult_t e = ncclCommInitRankConfig(&nr->comm, world, id, r, &conf);
        if (e != ncclSuccess && e != ncclInProgress) {
            st = nccl_error(comms[r], e, "ncclCommInitRankConfig");
            goto fail;
        }
    }
    grouped = 0;
    {
        ncclResult_t e = ncclGroupEnd();
        if (e != ncclSuccess && e != ncclInProgress) {
            st = nccl_error(NULL, e, "ncclGroupEnd");
            goto fail;
        }
    }
    GD_CHECK(await_init(comms, world));
    gd__cuda_leave_device(devices[0], prev);
    return GD_OK;
fail:
    if (grouped) (void)ncclGroupEnd();
    gd__cuda_leave_device(devices[0], prev);
    abort_all(comms, world);
    return st;
}

#endif /* GD_WITH_NCCL */
