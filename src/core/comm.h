/*
 * Communicators: the ranks of one data-parallel run (docs/multi_gpu.md) summing their gradients
 * and agreeing on small values. Two implementations of one interface:
 *   nccl   one rank per GPU, in separate processes (gd_context_create with a communicator id) or
 *          as a group in one process (one thread per rank, tests); NCCL moves every byte, on the
 *          caller's CUDA stream. Created without blocking and watched by a thread: an
 *          asynchronous NCCL error, a collective that does not finish within the timeout, or the
 *          user's abort flag aborts the communicator (ncclCommAbort), which stops the kernels in
 *          flight so that no wait hangs; every later call and wait then fails with GD_ERR_COMM
 *          naming the rank and the cause.
 *   local  the CPU reference: the ranks are threads of one process and sum host buffers in
 *          rank order through shared memory (the same result on every rank, bit for bit). It
 *          is what the cpu mode trains with when a test runs several ranks, and the reference
 *          the NCCL runs are compared with.
 * A world of one rank has no communicator (NULL); callers skip the collectives then.
 */
#ifndef GD_CORE_COMM_H
#define GD_CORE_COMM_H

#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gd__comm gd__comm;

/* One process's rank of an NCCL run (gd_context_options' fields). */
typedef struct {
    int device;
    int rank, world;
    const unsigned char *id; /* GD_COMM_ID_BYTES */
    double timeout_s;        /* > 0 */
    volatile const int *abort_flag;
} gd__comm_config;

/* The timeout of a config's 0: GD_COMM_TIMEOUT (seconds) from the environment, else 600. */
double gd__comm_default_timeout(void);

/* Join an NCCL run (waits, watched, until every rank has joined or the timeout). */
gd_status gd__comm_create(const gd__comm_config *cfg, gd__comm **out);
/* Ranks of a group in one process at most. */
#define GD__COMM_MAX_GROUP 64
/*
 * world communicators of one process, comms[r] for rank r (each used by one thread): NCCL over
 * devices[0..world) when devices is non-NULL, else the local CPU implementation. The NCCL ranks'
 * host collectives (sum_host, allgather_host) meet on the host, as the local ones do.
 */
gd_status gd__comm_create_group(int world, const int *devices, double timeout_s,
                                gd__comm **comms);
/* Finalizes (NCCL: flushes, watched) and frees; NULL is ignored. */
/*
 * A local group whose ranks keep their buffers in GPU memory (possibly all on one GPU): the
 * all-reduce stages them through host memory. For tests of the multi-rank GPU paths on one GPU.
 */
gd_status gd__comm_create_staged_group(int world, double timeout_s, gd__comm **comms);
void gd__comm_destroy(gd__comm *c);

int gd__comm_rank(const gd__comm *c);
int gd__comm_world(const gd__comm *c);
/* 1: the buffers of the collectives are GPU memory of the comm's device (NCCL); 0: host. */
int gd__comm_on_device(const gd__comm *c);

/*
 * buf[0..n) = its sum over the ranks, in place: GPU memory queued on stream (NCCL), or host
 * memory, returning when done (local). Every rank calls it in the same order.
 */
gd_status gd__comm_allreduce_f32(gd__comm *c, float *buf, int64_t n, void *stream);
/* vals[0..n) (host) = the sum over the ranks, in double; returns when done, watched. */
gd_status gd__comm_sum_host(gd__comm *c, double *vals, int64_t n);
/* all[r * bytes ..] = rank r's mine[0..bytes) for every rank (host memory; returns when done). */
gd_status gd__comm_allgather_host(gd__comm *c, const void *mine, void *all, int64_t bytes);
/*
 * Wait for the work queued on stream (a CUDA stream of the comm's device) without hanging on a
 * failed run: polls, and fails with GD_ERR_COMM once the communicator is aborted.
 */
gd_status gd__comm_sync(gd__comm *c, void *stream);
/* Abort (idempotent): collectives in flight stop; why is kept for the errors. */
void gd__comm_abort(gd__comm *c, const char *why);
/* GD_OK, or GD_ERR_COMM with the rank and the cause of the abort. */
gd_status gd__comm_check(gd__comm *c);

/* The comm of a context (NULL: alone). */
gd__comm *gd__context_comm(const gd_context_t *ctx);
/*
 * world contexts of one process sharing a group communicator (gd__comm_create_group): for
 * tests, and the reference of data-parallel training without a GPU (devices NULL: cpu).
 */
gd_status gd__context_create_group(int world, const int *devices, gd_context_t **ctxs);
/* A context per device over a staged group (gd__comm_create_staged_group); devices may repeat. */
gd_status gd__context_create_staged_group(int world, const int *devices, gd_context_t **ctxs);

#ifdef __cplusplus
}
#endif

#endif /* GD_CORE_COMM_H */
