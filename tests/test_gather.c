/*
 * Feature gather: every gather mode against a trivial CPU reference, bit for bit, on fresh
 * random ids (duplicates, out of order, empty, one row) and row widths from 1 byte to past
 * 16 KiB, including widths that are not multiples of 16 (rows then start mid-word). The CPU
 * part always runs: the "cpu" mode, argument and id checks, the SM-budget parser and fault
 * injection over tensor creation. On a GPU every GPU mode is run with sorting on and off,
 * host and device ids, aligned and misaligned output, outputs poisoned first and their
 * surroundings checked for stray writes; then the device-side out-of-range report, SM budgets
 * and fault injection over registration (in several chunks).
 */
#include "feature/internal.h"
#include "test.h"

#ifdef GD_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

static const int64_t widths[] = {1,    3,    4,    12,    16,    100,   128, 512,
                                 1028, 2052, 4096, 16384, 16400, 33333, 6,   2};
#define NUM_WIDTHS ((int)(sizeof widths / sizeof widths[0]))

#define POISON 0xA5

/* A dtype that divides the width, so every dtype the store supports is exercised. */
static gd_dtype dtype_for(int64_t w, int i) {
    if (w % 4 == 0) return GD_DTYPE_FLOAT32;
    if (w % 2 == 0) return i % 2 ? GD_DTYPE_BFLOAT16 : GD_DTYPE_FLOAT16;
    return GD_DTYPE_UINT8;
}

static int64_t rows_for(int64_t w) {
    int64_t r = (8ll << 20) / w;
    if (r > 3000) r = 3000;
    if (r < 3) r = 3;
    return r;
}

static void reference(const unsigned char *table, int64_t row_bytes, const int64_t *ids, int64_t n,
                      unsigned char *out) {
    for (int64_t i = 0; i < n; i++)
        memcpy(out + i * row_bytes, table + ids[i] * row_bytes, (size_t)row_bytes);
}

/* Random ids with duplicates and no order; variants 0 = empty, 1 = one row, 2 = all, reversed. */
static int64_t make_ids(int variant, int64_t rows, int64_t cap, uint64_t *state, int64_t *ids) {
    if (variant == 0) return 0;
    if (variant == 1) {
        ids[0] = (int64_t)(t_rand(state) % (uint64_t)rows);
        return 1;
    }
    if (variant == 2) {
        int64_t n = rows < cap ? rows : cap;
        for (int64_t i = 0; i < n; i++) ids[i] = rows - 1 - i;
        return n;
    }
    int64_t n = 1 + (int64_t)(t_rand(state) % (uint64_t)cap);
    for (int64_t i = 0; i < n; i++) {
        if (i > 0 && t_rand(state) % 4 == 0)
            ids[i] = ids[t_rand(state) % (uint64_t)i]; /* a duplicate */
        else
            ids[i] = (int64_t)(t_rand(state) % (uint64_t)rows);
    }
    ids[0] = rows - 1; /* the last row: its aligned words end at the table's end */
    return n;
}

static void check_cpu_mode(uint64_t *state) {
    for (int wi = 0; wi < NUM_WIDTHS; wi++) {
        const int64_t w = widths[wi];
        const gd_dtype dt = dtype_for(w, wi);
        const int64_t cols = w / (int64_t)gd_dtype_size(dt), rows = rows_for(w);
        gd_host_tensor_t *t = NULL;
        gd_gatherer_t *g = NULL;
        T_OK(gd_host_tensor_create(rows, cols, dt, 0, &t));
        T_EQ_INT(gd_host_tensor_row_bytes(t), w);
        T_EQ_INT(gd_host_tensor_rows(t), rows);
        T_ASSERT(gd_host_tensor_dtype(t) == dt);
        T_ASSERT(((uintptr_t)gd_host_tensor_data(t) & 4095) == 0);
        t_fill_random(gd_host_tensor_data(t), (size_t)(rows * w), state);
        gd_gatherer_options o = GD_GATHERER_OPTIONS_INIT;
        o.threads = 1 + wi % 3;
        T_OK(gd_gatherer_create(t, NULL, GD_GATHER_CPU, &o, &g));
        const int64_t cap = 2500;
        int64_t *ids = malloc(sizeof *ids * (size_t)cap);
        unsigned char *out = malloc((size_t)(cap * w) + 1), *want = malloc((size_t)(cap * w) + 1);
        T_ASSERT(ids && out && want);
        for (int variant = 0; variant < 5; variant++) {
            int64_t n = make_ids(variant, rows, cap, state, ids);
            memset(out, POISON, (size_t)(cap * w) + 1);
            reference(gd_host_tensor_data(t), w, ids, n, want);
            T_OK(gd_gather(g, ids, n, 0, out, NULL));
            if (memcmp(out, want, (size_t)(n * w)) != 0)
                T_FAIL_("cpu gather differs: width %lld, %lld ids", (long long)w, (long long)n);
            T_EQ_INT(out[n * w], POISON);
        }
        /* Out-of-range ids are refused with the id and its position, and nothing is written. */
        int64_t n = make_ids(4, rows, cap, state, ids);
        if (n < 2) n = 2, ids[1] = 0;
        int64_t pos = n / 2;
        ids[pos] = rows;
        memset(out, POISON, (size_t)(n * w));
        char needle_buf[96];
        const char *needle = needle_buf;
        snprintf(needle_buf, sizeof needle_buf, "id %lld at position %lld", (long long)rows,
                 (long long)pos);
        T_FAILS(gd_gather(g, ids, n, 0, out, NULL), GD_ERR_RANGE, needle);
        for (int64_t b = 0; b < n * w; b++) T_EQ_INT(out[b], POISON);
        ids[pos] = -1;
        snprintf(needle_buf, sizeof needle_buf, "id -1 at position %lld", (long long)pos);
        T_FAILS(gd_gather(g, ids, n, 0, out, NULL), GD_ERR_RANGE, needle);
        T_FAILS(gd_gather(g, ids, n, 1, out, NULL), GD_ERR_INVALID_ARG, "ids_on_device");
        T_FAILS(gd_gather(g, ids, -1, 0, out, NULL), GD_ERR_INVALID_ARG, "negative");
        free(ids);
        free(out);
        free(want);
        gd_gatherer_destroy(g);
        gd_host_tensor_destroy(t);
    }
}

