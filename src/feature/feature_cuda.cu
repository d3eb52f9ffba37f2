/*
 * The CUDA backend of the feature module: registration of host tensors with the GPU, and the
 * gatherer that copies the rows of a minibatch from a table to a device buffer with the kernels
 * of gather_kernels.cuh. "zerocopy" reads the registered host tensor directly, "gpu" a copy of
 * the table in device memory; both see the table through a tier store (tier.h), whose GPU cache
 * holds the hot rows of a zero-copy gatherer with a cache budget. "cpu-dma" is the CPU-centric
 * path: CPU threads gather into pinned memory, then one copy. A zerocopy gatherer created with
 * host_gather can serve the rows outside its GPU cache that way too (host_gather.h): the GPU
 * lists them, CPU threads copy them into pinned staging, one copy, and the aligned kernel reads
 * them from GPU memory; or split them, the kernel reading a part zero-copy while the CPU copies
 * the rest.
 *
 * Nothing here synchronises the host in the steady state: buffers are made at create time,
 * and calls are ordered against each other with events. Every CUDA call is checked. The
 * exceptions are the CPU's gathers: cpu-dma with device ids reads them back, and the CPU gather
 * of host rows waits for the GPU's list of them (not for the rest of the gather).
 */
#include "core/cuda.h"
#include "core/dev_error.h"
#include "green.h"
#include "internal.h"
#include "tier.h"

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* After CUB, whose templates name a parameter like the kernels' BLOCK_THREADS macro. */
#include "gather_kernels.cuh"

struct gd__cuda_gatherer {
    const unsigned char *src; /* the table as the kernels see it */
    unsigned char *d_table;   /* "gpu": the device copy of the table */
    unsigned char *h_rows;    /* "cpu-dma": pinned staging for the gathered rows */
    long long *h_ids;         /* pinned staging for ids passed in host memory */
    long long *d_ids;         /* their device copy */
    unsigned long long *d_keys_sorted;
    int *d_perm_in, *d_perm_out; /* sort: positions 0..max_ids-1, and in sorted order */
    void *d_sort_tmp;
    size_t sort_tmp_bytes;
    int end_bit; /* sort only the bits an in-range id can have */
    gd__dev_error *d_err;
    const long long *loc;     /* aligned modes: the store's location map (a cache only), or NULL */
    cudaEvent_t done;         /* recorded after each call's last GPU operation */
    cudaEvent_t staging_free; /* recorded after the copy that last read pinned staging */
    cudaEvent_t to_green;     /* green context (or urgent): the caller's stream hands over ... */
    cudaEvent_t from_green;   /* ... and waits for it */
    int events;               /* how many of the four events exist */
    gd__green *green;         /* a green context holding the SM budget, or NULL (grid cap) */
    int group;                /* lanes per row (1..32) */
    int unroll;               /* loads per lane before stores */
    int grid_cap;             /* most blocks a launch may have (the SM budget) */
    int sms;
    /* host_gather (host_gather.h): the host-row list, the staging both sides, their events. */
    int *d_flags, *d_pos;     /* max_ids each: host row or not, and its slot (prefix sum) */
    void *d_scan_tmp;
    size_t scan_bytes;
    long long *d_stage_slot;  /* max_ids: each position's staging slot, -1: not a host row */
    long long *h_list;        /* pinned, max_ids: the listed rows, in slot order */
    long long *h_count;       /* pinned: their number */
    unsigned char *h_stage;   /* pinned, max_ids rows: the CPU's copies */
    unsigned char *d_stage;   /* GPU memory, max_ids rows: the same after the DMA */
    cudaEvent_t listed;       /* recorded after the list: what the host waits for */
    cudaEvent_t stage_free;   /* recorded after the DMA that last read h_stage */
    int host_events;          /* how many of those two exist */
    cudaStream_t copy;        /* split: the DMAs of the staged rows, beside the first pass */
    long long last_m;         /* rows the last call listed (-1: it read host rows zero-copy) */
    int copy_pieces;          /* GD_HOST_COPY_PIECES=1: 1 MiB chunks instead of 4 MiB */
    cudaStream_t urgent;      /* cpu, split: their sort, list and kernels at the top priority */
    /* Where the host's time in step 2 went, since create (GD_LOG_LEVEL=info prints it). */
    double t_list, t_free, t_copy;
    long long copies;
};

/* ------------------------------------------------------------- registration */

static gd_status pin_error(const gd_host_tensor_t *t, int device, long long chunk, long long chunks,
                           size_t offset, size_t bytes, cudaError_t ce, bool injected,
                           long long chunk_mb) {
    char lim[64];
    gd__memlock_text(lim, sizeof lim);
    const char *shm_hint = t->kind == GD__TENSOR_SHM
                               ? " The table is in shared memory: also check that /dev/shm is "
                                 "large enough (`df -h /dev/shm`)."
                               : "";
    const char *what = injected ? "injected fault" : cudaGetErrorString(ce);
    const char *name = injected ? "GD_FAULT_PIN" : cudaGetErrorName(ce);
    if (!injected && ce == cudaErrorHostMemoryAlreadyRegistered)
        return gd__error(GD_ERR_ALREADY_REGISTERED,
                         "cudaHostRegister of chunk %lld/%lld (%zu bytes at offset %zu) of a "
                         "%zu-byte host tensor failed on GPU %d: %s (%s): part of this memory is "
                         "already registered in this process outside this context (by another "
                         "context, or a direct cudaHostRegister): register it through that "
                         "context, or unregister it first",
                         chunk + 1, chunks, bytes, offset, t->bytes, device, what, name);
    if (!injected && (ce == cudaErrorInvalidValue || ce == cudaErrorNotSupported))
        return gd__error(GD_ERR_PIN,
                         "cudaHostRegister of chunk %lld/%lld (%zu bytes at offset %zu) of a "
                         "%zu-byte host tensor failed on GPU %d: %s (%s): this memory cannot be "
                         "registered as it is (a read-only file mapping needs "
                         "GD_HOST_TENSOR_READ_ONLY; some file systems cannot be pinned: load the "
                         "features into a host tensor or shared memory instead)",
                         chunk + 1, chunks, bytes, offset, t->bytes, device, what, name);
    return gd__error(GD_ERR_PIN,
                     "cudaHostRegister of chunk %lld/%lld (%zu bytes at offset %zu) of a "
                     "%zu-byte host tensor failed on GPU %d: %s (%s): the memory could not be "
                     "page-locked. The locked-memory limit (ulimit -l) is %s: raise it "
                     "(`ulimit -l unlimited`, a memlock line in /etc/security/limits.conf, or "
                     "docker --ulimit memlock=-1), free host memory, or try a smaller "
                     "GD_PIN_CHUNK_MB (now %lld).%s",
                     chunk + 1, chunks, bytes, offset, t->bytes, device, what, name, lim, chunk_mb,
                     shm_hint);
}

static gd_status check_device(int device, const char *what) {
    return gd__cuda_check_device(device, what, "use gather mode \"cpu\"");
}

/*
 * Chunk k of the table: [lo, hi) of its bytes, with the chunk boundaries at multiples of chunk
 * from the page of its first byte. padded: the registered range, widened to whole 16-byte words
 * at both ends. The aligned gather reads whole words, so for a table whose start or size is not
 * a multiple of 16 the first and last words run past its ends; those bytes are on the table's
 * first and last pages (pages are multiples of 16 bytes), so registering them pins no other
 * page, and the GPU's reads stay inside what is registered (compute-sanitizer memcheck counts
 * them otherwise). Copies take the unpadded range.
 */
static void chunk_range(const gd_host_tensor_t *t, size_t chunk, long long k, int padded,
                        uintptr_t *lo, uintptr_t *hi) {
    const long page = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
    uintptr_t data = (uintptr_t)t->data, end = data + t->bytes;
    if (padded) {
        data &= ~(uintptr_t)15;
        end = (end + 15) & ~(uintptr_t)15;
    }
    const uintptr_t p0 = data & ~((uintptr_t)page - 1);
    uintptr_t a = p0 + (uintptr_t)k * chunk, b = a + chunk;
    *lo = a < data ? data : a;
    *hi = b > end ? end : b;
}

