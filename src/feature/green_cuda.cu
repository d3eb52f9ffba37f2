/*
 * Green contexts through the CUDA driver API, reached with cudaGetDriverEntryPointByVersion so
 * that nothing links libcuda at build time (the runtime finds the driver when the process
 * starts, as it does for every other CUDA call). Each entry point is asked for at the version
 * whose signature cudaTypedefs.h gives, so a newer driver hands back the ABI this file was
 * compiled against.
 *
 * Making one follows the driver's four steps: the device's SM resource
 * (cuDeviceGetDevResource), one group of at least the requested SMs split off it
 * (cuDevSmResourceSplitByCount, which rounds the count up to the split granularity), a
 * descriptor of that group (cuDevResourceGenerateDesc), and the green context
 * (cuGreenCtxCreate). Work reaches it through a stream made in it (cuGreenCtxStreamCreate);
 * the runtime's launches, copies and event calls accept that stream like any other. The
 * green context belongs to the device's primary context: memory, modules and events are
 * shared, only the SMs differ.
 *
 * The probes at the end exist for tests: one records the SM (%smid) each block of a large
 * launch ran on, the other checks the event hand-off between an ordinary stream and the
 * green one, as the gatherer performs it.
 */
#include "core/cuda.h"
#include "green.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The driver entry points a green context needs, each at the ABI version named. */
typedef struct {
    PFN_cuGetErrorName_v6000 get_error_name;
    PFN_cuGetErrorString_v6000 get_error_string;
    PFN_cuDeviceGet_v2000 device_get;
    PFN_cuDeviceGetDevResource_v12040 device_get_dev_resource;
    PFN_cuDevSmResourceSplitByCount_v12040 sm_resource_split_by_count;
    PFN_cuDevResourceGenerateDesc_v12040 dev_resource_generate_desc;
    PFN_cuGreenCtxCreate_v12040 green_ctx_create;
    PFN_cuGreenCtxDestroy_v12040 green_ctx_destroy;
    PFN_cuGreenCtxStreamCreate_v12050 green_ctx_stream_create;
    PFN_cuStreamSynchronize_v2000 stream_synchronize;
    PFN_cuStreamDestroy_v4000 stream_destroy;
} driver_api;

struct gd__green {
    driver_api cu;
    int device;
    int sms;       /* SMs in the group the context was made from */
    int min_sms;   /* the device's minimum group for a default split (0 = not reported) */
    int alignment; /* and the alignment of group sizes */
    CUgreenCtx ctx;
    CUstream stream;
};

/*
 * Green contexts are made once per (device, SM count, split) and kept for the life of the
 * process; each gd__green only owns its stream. Destroying a green context does not give
 * all of its GPU memory back (the H100 run lost 256 MiB per 64 create/destroy cycles), and
 * making one costs milliseconds, so sharing them bounds both. Guarded by a mutex.
 */
#define MAX_SHARED_CONTEXTS 64
static struct {
    int device, sms;
    unsigned split_flags;
    CUgreenCtx ctx;
} shared[MAX_SHARED_CONTEXTS];
static int num_shared;
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;

/* The oldest driver with every entry point above (cuGreenCtxStreamCreate came in 12.5). */
#define GREEN_MIN_DRIVER 12050

/* ------------------------------------------------------------- driver calls */

static gd_status load_entry(const char *name, unsigned version, void **fn) {
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    *fn = NULL;
    cudaError_t ce = cudaGetDriverEntryPointByVersion(name, fn, version, cudaEnableDefault, &found);
    if (ce != cudaSuccess) {
        (void)cudaGetLastError();
        *fn = NULL;
        return gd__error(GD_ERR_UNSUPPORTED,
                         "looking up the CUDA driver's %s (CUDA %u.%u) failed: %s (%s): green "
                         "contexts are unavailable, update the NVIDIA driver",
                         name, version / 1000, version % 1000 / 10, cudaGetErrorString(ce),
                         cudaGetErrorName(ce));
    }
    if (found != cudaDriverEntryPointSuccess || !*fn) {
        *fn = NULL;
        return gd__error(GD_ERR_UNSUPPORTED,
                         "the CUDA driver has no %s of CUDA %u.%u (%s): green contexts are "
                         "unavailable, update the NVIDIA driver",
                         name, version / 1000, version % 1000 / 10,
                         found == cudaDriverEntryPointVersionNotSufficent
                             ? "the driver is older"
                             : "symbol not found");
    }
    return GD_OK;
}