static void check_api_errors(void) {
    gd_gather_mode m;
    for (int i = 0; i < GD_GATHER_MODE_COUNT; i++) {
        T_OK(gd_gather_mode_parse(gd_gather_mode_name((gd_gather_mode)i), &m));
        T_EQ_INT(m, i);
    }
    T_EQ_STR(gd_gather_mode_name(GD_GATHER_NAIVE_ZEROCOPY), "naive-zerocopy");
    T_ASSERT(gd_gather_mode_name(GD_GATHER_MODE_COUNT) == NULL);
    T_FAILS(gd_gather_mode_parse("zero-copy", &m), GD_ERR_INVALID_ARG, "zero-copy");

    int count;
    double pct;
    T_OK(gd__parse_sm_budget("0", &count, &pct));
    T_ASSERT(count == 0 && pct == 0.0);
    T_OK(gd__parse_sm_budget("16", &count, &pct));
    T_ASSERT(count == 16 && pct == 0.0);
    T_OK(gd__parse_sm_budget("12.5%", &count, &pct));
    T_ASSERT(count == 0 && pct == 12.5);
    T_FAILS(gd__parse_sm_budget("abc", &count, &pct), GD_ERR_INVALID_ARG, "abc");
    T_FAILS(gd__parse_sm_budget("150%", &count, &pct), GD_ERR_INVALID_ARG, "150%");
    T_FAILS(gd__parse_sm_budget("2.5", &count, &pct), GD_ERR_INVALID_ARG, "2.5");
    T_EQ_INT(gd__sm_budget_resolve(0, 0.0, 132), 132);
    T_EQ_INT(gd__sm_budget_resolve(16, 0.0, 132), 16);
    T_EQ_INT(gd__sm_budget_resolve(500, 0.0, 132), 132);
    T_EQ_INT(gd__sm_budget_resolve(0, 10.0, 132), 14);
    T_EQ_INT(gd__sm_budget_resolve(0, 0.1, 132), 1);

    gd_host_tensor_t *t = NULL;
    gd_gatherer_t *g = NULL;
    T_FAILS(gd_host_tensor_create(-1, 4, GD_DTYPE_FLOAT32, 0, &t), GD_ERR_INVALID_ARG, "-1");
    T_FAILS(gd_host_tensor_create(4, 0, GD_DTYPE_FLOAT32, 0, &t), GD_ERR_INVALID_ARG, "x 0");
    T_FAILS(gd_host_tensor_create(INT64_MAX / 2, 16, GD_DTYPE_FLOAT32, 0, &t), GD_ERR_OVERFLOW, "");
    T_ASSERT(t == NULL);
    float buf[9];
    T_FAILS(gd_host_tensor_adopt((char *)buf + 1, 2, 4, GD_DTYPE_FLOAT32, 0, &t),
            GD_ERR_INVALID_ARG, "aligned");

    /* An adopted tensor is used in place and never freed by the library. */
    for (int i = 0; i < 8; i++) buf[i] = (float)i;
    T_OK(gd_host_tensor_adopt(buf, 4, 2, GD_DTYPE_FLOAT32, 0, &t));
    T_ASSERT(gd_host_tensor_data(t) == buf);
    T_FAILS(gd_gatherer_create(t, NULL, GD_GATHER_CPU, &(gd_gatherer_options){.size = 3}, &g),
            GD_ERR_INVALID_ARG, "GD_GATHERER_OPTIONS_INIT");
    gd_gatherer_options o = GD_GATHERER_OPTIONS_INIT;
    o.sm_budget = "lots";
    T_FAILS(gd_gatherer_create(t, NULL, GD_GATHER_ZEROCOPY, &o, &g), GD_ERR_INVALID_ARG, "lots");
    T_OK(gd_gatherer_create(t, NULL, GD_GATHER_CPU, NULL, &g));
    int64_t ids[3] = {3, 0, 3};
    float out[6];
    T_OK(gd_gather(g, ids, 3, 0, out, NULL));
    T_ASSERT(out[0] == 6.0f && out[1] == 7.0f && out[2] == 0.0f && out[5] == 7.0f);
    T_OK(gd_gather(g, NULL, 0, 0, NULL, NULL)); /* an empty list is a no-op */
    T_OK(gd_gatherer_check_errors(g));
    gd_gatherer_destroy(g);

    if (gd_device_count() == 0) {
        /* Without a usable GPU every GPU mode says so, and registration too. */
        for (int mode = 0; mode < GD_GATHER_MODE_COUNT; mode++) {
            if (mode == GD_GATHER_CPU) continue;
            g = (gd_gatherer_t *)1;
            T_FAILS(gd_gatherer_create(t, NULL, (gd_gather_mode)mode, NULL, &g), GD_ERR_NO_DEVICE,
                    "cpu");
            T_ASSERT(g == NULL);
        }
        T_FAILS(gd_host_tensor_register(t, NULL), GD_ERR_NO_DEVICE, "");
        T_ASSERT(!gd_host_tensor_is_registered(t));
    }
    gd_host_tensor_destroy(t);
    t_check_no_leaks();
}

