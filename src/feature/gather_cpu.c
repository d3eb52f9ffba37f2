/*
 * The CPU gather: copy the rows of a minibatch out of a host tensor with CPU threads. It is the
 * "cpu" mode of the CPU backend, the first half of the CPU-centric "cpu-dma" mode (gather into
 * pinned memory, then one DMA), and the reference every GPU gather is compared with bit for
 * bit. The CPU backend table, whose GPU entries report that no GPU is usable, lives here too.
 */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

gd_status gd__gather_check_ids(const int64_t *ids, int64_t n, int64_t rows) {
    for (int64_t i = 0; i < n; i++) {
        if (GD_UNLIKELY(ids[i] < 0 || ids[i] >= rows))
            return gd__error(GD_ERR_RANGE,
                             "gather: id %lld at position %lld is outside the table's rows "
                             "[0, %lld): pass ids of rows that exist",
                             (long long)ids[i], (long long)i, (long long)rows);
    }
    return GD_OK;
}

/* Below this many bytes, starting threads costs more than the copy. */
#define GATHER_PARALLEL_BYTES (1 << 20)

void gd__gather_rows_cpu(const void *src, int64_t row_bytes, const int64_t *ids, int64_t n,
                         void *out, int threads) {
    const unsigned char *s = src;
    unsigned char *o = out;
    const size_t rb = (size_t)row_bytes;
    if (threads < 1) threads = 1;
    if (threads == 1 || (uint64_t)n * rb < GATHER_PARALLEL_BYTES) {
        for (int64_t i = 0; i < n; i++) memcpy(o + (size_t)i * rb, s + (size_t)ids[i] * rb, rb);
        return;
    }
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < n; i++) memcpy(o + (size_t)i * rb, s + (size_t)ids[i] * rb, rb);
}

/* Chunks whose pieces one parallel region of gd__gather_rows_cpu_chunks hands out. */
#define GATHER_MAX_CHUNKS 256

void gd__gather_rows_cpu_chunks(const void *src, int64_t row_bytes, const int64_t *ids, int64_t n,
                                void *out, int threads, int64_t piece, int64_t chunk,
                                void (*done)(void *user, int64_t lo, int64_t k), void *user) {
    unsigned char *o = out;
    const size_t rb = (size_t)row_bytes;
    if (n <= 0) return;
    if (chunk < 1) chunk = 1;
    if (piece < 1 || piece > chunk) piece = chunk;
    if (threads < 1 || (uint64_t)n * rb < GATHER_PARALLEL_BYTES) threads = 1;
    const int64_t chunks = (n + chunk - 1) / chunk, per = (chunk + piece - 1) / piece;
    /*
     * One region for up to GATHER_MAX_CHUNKS chunks (a minibatch's list is one region, not one
     * per chunk: waking every thread per 4 MiB chunk cost more than the copy on 64 cores). The
     * pieces go out in increasing order to whichever thread asks, so the first chunks finish
     * first; the thread that copies a chunk's last piece reports it (the acquire-release count
     * makes the other threads' rows of it visible to that thread).
     */
    for (int64_t c0 = 0; c0 < chunks; c0 += GATHER_MAX_CHUNKS) {
        const int64_t c1 = chunks - c0 < GATHER_MAX_CHUNKS ? chunks : c0 + GATHER_MAX_CHUNKS;
        const int64_t total = (c1 - c0) * per;
        int64_t left[GATHER_MAX_CHUNKS], next = 0;
        for (int64_t c = c0; c < c1; c++) left[c - c0] = per;
#pragma omp parallel num_threads(threads)
        for (;;) {
            const int64_t p = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED);
            if (p >= total) break;
            const int64_t c = c0 + p / per, clo = c * chunk;
            const int64_t chi = clo + chunk < n ? clo + chunk : n;
            const int64_t lo = clo + (p % per) * piece, hi = lo + piece < chi ? lo + piece : chi;
            if (lo < hi)
                gd__gather_rows_cpu(src, row_bytes, ids + lo, hi - lo, o + (size_t)lo * rb, 1);
            if (__atomic_sub_fetch(&left[c - c0], 1, __ATOMIC_ACQ_REL) == 0)
                done(user, clo, chi - clo);
        }
    }
}

gd_status gd__parse_sm_budget(const char *text, int *count, double *percent) {
    *count = 0;
    *percent = 0.0;
    if (!text || !*text) return GD_OK;
    char *end = NULL;
    double v = strtod(text, &end);
    const int is_percent = end && *end == '%' && end[1] == '\0';
    if (end == text || !(is_percent || *end == '\0') || !(v >= 0.0) || !isfinite(v))
        return gd__error(GD_ERR_INVALID_ARG,
                         "SM budget '%s' is not understood: use 0 (all SMs), a count such as "
                         "16, or a fraction such as 12%%",
                         text);
    if (is_percent) {
        if (v <= 0.0 || v > 100.0)
            return gd__error(GD_ERR_INVALID_ARG,
                             "SM budget '%s' must be a percentage in (0, 100]", text);
        *percent = v;
        return GD_OK;
    }
    if (v != floor(v) || v > 1e6)
        return gd__error(GD_ERR_INVALID_ARG,
                         "SM budget '%s' must be a whole number of SMs (or N%% for a fraction)",
                         text);
    *count = (int)v;
    return GD_OK;
}

int gd__sm_budget_resolve(int count, double percent, int sms) {
    if (sms < 1) sms = 1;
    int n = sms;
    if (percent > 0.0) n = (int)ceil(percent * sms / 100.0);
    else if (count > 0) n = count;
    if (n < 1) n = 1;
    if (n > sms) n = sms;
    return n;
}

/* ---- the CPU backend */

static gd_status no_device(const char *what) {
    return gd__no_device(what, "use gather mode \"cpu\"");
}

static gd_status cpu_register(gd_host_tensor_t *t, int device) {
    return no_device("registering a host tensor with a GPU");
}

static gd_status cpu_unregister(gd_host_tensor_t *t) { return GD_OK; }

static gd_status cpu_gatherer_init(gd_gatherer_t *g) {
    if (g->mode != GD_GATHER_CPU) {
        char what[64];
        snprintf(what, sizeof what, "gather mode \"%s\"", gd_gather_mode_name(g->mode));
        return no_device(what);
    }
    return GD_OK;
}

static void cpu_gatherer_release(gd_gatherer_t *g) {}

static gd_status cpu_gather(gd_gatherer_t *g, const int64_t *ids, int64_t n, int ids_on_device,
                            void *out, void *stream) {
    if (ids_on_device)
        return gd__error(GD_ERR_INVALID_ARG,
                         "gather mode \"cpu\" reads ids from host memory: pass ids_on_device = 0, "
                         "or use a GPU mode for device ids");
    gd_status st = gd__gather_check_ids(ids, n, g->tensor->rows);
    if (st != GD_OK) return st;
    gd__gather_rows_cpu(g->tensor->data, g->tensor->row_bytes, ids, n, out, g->threads);
    return GD_OK;
}

static gd_status cpu_check_errors(gd_gatherer_t *g) { return GD_OK; }

const gd__feature_backend gd__feature_cpu_backend = {
    "cpu",          cpu_register, cpu_unregister,  cpu_gatherer_init, cpu_gatherer_release,
    cpu_gather,     cpu_check_errors,
};
