/*
 * The CPU side of widening half feature rows (widen.h): the element conversion, which is the
 * GPU kernel's reference, and the "cpu" mode's gather that widens while it copies, so that the
 * CPU path reads each half row once and writes the float32 row once, with no staging.
 */
#include "widen.h"

#include "internal.h"

#include <string.h>

int gd__widen_dtype(gd_dtype dtype) {
    return dtype == GD_DTYPE_FLOAT16 || dtype == GD_DTYPE_BFLOAT16;
}

static float bits_float(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/*
 * float16 -> float32 by its bits, as gd_half_to_float (core/util.c) and the kernel compute it:
 * subnormals are mant * 2^-24 (a normal float32, exact), infinities and NaN keep their payload.
 */
static inline float half_to_float(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0) {
        const float f = (float)mant * 5.9604644775390625e-8f; /* 2^-24 */
        return sign ? -f : f;
    }
    if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13));
    return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

static void widen_row(const uint16_t *src, int bf16, int64_t count, float *out) {
    if (bf16) {
        for (int64_t i = 0; i < count; i++) out[i] = bits_float((uint32_t)src[i] << 16);
    } else {
        for (int64_t i = 0; i < count; i++) out[i] = half_to_float(src[i]);
    }
}

void gd__widen_cpu(const uint16_t *src, gd_dtype dtype, int64_t count, float *out) {
    widen_row(src, dtype == GD_DTYPE_BFLOAT16, count, out);
}

/* Below this many output bytes, starting threads costs more than the conversion. */
#define WIDEN_PARALLEL_BYTES (1 << 20)

gd_status gd__gather_widen(gd_gatherer_t *g, const int64_t *ids, int64_t n, float *out) {
    gd_status st = GD_OK;
    const gd_host_tensor_t *t = g->tensor;
    GD_REQUIRE(g->mode == GD_GATHER_CPU && gd__widen_dtype(t->dtype), GD_ERR_INTERNAL,
               "gather: widening reads a %s table through a \"cpu\" gatherer, not a %s table "
               "through \"%s\"",
               "float16 or bfloat16", gd_dtype_name(t->dtype), gd_gather_mode_name(g->mode));
    GD_CHECK(gd__gather_check_ids(ids, n, t->rows));
    const uint16_t *src = t->data;
    const int64_t cols = t->cols;
    const int bf16 = t->dtype == GD_DTYPE_BFLOAT16;
    const int threads =
        (uint64_t)n * (uint64_t)cols * 4u < WIDEN_PARALLEL_BYTES || g->threads < 1 ? 1 : g->threads;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < n; i++) widen_row(src + ids[i] * cols, bf16, cols, out + i * cols);
fail:
    return st;
}