/* Cache options are checked before any GPU work: only zerocopy caches, and it needs scores. */
static void check_cache_options(void) {
    gd_host_tensor_t *t = NULL;
    gd_gatherer_t *g = NULL;
    int64_t scores[100] = {0};
    gd_gatherer_options o = GD_GATHERER_OPTIONS_INIT;
    gd_gatherer_info info = GD_GATHERER_INFO_INIT;
    T_OK(gd_host_tensor_create(100, 3, GD_DTYPE_FLOAT32, 0, &t));
    o.cache_bytes = 1200;
    T_FAILS(gd_gatherer_create(t, NULL, GD_GATHER_ZEROCOPY, &o, &g), GD_ERR_INVALID_ARG,
            "cache_scores");
    o.cache_scores = scores;
    T_FAILS(gd_gatherer_create(t, NULL, GD_GATHER_CPU, &o, &g), GD_ERR_INVALID_ARG, "zerocopy");
    o.cache_bytes = -1;
    T_FAILS(gd_gatherer_create(t, NULL, GD_GATHER_ZEROCOPY, &o, &g), GD_ERR_INVALID_ARG,
            "negative cache_bytes");
    T_OK(gd_gatherer_create(t, NULL, GD_GATHER_CPU, NULL, &g));
    T_OK(gd_gatherer_get_info(g, &info));
    T_EQ_INT(info.cached_rows, 0);
    T_EQ_INT(gd_gatherer_is_cached(g, 5), 0);
    info.size = 3;
    T_FAILS(gd_gatherer_get_info(g, &info), GD_ERR_INVALID_ARG, "GD_GATHERER_INFO_INIT");
    gd_gatherer_destroy(g);
    gd_host_tensor_destroy(t);
}

/* Every GD_FAULT_ALLOC call of create (+ a cpu gatherer) fails cleanly and leaks nothing. */
static void check_faults_cpu(void) {
    gd_fault_set(GD_FAULT_ALLOC, 0);
    gd_host_tensor_t *t = NULL;
    gd_gatherer_t *g = NULL;
    T_OK(gd_host_tensor_create(100, 7, GD_DTYPE_FLOAT16, 0, &t));
    T_OK(gd_gatherer_create(t, NULL, GD_GATHER_CPU, NULL, &g));
    int64_t calls = gd_fault_calls(GD_FAULT_ALLOC);
    gd_gatherer_destroy(g);
    gd_host_tensor_destroy(t);
    T_ASSERT(calls >= 3);
    for (int64_t k = 1; k <= calls; k++) {
        gd_fault_set(GD_FAULT_ALLOC, k);
        t = NULL;
        g = NULL;
        gd_status st = gd_host_tensor_create(100, 7, GD_DTYPE_FLOAT16, 0, &t);
        if (st == GD_OK) st = gd_gatherer_create(t, NULL, GD_GATHER_CPU, NULL, &g);
        if (st != GD_ERR_NO_MEMORY)
            T_FAIL_("fault %lld of %lld: %s (%s)", (long long)k, (long long)calls,
                    gd_status_string(st), gd_last_error());
        T_ASSERT(g == NULL);
        gd_host_tensor_destroy(t);
        t_check_no_leaks();
    }
    gd_fault_set(GD_FAULT_ALLOC, 0);
}

#ifdef GD_WITH_CUDA

typedef struct {
    gd_gather_mode mode;
    int sort;
} gpu_config;

static const gpu_config configs[] = {
    {GD_GATHER_ZEROCOPY, 0}, {GD_GATHER_ZEROCOPY, 1},       {GD_GATHER_GPU, 0},
    {GD_GATHER_GPU, 1},      {GD_GATHER_NAIVE_ZEROCOPY, 0}, {GD_GATHER_CPU_DMA, 0},
};
#define NUM_CONFIGS ((int)(sizeof configs / sizeof configs[0]))