static long long chunk_count(const gd_host_tensor_t *t, size_t chunk) {
    const long page = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
    /* The padding of chunk_range never crosses a chunk boundary (both are multiples of 16). */
    const uintptr_t data = (uintptr_t)t->data, end = data + t->bytes;
    const uintptr_t p0 = data & ~((uintptr_t)page - 1);
    return (long long)((end - p0 + chunk - 1) / chunk);
}

static gd_status cuda_unregister(gd_host_tensor_t *t) {
    gd_status st = GD_OK;
    int prev = -1;
    if (t->reg_chunks == 0) return GD_OK;
    const int device = t->reg_device;
    GD_CHECK(gd__cuda_enter_device(device, &prev));
    for (long long k = 0; k < t->reg_chunks; k++) {
        uintptr_t lo, hi;
        chunk_range(t, t->chunk_bytes, k, 1, &lo, &hi);
        cudaError_t ce = cudaHostUnregister((void *)lo);
        if (ce != cudaSuccess) {
            (void)cudaGetLastError();
            if (st == GD_OK)
                st = gd__error(GD_ERR_CUDA,
                               "cudaHostUnregister of chunk %lld of a host tensor failed: %s (%s)",
                               k + 1, cudaGetErrorString(ce), cudaGetErrorName(ce));
        }
    }
fail:
    t->reg_chunks = 0;
    t->registered = 0;
    t->device_ptr = NULL;
    gd__cuda_leave_device(device, prev);
    return st;
}

/*
 * cudaErrorHostMemoryAlreadyRegistered if the first or the last byte of [lo, hi) is registered
 * already (another tensor, a graph's pinned lists, a direct cudaHostRegister), else cudaSuccess.
 * Asking first keeps the expected refusal out of the CUDA error state (callers fall back to
 * pinning a copy); an overlap in the middle alone is still refused by cudaHostRegister itself.
 */
static cudaError_t already_registered(uintptr_t lo, uintptr_t hi) {
    const uintptr_t probe[2] = {lo, hi - 1};
    for (int i = 0; i < 2; i++) {
        cudaPointerAttributes a;
        if (cudaPointerGetAttributes(&a, (const void *)probe[i]) != cudaSuccess) {
            (void)cudaGetLastError();
            continue;
        }
        if (a.type != cudaMemoryTypeUnregistered) return cudaErrorHostMemoryAlreadyRegistered;
    }
    return cudaSuccess;
}

/*
 * Registering chunks in parallel: page-locking is the kernel's and the driver's work per page
 * (a 57 GB table took 76 s in one thread on the H100 VM), and chunks are independent
 * registrations, so threads take chunks in turn. PIN_AUTO_THREADS caps GD_PIN_THREADS=0.
 */
#define PIN_AUTO_THREADS 16

typedef struct {
    const gd_host_tensor_t *t;
    int device;
    unsigned flags;
    long long chunks;
    long long next;      /* the next chunk to take (atomic) */
    int stop;            /* a chunk failed: take no more (atomic) */
    unsigned char *done; /* per chunk: registered */
    pthread_mutex_t lock;
    long long fail_k;    /* the first chunk that failed (-1: none) */
    cudaError_t fail_ce; /* its error */
    bool fail_injected;  /* GD_FAULT_PIN */
} pin_job;

static void pin_failed(pin_job *j, long long k, cudaError_t ce, bool injected) {
    pthread_mutex_lock(&j->lock);
    if (j->fail_k < 0 || k < j->fail_k) {
        j->fail_k = k;
        j->fail_ce = ce;
        j->fail_injected = injected;
    }
    pthread_mutex_unlock(&j->lock);
    __atomic_store_n(&j->stop, 1, __ATOMIC_RELAXED);
}

static void *pin_worker(void *arg) {
    pin_job *j = (pin_job *)arg;
    cudaError_t ce = cudaSetDevice(j->device);
    if (ce != cudaSuccess) {
        (void)cudaGetLastError();
        pin_failed(j, 0, ce, false);
        return NULL;
    }
    while (!__atomic_load_n(&j->stop, __ATOMIC_RELAXED)) {
        const long long k = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
        if (k >= j->chunks) break;
        uintptr_t lo, hi;
        chunk_range(j->t, j->t->chunk_bytes, k, 1, &lo, &hi);
        const bool injected = gd__fault_hit(GD_FAULT_PIN);
        ce = injected ? cudaErrorMemoryAllocation : already_registered(lo, hi);
        if (ce == cudaSuccess) ce = cudaHostRegister((void *)lo, hi - lo, j->flags);
        if (ce == cudaSuccess) {
            j->done[k] = 1;
            continue;
        }
        if (!injected) (void)cudaGetLastError();
        pin_failed(j, k, ce, injected);
    }
    return NULL;
}

/*
 * Register chunks [0, chunks) of t with `threads` threads (this one included). Either all are
 * registered (j->fail_k == -1), or none: on a failure the chunks registered are unregistered
 * and j->fail_k, fail_ce, fail_injected name the first chunk that failed.
 */
static gd_status pin_chunks(const gd_host_tensor_t *t, int device, unsigned flags,
                            long long chunks, int threads, pin_job *j) {
    gd_status st = GD_OK;
    pthread_t tid[GD__MAX_THREADS];
    int started = 0;
    memset(j, 0, sizeof *j);
    j->t = t;
    j->device = device;
    j->flags = flags;
    j->chunks = chunks;
    j->fail_k = -1;
    j->done = (unsigned char *)gd_calloc((size_t)chunks, 1);
    GD_REQUIRE(j->done, GD_ERR_NO_MEMORY, "out of memory registering a host tensor (%lld chunks)",
               chunks);
    GD_REQUIRE(pthread_mutex_init(&j->lock, NULL) == 0, GD_ERR_INTERNAL,
               "pthread_mutex_init failed registering a host tensor");
    for (int i = 1; i < threads; i++) {
        if (pthread_create(&tid[started], NULL, pin_worker, j) != 0) break; /* fewer threads */
        started++;
    }
    (void)pin_worker(j);
    for (int i = 0; i < started; i++) pthread_join(tid[i], NULL);
    pthread_mutex_destroy(&j->lock);
    if (j->fail_k >= 0)
        for (long long k = 0; k < chunks; k++) {
            uintptr_t lo, hi;
            chunk_range(t, t->chunk_bytes, k, 1, &lo, &hi);
            if (j->done[k] && cudaHostUnregister((void *)lo) != cudaSuccess)
                (void)cudaGetLastError(); /* the registration's own error is the one reported */
        }
fail:
    gd_free(j->done);
    j->done = NULL;
    return st;
}