#define LOAD_ENTRY(api, field, name, version)                                             \
    GD_CHECK(load_entry(name, version, (void **)&(api)->field))

static gd_status load_driver_api(driver_api *api) {
    gd_status st = GD_OK;
    LOAD_ENTRY(api, get_error_name, "cuGetErrorName", 6000);
    LOAD_ENTRY(api, get_error_string, "cuGetErrorString", 6000);
    LOAD_ENTRY(api, device_get, "cuDeviceGet", 2000);
    LOAD_ENTRY(api, device_get_dev_resource, "cuDeviceGetDevResource", 12040);
    LOAD_ENTRY(api, sm_resource_split_by_count, "cuDevSmResourceSplitByCount", 12040);
    LOAD_ENTRY(api, dev_resource_generate_desc, "cuDevResourceGenerateDesc", 12040);
    LOAD_ENTRY(api, green_ctx_create, "cuGreenCtxCreate", 12040);
    LOAD_ENTRY(api, green_ctx_destroy, "cuGreenCtxDestroy", 12040);
    LOAD_ENTRY(api, green_ctx_stream_create, "cuGreenCtxStreamCreate", 12050);
    LOAD_ENTRY(api, stream_synchronize, "cuStreamSynchronize", 2000);
    LOAD_ENTRY(api, stream_destroy, "cuStreamDestroy", 4000);
    return GD_OK;
fail:
    return st;
}

/* Name and text of a driver result, whichever of the two lookups work. */
static void cu_result_text(const driver_api *api, CUresult r, const char **name,
                           const char **text) {
    *name = NULL;
    *text = NULL;
    if (api->get_error_name && api->get_error_name(r, name) != CUDA_SUCCESS) *name = NULL;
    if (api->get_error_string && api->get_error_string(r, text) != CUDA_SUCCESS) *text = NULL;
    if (!*name) *name = "unknown CUresult";
    if (!*text) *text = "no description";
}

/*
 * Turn a failed driver call into a status and message. A refusal of the feature (not
 * supported, not permitted, a resource type or configuration the GPU does not have) is
 * GD_ERR_UNSUPPORTED, which callers answer by falling back to a grid cap.
 */
static gd_status cu_error(const driver_api *api, CUresult r, const char *call, int device) {
    const char *name, *text;
    cu_result_text(api, r, &name, &text);
    switch (r) {
    case CUDA_ERROR_NOT_SUPPORTED:
    case CUDA_ERROR_NOT_PERMITTED:
    case CUDA_ERROR_INVALID_RESOURCE_TYPE:
    case CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION:
        return gd__error(GD_ERR_UNSUPPORTED,
                         "%s failed on GPU %d: %s (%s, %d): this GPU or setup (MIG, MPS) does "
                         "not support green contexts",
                         call, device, text, name, (int)r);
    case CUDA_ERROR_OUT_OF_MEMORY:
        return gd__error(GD_ERR_NO_MEMORY, "%s failed on GPU %d: %s (%s)", call, device, text,
                         name);
    default:
        return gd__error(GD_ERR_CUDA, "%s failed on GPU %d: %s (%s, %d)", call, device, text,
                         name, (int)r);
    }
}