#define SLACK 64

/*
 * Copy ids to the device for a gather on another stream. cudaMemcpy from pageable memory may
 * return before the data has landed on the device (and cudaMemset returns before it is done),
 * and a non-blocking stream does not wait for the legacy stream, so the test waits for the
 * device before handing buffers over.
 */
static void ids_to_device(int64_t *d_ids, const int64_t *ids, int64_t n) {
    CU(cudaMemcpy(d_ids, ids, sizeof *ids * (size_t)(n ? n : 1), cudaMemcpyHostToDevice));
    CU(cudaDeviceSynchronize());
}

/*
 * One GPU gather checked bit for bit, with `lead` poisoned bytes before the output and SLACK
 * after it that must stay poisoned.
 */
static void gpu_gather_check(gd_gatherer_t *g, const unsigned char *table, int64_t w,
                             const int64_t *ids, int64_t n, int on_device, size_t lead,
                             unsigned char *d_buf, int64_t *d_ids, unsigned char *host,
                             unsigned char *want, cudaStream_t stream, const char *what) {
    const size_t total = lead + (size_t)(n * w) + SLACK;
    CU(cudaMemset(d_buf, POISON, total));
    CU(cudaDeviceSynchronize()); /* the memset is on the legacy stream, the gather may not be */
    if (on_device) ids_to_device(d_ids, ids, n);
    reference(table, w, ids, n, want);
    T_OK(gd_gather(g, on_device ? d_ids : ids, n, on_device, d_buf + lead, stream));
    T_OK(gd_gatherer_check_errors(g));
    CU(cudaStreamSynchronize(stream));
    CU(cudaMemcpy(host, d_buf, total, cudaMemcpyDeviceToHost));
    for (size_t b = 0; b < lead; b++)
        if (host[b] != POISON) T_FAIL_("%s: byte %zu before the output was written", what, b);
    for (int64_t b = 0; b < n * w; b++)
        if (host[lead + (size_t)b] != want[b])
            T_FAIL_("%s: %lld ids (%s ids), row %lld byte %lld: 0x%02x != 0x%02x (id %lld)", what,
                    (long long)n, on_device ? "device" : "host", (long long)(b / w),
                    (long long)(b % w), host[lead + (size_t)b], want[b], (long long)ids[b / w]);
    for (size_t b = 0; b < SLACK; b++)
        if (host[lead + (size_t)(n * w) + b] != POISON)
            T_FAIL_("%s: byte %zu after the output was written", what, b);
}

