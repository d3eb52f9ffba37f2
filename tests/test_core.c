/*
 * Core services: status strings from the X-macro, thread-local last error, logging callback and
 * levels, the parameter registry, allocation counters and the fault-injection hook, and the
 * float16/bfloat16 conversions against exhaustive round trips, the shared id-list sort
 * against qsort, status names, and the gd_<struct>_init functions against their macros.
 */
#include "core/internal.h"
#include "test.h"

#include <pthread.h>

static int log_calls;
static char log_last[256];
static void capture(gd_log_level level, const char *msg, void *user) {
    (void)level;
    *(int *)user += 1;
    log_calls++;
    snprintf(log_last, sizeof log_last, "%s", msg);
}

static void *thread_error(void *arg) {
    (void)arg;
    gd__error(GD_ERR_IO, "from another thread");
    return NULL;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/*
 * gd__sort_i64 and gd__sort_i32 against qsort on lists of every length up to past the insertion
 * sort's limit and a few long ones, in the orders that break naive quicksorts (sorted, reversed,
 * all equal, organ pipe) and random with many duplicates.
 */
static void check_sort(uint64_t *state) {
    enum { MAX_N = 5000 };
    static int64_t a[MAX_N], want[MAX_N];
    static int32_t b[MAX_N];
    const int64_t sizes[] = {0, 1, 2, 3, 31, 32, 33, 64, 100, 1000, MAX_N};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        for (int order = 0; order < 5; order++) {
            const int64_t n = sizes[k];
            for (int64_t i = 0; i < n; i++) {
                int64_t x = order == 0   ? i
                            : order == 1 ? n - i
                            : order == 2 ? 7
                            : order == 3 ? (i < n / 2 ? i : n - i)
                                         : (int64_t)(t_rand(state) % 50) - 25;
                a[i] = want[i] = x * 65537;
                b[i] = (int32_t)(x * 65537);
            }
            qsort(want, (size_t)n, sizeof want[0], cmp_i64);
            gd__sort_i64(a, n);
            gd__sort_i32(b, n);
            for (int64_t i = 0; i < n; i++) {
                T_EQ_INT(a[i], want[i]);
                T_EQ_INT(b[i], want[i]);
            }
        }
    }
}

/*
 * gd_<struct>_init against the struct's *_INIT macro, byte for byte: the struct is poisoned
 * first, so a byte the function leaves unwritten shows, and the expected value is a static
 * object, whose padding is zero (an automatic one's padding is indeterminate).
 */
