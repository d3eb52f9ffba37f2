/*
 * Small shared utilities: dtypes and their bit-exact float16/bfloat16 conversions, thread
 * counts, progress reporting, the clock, and the prefix sum and id-list sort that several
 * modules share (scan_impl.h, sort_impl.h).
 */
#include "internal.h"

#include <stdio.h>
#include <sys/resource.h>
#include "params.h"

#include <math.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const struct {
    const char *name;
    size_t size;
} dtypes[] = {
    [GD_DTYPE_INVALID] = {"invalid", 0}, [GD_DTYPE_FLOAT32] = {"float32", 4},
    [GD_DTYPE_FLOAT16] = {"float16", 2}, [GD_DTYPE_BFLOAT16] = {"bfloat16", 2},
    [GD_DTYPE_FLOAT64] = {"float64", 8}, [GD_DTYPE_INT8] = {"int8", 1},
    [GD_DTYPE_UINT8] = {"uint8", 1},     [GD_DTYPE_INT16] = {"int16", 2},
    [GD_DTYPE_INT32] = {"int32", 4},     [GD_DTYPE_INT64] = {"int64", 8},
    [GD_DTYPE_BOOL] = {"bool", 1},
};
#define NUM_DTYPES ((int)(sizeof dtypes / sizeof dtypes[0]))

size_t gd_dtype_size(gd_dtype dtype) {
    return (dtype > 0 && (int)dtype < NUM_DTYPES) ? dtypes[dtype].size : 0;
}

const char *gd_dtype_name(gd_dtype dtype) {
    return (dtype > 0 && (int)dtype < NUM_DTYPES) ? dtypes[dtype].name : "invalid";
}

gd_status gd_dtype_parse(const char *name, gd_dtype *out) {
    if (!name || !out) return gd__error(GD_ERR_INVALID_ARG, "gd_dtype_parse: NULL argument");
    for (int i = 1; i < NUM_DTYPES; i++) {
        if (strcmp(name, dtypes[i].name) == 0) {
            *out = (gd_dtype)i;
            return GD_OK;
        }
    }
    if (strcmp(name, "fp32") == 0 || strcmp(name, "float") == 0) return *out = GD_DTYPE_FLOAT32, GD_OK;
    if (strcmp(name, "fp16") == 0 || strcmp(name, "half") == 0) return *out = GD_DTYPE_FLOAT16, GD_OK;
    if (strcmp(name, "bf16") == 0) return *out = GD_DTYPE_BFLOAT16, GD_OK;
    return gd__error(GD_ERR_INVALID_ARG,
                     "unknown dtype '%s' (expected float32, float16, bfloat16, int32, int64 ...)",
                     name);
}

static uint32_t float_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bits_float(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Round to nearest even, with overflow to infinity, subnormals and NaN kept quiet. */
uint16_t gd_float_to_half(float value) {
    uint32_t x = float_bits(value);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t mant = x & 0x7fffffu;
    if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0));
    int32_t e = (int32_t)exp - 127 + 15;
    if (e >= 0x1f) return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10) return (uint16_t)sign;
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t half = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | ((uint32_t)e << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) half++;
    return (uint16_t)half;
}

float gd_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0) {
        if (mant == 0) return bits_float(sign);
        float f = ldexpf((float)mant, -24);
        return sign ? -f : f;
    }
    if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13));
    return bits_float(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

uint16_t gd_float_to_bfloat16(float value) {
    uint32_t x = float_bits(value);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)((x + rounding) >> 16);
}

float gd_bfloat16_to_float(uint16_t value) { return bits_float((uint32_t)value << 16); }

int gd__num_threads(void) {
    int64_t n = 0;
    if (gd_param_get_int("GD_THREADS", &n) != GD_OK || n <= 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        n = cores > 0 ? cores : 1;
    }
    if (n > GD__MAX_THREADS) n = GD__MAX_THREADS;
    return (int)n;
}

gd_status gd__threads_check(int threads, const char *who) {
    if (threads >= 0 && threads <= GD__MAX_THREADS) return GD_OK;
    if (threads < 0)
        return gd__error(GD_ERR_INVALID_ARG,
                         "%s: %d threads: a thread count must not be negative; use 0 (the "
                         "GD_THREADS parameter, else every core) up to %d",
                         who, threads, GD__MAX_THREADS);
    return gd__error(GD_ERR_INVALID_ARG,
                     "%s: %d threads; use 0 (the GD_THREADS parameter, else every core) up to %d",
                     who, threads, GD__MAX_THREADS);
}

gd_status gd__progress(gd_progress_fn fn, void *user, const char *stage, uint64_t done,
                       uint64_t total) {
    if (fn && fn(user, stage, done, total) != 0)
        return gd__error(GD_ERR_INTERRUPTED, "%s: stopped at the caller's request", stage);
    return GD_OK;
}

double gd__now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void gd__memlock_text(char *buf, size_t n) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0)
        snprintf(buf, n, "unknown");
    else if (rl.rlim_cur == RLIM_INFINITY)
        snprintf(buf, n, "unlimited");
    else
        snprintf(buf, n, "%llu KiB", (unsigned long long)rl.rlim_cur / 1024);
}

gd_status gd__options_in(void *dst, size_t dst_size, const void *src, int larger_ok,
                         const char *what, const char *init) {
    size_t size;
    memcpy(&size, src, sizeof size);
    if (size < sizeof(size_t) || (size > dst_size && !larger_ok))
        return gd__error(GD_ERR_INVALID_ARG,
                         "%s.size is %zu (this library's is %zu): initialise them with %s", what,
                         size, dst_size, init);
    memcpy(dst, src, size < dst_size ? size : dst_size);
    memcpy(dst, &dst_size, sizeof dst_size);
    return GD_OK;
}

gd_status gd__info_out(void *dst, const void *src, size_t src_size, const char *what,
                       const char *init) {
    size_t size;
    memcpy(&size, dst, sizeof size);
    if (size < sizeof(size_t) || size > src_size)
        return gd__error(GD_ERR_INVALID_ARG,
                         "%s.size is %zu (this library's is %zu): initialise it with %s", what,
                         size, src_size, init);
    memcpy(dst, src, size);
    memcpy(dst, &size, sizeof size);
    return GD_OK;
}

int gd__name_index(const char *const *names, int count, const char *name) {
    for (int i = 0; name && i < count; i++)
        if (strcmp(name, names[i]) == 0) return i;
    return -1;
}

#define GD__SCAN_T int64_t
#define GD__SCAN_NAME gd__exclusive_scan_i64
#include "scan_impl.h"
#undef GD__SCAN_T
#undef GD__SCAN_NAME
#define GD__SCAN_T int32_t
#define GD__SCAN_NAME gd__exclusive_scan_i32
#include "scan_impl.h"
#undef GD__SCAN_T
#undef GD__SCAN_NAME

#define GD__SORT_T int64_t
#define GD__SORT_NAME(x) x##_i64
#include "sort_impl.h"
#undef GD__SORT_T
#undef GD__SORT_NAME
#define GD__SORT_T int32_t
#define GD__SORT_NAME(x) x##_i32
#include "sort_impl.h"
#undef GD__SORT_T
#undef GD__SORT_NAME