static void check_gpu_modes(uint64_t *state, cudaStream_t stream) {
    const int64_t cap = 2500;
    int64_t *ids = malloc(sizeof *ids * (size_t)cap), *d_ids = NULL;
    unsigned char *d_buf = NULL;
    const size_t buf_bytes = (size_t)(cap * 33333) + 2 * SLACK + 64;
    unsigned char *host = malloc(buf_bytes), *want = malloc(buf_bytes);
    T_ASSERT(ids && host && want);
    CU(cudaMalloc((void **)&d_ids, sizeof *ids * (size_t)cap));
    CU(cudaMalloc((void **)&d_buf, buf_bytes));
    /* Several registration chunks per table: the kernels must see them as one array. */
    T_OK(gd_param_set("GD_PIN_CHUNK_MB", "1"));
    for (int wi = 0; wi < NUM_WIDTHS; wi++) {
        const int64_t w = widths[wi];
        const gd_dtype dt = dtype_for(w, wi);
        const size_t es = gd_dtype_size(dt);
        const int64_t cols = w / (int64_t)es, rows = rows_for(w);
        /*
         * Odd widths use an adopted table that starts one element past a page, so that rows
         * and the table itself are misaligned; the others use an allocated one.
         */
        unsigned char *own = NULL;
        gd_host_tensor_t *t = NULL;
        if (wi % 2) {
            own = aligned_alloc(4096, (size_t)(rows * w) + 4096);
            T_ASSERT(own);
            T_OK(gd_host_tensor_adopt(own + es, rows, cols, dt, 0, &t));
        } else {
            T_OK(gd_host_tensor_create(rows, cols, dt, 0, &t));
        }
        const unsigned char *table = gd_host_tensor_data(t);
        t_fill_random(gd_host_tensor_data(t), (size_t)(rows * w), state);
        T_OK(gd_host_tensor_register(t, NULL));
        T_OK(gd_host_tensor_register(t, NULL)); /* a second registration is a no-op */
        T_ASSERT(gd_host_tensor_is_registered(t));
        for (int ci = 0; ci < NUM_CONFIGS; ci++) {
            gd_gatherer_options o = GD_GATHERER_OPTIONS_INIT;
            o.max_ids = cap;
            o.sort_ids = configs[ci].sort;
            gd_gatherer_t *g = NULL;
            T_OK(gd_gatherer_create(t, NULL, configs[ci].mode, &o, &g));
            char what[128];
            snprintf(what, sizeof what, "%s%s, width %lld (%s)",
                     gd_gather_mode_name(configs[ci].mode), configs[ci].sort ? " sorted" : "",
                     (long long)w, gd_dtype_name(dt));
            for (int variant = 0; variant < 6; variant++) {
                const int64_t n = make_ids(variant, rows, cap, state, ids);
                /* Misaligned output starts too, by whole elements (the naive kernel needs it). */
                const size_t lead = (size_t)(variant % 3) * es;
                gpu_gather_check(g, table, w, ids, n, variant % 2, lead, d_buf, d_ids, host, want,
                                 variant >= 3 ? stream : NULL, what);
            }
            /* Host ids out of range: refused before launch, the output untouched. */
            int64_t n = make_ids(4, rows, cap, state, ids);
            if (n < 2) n = 2, ids[1] = 0;
            const int64_t pos = n - 1;
            ids[pos] = rows + 5;
            char needle_buf[96];
            const char *needle = needle_buf;
            snprintf(needle_buf, sizeof needle_buf, "id %lld at position %lld",
                     (long long)(rows + 5), (long long)pos);
            CU(cudaMemset(d_buf, POISON, (size_t)(n * w)));
            CU(cudaDeviceSynchronize());
            T_FAILS(gd_gather(g, ids, n, 0, d_buf, stream), GD_ERR_RANGE, needle);
            T_OK(gd_gatherer_check_errors(g));
            CU(cudaMemcpy(host, d_buf, (size_t)(n * w), cudaMemcpyDeviceToHost));
            for (int64_t b = 0; b < n * w; b++) T_EQ_INT(host[b], POISON);
            /* Device ids out of range: the kernel zeroes the row and the check reports it. */
            if (configs[ci].mode != GD_GATHER_CPU_DMA) {
                ids[pos] = -3;
                ids_to_device(d_ids, ids, n);
                T_OK(gd_gather(g, d_ids, n, 1, d_buf, stream));
                snprintf(needle_buf, sizeof needle_buf, "id -3 at position %lld", (long long)pos);
                T_FAILS(gd_gatherer_check_errors(g), GD_ERR_RANGE, needle);
                T_OK(gd_gatherer_check_errors(g)); /* the record was cleared */
                ids[pos] = 0;
                reference(table, w, ids, n, want);
                memset(want + pos * w, 0, (size_t)w);
                CU(cudaMemcpy(host, d_buf, (size_t)(n * w), cudaMemcpyDeviceToHost));
                T_ASSERT(memcmp(host, want, (size_t)(n * w)) == 0);
            } else {
                ids[pos] = -3;
                ids_to_device(d_ids, ids, n);
                T_FAILS(gd_gather(g, d_ids, n, 1, d_buf, stream), GD_ERR_RANGE, "id -3");
            }
            T_FAILS(gd_gather(g, ids, cap + 1, 0, d_buf, stream), GD_ERR_RANGE, "max_ids");
            gd_gatherer_destroy(g);
        }
        T_OK(gd_host_tensor_unregister(t));
        T_ASSERT(!gd_host_tensor_is_registered(t));
        gd_gatherer_t *g = NULL;
        T_FAILS(gd_gatherer_create(t, NULL, GD_GATHER_ZEROCOPY, NULL, &g), GD_ERR_INVALID_ARG,
                "gd_host_tensor_register");
        gd_host_tensor_destroy(t);
        free(own);
        fprintf(stderr, "width %5lld: every GPU mode equals the CPU reference\n", (long long)w);
    }
    T_OK(gd_param_set("GD_PIN_CHUNK_MB", NULL));
    CU(cudaFree(d_ids));
    CU(cudaFree(d_buf));
    free(ids);
    free(host);
    free(want);
}

