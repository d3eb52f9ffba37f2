/*
 * Green contexts: a stream whose kernels run only on a chosen set of SMs. The zero-copy gather
 * is bound by the PCIe link, not by compute, so a few SMs nearly saturate it; launching it on
 * a green context's stream keeps it off the other SMs, which the training kernels then have
 * to themselves (the grid cap does the same less strictly: blocks of a capped grid may still
 * land on any SM). The CUDA side (green_cuda.cu) reaches the driver's green-context API through
 * cudaGetDriverEntryPointByVersion, so the library does not link libcuda at build time; a
 * build without CUDA gets green_none.c, where every call reports GD_ERR_NO_DEVICE.
 *
 * How the gatherer uses one: create it once with the SM budget; order each gather launch after
 * the caller's stream with an event (cudaEventRecord on the caller's stream, then
 * cudaStreamWaitEvent on gd__green_stream), launch with <<<..., gd__green_stream(g)>>>, and
 * order the caller's stream after it the same way. Device memory from cudaMalloc (the primary
 * context) is used by kernels on the green stream as it is: a green context shares the
 * primary context's memory, modules and events and differs only in the SMs it may use.
 *
 * Two caveats from the driver documentation. SMs come in groups: a request is rounded up to
 * the split granularity (on compute capability 9.x: at least 8 SMs, in multiples of 8; see
 * gd__green_split_rules), or, with GD__GREEN_FINE, to a finer one that gives up thread-block
 * clusters (the gather does not use them). And a green context confines only the work
 * launched in it: kernels on ordinary streams may still run on its SMs.
 *
 * Plain C, usable from .c and .cu files.
 */
#ifndef GD_FEATURE_GREEN_H
#define GD_FEATURE_GREEN_H

#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gd__green gd__green;

/* Flags of gd__green_create. */
enum {
    /*
     * Split at the finest granularity the driver offers
     * (CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING): rounds the SM count up by less, at the
     * cost of thread-block clusters, which the gather kernels do not use.
     */
    GD__GREEN_FINE = 1u
};

/*
 * Make a green context of at least `sms` SMs on `device` (rounded up to the split granularity)
 * and a non-blocking stream in it. The caller's current device is left as it was.
 * Errors:
 *   GD_ERR_INVALID_ARG  sms < 1, unknown flags, or out == NULL;
 *   GD_ERR_NO_DEVICE    no GPU is visible, or the library was built without CUDA;
 *   GD_ERR_RANGE        device does not exist, or sms (after rounding up) exceeds the SMs the
 *                       GPU can give one group: nothing is clamped, so that the caller knows
 *                       it asked for more than a partition;
 *   GD_ERR_UNSUPPORTED  the driver is older than CUDA 12.5 or lacks an entry point, or the
 *                       GPU (or a MIG/MPS setup) refuses green contexts;
 *   GD_ERR_NO_MEMORY, GD_ERR_CUDA  as named in the message.
 * On GD_ERR_UNSUPPORTED and GD_ERR_RANGE the gatherer falls back to a grid cap.
 */
gd_status gd__green_create(int device, int sms, unsigned flags, gd__green **out);

/* The SMs the green context holds (>= the request). */
int gd__green_sms(const gd__green *g);

/* The device it was made on. */
int gd__green_device(const gd__green *g);

/*
 * The device's split rules as the driver reports them for a default split: the smallest
 * group and the alignment of group sizes (0 when the driver does not report them).
 */
void gd__green_split_rules(const gd__green *g, int *min_sms, int *alignment);

/*
 * The green context's stream, as a cudaStream_t (also a CUstream): runtime launches
 * (<<<grid, block, smem, stream>>>), copies, cudaEventRecord and cudaStreamWaitEvent on it
 * run in the green context.
 */
void *gd__green_stream(const gd__green *g);

/*
 * Wait for the stream's work and destroy the stream. The green context itself is shared by
 * every gd__green of the same device and size and kept until the process exits (destroying
 * one does not return all of its GPU memory). NULL is a no-op.
 */
void gd__green_destroy(gd__green *g);

/* ---- probes for the tests (not used on the data path) */

/*
 * Launch a kernel of many more blocks than the GPU has SMs on `stream` (a cudaStream_t; NULL is
 * the legacy default stream of device's primary context); every block records the SM it ran
 * on (%smid). Reports how many distinct SMs ran blocks and the largest SM id seen. Waits for
 * the stream.
 */
gd_status gd__green_probe_sms(int device, void *stream, int *distinct_sms, int *max_smid);

/*
 * The gatherer's hand-off, checked: on an ordinary stream of g's device a slow kernel fills
 * a buffer; the green stream waits for it (event), derives a second buffer from it with a
 * slow kernel, and the ordinary stream waits for that (event) and counts wrong elements.
 * Both buffers come from cudaMalloc. *mismatches is 0 when the events order the streams and
 * the green context reads and writes the primary context's memory.
 */
gd_status gd__green_probe_handoff(const gd__green *g, long long *mismatches);

#ifdef __cplusplus
}
#endif

#endif /* GD_FEATURE_GREEN_H */
