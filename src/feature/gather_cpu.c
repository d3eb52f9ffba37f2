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

void gd__gather_rows_cpu_each(const void *src, int64_t row_bytes, const int64_t *ids, int64_t n,
                              void *out, int threads, int64_t piece,
                              void (*done)(void *user, int64_t lo, int64_t k), void *user) {
    unsigned char *o = out;
    const size_t rb = (size_t)row_bytes;
    if (piece < 1) piece = 1;
    if (threads < 1 || (uint64_t)n * rb < GATHER_PARALLEL_BYTES) threads = 1;
#pragma omp parallel num_threads(threads)
    {
        int64_t id = 0, k = 1;
#ifdef _OPENMP
        id = omp_get_thread_num();
        k = omp_get_num_threads();
#endif
        const int64_t lo = n * id / k, hi = n * (id + 1) / k;
        for (int64_t a = lo; a < hi; a += piece) {
            const int64_t b = a + piece < hi ? a + piece : hi;
            gd__gather_rows_cpu(src, row_bytes, ids + a, b - a, o + (size_t)a * rb, 1);
            done(user, a, b - a);
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