/* The SM budget caps the grid; every budget gives the same rows. */
static void check_sm_budgets(uint64_t *state, cudaStream_t stream) {
    static const char *const budgets[] = {"1", "3", "10%", "100%", "0", "100000"};
    const int64_t w = 1028, rows = 4000, cap = 4000;
    gd_host_tensor_t *t = NULL;
    T_OK(gd_host_tensor_create(rows, w / 4, GD_DTYPE_FLOAT32, 0, &t));
    t_fill_random(gd_host_tensor_data(t), (size_t)(rows * w), state);
    T_OK(gd_host_tensor_register(t, NULL));
    int64_t *ids = malloc(sizeof *ids * (size_t)cap), *d_ids = NULL;
    unsigned char *d_buf = NULL, *host = malloc((size_t)(cap * w) + SLACK + 64),
                  *want = malloc((size_t)(cap * w) + SLACK + 64);
    T_ASSERT(ids && host && want);
    CU(cudaMalloc((void **)&d_ids, sizeof *ids * (size_t)cap));
    CU(cudaMalloc((void **)&d_buf, (size_t)(cap * w) + SLACK + 64));
    for (int bi = 0; bi < (int)(sizeof budgets / sizeof budgets[0]); bi++) {
        for (int mode = 0; mode < 2; mode++) {
            gd_gatherer_options o = GD_GATHERER_OPTIONS_INIT;
            o.max_ids = cap;
            o.sm_budget = budgets[bi];
            o.sort_ids = bi % 2 ? 1 : -1;
            o.sm_grid_cap_only = bi == 2 && mode == 1;
            gd_gatherer_t *g = NULL;
            T_OK(gd_gatherer_create(t, NULL, mode ? GD_GATHER_NAIVE_ZEROCOPY : GD_GATHER_ZEROCOPY,
                                    &o, &g));
            gd_gatherer_info info = GD_GATHERER_INFO_INIT;
            T_OK(gd_gatherer_get_info(g, &info));
            gd_device_info di;
            T_OK(gd_device_info_get(0, &di));
            T_ASSERT(info.sms >= 1 && info.sms <= di.multiprocessors);
            if (o.sm_grid_cap_only) T_EQ_INT(info.green_context, 0);
            fprintf(stderr, "SM budget %s%s: %d SMs, %s\n", budgets[bi],
                    o.sm_grid_cap_only ? " (grid cap only)" : "", info.sms,
                    info.green_context ? "green context" : "grid cap");
            const int64_t n = make_ids(5, rows, cap, state, ids);
            char what[64];
            snprintf(what, sizeof what, "SM budget %s (%s)", budgets[bi],
                     mode ? "naive" : "zerocopy");
            gpu_gather_check(g, gd_host_tensor_data(t), w, ids, n, 1, 0, d_buf, d_ids, host, want,
                             stream, what);
            gd_gatherer_destroy(g);
        }
    }
    /* The parameter is the default when the option is not set. */
    T_OK(gd_param_set("GD_GATHER_SMS", "2"));
    gd_gatherer_t *g = NULL;
    T_OK(gd_gatherer_create(t, NULL, GD_GATHER_ZEROCOPY, NULL, &g));
    T_EQ_INT(g->sm_budget_count, 2);
    gd_gatherer_destroy(g);
    T_OK(gd_param_set("GD_GATHER_SMS", "x%"));
    T_FAILS(gd_gatherer_create(t, NULL, GD_GATHER_ZEROCOPY, NULL, &g), GD_ERR_INVALID_ARG,
            "GD_GATHER_SMS");
    T_OK(gd_param_set("GD_GATHER_SMS", NULL));
    CU(cudaFree(d_ids));
    CU(cudaFree(d_buf));
    free(ids);
    free(host);
    free(want);
    gd_host_tensor_destroy(t);
}

/*
 * The hot-row cache: for budgets from nothing to more than the table, the cached rows are the
 * hottest by score (the same as gd_hot_rows_select), and one launch that mixes cached and host
 * rows equals the CPU reference bit for bit, with misaligned widths and outputs, sorting on and
 * off, host and device ids; a bad device id is still reported.
 */