static gd_status cuda_register(gd_host_tensor_t *t, int device) {
    gd_status st = GD_OK;
    int prev = -1, can_map = 0, ro_ok = 0;
    int64_t chunk_mb = 0, threads = 0;
    unsigned flags = cudaHostRegisterMapped | cudaHostRegisterPortable;
    unsigned char *base_dev = NULL;
    GD_CHECK(check_device(device, "registering a host tensor with a GPU"));
    GD_CHECK(gd__cuda_enter_device(device, &prev));
    GD_CUDA_CHECK(cudaDeviceGetAttribute(&can_map, cudaDevAttrCanMapHostMemory, device));
    GD_REQUIRE(can_map, GD_ERR_UNSUPPORTED,
               "GPU %d cannot map host memory, so it cannot read a host tensor directly: use "
               "gather mode \"cpu-dma\" or \"gpu\"",
               device);
    if (t->flags & GD_HOST_TENSOR_READ_ONLY) {
        GD_CUDA_CHECK(
            cudaDeviceGetAttribute(&ro_ok, cudaDevAttrHostRegisterReadOnlySupported, device));
        GD_REQUIRE(ro_ok, GD_ERR_UNSUPPORTED,
                   "GPU %d cannot register read-only host memory: copy the features into a "
                   "writable host tensor (gd_host_tensor_create) first",
                   device);
        flags |= cudaHostRegisterReadOnly;
    }
    GD_CHECK(gd_param_get_int("GD_PIN_CHUNK_MB", &chunk_mb));
    GD_REQUIRE(chunk_mb > 0 && chunk_mb <= (1ll << 30), GD_ERR_INVALID_ARG,
               "GD_PIN_CHUNK_MB=%lld must be between 1 and 2^30 MiB", (long long)chunk_mb);
    t->chunk_bytes = (size_t)chunk_mb << 20;
    t->reg_device = device;
    t->reg_chunks = 0;
    if (t->bytes == 0) {
        t->device_ptr = t->data;
        t->registered = 1;
        gd__cuda_leave_device(device, prev);
        return GD_OK;
    }
    {
        const long long chunks = chunk_count(t, t->chunk_bytes);
        GD_CHECK(gd_param_get_int("GD_PIN_THREADS", &threads));
        GD_REQUIRE(threads >= 0 && threads <= GD__MAX_THREADS, GD_ERR_INVALID_ARG,
                   "GD_PIN_THREADS=%lld must be between 0 (automatic) and %d",
                   (long long)threads, GD__MAX_THREADS);
        /*
         * Read-only memory is a dataset's file mapping registered in place: its pages fault in
         * from the page cache, or from the disk when cold, where threads faulting chunks at once
         * read the file out of order. One thread was never slower there and faster twice on the
         * H100 (s9, papers bfloat16 from its directory, to the first minibatch: 26.1 s against
         * 29.6 s cold, 4.0 s against 4.6 s warm): automatic means one thread for it.
         */
        if (threads == 0)
            threads = (t->flags & GD_HOST_TENSOR_READ_ONLY)
                          ? 1
                          : gd__min64(gd__num_threads(), PIN_AUTO_THREADS);
        pin_job j;
        GD_CHECK(pin_chunks(t, device, flags, chunks, (int)gd__min64(threads, chunks), &j));
        if (j.fail_k >= 0) {
            uintptr_t lo, hi;
            chunk_range(t, t->chunk_bytes, j.fail_k, 1, &lo, &hi);
            const size_t at = lo > (uintptr_t)t->data ? lo - (uintptr_t)t->data : 0;
            st = pin_error(t, device, j.fail_k, chunks, at, hi - lo, j.fail_ce, j.fail_injected,
                           (long long)chunk_mb);
            goto fail;
        }
        t->reg_chunks = chunks;
        for (long long k = 0; k < chunks; k++) {
            uintptr_t lo, hi;
            chunk_range(t, t->chunk_bytes, k, 1, &lo, &hi);
            void *dp = NULL;
            GD_CUDA_CHECK(cudaHostGetDevicePointer(&dp, (void *)lo, 0));
            const uintptr_t offset = lo - (uintptr_t)t->data; /* chunks after the first */
            if (k == 0) {
                /* The first chunk may start up to 15 bytes before the table (padding). */
                base_dev = (unsigned char *)dp + ((uintptr_t)t->data - lo);
            } else {
                /* Kernels index the table as one array, so the chunks must be contiguous. */
                GD_REQUIRE((unsigned char *)dp == base_dev + offset, GD_ERR_UNSUPPORTED,
                           "the GPU maps the registered chunks of a host tensor at scattered "
                           "addresses (no unified addressing): set GD_PIN_CHUNK_MB above the "
                           "tensor's %zu MiB so that it is registered in one piece",
                           (t->bytes >> 20) + 1);
            }
        }
    }
    t->device_ptr = base_dev;
    t->registered = 1;
    gd__cuda_leave_device(device, prev);
    return GD_OK;
fail:
    if (t->reg_chunks > 0) (void)cuda_unregister(t);
    t->reg_chunks = 0;
    t->registered = 0;
    t->device_ptr = NULL;
    gd__cuda_leave_device(device, prev);
    return st;
}

/* ------------------------------------------------------------- gatherer */

static gd_status pinned_alloc(void **p, size_t bytes, const char *what) {
    return gd__cuda_pinned_alloc(p, bytes, what, "lower max_ids");
}

static void cuda_gatherer_release(gd_gatherer_t *g) {
    gd__cuda_gatherer *c = g->cuda;
    int prev = -1;
    if (!c) return;
    /* Release is best effort: a failed free cannot be acted on, so errors are dropped. */
    if (gd__cuda_enter_device(g->device, &prev) == GD_OK) {
        if (c->events >= 1) (void)cudaEventSynchronize(c->done);
        if (c->events >= 2) (void)cudaEventSynchronize(c->staging_free);
        gd__green_destroy(c->green); /* waits for its stream */
        if (c->events >= 1) (void)cudaEventDestroy(c->done);
        if (c->events >= 2) (void)cudaEventDestroy(c->staging_free);
        if (c->events >= 3) (void)cudaEventDestroy(c->to_green);
        if (c->events >= 4) (void)cudaEventDestroy(c->from_green);
        if (c->d_table) (void)cudaFree(c->d_table);
        if (c->h_rows) (void)cudaFreeHost(c->h_rows);
        if (c->h_ids) (void)cudaFreeHost(c->h_ids);
        if (c->d_ids) (void)cudaFree(c->d_ids);
        if (c->d_keys_sorted) (void)cudaFree(c->d_keys_sorted);
        if (c->d_perm_in) (void)cudaFree(c->d_perm_in);
        if (c->d_perm_out) (void)cudaFree(c->d_perm_out);
        if (c->d_sort_tmp) (void)cudaFree(c->d_sort_tmp);
        if (c->d_err) (void)cudaFree(c->d_err);
        if (c->copies > 0)
            GD_INFO("host_gather: %lld copies of %lld rows (%s): the host waited %.3f s for the "
                    "lists and %.3f s for the staging, and copied for %.3f s",
                    c->copies, (long long)g->host_rows_copied,
                    c->copy_pieces ? "1 MiB chunks" : "4 MiB chunks", c->t_list, c->t_free,
                    c->t_copy);
        if (c->copy) (void)cudaStreamSynchronize(c->copy);
        if (c->copy) (void)cudaStreamDestroy(c->copy);
        if (c->urgent) (void)cudaStreamSynchronize(c->urgent);
        if (c->urgent) (void)cudaStreamDestroy(c->urgent);
        if (c->host_events >= 1) (void)cudaEventSynchronize(c->listed);
        if (c->host_events >= 2) (void)cudaEventSynchronize(c->stage_free);
        if (c->host_events >= 1) (void)cudaEventDestroy(c->listed);
        if (c->host_events >= 2) (void)cudaEventDestroy(c->stage_free);
        void *const dev[] = {c->d_flags, c->d_pos, c->d_scan_tmp, c->d_stage_slot, c->d_stage};
        for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
            if (dev[i]) (void)cudaFree(dev[i]);
        void *const pinned[] = {c->h_list, c->h_count, c->h_stage};
        for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++)
            if (pinned[i]) (void)cudaFreeHost(pinned[i]);
        (void)cudaGetLastError();
        gd__cuda_leave_device(g->device, prev);
    }
    gd__tier_store_destroy(g->store);
    g->store = NULL;
    gd_free(c);
    g->cuda = NULL;
}

static int bits_for(long long rows) {
    int b = 1;
    while (b < 63 && (1ull << b) < (unsigned long long)rows) b++;
    return b;
}

/*
 * The tier store of an aligned mode: the table in its home tier (the registered host tensor for
 * "zerocopy", the device copy for "gpu") and, with a cache budget, the hot rows in a GPU cache,
 * filled from the host tensor by the store (slot i = hot_rows[i]) with the map that the kernel
 * reads. The kernel takes the store's bases by value, fixed from here on.
 */
