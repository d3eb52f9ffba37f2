/*
 * Host allocation wrappers and fault injection. Each block carries a small header holding its
 * size, so live blocks and bytes can be counted for leak checks; the header is 64 bytes so the
 * returned pointer keeps malloc's alignment and more (good for vector loads).
 */
#include "internal.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define HEADER_BYTES 64

static atomic_llong live_blocks;
static atomic_llong live_bytes;

static atomic_llong fault_target[GD_FAULT_KIND_COUNT];
static atomic_llong fault_count[GD_FAULT_KIND_COUNT];

void gd_fault_set(gd_fault_kind kind, int64_t n) {
    if ((unsigned)kind >= GD_FAULT_KIND_COUNT) return;
    atomic_store(&fault_target[kind], n < 0 ? 0 : n);
    atomic_store(&fault_count[kind], 0);
}

int64_t gd_fault_calls(gd_fault_kind kind) {
    if ((unsigned)kind >= GD_FAULT_KIND_COUNT) return 0;
    return atomic_load(&fault_count[kind]);
}

bool gd__fault_hit(gd_fault_kind kind) {
    long long n = atomic_fetch_add(&fault_count[kind], 1) + 1;
    long long target = atomic_load(&fault_target[kind]);
    return target != 0 && n == target;
}

void *gd_malloc(size_t bytes) {
    if (gd__fault_hit(GD_FAULT_ALLOC)) return NULL;
    if (bytes > SIZE_MAX - HEADER_BYTES) return NULL;
    unsigned char *p = malloc(bytes + HEADER_BYTES);
    if (!p) return NULL;
    memcpy(p, &bytes, sizeof bytes);
    atomic_fetch_add(&live_blocks, 1);
    atomic_fetch_add(&live_bytes, (long long)bytes);
    return p + HEADER_BYTES;
}

void *gd_calloc(size_t count, size_t size) {
    size_t bytes;
    if (__builtin_mul_overflow(count, size, &bytes)) return NULL;
    void *p = gd_malloc(bytes);
    if (p) memset(p, 0, bytes);
    return p;
}

void *gd_realloc(void *ptr, size_t bytes) {
    if (!ptr) return gd_malloc(bytes);
    if (gd__fault_hit(GD_FAULT_ALLOC)) return NULL;
    if (bytes > SIZE_MAX - HEADER_BYTES) return NULL;
    unsigned char *base = (unsigned char *)ptr - HEADER_BYTES;
    size_t old;
    memcpy(&old, base, sizeof old);
    unsigned char *p = realloc(base, bytes + HEADER_BYTES);
    if (!p) return NULL;
    memcpy(p, &bytes, sizeof bytes);
    atomic_fetch_add(&live_bytes, (long long)bytes - (long long)old);
    return p + HEADER_BYTES;
}

void gd_free(void *ptr) {
    if (!ptr) return;
    unsigned char *base = (unsigned char *)ptr - HEADER_BYTES;
    size_t bytes;
    memcpy(&bytes, base, sizeof bytes);
    atomic_fetch_sub(&live_blocks, 1);
    atomic_fetch_sub(&live_bytes, (long long)bytes);
    free(base);
}

void gd_alloc_stats(int64_t *blocks, int64_t *bytes) {
    if (blocks) *blocks = atomic_load(&live_blocks);
    if (bytes) *bytes = atomic_load(&live_bytes);
}

char *gd__strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = gd_malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}
