/*
 * The all-reduce ceiling of `graphdirect bench scale`: NCCL's all-reduce of a buffer of a given
 * size among the ranks of a context group, timed on its own (no training around it). Part of
 * gd_instrument, like step.h: benchmarks reach it through this header, which names only the
 * public header's types.
 */
#ifndef GD_INSTRUMENT_COMM_H
#define GD_INSTRUMENT_COMM_H

#include "graphdirect.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Every rank of ctx's group calls this together (one thread each): a few warm-up all-reduces of
 * bytes of float32 in GPU memory, then iters timed ones; *seconds gets the mean time of one.
 * GD_ERR_INVALID_ARG for a context without a communicator (or one of CPU ranks).
 */
gd_status gd_instrument_allreduce(gd_context_t *ctx, int64_t bytes, int iters, double *seconds);

#ifdef __cplusplus
}
#endif

#endif /* GD_INSTRUMENT_COMM_H */