static gd_status make_store(gd_gatherer_t *g, gd__cuda_gatherer *c) {
    gd_status st = GD_OK;
    const gd_host_tensor_t *t = g->tensor;
    const gd__row_shape shape = {t->rows, t->row_bytes, NULL, NULL};
    const int home = g->mode == GD_GATHER_GPU ? GD__TIER_GPU : GD__TIER_HOST;
    const long long R = t->row_bytes;
    GD_CHECK(gd__tier_store_create(&shape, g->device, home, c->src, t->rows, &g->store));
    if (g->placed) {
        st = gd__tier_cache_build_placed(g->store, &g->placed->own, g->placed->peers,
                                         g->placed->num_peers);
        if (st != GD_OK) {
            gd__error_context(st, "building the GPU cache of %lld placed rows (%.1f MiB): lower "
                                  "--gpu-cache to fit free GPU memory",
                              (long long)g->placed->own.count,
                              (double)g->placed->own.budget / 1048576.0);
            goto fail;
        }
    } else if (g->hot_count > 0) {
        st = gd__tier_cache_build(g->store, g->hot_rows, g->hot_count, g->cache_budget);
        if (st != GD_OK) {
            gd__error_context(st,
                              "building the GPU cache of %lld rows (%.1f MiB) and its %.1f MiB "
                              "location map: lower cache_bytes to fit free GPU memory",
                              (long long)g->hot_count, (double)(g->hot_count * R) / 1048576.0,
                              (double)(t->rows * 8) / 1048576.0);
            goto fail;
        }
    }
    g->info.cached_rows = g->store->cache.count;
    g->info.cache_bytes = g->store->cache.units * R;
    g->info.map_bytes = g->store->map_bytes;
    c->loc = (const long long *)g->store->loc;
    return GD_OK;
fail:
    return st;
}

/*
 * Confine the gather to its SM budget with a green context (the finest split the driver
 * offers, which rounds the budget up to a multiple of 2 SMs on Hopper). Where the driver or
 * GPU has none, or the budget cannot be split off, the grid cap alone enforces the budget.
 */
static gd_status make_green(gd_gatherer_t *g, gd__cuda_gatherer *c) {
    gd_status st = gd__green_create(g->device, g->info.sms, GD__GREEN_FINE, &c->green);
    if (st == GD_ERR_UNSUPPORTED || st == GD_ERR_RANGE) {
        GD_INFO("gather SM budget of %d SMs: no green context (%s); a grid cap enforces it",
                g->info.sms, gd_last_error());
        c->green = NULL;
        return GD_OK;
    }
    if (st != GD_OK) return st;
    g->info.sms = gd__green_sms(c->green);
    g->info.green_context = 1;
    return GD_OK;
}

static gd_status create_events(gd__cuda_gatherer *c) {
    gd_status st = GD_OK;
    cudaEvent_t *const events[4] = {&c->done, &c->staging_free, &c->to_green, &c->from_green};
    for (; c->events < 4; c->events++)
        GD_CUDA_CHECK(cudaEventCreateWithFlags(events[c->events], cudaEventDisableTiming));
fail:
    return st;
}

/* "gpu": copy the table to device memory; the aligned kernels read c->src either way. */
static gd_status copy_table(gd_gatherer_t *g, gd__cuda_gatherer *c) {
    gd_status st = GD_OK;
    const gd_host_tensor_t *t = g->tensor;
    if (g->mode != GD_GATHER_GPU) {
        c->src = (const unsigned char *)t->device_ptr;
        return GD_OK;
    }
    /* Padding to 16 bytes keeps the last aligned word of the table inside the buffer. */
    GD_CUDA_CHECK(cudaMalloc((void **)&c->d_table, (t->bytes + 15) / 16 * 16 + 16));
    if (t->reg_chunks > 0) {
        /* A copy may not span two registrations, so a chunked tensor is copied by chunk. */
        for (long long k = 0; k < t->reg_chunks; k++) {
            uintptr_t lo, hi;
            chunk_range(t, t->chunk_bytes, k, 0, &lo, &hi);
            GD_CUDA_CHECK(cudaMemcpy(c->d_table + (lo - (uintptr_t)t->data), (void *)lo, hi - lo,
                                     cudaMemcpyHostToDevice));
        }
    } else if (t->bytes) {
        GD_CUDA_CHECK(cudaMemcpy(c->d_table, t->data, t->bytes, cudaMemcpyHostToDevice));
    }
    c->src = c->d_table;
    return GD_OK;
fail:
    return st;
}

/* The id sort's buffers: the identity permutation, sorted keys and values, CUB's scratch. */
static gd_status init_sort(gd_gatherer_t *g, gd__cuda_gatherer *c) {
    gd_status st = GD_OK;
    const size_t ids_bytes = (size_t)g->max_ids * sizeof(long long);
    const size_t perm_bytes = (size_t)g->max_ids * sizeof(int);
    c->end_bit = bits_for(g->tensor->rows);
    GD_CUDA_CHECK(cudaMalloc((void **)&c->d_keys_sorted, ids_bytes ? ids_bytes : 16));
    GD_CUDA_CHECK(cudaMalloc((void **)&c->d_perm_in, perm_bytes ? perm_bytes : 16));
    GD_CUDA_CHECK(cudaMalloc((void **)&c->d_perm_out, perm_bytes ? perm_bytes : 16));
    iota_kernel<<<(unsigned)((g->max_ids + BLOCK_THREADS - 1) / BLOCK_THREADS), BLOCK_THREADS>>>(
        c->d_perm_in, g->max_ids);
    GD_CUDA_CHECK_LAUNCH();
    GD_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
        (void *)NULL, c->sort_tmp_bytes, (const unsigned long long *)NULL,
        (unsigned long long *)NULL, (const int *)NULL, (int *)NULL, (int)g->max_ids, 0,
        c->end_bit, (cudaStream_t)0));
    GD_CUDA_CHECK(cudaMalloc(&c->d_sort_tmp, c->sort_tmp_bytes ? c->sort_tmp_bytes : 16));
    GD_CUDA_CHECK(cudaDeviceSynchronize());
fail:
    return st;
}

/*
 * host_gather: the buffers of the CPU gather of host rows, max_ids of everything (the list, the
 * staging in pinned and in GPU memory, padded by a word for the aligned kernel's 16-byte
 * loads), the scratch of the list's prefix sum and split's copy stream.
 */