static void check_cache(uint64_t *state, cudaStream_t stream) {
    static const int64_t cache_widths[] = {4, 100, 512, 1028, 2052, 16400, 3};
    const int64_t cap = 3000;
    int64_t *ids = malloc(sizeof *ids * (size_t)cap), *d_ids = NULL;
    const size_t buf_bytes = (size_t)(cap * 16400) + 2 * SLACK + 64;
    unsigned char *d_buf = NULL, *host = malloc(buf_bytes), *want = malloc(buf_bytes);
    T_ASSERT(ids && host && want);
    CU(cudaMalloc((void **)&d_ids, sizeof *ids * (size_t)cap));
    CU(cudaMalloc((void **)&d_buf, buf_bytes));
    for (int wi = 0; wi < (int)(sizeof cache_widths / sizeof cache_widths[0]); wi++) {
        const int64_t w = cache_widths[wi], rows = rows_for(w);
        const gd_dtype dt = dtype_for(w, wi);
        const int64_t cols = w / (int64_t)gd_dtype_size(dt);
        gd_host_tensor_t *t = NULL;
        T_OK(gd_host_tensor_create(rows, cols, dt, 0, &t));
        t_fill_random(gd_host_tensor_data(t), (size_t)(rows * w), state);
        T_OK(gd_host_tensor_register(t, NULL));
        int64_t *scores = malloc(sizeof *scores * (size_t)rows),
                *hot = malloc(sizeof *hot * (size_t)rows);
        T_ASSERT(scores && hot);
        for (int64_t i = 0; i < rows; i++) scores[i] = (int64_t)(t_rand(state) % 50);
        const int64_t budgets[] = {w - 1,        w,        3 * w + 1,   rows * w / 5,
                                   rows * w - 1, rows * w, 2 * rows * w};
        for (int bi = 0; bi < (int)(sizeof budgets / sizeof budgets[0]); bi++) {
            gd_gatherer_options o = GD_GATHERER_OPTIONS_INIT;
            o.max_ids = cap;
            o.sort_ids = bi % 2;
            o.cache_bytes = budgets[bi];
            o.cache_scores = scores;
            gd_gatherer_t *g = NULL;
            T_OK(gd_gatherer_create(t, NULL, GD_GATHER_ZEROCOPY, &o, &g));
            gd_gatherer_info info = GD_GATHERER_INFO_INIT;
            T_OK(gd_gatherer_get_info(g, &info));
            int64_t expect = budgets[bi] / w, count = 0;
            if (expect > rows) expect = rows;
            T_EQ_INT(info.cached_rows, expect);
            T_EQ_INT(info.cache_bytes, expect * w);
            T_EQ_INT(info.map_bytes, expect ? rows * 8 : 0);
            T_OK(gd_hot_rows_select(scores, rows, expect, hot, &count));
            int64_t marked = 0;
            for (int64_t i = 0; i < rows; i++) marked += gd_gatherer_is_cached(g, i);
            T_EQ_INT(marked, expect);
            for (int64_t i = 0; i < count; i++) T_ASSERT(gd_gatherer_is_cached(g, hot[i]));
            char what[96];
            snprintf(what, sizeof what, "cache of %lld of %lld rows, width %lld%s",
                     (long long)expect, (long long)rows, (long long)w, o.sort_ids ? " sorted" : "");
            for (int variant = 0; variant < 6; variant++) {
                const int64_t n = make_ids(variant, rows, cap, state, ids);
                gpu_gather_check(g, gd_host_tensor_data(t), w, ids, n, variant % 2,
                                 (size_t)(variant % 3) * gd_dtype_size(dt), d_buf, d_ids, host,
                                 want, variant >= 3 ? stream : NULL, what);
            }
            /* A bad device id is reported whatever the cache holds. */
            int64_t n = make_ids(4, rows, cap, state, ids);
            ids[n - 1] = rows;
            ids_to_device(d_ids, ids, n);
            T_OK(gd_gather(g, d_ids, n, 1, d_buf, stream));
            T_FAILS(gd_gatherer_check_errors(g), GD_ERR_RANGE, "outside");
            gd_gatherer_destroy(g);
        }
        /* A cache needs scores, and only zerocopy has one. */
        gd_gatherer_options o = GD_GATHERER_OPTIONS_INIT;
        gd_gatherer_t *g = NULL;
        o.cache_bytes = rows * w;
        T_FAILS(gd_gatherer_create(t, NULL, GD_GATHER_ZEROCOPY, &o, &g), GD_ERR_INVALID_ARG,
                "cache_scores");
        o.cache_scores = scores;
        T_FAILS(gd_gatherer_create(t, NULL, GD_GATHER_GPU, &o, &g), GD_ERR_INVALID_ARG, "zerocopy");
        free(scores);
        free(hot);
        gd_host_tensor_destroy(t);
        fprintf(stderr, "width %5lld: cached + host rows in one launch equal the CPU reference\n",
                (long long)w);
    }
    CU(cudaFree(d_ids));
    CU(cudaFree(d_buf));
    free(ids);
    free(host);
    free(want);
    t_check_no_leaks();
}

/* Every kernel shape GD_GATHER_SHAPE can pick gives the same rows, on narrow and wide rows. */
static void check_shapes(uint64_t *state, cudaStream_t stream) {
    static const int64_t shape_widths[] = {3, 100, 1028, 16400};
    const int64_t cap = 700;
    int64_t *ids = malloc(sizeof *ids * (size_t)cap), *d_ids = NULL;
    const size_t buf_bytes = (size_t)(cap * 16400) + 2 * SLACK + 64;
    unsigned char *d_buf = NULL, *host = malloc(buf_bytes), *want = malloc(buf_bytes);
    T_ASSERT(ids && host && want);
    CU(cudaMalloc((void **)&d_ids, sizeof *ids * (size_t)cap));
    CU(cudaMalloc((void **)&d_buf, buf_bytes));
    for (int wi = 0; wi < 4; wi++) {
        const int64_t w = shape_widths[wi], rows = rows_for(w);
        gd_host_tensor_t *t = NULL;
        T_OK(gd_host_tensor_create(rows, w, GD_DTYPE_UINT8, 0, &t));
        t_fill_random(gd_host_tensor_data(t), (size_t)(rows * w), state);
        T_OK(gd_host_tensor_register(t, NULL));
        for (int lanes = 1; lanes <= 32; lanes *= 2) {
            for (int loads = 4; loads <= 16; loads *= 2) {
                char shape[32], what[80];
                snprintf(shape, sizeof shape, "%dx%d", lanes, loads);
                snprintf(what, sizeof what, "shape %s, width %lld", shape, (long long)w);
                T_OK(gd_param_set("GD_GATHER_SHAPE", shape));
                gd_gatherer_options o = GD_GATHERER_OPTIONS_INIT;
                o.max_ids = cap;
                o.sort_ids = loads == 8;
                gd_gatherer_t *g = NULL;
                T_OK(gd_gatherer_create(t, NULL, GD_GATHER_ZEROCOPY, &o, &g));
                gd_gatherer_info info = GD_GATHERER_INFO_INIT;
                T_OK(gd_gatherer_get_info(g, &info));
                T_EQ_INT(info.group_lanes, lanes);
                const int64_t n = make_ids(3 + lanes % 3, rows, cap, state, ids);
                gpu_gather_check(g, gd_host_tensor_data(t), w, ids, n, lanes % 2,
                                 (size_t)(loads % 3), d_buf, d_ids, host, want, stream, what);
                gd_gatherer_destroy(g);
            }
        }
        gd_host_tensor_destroy(t);
    }
    gd_gatherer_t *g = NULL;
    gd_host_tensor_t *t = NULL;
    T_OK(gd_host_tensor_create(10, 4, GD_DTYPE_UINT8, 0, &t));
    T_OK(gd_host_tensor_register(t, NULL));
    T_OK(gd_param_set("GD_GATHER_SHAPE", "3x8"));
    T_FAILS(gd_gatherer_create(t, NULL, GD_GATHER_ZEROCOPY, NULL, &g), GD_ERR_INVALID_ARG,
            "GD_GATHER_SHAPE '3x8'");
    T_OK(gd_param_set("GD_GATHER_SHAPE", NULL));
    gd_host_tensor_destroy(t);
    CU(cudaFree(d_ids));
    CU(cudaFree(d_buf));
    free(ids);
    free(host);
    free(want);
    t_check_no_leaks();
}

