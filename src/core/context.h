/*
 * The context (gd_context_t, public and opaque): what the objects of one device share, so that
 * nothing of it sits in process statics. It holds the GPU ordinal; the registry of host memory
 * registered for that GPU (a feature table or a graph's lists page-locked once are shared by
 * every host tensor, graph, trainer and loader of the context that registers the same memory,
 * and unregistered when the last one lets go); and room for a communicator (rank, world size,
 * NCCL) for data-parallel training. The nn module's state (a stream, a cuBLAS handle, a work
 * buffer) stays with each trainer: a cuBLAS handle must not be used by two host threads at
 * once, and two trainers of one context may run on two threads.
 *
 * Objects created without a context (NULL) use a default context: one per device per process,
 * reference-counted, the way the CUDA runtime has one primary context per device. Two explicit
 * contexts share nothing, unless gd_context_share_registry joins their registries (the contexts
 * of a group share one from the start).
 */
#ifndef GD_CORE_CONTEXT_H
#define GD_CORE_CONTEXT_H

#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The default context of device, with a reference for the caller (gd__context_unref); what
 * gd_context_default gives.
 */
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
 * The registry of host memory registered for the context's GPU. A range (data, bytes) is
 * registered once per context: gd__context_pin gives the registration of t's memory, shared
 * with every earlier caller over the same range, else made now (by a handle over the range that
 * owns no memory, so that it outlives whichever user registered it first). *holder is that
 * handle: its device pointer and chunks are t's. A range registered outside the context fails
 * with GD_ERR_ALREADY_REGISTERED. Give it back with gd__context_unpin, which unregisters the
 * range when its last user goes (and returns the status of that).
 */
gd_status gd__context_pin(gd_context_t *ctx, const gd_host_tensor_t *t,
                          gd_host_tensor_t **holder);
gd_status gd__context_unpin(gd_context_t *ctx, gd_host_tensor_t *holder);

#ifdef __cplusplus
}
#endif

#endif /* GD_CORE_CONTEXT_H */
