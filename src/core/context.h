/*
 * The context (gd_context_t, public and opaque): what the objects of one device share, so that
 * nothing of it sits in process statics. It holds the GPU ordinal; the registry of host memory
 * registered for that GPU (a feature table page-locked once is shared by every trainer and
 * loader of the context, and unregistered when the last one lets go); and room for a
 * communicator (rank, world size, NCCL) for data-parallel training. The nn module's state (a
 * stream, a cuBLAS handle, a work buffer) stays with each trainer: a cuBLAS handle must not be
 * used by two host threads at once, and two trainers of one context may run on two threads.
 *
 * Objects created without a context (a NULL context in their options) use the default context
 * of their device: one per device per process, reference-counted, the way the CUDA runtime
 * has one primary context per device. Two explicit contexts never share anything.
 */
#ifndef GD_CORE_CONTEXT_H
#define GD_CORE_CONTEXT_H

#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Registered host tables at most per context. */
#define GD__CONTEXT_PIN_SLOTS 16

/* The default context of device, with a reference for the caller (gd__context_unref). */
gd_status gd__context_default(int device, gd_context_t **out);
/*
 * The context an object created with options (given, *device) uses, with a reference for it:
 * given when there is one (then *device becomes its device), else the default context of
 * *device.
 */
gd_status gd__context_acquire(gd_context_t *given, int *device, gd_context_t **out);
/* A reference to ctx for an object that keeps it; gd__context_unref gives it back. */
gd_context_t *gd__context_ref(gd_context_t *ctx);
void gd__context_unref(gd_context_t *ctx);

/*
 * The host tensor of `data` (rows x cols of dtype, read-only when ro) registered for the
 * context's GPU: shared with every earlier caller over the same memory, else adopted and
 * registered now. Give it back with gd__context_unpin.
 */
gd_status gd__context_pin(gd_context_t *ctx, void *data, int64_t rows, int64_t cols,
                          gd_dtype dtype, gd_host_tensor_t **out);
void gd__context_unpin(gd_context_t *ctx, gd_host_tensor_t *t);

#ifdef __cplusplus
}
#endif

#endif /* GD_CORE_CONTEXT_H */
