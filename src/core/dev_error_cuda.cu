/*
 * The host half of the device-side error record (core/dev_error.h): read it back after the
 * work that may have written it, and clear it for the next error. The sampler, the gatherer and
 * the nn ops share it; each formats the record in its own terms.
 */
#include "core/cuda.h"
#include "core/dev_error.h"

extern "C" gd_status gd__dev_error_take(gd__dev_error *d_err, void *stream, gd__dev_error *out) {
    gd_status st = GD_OK;
    cudaStream_t s = (cudaStream_t)stream;
    GD_CUDA_CHECK(cudaMemcpyAsync(out, d_err, sizeof *out, cudaMemcpyDeviceToHost, s));
    GD_CUDA_CHECK(cudaStreamSynchronize(s));
    if (out->flag) {
        GD_CUDA_CHECK(cudaMemsetAsync(d_err, 0, sizeof *d_err, s));
        GD_CUDA_CHECK(cudaStreamSynchronize(s));
    }
    return GD_OK;
fail:
    out->flag = 0;
    return st;
}
