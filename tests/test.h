/*
 * The tiny test harness every test program includes: typed asserts that print both values and
 * the location, exit codes that CTest understands (0 pass, 1 fail, 77 skip), fresh random seeds
 * (printed, and fixed by GD_TEST_SEED to replay a failure) and a leak check against the
 * library's own allocation counters.
 */
#ifndef GD_TEST_H
#define GD_TEST_H

#include "graphdirect.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GD_TEST_SKIP 77

#define T_FAIL_(...)                                                                               \
    do {                                                                                           \
        fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                            \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fprintf(stderr, "\n");                                                                     \
        exit(1);                                                                                   \
    } while (0)

#define T_ASSERT(cond)                                                                             \
    do {                                                                                           \
        if (!(cond)) T_FAIL_("assertion failed: %s", #cond);                                       \
    } while (0)

#define T_EQ_INT(a, b)                                                                             \
    do {                                                                                           \
        long long ta_ = (long long)(a), tb_ = (long long)(b);                                      \
        if (ta_ != tb_) T_FAIL_("%s == %s: %lld != %lld", #a, #b, ta_, tb_);                       \
    } while (0)

#define T_EQ_U64(a, b)                                                                             \
    do {                                                                                           \
        unsigned long long ta_ = (a), tb_ = (b);                                                   \
        if (ta_ != tb_) T_FAIL_("%s == %s: 0x%llx != 0x%llx", #a, #b, ta_, tb_);                   \
    } while (0)

#define T_NEAR(a, b, tol)                                                                          \
    do {                                                                                           \
        double ta_ = (double)(a), tb_ = (double)(b);                                               \
        if (!(fabs(ta_ - tb_) <= (tol)))                                                           \
            T_FAIL_("%s ~ %s: %.9g vs %.9g (tolerance %g)", #a, #b, ta_, tb_, (double)(tol));      \
    } while (0)

#define T_EQ_STR(a, b)                                                                             \
    do {                                                                                           \
        const char *ta_ = (a), *tb_ = (b);                                                         \
        if (strcmp(ta_, tb_) != 0) T_FAIL_("%s == %s: \"%s\" != \"%s\"", #a, #b, ta_, tb_);        \
    } while (0)

/* A call that must succeed: prints the status and gd_last_error() otherwise. */
#define T_OK(call)                                                                                 \
    do {                                                                                           \
        gd_status ts_ = (call);                                                                    \
        if (ts_ != GD_OK)                                                                          \
            T_FAIL_("%s failed: %s: %s", #call, gd_status_string(ts_), gd_last_error());           \
    } while (0)

/* A call that must fail with a given status and leave a message containing `needle`. */
#define T_FAILS(call, status, needle)                                                              \
    do {                                                                                           \
        gd_status ts_ = (call);                                                                    \
        if (ts_ != (status))                                                                       \
            T_FAIL_("%s returned %s, expected %s (message: %s)", #call, gd_status_string(ts_),     \
                    gd_status_string(status), gd_last_error());                                    \
        if ((needle) && !strstr(gd_last_error(), (needle)))                                        \
            T_FAIL_("%s: message \"%s\" does not mention \"%s\"", #call, gd_last_error(),          \
                    (const char *)(needle));                                                       \
    } while (0)

/*
 * Whether the comma-separated list in environment variable var names `name` (1 also when var
 * is unset or empty): the parts of a test a process runs, so that a slow tool (a sanitizer)
 * can take them in separate processes.
 */
static inline int t_env_lists(const char *var, const char *name) {
    const char *want = getenv(var);
    if (!want || !*want) return 1;
    const size_t n = strlen(name);
    for (const char *p = want; (p = strstr(p, name)) != NULL; p += n)
        if ((p == want || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) return 1;
    return 0;
}

/* A fresh seed per run, printed so that a failure can be replayed with GD_TEST_SEED. */
static inline uint64_t t_seed(void) {
    const char *s = getenv("GD_TEST_SEED");
    uint64_t seed =
        s ? strtoull(s, NULL, 0) : ((uint64_t)time(NULL) * 1000003u) ^ ((uint64_t)getpid() << 20);
    fprintf(stderr, "seed %llu (replay with GD_TEST_SEED=%llu)\n", (unsigned long long)seed,
            (unsigned long long)seed);
    return seed;
}

/* splitmix64: the test programs' own generator for random inputs. */
static inline uint64_t t_rand(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* n random bytes at p (a table's rows, whatever their dtype). */
static inline void t_fill_random(void *p, size_t n, uint64_t *state) {
    unsigned char *b = p;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v = t_rand(state);
        memcpy(b + i, &v, 8);
    }
    for (; i < n; i++) b[i] = (unsigned char)t_rand(state);
}

static inline void t_check_no_leaks(void) {
    int64_t blocks, bytes;
    gd_alloc_stats(&blocks, &bytes);
    if (blocks != 0 || bytes != 0)
        T_FAIL_("leak: %lld blocks, %lld bytes still allocated", (long long)blocks,
                (long long)bytes);
}

/*
 * gd_convert(input, o) must fail with `status`, set no dataset, leave a message naming both
 * needles (needle2 may be NULL) and leak nothing: the converters' rejection of bad input.
 */
static inline void t_convert_rejected(const char *input, const gd_convert_options *o,
                                      gd_status status, const char *needle1,
                                      const char *needle2) {
    gd_dataset_t *ds = (gd_dataset_t *)&ds; /* must be reset to NULL */
    const gd_status s = gd_convert(input, o, &ds);
    if (s != status)
        T_FAIL_("converting %s: got %s, expected %s (%s): %s", input, gd_status_string(s),
                gd_status_string(status), needle1, gd_last_error());
    T_ASSERT(ds == NULL);
    if (!strstr(gd_last_error(), needle1) || (needle2 && !strstr(gd_last_error(), needle2)))
        T_FAIL_("message \"%s\" should mention \"%s\" and \"%s\"", gd_last_error(), needle1,
                needle2 ? needle2 : "");
    printf("rejected as expected: %s\n", gd_last_error());
    t_check_no_leaks();
}

/* A fresh temporary directory under TMPDIR (or /tmp); the caller removes it. */
static inline void t_tmpdir(char *buf, size_t n) {
    const char *base = getenv("TMPDIR");
    snprintf(buf, n, "%s/gdtest.XXXXXX", base ? base : "/tmp");
    if (!mkdtemp(buf)) T_FAIL_("mkdtemp(%s) failed", buf);
}

/* A whole file in malloc'd memory (free it), its size in *len; fails the test if unreadable. */
static inline unsigned char *t_slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) T_FAIL_("cannot open %s", path);
    T_ASSERT(fseek(f, 0, SEEK_END) == 0);
    const long n = ftell(f);
    T_ASSERT(n >= 0 && fseek(f, 0, SEEK_SET) == 0);
    unsigned char *b = malloc((size_t)n + 1);
    T_ASSERT(b);
    T_ASSERT(fread(b, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static inline void t_rmtree(const char *dir) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", dir);
}

/* Live allocations now equal the (blocks, bytes) taken before step n of a fault walk. */
static inline void t_same_live(int64_t blocks, int64_t bytes, const char *what, int64_t n) {
    int64_t b2, y2;
    gd_alloc_stats(&b2, &y2);
    if (b2 != blocks || y2 != bytes)
        T_FAIL_("%s, fault %lld: leak of %lld blocks, %lld bytes", what, (long long)n,
                (long long)(b2 - blocks), (long long)(y2 - bytes));
}

/* The `tiny` preset generated in memory from the test's seed. */
static inline gd_dataset_t *t_tiny_dataset(uint64_t seed) {
    gd_generate_options go = GD_GENERATE_OPTIONS_INIT;
    go.preset = "tiny";
    go.seed = seed % 1000;
    gd_dataset_t *ds = NULL;
    T_OK(gd_generate(&go, &ds));
    return ds;
}

#ifdef GD_WITH_CUDA
#include <cuda_runtime_api.h>
/* A CUDA runtime call of a test (its own copies and streams) that must succeed. */
#define CU(call)                                                                                   \
    do {                                                                                           \
        cudaError_t ce_ = (call);                                                                  \
        if (ce_ != cudaSuccess) T_FAIL_("%s failed: %s", #call, cudaGetErrorString(ce_));          \
    } while (0)
#endif

#endif