static gd_status init_host_gather(gd_gatherer_t *g, gd__cuda_gatherer *c) {
    gd_status st = GD_OK;
    const int64_t M = g->max_ids > 0 ? g->max_ids : 1;
    int64_t stage_bytes;
    GD_REQUIRE(!gd__mul_overflow_i64(M, g->tensor->row_bytes, &stage_bytes) &&
                   stage_bytes <= INT64_MAX - 16,
               GD_ERR_OVERFLOW, "host_gather: max_ids %lld x %lld-byte rows overflow",
               (long long)M, (long long)g->tensor->row_bytes);
    GD_CUDA_CHECK(cudaMalloc((void **)&c->d_flags, (size_t)M * sizeof(int)));
    GD_CUDA_CHECK(cudaMalloc((void **)&c->d_pos, (size_t)M * sizeof(int)));
    GD_CUDA_CHECK(cudaMalloc((void **)&c->d_stage_slot, (size_t)M * sizeof(long long)));
    GD_CUDA_CHECK(cudaMalloc((void **)&c->d_stage, (size_t)stage_bytes + 16));
    GD_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(NULL, c->scan_bytes, (const int *)NULL,
                                                (int *)NULL, (int)M));
    GD_CUDA_CHECK(cudaMalloc(&c->d_scan_tmp, c->scan_bytes ? c->scan_bytes : 16));
    GD_CHECK(pinned_alloc((void **)&c->h_list, (size_t)M * sizeof(long long),
                          "the host-row list of host_gather"));
    GD_CHECK(pinned_alloc((void **)&c->h_count, sizeof(long long),
                          "the host-row count of host_gather"));
    GD_CHECK(pinned_alloc((void **)&c->h_stage, (size_t)stage_bytes,
                          "the staging of host_gather (max_ids x row bytes)"));
    GD_CUDA_CHECK(cudaEventCreateWithFlags(&c->listed, cudaEventDisableTiming));
    c->host_events = 1;
    GD_CUDA_CHECK(cudaEventCreateWithFlags(&c->stage_free, cudaEventDisableTiming));
    c->host_events = 2;
    GD_CUDA_CHECK(cudaStreamCreateWithFlags(&c->copy, cudaStreamNonBlocking));
    c->last_m = -1;
    {
        int64_t pieces = 0, urgent = 1;
        GD_CHECK(gd_param_get_int("GD_HOST_COPY_PIECES", &pieces));
        c->copy_pieces = pieces != 0;
        /*
         * The host waits for the list: behind the training's kernels (the nn stream has the
         * top priority, so that the data path fills its gaps) it waited 2.6 s of a 4.3 s
         * epoch on papers, and copied for 0.8 s (s9). The sort and list run at the top
         * priority too, on a stream of their own.
         */
        GD_CHECK(gd_param_get_int("GD_HOST_GATHER_URGENT", &urgent));
        if (urgent) {
            int least = 0, greatest = 0;
            GD_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
            GD_CUDA_CHECK(
                cudaStreamCreateWithPriority(&c->urgent, cudaStreamNonBlocking, greatest));
        }
    }
fail:
    return st;
}

/* Resident blocks per SM of the kernel the mode launches (at least 1). */
static gd_status blocks_per_sm(const gd_gatherer_t *g, const gd__cuda_gatherer *c, int *bps) {
    gd_status st = GD_OK;
    if (g->mode != GD_GATHER_NAIVE_ZEROCOPY) {
        GD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            bps, aligned_kernel(c->group, c->unroll), BLOCK_THREADS, 0));
    } else if (gd_dtype_size(g->tensor->dtype) == 1) {
        GD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            bps, gather_naive_kernel<unsigned char>, BLOCK_THREADS, 0));
    } else if (gd_dtype_size(g->tensor->dtype) == 2) {
        GD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            bps, gather_naive_kernel<unsigned short>, BLOCK_THREADS, 0));
    } else if (gd_dtype_size(g->tensor->dtype) == 4) {
        GD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            bps, gather_naive_kernel<unsigned int>, BLOCK_THREADS, 0));
    } else {
        GD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            bps, gather_naive_kernel<unsigned long long>, BLOCK_THREADS, 0));
    }
    if (*bps < 1) *bps = 1;
fail:
    return st;
}

static gd_status cuda_gatherer_init(gd_gatherer_t *g) {
    gd_status st = GD_OK;
    gd__cuda_gatherer *c = NULL;
    gd_host_tensor_t *t = g->tensor;
    int prev = -1, bps = 0;
    const size_t ids_bytes = (size_t)g->max_ids * sizeof(long long);
    char what[80];
    snprintf(what, sizeof what, "gather mode \"%s\"", gd_gather_mode_name(g->mode));
    GD_CHECK(check_device(g->device, what));
    GD_CHECK(gd__cuda_enter_device(g->device, &prev));
    if (g->mode == GD_GATHER_ZEROCOPY || g->mode == GD_GATHER_NAIVE_ZEROCOPY)
        GD_REQUIRE(t->registered, GD_ERR_INVALID_ARG,
                   "%s reads the host tensor directly: register it first with "
                   "gd_host_tensor_register(tensor, context of GPU %d)",
                   what, g->device);
    c = (gd__cuda_gatherer *)gd_calloc(1, sizeof *c);
    GD_REQUIRE(c, GD_ERR_NO_MEMORY, "%s: out of memory for the gatherer state", what);
    g->cuda = c;
    GD_CUDA_CHECK(cudaDeviceGetAttribute(&c->sms, cudaDevAttrMultiProcessorCount, g->device));
    GD_CHECK(create_events(c));
    GD_CUDA_CHECK(cudaMalloc((void **)&c->d_err, sizeof(gd__dev_error)));
    GD_CUDA_CHECK(cudaMemset(c->d_err, 0, sizeof(gd__dev_error)));
    GD_CHECK(pinned_alloc((void **)&c->h_ids, ids_bytes, "the ids staging buffer"));

    if (g->mode == GD_GATHER_CPU_DMA) {
        int64_t rows_bytes;
        GD_REQUIRE(!gd__mul_overflow_i64(g->max_ids, t->row_bytes, &rows_bytes), GD_ERR_OVERFLOW,
                   "%s: max_ids %lld x %lld-byte rows overflow", what, (long long)g->max_ids,
                   (long long)t->row_bytes);
        GD_CHECK(pinned_alloc((void **)&c->h_rows, (size_t)rows_bytes,
                              "the cpu-dma staging buffer (max_ids x row bytes)"));
        gd__cuda_leave_device(g->device, prev);
        return GD_OK;
    }

    GD_CUDA_CHECK(cudaMalloc((void **)&c->d_ids, ids_bytes ? ids_bytes : 16));
    GD_CHECK(copy_table(g, c));
    if (g->sort_ids && g->mode != GD_GATHER_NAIVE_ZEROCOPY) GD_CHECK(init_sort(g, c));
    GD_CHECK(choose_group(t->row_bytes, &c->group, &c->unroll));
    GD_CHECK(blocks_per_sm(g, c, &bps));
    g->info.sms = gd__sm_budget_resolve(g->sm_budget_count, g->sm_budget_percent, c->sms);
    g->info.group_lanes = c->group;
    if (g->info.sms < c->sms && !g->grid_cap_only) GD_CHECK(make_green(g, c));
    c->grid_cap = g->info.sms * bps;
    if (g->mode != GD_GATHER_NAIVE_ZEROCOPY) GD_CHECK(make_store(g, c));
    if (g->host_gather) GD_CHECK(init_host_gather(g, c));
    /*
     * The table copy (from pageable memory it may return before the data lands), the error
     * record's clear and the set-up kernels ran on the legacy stream, which the non-blocking
     * streams that gathers run on do not wait for: finish them here, once.
     */
    GD_CUDA_CHECK(cudaDeviceSynchronize());
    GD_DEBUG("gatherer %s: %lld-byte rows, %d lanes per row, %d loads per lane, grid cap %d "
             "blocks (%d per SM)",
             gd_gather_mode_name(g->mode), (long long)t->row_bytes, c->group, c->unroll,
             c->grid_cap, bps);
    gd__cuda_leave_device(g->device, prev);
    return GD_OK;
fail:
    cuda_gatherer_release(g);
    gd__cuda_leave_device(g->device, prev);
    return st;
}

/* Copy host ids to the device through pinned staging; nothing waits but the staging reuse. */
static gd_status stage_ids(gd__cuda_gatherer *c, const int64_t *ids, int64_t n,
                           cudaStream_t stream) {
    gd_status st = GD_OK;
    GD_CUDA_CHECK(cudaEventSynchronize(c->staging_free));
    memcpy(c->h_ids, ids, (size_t)n * sizeof(long long));
    GD_CUDA_CHECK(cudaMemcpyAsync(c->d_ids, c->h_ids, (size_t)n * sizeof(long long),
                                  cudaMemcpyHostToDevice, stream));
    GD_CUDA_CHECK(cudaEventRecord(c->staging_free, stream));
    return GD_OK;
fail:
    return st;
}

