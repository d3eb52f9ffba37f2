/*
 * The device-side error record. A kernel cannot return a status, and the sampler, the gatherer
 * and the nn ops launch asynchronously, so a kernel that meets bad input (a seed outside the
 * graph, an id past the table, a label past the classes) records the first such error in a
 * small struct in device memory and carries on; the module's check_errors reads it after the
 * work is done, clears it and turns it into a gd_status with a message in the module's terms.
 * The record keeps only the first error: later ones would race to overwrite its values.
 */
#ifndef GD_CORE_DEV_ERROR_H
#define GD_CORE_DEV_ERROR_H

#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    unsigned int flag; /* 0 until the first error is recorded, then 1 until cleared */
    unsigned int kind; /* what went wrong, in the recording module's terms */
    long long v[3];    /* the values its message names (a position, an id, a bound ...) */
} gd__dev_error;

#ifdef GD_WITH_CUDA
/*
 * Read the record at d_err (device memory of GPU device) into *out and clear it on the device
 * if it was set, so that the next error is recorded afresh. device is current for the calls and
 * the caller's device is restored. The work that may write the record must be done first: done
 * (an event recorded after it, or NULL) is waited for, and the copy and the clear are queued on
 * stream (NULL: the legacy default stream) and waited for, so the clear is complete whatever
 * stream the next kernel runs on. out->flag says whether an error was recorded.
 */
gd_status gd__dev_error_take(int device, void *done, void *stream, gd__dev_error *d_err,
                             gd__dev_error *out);
#endif

#ifdef __cplusplus
}
#endif

#ifdef __CUDACC__
/* Record kind and its values unless an error is recorded already. */
__device__ __forceinline__ void gd__dev_error_record(gd__dev_error *e, unsigned kind, long long a,
                                                     long long b, long long c) {
    if (atomicCAS(&e->flag, 0u, 1u) == 0u) {
        e->kind = kind;
        e->v[0] = a;
        e->v[1] = b;
        e->v[2] = c;
    }
}
#endif

#endif