/* Check a driver call inside a function with `st` and `fail:`; g names the green context. */
#define GREEN_CU_CHECK(g, call)                                                           \
    do {                                                                                  \
        CUresult cr_ = (call);                                                            \
        if (cr_ != CUDA_SUCCESS) {                                                        \
            st = cu_error(&(g)->cu, cr_, #call, (g)->device);                             \
            goto fail;                                                                    \
        }                                                                                 \
    } while (0)

/* ------------------------------------------------------------- the green context */

static gd_status check_device(int device) {
    const int count = gd__cuda_device_count();
    if (count == 0)
        return gd__error(GD_ERR_NO_DEVICE,
                         "a green context needs a GPU and none is visible (check nvidia-smi and "
                         "CUDA_VISIBLE_DEVICES)");
    if (device < 0 || device >= count)
        return gd__error(GD_ERR_RANGE,
                         "a green context on GPU %d: that GPU does not exist: %d GPU(s) visible "
                         "(0..%d)",
                         device, count, count - 1);
    return GD_OK;
}

/* Find or make the green context of group for g's device, and set g->ctx (borrowed). */
static gd_status shared_context(gd__green *g, CUdevice dev, CUdevResource *group,
                                unsigned split_flags, CUdevResourceDesc *desc) {
    gd_status st = GD_OK;
    const int sms = (int)group->sm.smCount;
    pthread_mutex_lock(&shared_lock);
    for (int i = 0; i < num_shared; i++) {
        if (shared[i].device == g->device && shared[i].sms == sms &&
            shared[i].split_flags == split_flags) {
            g->ctx = shared[i].ctx;
            pthread_mutex_unlock(&shared_lock);
            return GD_OK;
        }
    }
    GD_REQUIRE(num_shared < MAX_SHARED_CONTEXTS, GD_ERR_RANGE,
               "green contexts of %d different sizes are in use, the most this process keeps; "
               "use fewer distinct SM budgets",
               MAX_SHARED_CONTEXTS);
    GREEN_CU_CHECK(g, g->cu.dev_resource_generate_desc(desc, group, 1));
    GREEN_CU_CHECK(g, g->cu.green_ctx_create(&g->ctx, *desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
    shared[num_shared].device = g->device;
    shared[num_shared].sms = sms;
    shared[num_shared].split_flags = split_flags;
    shared[num_shared].ctx = g->ctx;
    num_shared++;
    pthread_mutex_unlock(&shared_lock);
    return GD_OK;
fail:
    pthread_mutex_unlock(&shared_lock);
    return st;
}

extern "C" gd_status gd__green_create(int device, int sms, unsigned flags, gd__green **out) {
    gd_status st = GD_OK;
    gd__green *g = NULL;
    int driver = 0;
    CUdevice dev = 0;
    CUdevResource all, group, rest;
    CUdevResourceDesc desc = NULL;
    unsigned groups = 1;
    const unsigned split_flags =
        (flags & GD__GREEN_FINE) ? (unsigned)CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING : 0u;
    CUresult r;
    memset(&all, 0, sizeof all);
    memset(&group, 0, sizeof group);
    memset(&rest, 0, sizeof rest);

    GD_REQUIRE(out, GD_ERR_INVALID_ARG, "gd__green_create: NULL out");
    *out = NULL;
    GD_REQUIRE(sms >= 1, GD_ERR_INVALID_ARG, "a green context of %d SMs: ask for at least 1",
               sms);
    GD_REQUIRE((flags & ~(unsigned)GD__GREEN_FINE) == 0, GD_ERR_INVALID_ARG,
               "gd__green_create: unknown flags 0x%x", flags);
    GD_CHECK(check_device(device));
    GD_CUDA_CHECK(cudaDriverGetVersion(&driver));
    GD_REQUIRE(driver >= GREEN_MIN_DRIVER, GD_ERR_UNSUPPORTED,
               "green contexts need a driver of CUDA %d.%d or newer and this one supports CUDA "
               "%d.%d: update the NVIDIA driver",
               GREEN_MIN_DRIVER / 1000, GREEN_MIN_DRIVER % 1000 / 10, driver / 1000,
               driver % 1000 / 10);
    /* The green context retains the primary context; have it made here, once, not there. */
    GD_CUDA_CHECK(cudaInitDevice(device, 0, 0));

    g = (gd__green *)gd_calloc(1, sizeof *g);
    GD_REQUIRE(g, GD_ERR_NO_MEMORY, "out of memory for a green context");
    g->device = device;
    GD_CHECK(load_driver_api(&g->cu));
    GREEN_CU_CHECK(g, g->cu.device_get(&dev, device));
    GREEN_CU_CHECK(g, g->cu.device_get_dev_resource(dev, &all, CU_DEV_RESOURCE_TYPE_SM));
    g->min_sms = (int)all.sm.minSmPartitionSize;
    g->alignment = (int)all.sm.smCoscheduledAlignment;
    GD_REQUIRE((unsigned)sms <= all.sm.smCount, GD_ERR_RANGE,
               "a green context of %d SMs: GPU %d has %u; ask for fewer", sms, device,
               all.sm.smCount);
    if (!split_flags && g->alignment > 0) {
        /* A default split's groups are multiples of the alignment: say so before splitting. */
        int rounded = sms < g->min_sms ? g->min_sms : sms;
        rounded = (rounded + g->alignment - 1) / g->alignment * g->alignment;
        GD_REQUIRE(rounded <= (int)all.sm.smCount, GD_ERR_RANGE,
                   "a green context of %d SMs: GPU %d splits its %u SMs in groups of "
                   "multiples of %d, and %d SMs do not fit; ask for fewer",
                   sms, device, all.sm.smCount, g->alignment, rounded);
    }

    /*
     * One group of at least sms SMs. The driver rounds the count up to its granularity and
     * says "no group" (or refuses the configuration) when the rounded count does not fit.
     */
    r = g->cu.sm_resource_split_by_count(&group, &groups, &all, &rest, split_flags,
                                         (unsigned)sms);
    GD_REQUIRE(!(r == CUDA_SUCCESS && groups == 0) &&
                   r != CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION,
               GD_ERR_RANGE,
               "a green context of %d SMs: GPU %d (%u SMs; a default split makes groups of "
               "at least %u SMs in steps of %u) cannot split off a group that large%s; ask "
               "for fewer SMs",
               sms, device, all.sm.smCount, all.sm.minSmPartitionSize,
               all.sm.smCoscheduledAlignment, split_flags ? " with a fine split" : "");
    GREEN_CU_CHECK(g, r);
    GD_REQUIRE(groups == 1 && group.type == CU_DEV_RESOURCE_TYPE_SM && group.sm.smCount > 0,
               GD_ERR_INTERNAL,
               "cuDevSmResourceSplitByCount on GPU %d returned %u groups (type %d, %u SMs) "
               "for one group of %d SMs",
               device, groups, (int)group.type, group.sm.smCount, sms);
    if ((int)group.sm.smCount < sms)
        GD_WARN("green context on GPU %d: asked for %d SMs, the driver gave %u", device, sms,
                group.sm.smCount);

    GD_CHECK(shared_context(g, dev, &group, split_flags, &desc));
    GREEN_CU_CHECK(g, g->cu.green_ctx_stream_create(&g->stream, g->ctx, CU_STREAM_NON_BLOCKING,
                                                    0));
    g->sms = (int)group.sm.smCount;
    GD_DEBUG("green context on GPU %d: %d SMs (asked %d%s; the device splits groups of at "
             "least %d SMs in steps of %d)",
             device, g->sms, sms, split_flags ? ", fine split" : "", g->min_sms, g->alignment);
    *out = g;
    return GD_OK;
fail:
    gd__green_destroy(g);
    return st;
}

extern "C" int gd__green_sms(const gd__green *g) { return g ? g->sms : 0; }

extern "C" int gd__green_device(const gd__green *g) { return g ? g->device : -1; }

extern "C" void gd__green_split_rules(const gd__green *g, int *min_sms, int *alignment) {
    if (min_sms) *min_sms = g ? g->min_sms : 0;
    if (alignment) *alignment = g ? g->alignment : 0;
}

extern "C" void *gd__green_stream(const gd__green *g) { return g ? (void *)g->stream : NULL; }

extern "C" void gd__green_destroy(gd__green *g) {
    if (!g) return;
    /*
     * Destroying a green context does not destroy its streams, and a stream outliving it
     * cannot be destroyed any more: wait for the stream's work, destroy it, then the context.
     * Failures cannot be acted on here, so they are logged and the rest is still released.
     */
    if (g->stream) {
        CUresult r = g->cu.stream_synchronize(g->stream);
        const CUresult r_destroy = g->cu.stream_destroy(g->stream);
        if (r == CUDA_SUCCESS) r = r_destroy;
        if (r != CUDA_SUCCESS) {
            const char *name, *text;
            cu_result_text(&g->cu, r, &name, &text);
            GD_WARN("releasing the stream of a green context on GPU %d: %s (%s)", g->device,
                    text, name);
        }
    }
    /* The context itself stays in the process-wide table for the next user. */
    gd_free(g);
}

/* ------------------------------------------------------------- probes for the tests */

__device__ __forceinline__ unsigned long long global_ns(void) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ unsigned sm_id(void) {
    unsigned id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    return id;
}

/* Busy-wait for ns nanoseconds, so that blocks stay resident and kernels overlap visibly. */
__device__ void spin_ns(unsigned long long ns) {
    const unsigned long long t0 = global_ns();
    while (global_ns() - t0 < ns) {
    }
}

/* Each block stays a while, then records the SM it ran on. */
__global__ void smid_kernel(unsigned *out, unsigned long long spin) {
    if (threadIdx.x == 0) {
        spin_ns(spin);
        out[blockIdx.x] = sm_id();
    }
}

__global__ void fill_slow_kernel(int *a, int n, int round, unsigned long long spin) {
    spin_ns(spin);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        a[i] = 3 * i + 1 + round;
}

__global__ void derive_slow_kernel(const int *a, int *b, int n, unsigned long long spin) {
    spin_ns(spin);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        b[i] = a[i] + 1;
}

__global__ void count_wrong_kernel(const int *b, int n, int round, unsigned long long *wrong) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        if (b[i] != 3 * i + 2 + round) atomicAdd(wrong, 1ull);
}

static int compare_unsigned(const void *a, const void *b) {
    const unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return x < y ? -1 : x > y;
}

#define PROBE_BLOCK_THREADS 64

extern "C" gd_status gd__green_probe_sms(int device, void *stream_ptr, int *distinct_sms,
                                         int *max_smid) {
    gd_status st = GD_OK;
    const cudaStream_t stream = (cudaStream_t)stream_ptr;
    unsigned *d_ids = NULL, *ids = NULL;
    int prev = -1, sms = 0, distinct = 0;
    size_t blocks;
    GD_REQUIRE(distinct_sms && max_smid, GD_ERR_INVALID_ARG, "gd__green_probe_sms: NULL output");
    GD_CHECK(check_device(device));
    GD_CUDA_CHECK(cudaGetDevice(&prev));
    GD_CUDA_CHECK(cudaSetDevice(device));
    GD_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    /* Far more blocks than fit at once, each resident for a few microseconds. */
    blocks = (size_t)sms * 32;
    ids = (unsigned *)gd_malloc(blocks * sizeof *ids);
    GD_REQUIRE(ids, GD_ERR_NO_MEMORY, "out of memory for %zu SM ids", blocks);
    GD_CUDA_CHECK(cudaMalloc((void **)&d_ids, blocks * sizeof *d_ids));
    /* Poison: an id no SM has shows a block that did not record. */
    GD_CUDA_CHECK(cudaMemsetAsync(d_ids, 0xff, blocks * sizeof *d_ids, stream));
    smid_kernel<<<(unsigned)blocks, PROBE_BLOCK_THREADS, 0, stream>>>(d_ids, 5000ull);
    GD_CUDA_CHECK_LAUNCH();
    GD_CUDA_CHECK(
        cudaMemcpyAsync(ids, d_ids, blocks * sizeof *ids, cudaMemcpyDeviceToHost, stream));
    GD_CUDA_CHECK(cudaStreamSynchronize(stream));
    qsort(ids, blocks, sizeof *ids, compare_unsigned);
    GD_REQUIRE(ids[blocks - 1] != 0xffffffffu, GD_ERR_INTERNAL,
               "the SM probe on GPU %d: a block did not record its SM", device);
    for (size_t i = 0; i < blocks; i++)
        if (i == 0 || ids[i] != ids[i - 1]) distinct++;
    *distinct_sms = distinct;
    *max_smid = (int)ids[blocks - 1];
fail:
    if (d_ids) {
        (void)cudaStreamSynchronize(stream);
        (void)cudaFree(d_ids);
    }
    gd_free(ids);
    if (prev >= 0 && cudaSetDevice(prev) != cudaSuccess) (void)cudaGetLastError();
    return st;
}

extern "C" gd_status gd__green_probe_handoff(const gd__green *g, long long *mismatches) {
    gd_status st = GD_OK;
    const int n = 1 << 20, rounds = 3;
    int *a = NULL, *b = NULL;
    unsigned long long *d_wrong = NULL, wrong = 0, total = 0;
    cudaStream_t user = NULL, green;
    cudaEvent_t ev_user = NULL, ev_green = NULL;
    int prev = -1;
    GD_REQUIRE(g && mismatches, GD_ERR_INVALID_ARG, "gd__green_probe_handoff: NULL argument");
    green = (cudaStream_t)g->stream;
    GD_CUDA_CHECK(cudaGetDevice(&prev));
    GD_CUDA_CHECK(cudaSetDevice(g->device));
    /* Everything here is made in the primary context, as the gatherer's buffers are. */
    GD_CUDA_CHECK(cudaStreamCreateWithFlags(&user, cudaStreamNonBlocking));
    GD_CUDA_CHECK(cudaEventCreateWithFlags(&ev_user, cudaEventDisableTiming));
    GD_CUDA_CHECK(cudaEventCreateWithFlags(&ev_green, cudaEventDisableTiming));
    GD_CUDA_CHECK(cudaMalloc((void **)&a, (size_t)n * sizeof *a));
    GD_CUDA_CHECK(cudaMalloc((void **)&b, (size_t)n * sizeof *b));
    GD_CUDA_CHECK(cudaMalloc((void **)&d_wrong, sizeof *d_wrong));
    for (int round = 0; round < rounds; round++) {
        GD_CUDA_CHECK(cudaMemsetAsync(a, 0, (size_t)n * sizeof *a, user));
        GD_CUDA_CHECK(cudaMemsetAsync(b, 0, (size_t)n * sizeof *b, user));
        GD_CUDA_CHECK(cudaMemsetAsync(d_wrong, 0, sizeof *d_wrong, user));
        /*
         * Each kernel dawdles first, so a missing wait would let the next one read zeros;
         * the events are reused every round, as the gatherer reuses its own.
         */
        fill_slow_kernel<<<256, 256, 0, user>>>(a, n, round, 2000000ull);
        GD_CUDA_CHECK_LAUNCH();
        GD_CUDA_CHECK(cudaEventRecord(ev_user, user));
        GD_CUDA_CHECK(cudaStreamWaitEvent(green, ev_user, 0));
        derive_slow_kernel<<<256, 256, 0, green>>>(a, b, n, 1000000ull);
        GD_CUDA_CHECK_LAUNCH();
        GD_CUDA_CHECK(cudaEventRecord(ev_green, green));
        GD_CUDA_CHECK(cudaStreamWaitEvent(user, ev_green, 0));
        count_wrong_kernel<<<256, 256, 0, user>>>(b, n, round, d_wrong);
        GD_CUDA_CHECK_LAUNCH();
        GD_CUDA_CHECK(
            cudaMemcpyAsync(&wrong, d_wrong, sizeof wrong, cudaMemcpyDeviceToHost, user));
        GD_CUDA_CHECK(cudaStreamSynchronize(user));
        total += wrong;
    }
    *mismatches = (long long)total;
fail:
    /* Nothing may still use the buffers when they are freed. */
    if (user) (void)cudaStreamSynchronize(user);
    if (g && g->stream) (void)cudaStreamSynchronize((cudaStream_t)g->stream);
    if (a) (void)cudaFree(a);
    if (b) (void)cudaFree(b);
    if (d_wrong) (void)cudaFree(d_wrong);
    if (ev_user) (void)cudaEventDestroy(ev_user);
    if (ev_green) (void)cudaEventDestroy(ev_green);
    if (user) (void)cudaStreamDestroy(user);
    (void)cudaGetLastError();
    if (prev >= 0 && cudaSetDevice(prev) != cudaSuccess) (void)cudaGetLastError();
    return st;
}
