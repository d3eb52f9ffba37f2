/*
 * The host half of the device-side error record (core/dev_error.h): read it back after the
 * work that may have written it, and clear it for the next error. The sampler, the gatherer and
 * the nn ops share it; each formats the record in its own terms.
 */
#include "core/cuda.h"
#include "core/dev_error.h"

extern "C" gd_status gd__dev_error_take(int device, void *done, void *stream, gd__dev_error *d_err,
                                       gd__dev_error *out) {
    gd_status st = GD_OK;
    cudaStream_t s = (cudaStream_t)stream;
    int prev = -1;
    out->flag = 0;
    GD_CHECK(gd__cuda_enter_device(device, &prev));
    if (done) GD_CUDA_CHECK(cudaEventSynchronize((cudaEvent_t)done));
    GD_CUDA_CHECK(cudaMemcpyAsync(out, d_err, sizeof *out, cudaMemcpyDeviceToHost, s));
    GD_CUDA_CHECK(cudaStreamSynchronize(s));
    if (out->flag) {
        GD_CUDA_CHECK(cudaMemsetAsync(d_err, 0, sizeof *d_err, s));
        GD_CUDA_CHECK(cudaStreamSynchronize(s));
    }
fail:
    if (st != GD_OK) out->flag = 0;
    gd__cuda_leave_device(device, prev);
    return st;
}
