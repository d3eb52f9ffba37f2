/*
 * The communicator's shared part (comm.c) and what an implementation provides (comm.c: local,
 * comm_nccl.cu: NCCL). Private to those two files.
 */
#ifndef GD_CORE_COMM_IMPL_H
#define GD_CORE_COMM_IMPL_H

#include "core/comm.h"

#include <pthread.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *name; /* "nccl", "local" */
    int on_device;
    gd_status (*allreduce_f32)(gd__comm *c, float *buf, int64_t n, void *stream);
    gd_status (*sum_host)(gd__comm *c, double *vals, int64_t n);
    gd_status (*allgather_host)(gd__comm *c, const void *mine, void *all, int64_t bytes);
    gd_status (*sync)(gd__comm *c, void *stream);
    /* Stop what is in flight (called once, with c->mu held, after c->why is set). */
    void (*abort)(gd__comm *c);
    void (*destroy)(gd__comm *c);
} gd__comm_ops;

struct gd__comm {
    const gd__comm_ops *ops;
    int rank, world;
    double timeout_s;
    pthread_mutex_t mu;      /* the implementation's calls and the abort */
    volatile int aborted;    /* set once, under mu */
    char why[384];           /* the cause of the abort, for the errors */
    void *impl;
};

/* A comm of ops for rank of world (impl set by the caller); GD_ERR_NO_MEMORY or GD_OK. */
gd_status gd__comm_new(const gd__comm_ops *ops, int rank, int world, double timeout_s,
                       gd__comm **out);
/* Mark c aborted with why (printf-style) and call its ops->abort; with c->mu held. */
void gd__comm_abort_locked(gd__comm *c, const char *fmt, ...) GD_PRINTF(2, 3);

#ifdef GD_WITH_NCCL
gd_status gd__nccl_id_create(unsigned char *id);
gd_status gd__nccl_create(const gd__comm_config *cfg, gd__comm **out);
gd_status gd__nccl_create_group(int world, const int *devices, double timeout_s,
                                gd__comm **comms);
#endif

#ifdef __cplusplus
}
#endif

#endif /* GD_CORE_COMM_IMPL_H */
