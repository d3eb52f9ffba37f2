/*
 * The all-reduce ceiling (comm.h): the library's own communicator, so that the bench measures
 * the collective the trainer's all-reduce stage calls.
 */
#include "instrument/comm.h"

#include "core/comm.h"
#include "core/cuda.h"
#include "core/internal.h"

#include <string.h>

gd_status gd_instrument_allreduce(gd_context_t *ctx, int64_t bytes, int iters, double *seconds) {
    gd_status st = GD_OK;
    gd__comm *c = gd__context_comm(ctx);
    void *zeros = NULL;
#ifdef GD_WITH_CUDA
    void *buf = NULL, *stream = NULL;
    double one = 1;
#endif
    GD_REQUIRE(c && gd__comm_on_device(c) && bytes >= 4 && iters >= 1 && seconds,
               GD_ERR_INVALID_ARG,
               "all-reduce ceiling: needs a context of a GPU group, >= 4 bytes and >= 1 run");
#ifdef GD_WITH_CUDA
    const int device = gd_context_device(ctx);
    const int64_t n = bytes / 4;
    GD_CHECK(gd__cuda_stream_create(device, &stream));
    GD_CHECK(gd__cuda_malloc(device, &buf, (size_t)n * 4, "the all-reduce ceiling's buffer"));
    GD_ALLOC(zeros, (size_t)n * 4, "the all-reduce ceiling's input");
    memset(zeros, 0, (size_t)n * 4);
    GD_CHECK(gd__cuda_memcpy_async(buf, zeros, (size_t)n * 4, stream));
    /* Every rank allocated before any all-reduce kernel spins, and none frees while another
     * may still be in one (in-process ranks deadlock otherwise: comm_nccl.cu). */
    GD_CHECK(gd__comm_sum_host(c, &one, 1));
    for (int k = 0; k < 3; k++) GD_CHECK(gd__comm_allreduce_f32(c, buf, n, stream));
    GD_CHECK(gd__comm_sync(c, stream));
    const double t0 = gd__now();
    for (int k = 0; k < iters; k++) GD_CHECK(gd__comm_allreduce_f32(c, buf, n, stream));
    GD_CHECK(gd__comm_sync(c, stream));
    *seconds = (gd__now() - t0) / iters;
    GD_CHECK(gd__comm_sum_host(c, &one, 1));
#else
    st = gd__error(GD_ERR_NO_DEVICE, "all-reduce ceiling: this build has no CUDA");
#endif
fail:
#ifdef GD_WITH_CUDA
    gd__cuda_stream_destroy(stream); /* waits for the stream first */
    gd__cuda_free(buf);
#endif
    gd_free(zeros);
    return st;
}