static gd_status gather_cpu_dma(gd_gatherer_t *g, const int64_t *ids, int64_t n, int ids_on_device,
                                void *out, cudaStream_t stream) {
    gd_status st = GD_OK;
    gd__cuda_gatherer *c = g->cuda;
    const gd_host_tensor_t *t = g->tensor;
    const int64_t *host_ids = ids;
    if (ids_on_device) {
        /* The CPU gathers, so it needs the ids: this mode synchronises by nature. */
        GD_CUDA_CHECK(cudaMemcpyAsync(c->h_ids, ids, (size_t)n * sizeof(long long),
                                      cudaMemcpyDeviceToHost, stream));
        GD_CUDA_CHECK(cudaStreamSynchronize(stream));
        host_ids = (const int64_t *)c->h_ids;
    }
    GD_CHECK(gd__gather_check_ids(host_ids, n, t->rows));
    GD_CUDA_CHECK(cudaEventSynchronize(c->staging_free));
    gd__gather_rows_cpu(t->data, t->row_bytes, host_ids, n, c->h_rows, g->threads);
    GD_CUDA_CHECK(cudaMemcpyAsync(out, c->h_rows, (size_t)n * (size_t)t->row_bytes,
                                  cudaMemcpyHostToDevice, stream));
    GD_CUDA_CHECK(cudaEventRecord(c->staging_free, stream));
    GD_CUDA_CHECK(cudaEventRecord(c->done, stream));
    return GD_OK;
fail:
    return st;
}

static unsigned grid_for(long long work_blocks, int cap) {
    if (work_blocks < 1) work_blocks = 1;
    return (unsigned)(work_blocks < cap ? work_blocks : cap);
}

/*
 * The CPU gathers host rows into pinned staging in chunks of this many bytes, and the copy of
 * each chunk to GPU memory is queued as soon as it is filled: the DMA of a chunk runs while the
 * CPU threads fill the next, so the two costs overlap instead of adding up. The threads work in
 * one parallel region for the whole list (gd__gather_rows_cpu_chunks).
 */
#define HOST_CHUNK_BYTES ((int64_t)4 << 20)

/*
 * Step 1 of the CPU gather of host rows (host_gather.h), on stream, for the n ids the aligned
 * kernel is about to read (dids, sorted or not): the GPU lists the host rows, the last share of
 * them (GD__HOST_SHARE_ONE: all) for the CPU, and `listed` is recorded after the list.
 */
static gd_status list_host_rows(gd_gatherer_t *g, gd__cuda_gatherer *c, const long long *dids,
                                long long n, int share, cudaStream_t stream) {
    gd_status st = GD_OK;
    const gd_host_tensor_t *t = g->tensor;
    const unsigned blocks = grid_for((n + BLOCK_THREADS - 1) / BLOCK_THREADS, 1 << 16);
    size_t bytes = c->scan_bytes;
    host_flag_kernel<<<blocks, BLOCK_THREADS, 0, stream>>>(c->loc, t->rows, dids, n, c->d_flags);
    GD_CUDA_CHECK_LAUNCH();
    GD_CUDA_CHECK(
        cub::DeviceScan::ExclusiveSum(c->d_scan_tmp, bytes, c->d_flags, c->d_pos, (int)n, stream));
    host_list_kernel<<<blocks, BLOCK_THREADS, 0, stream>>>(dids, c->d_flags, c->d_pos, n, share,
                                                           c->d_stage_slot, c->h_list, c->h_count);
    GD_CUDA_CHECK_LAUNCH();
    GD_CUDA_CHECK(cudaEventRecord(c->listed, stream));
fail:
    return st;
}

/* GD_HOST_COPY_PIECES=1: chunks of this many bytes instead. */
#define HOST_SMALL_CHUNK_BYTES ((int64_t)1 << 20)
/* The rows a copying thread takes at a time (a chunk is many pieces, copied by many threads). */
#define HOST_PIECE_BYTES ((int64_t)64 << 10)

/* The DMA of a filled chunk [lo, lo + k) of the staging, by the thread that filled its last
 * piece; the first error is kept. */
typedef struct {
    const gd__cuda_gatherer *c;
    int64_t rb;
    cudaStream_t dma;
    int device;
    cudaError_t ce;
} chunk_dma;

/*
 * The copying threads are OpenMP's, which no CUDA code of the library relies on: a thread is left
 * on the gatherer's device rather than set back (setting it back would create a context on
 * device 0 from a thread that never used one).
 */
