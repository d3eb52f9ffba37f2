/*
 * The CUDA side of the core module, seen from C: device discovery, the GPU half of the Philox
 * cross-check, streams and memory for C code, and peer access between GPUs. Implemented in
 * device_cuda.cu, stream_cuda.cu and ipc_cuda.cu when the toolkit is there; device.c gives the
 * CPU-only answers otherwise. Every CUDA call is checked; an error is read and cleared once.
 */
#ifndef GD_CORE_CUDA_H
#define GD_CORE_CUDA_H

#include "internal.h"

#ifdef __CUDACC__
#include <cuda_runtime.h>

/*
 * Check a CUDA runtime call inside a function that follows the GD_CHECK convention (st, fail:).
 * The error is read and cleared once and turned into a gd_status naming the call.
 */
#define GD_CUDA_CHECK(call)                                                               \
    do {                                                                                  \
        cudaError_t ce_ = (call);                                                         \
        if (ce_ != cudaSuccess) {                                                         \
            (void)cudaGetLastError();                                                     \
            st = gd__error(ce_ == cudaErrorMemoryAllocation ? GD_ERR_NO_MEMORY : GD_ERR_CUDA, \
                           "%s failed: %s (%s)", #call, cudaGetErrorString(ce_),          \
                           cudaGetErrorName(ce_));                                        \
            goto fail;                                                                    \
        }                                                                                 \
    } while (0)

/* Check the launch that just happened. */
#define GD_CUDA_CHECK_LAUNCH() GD_CUDA_CHECK(cudaGetLastError())
#endif

#ifdef __cplusplus
extern "C" {
#endif

#ifdef GD_WITH_CUDA
int gd__cuda_device_count(void);
gd_status gd__cuda_device_info(int device, gd_device_info *info);
/*
 * GD_OK if GPU device exists; else GD_ERR_NO_DEVICE (no GPU: "<what> needs a GPU ... or
 * <instead>") or GD_ERR_RANGE (no such ordinal), with that message.
 */
gd_status gd__cuda_check_device(int device, const char *what, const char *instead);
/* Make device current, remembering the previous one in *prev for gd__cuda_leave_device. */
gd_status gd__cuda_enter_device(int device, int *prev);
void gd__cuda_leave_device(int device, int prev);
/*
 * cudaHostAlloc of bytes (at least 16) for `what`; a failure (or an injected GD_FAULT_PIN)
 * gives GD_ERR_PIN naming the size, the locked-memory limit and how to raise it, and `instead`
 * (another way out, e.g. "lower max_ids").
 */
gd_status gd__cuda_pinned_alloc(void **p, size_t bytes, const char *what, const char *instead);
/*
 * Fill out[i] (4 words each) with gd_philox(seed, i, i >> 32 ... ) computed on the GPU, for the
 * CPU/GPU equality test: counter = (i low, i high, c, d).
 */
gd_status gd__cuda_philox_fill(int device, uint64_t seed, uint32_t c, uint32_t d, int64_t n,
                               uint32_t *out);

/*
 * Streams, events, copies and memory for C code (stream_cuda.cu), so that the pipeline of the
 * trainer can be written in C. Handles are the CUDA ones behind void pointers. Every call is
 * checked and names the failing call; the device is the caller's current one unless given.
 */
/* A non-blocking stream on device. */
gd_status gd__cuda_stream_create(int device, void **stream);
void gd__cuda_stream_destroy(void *stream);
gd_status gd__cuda_stream_sync(void *stream);
/*
 * An event; timing = 1 lets gd__cuda_event_ms measure between two of them. Waits on it
 * (gd__cuda_event_sync) block the thread instead of spinning, so a host that waits for the GPU
 * costs no CPU time.
 */
gd_status gd__cuda_event_create(int device, int timing, void **event);
void gd__cuda_event_destroy(void *event);
gd_status gd__cuda_event_record(void *event, void *stream);
/* Work queued on stream after this waits for event's last record (no host wait). */
gd_status gd__cuda_stream_wait(void *stream, void *event);
gd_status gd__cuda_event_sync(void *event);
/* 1 if the event's work is done, 0 if not yet; an error gives -1 and sets the message. */
int gd__cuda_event_done(void *event);
/* Milliseconds between two completed timing events. */
gd_status gd__cuda_event_ms(void *start, void *end, float *ms);
/* An asynchronous copy in any direction (cudaMemcpyDefault) queued on stream. */
gd_status gd__cuda_memcpy_async(void *dst, const void *src, size_t bytes, void *stream);
/* Set bytes of device memory at dst to value, queued on stream. */
gd_status gd__cuda_memset_async(void *dst, int value, size_t bytes, void *stream);
/* Free and total memory of device in bytes. */
gd_status gd__cuda_mem_info(int device, int64_t *free_bytes, int64_t *total_bytes);
/* Device memory of bytes on device for `what` (named in the out-of-memory message); free. */
gd_status gd__cuda_malloc(int device, void **p, size_t bytes, const char *what);
void gd__cuda_free(void *p);
/* Release memory of gd__cuda_pinned_alloc. */
void gd__cuda_host_free(void *p);

/*
 * Peer access and CUDA IPC between the GPUs of one host (ipc_cuda.cu), so that a GPU reads rows
 * another GPU caches. Failures name both GPUs and the way out (--placement replicate).
 */
#define GD__CUDA_IPC_HANDLE_BYTES 64
/* *yes = 1 if GPU device can read GPU peer's memory (NVLink or PCIe P2P), or device == peer. */
gd_status gd__cuda_can_access_peer(int device, int peer, int *yes);
/*
 * Let GPU device read GPU peer's memory, in this process; access enabled before counts as
 * success. GD_ERR_CUDA, naming both GPUs, where they have no peer access.
 */
gd_status gd__cuda_enable_peer_access(int device, int peer);
/*
 * Enable every pair of devices[0..n) that has peer access (the rest are left for
 * gd__cuda_enable_peer_access to refuse where needed). An in-process group calls it when it is
 * made: enabling waits for the peer GPU's work, which must not be a collective in flight.
 */
void gd__cuda_enable_peer_group(const int *devices, int n);
/*
 * The 64-byte CUDA IPC handle of ptr, a cudaMalloc buffer of GPU device (such as a tier store's
 * cache.mem), for another process on this host to open. The buffer stays valid for the openers
 * while its owner keeps it.
 */
gd_status gd__cuda_ipc_handle(int device, const void *ptr,
                              unsigned char handle[GD__CUDA_IPC_HANDLE_BYTES]);
/*
 * Open another process's handle on GPU device (peer access enabled lazily): *ptr is the
 * buffer's start as device addresses it. peer is the GPU that owns the buffer, as this process
 * numbers it, for messages. A process cannot open its own handles (CUDA refuses).
 */
gd_status gd__cuda_ipc_open(int device, int peer,
                            const unsigned char handle[GD__CUDA_IPC_HANDLE_BYTES], void **ptr);
/* Close a mapping of gd__cuda_ipc_open (NULL: nothing to do). */
gd_status gd__cuda_ipc_close(int device, void *ptr);
/*
 * A GPU's PCI id ("0000:1b:00.0"), the name processes with different CUDA_VISIBLE_DEVICES agree
 * on, and the ordinal this process gives the GPU of a PCI id (-1: not visible here).
 */
#define GD__CUDA_PCI_ID_BYTES 32
gd_status gd__cuda_pci_id(int device, char id[GD__CUDA_PCI_ID_BYTES]);
int gd__cuda_device_of_pci(const char *id);
#endif

#ifdef __cplusplus
}
#endif

#endif
