/*
 * Helpers shared by the tier store's tests (test_tier.c, test_tier_peer.c): random tables of
 * fixed rows or of variable rows (empty lists and hubs included), candidate lists, and copies
 * between host and device memory.
 */
#ifndef GD_TEST_TIER_UTIL_H
#define GD_TEST_TIER_UTIL_H

#include "feature/tier.h"
#include "test.h"

#ifdef GD_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

#define POISON 0xA5

/* A random table: rows of fixed width (offsets NULL) or lists delimited by offsets. */
typedef struct {
    int64_t rows, unit_bytes, units;
    int64_t *offsets; /* NULL: fixed rows */
    unsigned char *data;
} table;

static inline table make_table(uint64_t *state, int variable) {
    table t = {0};
    t.rows = 1 + (int64_t)(t_rand(state) % 300);
    if (variable) {
        t.unit_bytes = t_rand(state) % 2 ? 4 : 8;
        t.offsets = malloc(sizeof *t.offsets * (size_t)(t.rows + 1));
        T_ASSERT(t.offsets);
        t.offsets[0] = 0;
        for (int64_t r = 0; r < t.rows; r++) {
            const uint64_t k = t_rand(state) % 10;
            /* Empty lists, short ones, and now and then a hub. */
            const int64_t d = k < 2   ? 0
                              : k < 9 ? (int64_t)(t_rand(state) % 12)
                                      : 40 + (int64_t)(t_rand(state) % 200);
            t.offsets[r + 1] = t.offsets[r] + d;
        }
        t.units = t.offsets[t.rows];
    } else {
        static const int64_t widths[] = {1, 3, 4, 16, 24, 100, 512, 1000};
        t.unit_bytes = widths[t_rand(state) % (sizeof widths / sizeof widths[0])];
        t.units = t.rows;
    }
    const size_t bytes = (size_t)(t.units * t.unit_bytes);
    t.data = malloc(bytes ? bytes : 1);
    T_ASSERT(t.data);
    for (size_t i = 0; i < bytes; i++) t.data[i] = (unsigned char)t_rand(state);
    return t;
}

static inline void free_table(table *t) {
    free(t->offsets);
    free(t->data);
}

static inline int64_t row_units(const table *t, int64_t r) {
    return t->offsets ? t->offsets[r + 1] - t->offsets[r] : 1;
}

static inline int64_t row_start(const table *t, int64_t r) {
    return t->offsets ? t->offsets[r] : r;
}

/* Candidates: a random permutation of the rows, with a few repeats mixed in. */
static inline int64_t make_candidates(uint64_t *state, int64_t rows, int64_t *out) {
    for (int64_t r = 0; r < rows; r++) out[r] = r;
    for (int64_t r = rows - 1; r > 0; r--) {
        const int64_t j = (int64_t)(t_rand(state) % (uint64_t)(r + 1)), x = out[r];
        out[r] = out[j];
        out[j] = x;
    }
    const int64_t repeats = rows / 10;
    for (int64_t k = 0; k < repeats; k++) out[rows + k] = out[t_rand(state) % (uint64_t)rows];
    return rows + repeats;
}

static inline gd__row_shape shape_of(const table *t) {
    const gd__row_shape s = {t->rows, t->unit_bytes, t->offsets, NULL};
    return s;
}

#ifdef GD_WITH_CUDA
static inline void *to_device(const void *p, size_t bytes) {
    void *d = NULL;
    CU(cudaMalloc(&d, bytes ? bytes : 16));
    if (bytes) CU(cudaMemcpy(d, p, bytes, cudaMemcpyHostToDevice));
    return d;
}

static inline void *to_host(const void *d, size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    T_ASSERT(p);
    if (bytes) CU(cudaMemcpy(p, d, bytes, cudaMemcpyDeviceToHost));
    return p;
}

#endif

#endif