static void dma_chunk(void *user, int64_t lo, int64_t k) {
    chunk_dma *p = (chunk_dma *)user;
    int cur = -1;
    cudaError_t ce = cudaGetDevice(&cur);
    if (ce == cudaSuccess && cur != p->device) ce = cudaSetDevice(p->device);
    if (ce == cudaSuccess)
        ce = cudaMemcpyAsync(p->c->d_stage + lo * p->rb, p->c->h_stage + lo * p->rb,
                             (size_t)(k * p->rb), cudaMemcpyHostToDevice, p->dma);
    if (ce != cudaSuccess) {
        cudaError_t none = cudaSuccess;
        __atomic_compare_exchange_n(&p->ce, &none, ce, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    }
}

/*
 * Step 2: the host waits for the list alone, CPU threads copy the listed rows into pinned
 * staging (once the previous call's copies have read it), and their copies to GPU staging are
 * queued on dma, chunk by chunk, with stage_free recorded after the last. *m gets their number.
 */
static gd_status copy_host_rows(gd_gatherer_t *g, gd__cuda_gatherer *c, long long n,
                                cudaStream_t dma, long long *m) {
    gd_status st = GD_OK;
    const gd_host_tensor_t *t = g->tensor;
    double t0 = gd__now();
    GD_CUDA_CHECK(cudaEventSynchronize(c->listed));
    *m = *c->h_count;
    GD_REQUIRE(*m >= 0 && *m <= n, GD_ERR_INTERNAL,
               "host_gather: the GPU listed %lld host rows of %lld ids", *m, n);
    {
        const int64_t rb = t->row_bytes, chunk = gd__max64(1, HOST_CHUNK_BYTES / rb);
        const double t1 = gd__now();
        GD_CUDA_CHECK(cudaEventSynchronize(c->stage_free));
        const double t2 = gd__now();
        c->t_list += t1 - t0;
        c->t_free += t2 - t1;
        c->copies++;
        t0 = t2;
        chunk_dma pd = {c, rb, dma, g->device, cudaSuccess};
        gd__gather_rows_cpu_chunks(
            t->data, rb, (const int64_t *)c->h_list, *m, c->h_stage, g->threads,
            gd__max64(1, HOST_PIECE_BYTES / rb),
            c->copy_pieces ? gd__max64(1, HOST_SMALL_CHUNK_BYTES / rb) : chunk, dma_chunk, &pd);
        GD_CUDA_CHECK(pd.ce);
        GD_CUDA_CHECK(cudaEventRecord(c->stage_free, dma));
        c->t_copy += gd__now() - t0;
    }
    c->last_m = *m;
    g->host_rows_copied += *m;
fail:
    return st;
}

/* One launch of the aligned kernel over the n ids, writing the positions pass takes. */
static gd_status launch_aligned(gd_gatherer_t *g, gd__cuda_gatherer *c, const long long *dids,
                                const int *perm, long long n, void *out, int staged, int pass,
                                cudaStream_t stream) {
    gd_status st = GD_OK;
    const gd_host_tensor_t *t = g->tensor;
    const int groups_per_block = BLOCK_THREADS / c->group;
    const unsigned grid = grid_for((n + groups_per_block - 1) / groups_per_block, c->grid_cap);
    aligned_kernel(c->group, c->unroll)<<<grid, BLOCK_THREADS, 0, stream>>>(
        gd__tier_store_bases(g->store), c->loc, t->rows, t->row_bytes, dids, perm, n,
        (unsigned char *)out, staged ? c->d_stage : NULL, staged ? c->d_stage_slot : NULL, pass,
        c->d_err);
    GD_CUDA_CHECK_LAUNCH();
fail:
    return st;
}

/*
 * split (host_gather.h), on stream: the list, with the CPU's share of the host rows; the first
 * pass of the kernel, queued before the host blocks, so that it reads the GPU-memory rows and
 * the zero-copy share while the CPU threads copy theirs; the DMAs on the copy stream, which
 * waits for the list (and with it for everything queued on stream before, such as the previous
 * call's reads of the GPU staging); then the second pass, after the DMAs by the event.
 */
static gd_status split_host_rows(gd_gatherer_t *g, gd__cuda_gatherer *c, const long long *dids,
                                 const int *perm, long long n, void *out, cudaStream_t stream) {
    gd_status st = GD_OK;
    long long m = 0;
    GD_CHECK(list_host_rows(g, c, dids, n, g->host_share, stream));
    GD_CHECK(launch_aligned(g, c, dids, perm, n, out, 1, PASS_UNSTAGED, stream));
    GD_CUDA_CHECK(cudaStreamWaitEvent(c->copy, c->listed, 0));
    GD_CHECK(copy_host_rows(g, c, n, c->copy, &m));
    if (m > 0) {
        GD_CUDA_CHECK(cudaStreamWaitEvent(stream, c->stage_free, 0));
        GD_CHECK(launch_aligned(g, c, dids, perm, n, out, 1, PASS_STAGED, stream));
    }
fail:
    return st;
}

static gd_status cuda_gather(gd_gatherer_t *g, const int64_t *ids, int64_t n, int ids_on_device,
                             void *out, void *stream_ptr) {
    gd_status st = GD_OK;
    gd__cuda_gatherer *c = g->cuda;
    const gd_host_tensor_t *t = g->tensor;
    const cudaStream_t stream = (cudaStream_t)stream_ptr;
    cudaStream_t ks = stream; /* where the sort and the kernel run */
    int prev = -1;
    const long long *dids = (const long long *)ids;
    const int *perm = NULL;
    /*
     * With a green context, the sort and the kernel run on its stream, inside the budget. The
     * CPU gather of host rows keeps the caller's stream: its kernels read GPU memory only, for
     * a moment, so there is no PCIe-bound gather for the budget to keep off the training SMs.
     */
    const int host_cpu = g->host_cpu && g->mode == GD_GATHER_ZEROCOPY;
    const int host_split = g->host_split && g->mode == GD_GATHER_ZEROCOPY;
    const int green = c->green && !host_cpu && !host_split;
    /* cpu and split: the sort, the list and the kernels on the urgent stream (c->urgent). */
    const int urgent = (host_cpu || host_split) && c->urgent;
    GD_CHECK(gd__cuda_enter_device(g->device, &prev));
    /* Scratch buffers are shared by every call: order this call after the previous one. */
    GD_CUDA_CHECK(cudaStreamWaitEvent(stream, c->done, 0));
    if (g->mode == GD_GATHER_CPU_DMA) {
        GD_CHECK(gather_cpu_dma(g, ids, n, ids_on_device, out, stream));
        gd__cuda_leave_device(g->device, prev);
        return GD_OK;
    }
    if (!ids_on_device) {
        GD_CHECK(gd__gather_check_ids(ids, n, t->rows));
        GD_CHECK(stage_ids(c, ids, n, stream));
        dids = c->d_ids;
    }
    c->last_m = -1;
    /* The green context's stream or the urgent one (never both) takes over from the caller's. */
    if (urgent) ks = c->urgent;
    if (green) ks = (cudaStream_t)gd__green_stream(c->green);
    if (ks != stream) {
        GD_CUDA_CHECK(cudaEventRecord(c->to_green, stream));
        GD_CUDA_CHECK(cudaStreamWaitEvent(ks, c->to_green, 0));
    }
    if (c->d_sort_tmp) {
        size_t need = 0;
        GD_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
            (void *)NULL, need, (const unsigned long long *)NULL, (unsigned long long *)NULL,
            (const int *)NULL, (int *)NULL, (int)n, 0, c->end_bit, ks));
        GD_REQUIRE(need <= c->sort_tmp_bytes, GD_ERR_INTERNAL,
                   "sorting %lld ids needs %zu bytes of scratch, more than the %zu sized for "
                   "max_ids %lld",
                   (long long)n, need, c->sort_tmp_bytes, (long long)g->max_ids);
        GD_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
            c->d_sort_tmp, need, (const unsigned long long *)dids, c->d_keys_sorted, c->d_perm_in,
            c->d_perm_out, (int)n, 0, c->end_bit, ks));
        dids = (const long long *)c->d_keys_sorted;
        perm = c->d_perm_out;
    }
    if (g->mode == GD_GATHER_NAIVE_ZEROCOPY) {
        const size_t es = gd_dtype_size(t->dtype);
        GD_REQUIRE((uintptr_t)out % es == 0, GD_ERR_INVALID_ARG,
                   "naive-zerocopy stores whole %s elements: out %p must be %zu-byte aligned",
                   gd_dtype_name(t->dtype), out, es);
        const long long total = n * t->cols;
        const unsigned grid = grid_for((total + BLOCK_THREADS - 1) / BLOCK_THREADS, c->grid_cap);
        switch (es) {
        case 1:
            gather_naive_kernel<unsigned char>
                <<<grid, BLOCK_THREADS, 0, ks>>>((const unsigned char *)c->src, t->rows, t->cols,
                                                 dids, n, (unsigned char *)out, c->d_err);
            break;
        case 2:
            gather_naive_kernel<unsigned short>
                <<<grid, BLOCK_THREADS, 0, ks>>>((const unsigned short *)c->src, t->rows, t->cols,
                                                 dids, n, (unsigned short *)out, c->d_err);
            break;
        case 4:
            gather_naive_kernel<unsigned int>
                <<<grid, BLOCK_THREADS, 0, ks>>>((const unsigned int *)c->src, t->rows, t->cols,
                                                 dids, n, (unsigned int *)out, c->d_err);
            break;
        default:
            gather_naive_kernel<unsigned long long><<<grid, BLOCK_THREADS, 0, ks>>>(
                (const unsigned long long *)c->src, t->rows, t->cols, dids, n,
                (unsigned long long *)out, c->d_err);
            break;
        }
        GD_CUDA_CHECK_LAUNCH();
    } else if (host_split) {
        GD_CHECK(split_host_rows(g, c, dids, perm, n, out, ks));
    } else {
        if (host_cpu) {
            long long m = 0;
            GD_CHECK(list_host_rows(g, c, dids, n, GD__HOST_SHARE_ONE, ks));
            GD_CHECK(copy_host_rows(g, c, n, ks, &m));
        }
        GD_CHECK(launch_aligned(g, c, dids, perm, n, out, host_cpu, PASS_ALL, ks));
    }
    if (ks != stream) {
        GD_CUDA_CHECK(cudaEventRecord(c->from_green, ks));
        GD_CUDA_CHECK(cudaStreamWaitEvent(stream, c->from_green, 0));
    }
    GD_CUDA_CHECK(cudaEventRecord(c->done, stream));
    gd__cuda_leave_device(g->device, prev);
    return GD_OK;
fail:
    gd__cuda_leave_device(g->device, prev);
    return st;
}

static gd_status cuda_check_errors(gd_gatherer_t *g) {
    gd__dev_error e;
    gd_status st = gd__dev_error_take(g->device, g->cuda->done, NULL, g->cuda->d_err, &e);
    if (st != GD_OK || !e.flag) return st;
    return gd__error(GD_ERR_RANGE,
                     "gather: id %lld at position %lld (ids on the device) is outside the "
                     "table's rows [0, %lld); its output row was zeroed: pass ids of rows that "
                     "exist",
                     e.v[1], e.v[0], (long long)g->tensor->rows);
}