#define CHECK_INIT(type, init)                                                            \
    do {                                                                                  \
        static const type want = init;                                                    \
        type got;                                                                         \
        memset(&got, 0xa5, sizeof got);                                                   \
        type##_init(&got);                                                                \
        if (memcmp(&got, &want, sizeof got) != 0)                                         \
            T_FAIL_("%s differs from %s", #type "_init", #init);                          \
        T_EQ_INT(got.size, sizeof(type));                                                 \
        type##_init(NULL);                                                                \
    } while (0)

static void check_inits(void) {
    CHECK_INIT(gd_dataset_open_options, GD_DATASET_OPEN_OPTIONS_INIT);
    CHECK_INIT(gd_csc_options, GD_CSC_OPTIONS_INIT);
    CHECK_INIT(gd_generate_options, GD_GENERATE_OPTIONS_INIT);
    CHECK_INIT(gd_convert_options, GD_CONVERT_OPTIONS_INIT);
    CHECK_INIT(gd_gatherer_options, GD_GATHERER_OPTIONS_INIT);
    CHECK_INIT(gd_gatherer_info, GD_GATHERER_INFO_INIT);
    CHECK_INIT(gd_graph_options, GD_GRAPH_OPTIONS_INIT);
    CHECK_INIT(gd_graph_info, GD_GRAPH_INFO_INIT);
    CHECK_INIT(gd_sampler_options, GD_SAMPLER_OPTIONS_INIT);
    CHECK_INIT(gd_sampler_info, GD_SAMPLER_INFO_INIT);
    CHECK_INIT(gd_loader_options, GD_LOADER_OPTIONS_INIT);
    CHECK_INIT(gd_context_options, GD_CONTEXT_OPTIONS_INIT);
    CHECK_INIT(gd_context_info, GD_CONTEXT_INFO_INIT);
    CHECK_INIT(gd_train_options, GD_TRAIN_OPTIONS_INIT);
    CHECK_INIT(gd_model_info, GD_MODEL_INFO_INIT);
    CHECK_INIT(gd_trainer_info, GD_TRAINER_INFO_INIT);
    CHECK_INIT(gd_fit_options, GD_FIT_OPTIONS_INIT);
    CHECK_INIT(gd_fit_result, GD_FIT_RESULT_INIT);
    CHECK_INIT(gd_checkpoint_info, GD_CHECKPOINT_INFO_INIT);
    CHECK_INIT(gd_loader_info, GD_LOADER_INFO_INIT);
    CHECK_INIT(gd_batch_info, GD_BATCH_INFO_INIT);
}

int main(void) {
    uint64_t state = t_seed();

    /* version */
    char expect[32];
    snprintf(expect, sizeof expect, "%d.%d.%d", GD_VERSION_MAJOR, GD_VERSION_MINOR,
             GD_VERSION_PATCH);
    T_EQ_STR(gd_version(), expect);
    T_EQ_INT(gd_version_hex(), GD_VERSION_HEX);

    /* status strings */
    T_EQ_STR(gd_status_string(GD_OK), "success");
    T_EQ_STR(gd_status_string(GD_ERR_NO_MEMORY), "out of memory");
    T_EQ_STR(gd_status_string((gd_status)999), "unknown status");
    /* status names: every code of the X-macro by its own name, NULL outside the enum */
#define CHECK_NAME_(name, value, text) T_EQ_STR(gd_status_name(name), #name);
    GD_STATUS_MAP(CHECK_NAME_)
#undef CHECK_NAME_
    T_EQ_STR(gd_status_name(GD_ERR_INVALID_ARG), "GD_ERR_INVALID_ARG");
    T_ASSERT(gd_status_name((gd_status)999) == NULL);
    T_ASSERT(gd_status_name((gd_status)-1) == NULL);

    /* last error is per thread */
    gd_clear_error();
    T_EQ_STR(gd_last_error(), "");
    T_EQ_INT(gd__error(GD_ERR_RANGE, "value %d", 42), GD_ERR_RANGE);
    T_EQ_STR(gd_last_error(), "value 42");
    pthread_t th;
    T_EQ_INT(pthread_create(&th, NULL, thread_error, NULL), 0);
    pthread_join(th, NULL);
    T_EQ_STR(gd_last_error(), "value 42");
    gd__error_context(GD_ERR_RANGE, "opening %s", "x.npy");
    T_EQ_STR(gd_last_error(), "opening x.npy: value 42");

    /* logging: the callback sees messages at or under the threshold only */
    int mine = 0;
    gd_log_set(capture, &mine);
    gd_log_level_set(GD_LOG_WARN);
    GD_WARN("warned %d", 1);
    GD_INFO("not shown");
    T_EQ_INT(mine, 1);
    T_EQ_STR(log_last, "warned 1");
    gd_log_level_set(GD_LOG_DEBUG);
    GD_INFO("shown %s", "now");
    T_EQ_INT(mine, 2);
    gd_log_set(NULL, NULL);
    gd_log_level lv;
    T_OK(gd_log_level_parse("trace", &lv));
    T_EQ_INT(lv, GD_LOG_TRACE);
    T_OK(gd_log_level_parse("2", &lv));
    T_EQ_INT(lv, GD_LOG_WARN);
    T_FAILS(gd_log_level_parse("loud", &lv), GD_ERR_INVALID_ARG, "loud");
    gd_log_level_set(GD_LOG_WARN);

    /* parameters: default, environment, override */
    const char *v;
    int64_t iv;
    T_ASSERT(gd_param_count() >= 3);
    unsetenv("GD_THREADS");
    T_OK(gd_param_get("GD_THREADS", &v));
    T_EQ_STR(v, "0");
    setenv("GD_THREADS", "3", 1);
    T_OK(gd_param_get_int("GD_THREADS", &iv));
    T_EQ_INT(iv, 3);
    T_OK(gd_param_set("GD_THREADS", "5"));
    T_OK(gd_param_get_int("GD_THREADS", &iv));
    T_EQ_INT(iv, 5);
    T_OK(gd_param_set("GD_THREADS", NULL));
    T_OK(gd_param_get_int("GD_THREADS", &iv));
    T_EQ_INT(iv, 3);
    setenv("GD_THREADS", "many", 1);
    T_FAILS(gd_param_get_int("GD_THREADS", &iv), GD_ERR_INVALID_ARG, "many");
    unsetenv("GD_THREADS");
    T_FAILS(gd_param_get("GD_NO_SUCH", &v), GD_ERR_NOT_FOUND, "GD_NO_SUCH");
    for (int i = 0; i < gd_param_count(); i++) {
        const char *name, *def, *help;
        T_OK(gd_param_describe(i, &name, &def, &help));
        T_ASSERT(strncmp(name, "GD_", 3) == 0 && def && help && *help);
    }

    /* allocation counters and fault injection */
    int64_t b0, y0, b1, y1;
    gd_alloc_stats(&b0, &y0);
    void *p = gd_malloc(100);
    T_ASSERT(p);
    gd_alloc_stats(&b1, &y1);
    T_EQ_INT(b1 - b0, 1);
    T_EQ_INT(y1 - y0, 100);
    p = gd_realloc(p, 300);
    T_ASSERT(p);
    T_EQ_INT(((uintptr_t)p) % 16, 0);
    gd_alloc_stats(&b1, &y1);
    T_EQ_INT(y1 - y0, 300);
    gd_free(p);
    T_ASSERT(gd_calloc(SIZE_MAX / 2, 4) == NULL); /* overflow is refused, not wrapped */
    gd_fault_set(GD_FAULT_ALLOC, 3);
    void *a = gd_malloc(8), *b = gd_malloc(8), *c = gd_malloc(8), *d = gd_malloc(8);
    T_ASSERT(a && b && !c && d);
    T_EQ_INT(gd_fault_calls(GD_FAULT_ALLOC), 4);
    gd_free(a);
    gd_free(b);
    gd_free(d);
    gd_fault_set(GD_FAULT_ALLOC, 0);
    t_check_no_leaks();

    /* dtypes */
    gd_dtype dt;
    T_OK(gd_dtype_parse("bfloat16", &dt));
    T_EQ_INT(dt, GD_DTYPE_BFLOAT16);
    T_EQ_INT(gd_dtype_size(GD_DTYPE_INT64), 8);
    T_EQ_STR(gd_dtype_name(GD_DTYPE_FLOAT16), "float16");
    T_FAILS(gd_dtype_parse("complex", &dt), GD_ERR_INVALID_ARG, "complex");

    /* float16: every finite half survives half -> float -> half exactly */
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = gd_half_to_float((uint16_t)h);
        if (isnan(f)) {
            T_ASSERT(isnan(gd_half_to_float(gd_float_to_half(f))));
            continue;
        }
        T_EQ_U64(gd_float_to_half(f), h);
    }
    T_NEAR(gd_half_to_float(gd_float_to_half(1.0f / 3.0f)), 0.333251953125, 0);
    T_EQ_U64(gd_float_to_half(65520.0f), 0x7c00); /* rounds to infinity */
    T_EQ_U64(gd_float_to_half(5.96e-8f), 0x0001); /* smallest subnormal */
    /* random floats: the half is the nearest representable value */
    for (int i = 0; i < 100000; i++) {
        float f = ((float)(t_rand(&state) % 2000001) - 1000000.0f) / 1000.0f;
        float back = gd_half_to_float(gd_float_to_half(f));
        T_ASSERT(fabsf(back - f) <= fabsf(f) * (1.0f / 2048.0f) + 1e-7f);
    }
    /* bfloat16: round trip of every bf16, round-to-nearest-even on ties */
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = gd_bfloat16_to_float((uint16_t)h);
        if (isnan(f)) continue;
        T_EQ_U64(gd_float_to_bfloat16(f), h);
    }
    T_EQ_U64(gd_float_to_bfloat16(1.00390625f), 0x3f80); /* tie goes to even */
    T_EQ_U64(gd_float_to_bfloat16(1.01171875f), 0x3f82);
    check_sort(&state);
    check_inits();
    (void)log_calls;
    return 0;
}