/* Every pinning and allocation call of create + register + gatherer fails cleanly. */
static void check_faults_gpu(void) {
    T_OK(gd_param_set("GD_PIN_CHUNK_MB", "1"));
    for (int kind = 0; kind < 2; kind++) {
        const gd_fault_kind fk = kind ? GD_FAULT_PIN : GD_FAULT_ALLOC;
        gd_fault_set(fk, 0);
        gd_host_tensor_t *t = NULL;
        gd_gatherer_t *g = NULL, *g2 = NULL;
        gd_gatherer_options o = GD_GATHERER_OPTIONS_INIT, oc;
        static int64_t scores[3500];
        o.max_ids = 1000;
        oc = o; /* the zerocopy gatherer holds a cache of a quarter of the rows */
        oc.cache_bytes = 875 * 1024;
        oc.cache_scores = scores;
        T_OK(gd_host_tensor_create(3500, 1024, GD_DTYPE_UINT8, 0, &t));
        T_OK(gd_host_tensor_register(t, NULL));
        T_OK(gd_gatherer_create(t, NULL, GD_GATHER_CPU_DMA, &o, &g));
        T_OK(gd_gatherer_create(t, NULL, GD_GATHER_ZEROCOPY, &oc, &g2));
        const int64_t calls = gd_fault_calls(fk);
        gd_gatherer_destroy(g);
        gd_gatherer_destroy(g2);
        gd_host_tensor_destroy(t);
        T_ASSERT(calls >= (kind ? 4 : 3));
        for (int64_t k = 1; k <= calls; k++) {
            gd_fault_set(fk, k);
            t = NULL;
            g = g2 = NULL;
            gd_status st = gd_host_tensor_create(3500, 1024, GD_DTYPE_UINT8, 0, &t);
            if (st == GD_OK) st = gd_host_tensor_register(t, NULL);
            if (st == GD_OK) st = gd_gatherer_create(t, NULL, GD_GATHER_CPU_DMA, &o, &g);
            if (st == GD_OK) st = gd_gatherer_create(t, NULL, GD_GATHER_ZEROCOPY, &oc, &g2);
            const gd_status want = kind ? GD_ERR_PIN : GD_ERR_NO_MEMORY;
            if (st != want)
                T_FAIL_("%s fault %lld of %lld: %s (%s)", kind ? "pin" : "alloc", (long long)k,
                        (long long)calls, gd_status_string(st), gd_last_error());
            if (kind) T_ASSERT(strstr(gd_last_error(), "ulimit -l"));
            T_ASSERT(g2 == NULL);
            if (t) T_ASSERT(t->reg_chunks == 0 || t->registered);
            gd_gatherer_destroy(g);
            gd_host_tensor_destroy(t);
            t_check_no_leaks();
        }
        gd_fault_set(fk, 0);
    }
    T_OK(gd_param_set("GD_PIN_CHUNK_MB", NULL));
}
#endif

int main(void) {
    uint64_t state = t_seed();
    check_api_errors();
    check_cpu_mode(&state);
    check_faults_cpu();
    check_cache_options();
    t_check_no_leaks();
    fprintf(stderr, "CPU checks passed\n");
#ifdef GD_WITH_CUDA
    if (gd_device_count() == 0) {
        fprintf(stderr, "no GPU: the GPU gather checks are skipped\n");
        return GD_TEST_SKIP;
    }
    cudaStream_t stream;
    CU(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    check_gpu_modes(&state, stream);
    check_sm_budgets(&state, stream);
    check_cache(&state, stream);
    check_shapes(&state, stream);
    check_faults_gpu();
    CU(cudaStreamDestroy(stream));
    t_check_no_leaks();
    printf("every gather mode equals the CPU reference\n");
    return 0;
#else
    fprintf(stderr, "built without CUDA: the GPU gather checks are skipped\n");
    return GD_TEST_SKIP;
#endif
}