gd_status gd__gatherer_host_list(gd_gatherer_t *g, const int64_t **rows,
                                 const int64_t **stage_slot, int64_t *m) {
    gd__cuda_gatherer *c = g->cuda;
    if (!c || !g->host_gather)
        return gd__error(GD_ERR_INVALID_ARG,
                         "gd__gatherer_host_list: the gatherer was created without host_gather");
    *rows = (const int64_t *)c->h_list;
    *stage_slot = (const int64_t *)c->d_stage_slot;
    *m = c->last_m;
    return GD_OK;
}

/* The Philox purpose word of the probe's draws (core/philox.h: "host"). */
#define PROBE_PURPOSE 0x686f7374u

/* Draw number i of the probe, uniform in [0, n), keyed by the seed. */
static uint64_t probe_draw(uint64_t seed, uint64_t i, uint64_t n) {
    const gd_philox_ctr r = gd_philox(seed, (uint32_t)i, (uint32_t)(i >> 32), 0, PROBE_PURPOSE);
    return gd_philox_below(r.v[0], r.v[1], n);
}

/*
 * k distinct rows outside GPU memory (the cache or a peer's), drawn with the seed: rejection
 * while they are a small part of those rows, else every such row shuffled and cut to k.
 */
static gd_status probe_rows(const gd_gatherer_t *g, int64_t host_rows, int64_t k, uint64_t seed,
                            int64_t *out) {
    gd_status st = GD_OK;
    const int64_t R = g->tensor->rows;
    unsigned char *taken = NULL;
    uint64_t draw = 0;
    if (host_rows <= 2 * k) {
        int64_t *all = (int64_t *)gd_malloc((size_t)(host_rows > 0 ? host_rows : 1) * 8);
        GD_REQUIRE(all, GD_ERR_NO_MEMORY, "host_gather probe: out of memory for %lld rows",
                   (long long)host_rows);
        int64_t h = 0;
        for (int64_t r = 0; r < R && h < host_rows; r++)
            if (!gd__gatherer_in_gpu_memory(g, r)) all[h++] = r;
        for (int64_t i = 0; i < k && i < h; i++) {
            const int64_t j = i + (int64_t)probe_draw(seed, draw++, (uint64_t)(h - i));
            const int64_t v = all[j];
            all[j] = all[i];
            all[i] = v;
            out[i] = v;
        }
        gd_free(all);
        return GD_OK;
    }
    taken = (unsigned char *)gd_calloc((size_t)(R + 7) / 8, 1);
    GD_REQUIRE(taken, GD_ERR_NO_MEMORY, "host_gather probe: out of memory for %lld rows",
               (long long)R);
    for (int64_t i = 0; i < k;) {
        const int64_t r = (int64_t)probe_draw(seed, draw++, (uint64_t)R);
        if ((taken[r >> 3] >> (r & 7)) & 1 || gd__gatherer_in_gpu_memory(g, r)) continue;
        taken[r >> 3] |= (unsigned char)(1u << (r & 7));
        out[i++] = r;
    }
fail:
    gd_free(taken);
    return st;
}

/*
 * The best of reps timed gathers of ids[0..k) into out one way (zero-copy loads, the CPU gather
 * or split with share), after one to warm up, in s.
 */
static gd_status probe_way(gd_gatherer_t *g, gd__host_gather way, int share, const int64_t *d_ids,
                           int64_t k, void *out, cudaStream_t stream, int reps, double *best) {
    gd_status st = GD_OK;
    g->host_cpu = way == GD__HOST_GATHER_CPU;
    g->host_split = way == GD__HOST_GATHER_SPLIT;
    g->host_share = share;
    *best = 0;
    for (int i = -1; i < reps; i++) {
        const double t0 = gd__now();
        GD_CHECK(cuda_gather(g, d_ids, k, 1, out, stream));
        GD_CUDA_CHECK(cudaStreamSynchronize(stream));
        const double dt = gd__now() - t0;
        if (i >= 0 && (*best == 0 || dt < *best)) *best = dt;
    }
fail:
    return st;
}

gd_status gd__gatherer_host_probe(gd_gatherer_t *g, int64_t max_rows, int reps, uint64_t seed,
                                  double split_f, gd__host_probe *out) {
    gd_status st = GD_OK;
    int prev = -1, entered = 0;
    const int was_cpu = g->host_cpu, was_split = g->host_split, was_share = g->host_share;
    int64_t *ids = NULL, *d_ids = NULL, host_rows = 0, k = 0;
    void *d_out = NULL;
    cudaStream_t stream = NULL;
    double zc = 0, cpu = 0, split = 0;
    memset(out, 0, sizeof *out);
    out->row_bytes = g->tensor->row_bytes;
    GD_REQUIRE(g->host_gather && g->cuda && g->mode == GD_GATHER_ZEROCOPY, GD_ERR_INVALID_ARG,
               "host_gather probe: a zerocopy gatherer created with host_gather is needed");
    for (int64_t r = 0; r < g->tensor->rows; r++) host_rows += !gd__gatherer_in_gpu_memory(g, r);
    /* At most 256 MiB of rows: the probe's output is GPU memory outside the budget's plan. */
    k = gd__min64(gd__min64(max_rows, g->max_ids), host_rows);
    k = gd__min64(k, gd__max64(1, ((int64_t)256 << 20) / g->tensor->row_bytes));
    if (k <= 0 || reps < 1) goto done; /* nothing read from host memory: no rates */
    GD_CHECK(gd__cuda_enter_device(g->device, &prev));
    entered = 1;
    ids = (int64_t *)gd_malloc((size_t)k * sizeof *ids);
    GD_REQUIRE(ids, GD_ERR_NO_MEMORY, "host_gather probe: out of memory for %lld rows",
               (long long)k);
    GD_CHECK(probe_rows(g, host_rows, k, seed, ids));
    GD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    GD_CUDA_CHECK(cudaMalloc((void **)&d_ids, (size_t)k * sizeof *ids));
    GD_CUDA_CHECK(cudaMalloc(&d_out, (size_t)(k * g->tensor->row_bytes)));
    GD_CUDA_CHECK(cudaMemcpyAsync(d_ids, ids, (size_t)k * sizeof *ids, cudaMemcpyHostToDevice,
                                  stream));
    GD_CUDA_CHECK(cudaStreamSynchronize(stream));
    GD_CHECK(probe_way(g, GD__HOST_GATHER_ZEROCOPY, 0, d_ids, k, d_out, stream, reps, &zc));
    GD_CHECK(probe_way(g, GD__HOST_GATHER_CPU, 0, d_ids, k, d_out, stream, reps, &cpu));
    out->rows = k;
    out->zerocopy_gbs = zc > 0 ? (double)(k * g->tensor->row_bytes) / zc / 1e9 : 0;
    out->cpu_gbs = cpu > 0 ? (double)(k * g->tensor->row_bytes) / cpu / 1e9 : 0;
    out->split_f =
        split_f >= 0 ? split_f : gd__host_split_fraction(out->zerocopy_gbs, out->cpu_gbs);
    GD_CHECK(probe_way(g, GD__HOST_GATHER_SPLIT, gd__host_share(out->split_f), d_ids, k, d_out,
                       stream, reps, &split));
    out->split_gbs = split > 0 ? (double)(k * g->tensor->row_bytes) / split / 1e9 : 0;
    g->probe = *out;
done:
fail:
    g->host_cpu = was_cpu;
    g->host_split = was_split;
    g->host_share = was_share;
    if (stream) (void)cudaStreamSynchronize(stream);
    if (d_ids) (void)cudaFree(d_ids);
    if (d_out) (void)cudaFree(d_out);
    if (stream) (void)cudaStreamDestroy(stream);
    gd_free(ids);
    if (entered) gd__cuda_leave_device(g->device, prev);
    return st;
}

extern "C" const gd__feature_backend gd__feature_cuda_backend = {
    "cuda",      cuda_register,     cuda_unregister, cuda_gatherer_init, cuda_gatherer_release,
    cuda_gather, cuda_check_errors,
};
