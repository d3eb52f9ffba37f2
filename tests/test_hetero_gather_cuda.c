/*
 * The per-type gather of heterogeneous training (feature/hetero_gather.h). The CPU gather (the
 * cpu modes' and the kernel's reference) against an element-by-element loop over
 * gd__feature_at, on fresh random tables of every dtype (float32, float16, bfloat16: random
 * bits, NaN payloads included), odd and aligned widths, random ids with repeats and a type
 * offset, one and two threads, and no rows. On a GPU, the kernel against the CPU gather bit for
 * bit, reading the table from GPU memory (all-gpu) and from host memory registered through a
 * context (zero-copy), with the table and the output 16-byte aligned (the vector path) and
 * shifted by one element (the scalar path), the output poisoned first and a sentinel after its
 * end.
 *
 * The cache lookup (zero-copy's per-type GPU caches): a tier store over the table caches a
 * random set of rows under a random budget, and its cache is then overwritten with other random
 * bytes, so that a row read from the wrong tier shows. The CPU gather through the CPU store's
 * view against an element loop that reads a cached row from its slot (from the store's row and
 * slot lists) and any other from the table; on a GPU, the kernel through a CUDA store over the
 * registered table (same slots, the same cache bytes copied in), aligned and shifted, against
 * it bit for bit. Without a GPU the CPU parts run and the test exits 77.
 */
#include "feature/hetero_gather.h"
#include "feature/internal.h"
#include "io/dataset.h"
#include "test.h"

#include <string.h>

#ifdef GD_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

static const gd_dtype dtypes[3] = {GD_DTYPE_FLOAT32, GD_DTYPE_FLOAT16, GD_DTYPE_BFLOAT16};
static const int64_t widths[] = {1, 3, 7, 8, 16, 33, 128, 129, 300};
#define NUM_WIDTHS ((int)(sizeof widths / sizeof widths[0]))

/* A random case: a table of rows x dim of dtype (random bits), n ids in [first, first + rows). */
typedef struct {
    gd_dtype dtype;
    int64_t rows, dim, first, n;
    void *table;
    int64_t *ids;
} gcase;

static gcase make_case(gd_dtype dtype, int64_t dim, int64_t n, uint64_t *rng) {
    gcase c;
    c.dtype = dtype;
    c.dim = dim;
    c.rows = 1 + (int64_t)(t_rand(rng) % 500);
    c.first = (int64_t)(t_rand(rng) % 100000);
    c.n = n;
    const size_t bytes = (size_t)(c.rows * dim) * gd_dtype_size(dtype);
    c.table = malloc(bytes);
    c.ids = malloc((size_t)(n > 0 ? n : 1) * sizeof *c.ids);
    T_ASSERT(c.table && c.ids);
    for (size_t i = 0; i < bytes; i++) ((unsigned char *)c.table)[i] = (unsigned char)t_rand(rng);
    for (int64_t i = 0; i < n; i++) c.ids[i] = c.first + (int64_t)(t_rand(rng) % (uint64_t)c.rows);
    return c;
}

static void free_case(gcase *c) {
    free(c->table);
    free(c->ids);
}

static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* got[0 .. n * dim) equals want bit for bit. */
static void check_rows(const gcase *c, const float *want, const float *got, const char *what) {
    for (int64_t i = 0; i < c->n * c->dim; i++)
        if (bits(want[i]) != bits(got[i]))
            T_FAIL_("%s: %s, width %lld, %lld rows: value %lld (row %lld, id %lld) is 0x%08x, "
                    "want 0x%08x",
                    what, gd_dtype_name(c->dtype), (long long)c->dim, (long long)c->n,
                    (long long)i, (long long)(i / c->dim), (long long)c->ids[i / c->dim],
                    bits(got[i]), bits(want[i]));
}

/* The CPU gather against the element loop; the result goes to want (n * dim floats). */
static void cpu_case(const gcase *c, int threads, float *want) {
    const size_t count = (size_t)(c->n * c->dim);
    float *got = malloc((count + 1) * sizeof *got);
    T_ASSERT(got);
    for (int64_t i = 0; i < c->n; i++)
        for (int64_t j = 0; j < c->dim; j++)
            want[i * c->dim + j] =
                gd__feature_at(c->table, c->dtype, (c->ids[i] - c->first) * c->dim + j);
    memset(got, 0xa5, (count + 1) * sizeof *got);
    const uint32_t sentinel = bits(got[count]);
    const gd__hetero_rows rows = gd__hetero_rows_table(c->table);
    gd__hetero_gather_cpu(&rows, c->dtype, c->dim, c->first, c->ids, c->n, got, threads);
    check_rows(c, want, got, "cpu");
    T_EQ_INT(bits(got[count]), sentinel);
    free(got);
}

#ifdef GD_WITH_CUDA
/*
 * The kernel on c with the table at device address table (already holding c's rows shifted by
 * shift elements from an aligned start) into an output shifted by out_shift floats.
 */
static void kernel_run(const gcase *c, const gd__hetero_rows *rows, int out_shift,
                       const float *want, cudaStream_t stream, const char *what) {
    const size_t count = (size_t)(c->n * c->dim), total = count + (size_t)out_shift + 1;
    int64_t *d_ids = NULL;
    float *d_out = NULL, *got = malloc(total * sizeof *got);
    T_ASSERT(got);
    CU(cudaMalloc((void **)&d_ids, (size_t)(c->n > 0 ? c->n : 1) * sizeof *d_ids));
    CU(cudaMalloc((void **)&d_out, total * sizeof *d_out));
    CU(cudaMemcpy(d_ids, c->ids, (size_t)c->n * sizeof *d_ids, cudaMemcpyHostToDevice));
    CU(cudaMemset(d_out, 0xa5, total * sizeof *d_out));
    /* The copy and the memset are on the legacy stream, the kernel on a non-blocking one. */
    CU(cudaDeviceSynchronize());
    T_OK(gd__hetero_gather_cuda(0, rows, c->dtype, c->dim, c->first, d_ids, c->n,
                                d_out + out_shift, stream));
    CU(cudaStreamSynchronize(stream));
    CU(cudaMemcpy(got, d_out, total * sizeof *got, cudaMemcpyDeviceToHost));
    check_rows(c, want, got + out_shift, what);
    for (int k = 0; k < out_shift; k++) T_EQ_INT(bits(got[k]), 0xa5a5a5a5u);
    T_EQ_INT(bits(got[total - 1]), 0xa5a5a5a5u);
    CU(cudaFree(d_ids));
    CU(cudaFree(d_out));
    free(got);
}

/*
 * The kernel on c against want, from GPU memory and from registered host memory, aligned and
 * shifted: shift 0 takes the vector path where the width allows it, shift 1 (a table or an
 * output one element off the 16-byte grid) the scalar path.
 */
static void gpu_case(const gcase *c, const float *want, cudaStream_t stream) {
    const size_t esize = gd_dtype_size(c->dtype);
    const size_t bytes = (size_t)(c->rows * c->dim) * esize;
    for (int shift = 0; shift < 2; shift++) {
        unsigned char *d_table = NULL;
        CU(cudaMalloc((void **)&d_table, bytes + 16));
        CU(cudaMemcpy(d_table + shift * esize, c->table, bytes, cudaMemcpyHostToDevice));
        const gd__hetero_rows rows = gd__hetero_rows_table(d_table + shift * esize);
        kernel_run(c, &rows, 0, want, stream, shift ? "gpu memory, shifted table" : "gpu memory");
        if (shift == 0) kernel_run(c, &rows, 1, want, stream, "gpu memory, shifted output");
        CU(cudaFree(d_table));
    }
    /* zero-copy: the table in host memory, registered through the default context. */
    gd_host_tensor_t *t = NULL;
    T_OK(gd_host_tensor_create(c->rows + 1, c->dim, c->dtype, 0, &t));
    T_OK(gd_host_tensor_register(t, NULL));
    for (int shift = 0; shift < 2; shift++) {
        memcpy((unsigned char *)gd_host_tensor_data(t) + shift * esize, c->table, bytes);
        const gd__hetero_rows rows =
            gd__hetero_rows_table((const unsigned char *)t->device_ptr + shift * esize);
        kernel_run(c, &rows, 0, want, stream,
                   shift ? "registered host memory, shifted table" : "registered host memory");
    }
    gd_host_tensor_destroy(t);
}
#endif

/*
 * A cache over c's table: a random set of distinct rows (about a third, in random order: the
 * hottest-first list) under a budget that may pass some over, built in a CPU tier store whose
 * cache is then refilled with random bytes.
 */
static gd__tier_store *cached_store(const gcase *c, uint64_t *rng, int64_t **cand, int64_t *n,
                                    int64_t *budget) {
    const int64_t rb = c->dim * (int64_t)gd_dtype_size(c->dtype);
    const gd__row_shape shape = {c->rows, rb, NULL, NULL};
    gd__tier_store *s = NULL;
    *cand = malloc((size_t)c->rows * sizeof **cand);
    T_ASSERT(*cand);
    for (int64_t r = 0; r < c->rows; r++) (*cand)[r] = r;
    for (int64_t r = c->rows - 1; r > 0; r--) {
        const int64_t k = (int64_t)(t_rand(rng) % (uint64_t)(r + 1)), x = (*cand)[r];
        (*cand)[r] = (*cand)[k];
        (*cand)[k] = x;
    }
    *n = 1 + c->rows / 3;
    *budget = rb * (1 + (int64_t)(t_rand(rng) % (uint64_t)*n));
    T_OK(gd__tier_store_create(&shape, -1, GD__TIER_HOST, c->table, c->rows, &s));
    T_OK(gd__tier_cache_build(s, *cand, *n, *budget));
    T_ASSERT(s->cache.count > 0 && s->loc);
    for (int64_t i = 0; i < s->cache.units * rb; i++)
        ((unsigned char *)s->cache.mem)[i] = (unsigned char)t_rand(rng);
    return s;
}

/*
 * The CPU gather through s (cached_store) against the element loop: a cached row from its cache
 * slot, any other from the table; want gets the rows (n * dim floats).
 */
static void cpu_cached_case(const gcase *c, const gd__tier_store *s, int threads, float *want) {
    const size_t count = (size_t)(c->n * c->dim);
    int64_t *slot = malloc((size_t)c->rows * sizeof *slot);
    float *got = malloc((count + 1) * sizeof *got);
    T_ASSERT(slot && got);
    for (int64_t r = 0; r < c->rows; r++) slot[r] = -1;
    for (int64_t k = 0; k < s->cache.count; k++) slot[s->cache.rows[k]] = s->cache.slots[k];
    for (int64_t i = 0; i < c->n; i++) {
        const int64_t r = c->ids[i] - c->first;
        for (int64_t j = 0; j < c->dim; j++)
            want[i * c->dim + j] =
                slot[r] >= 0 ? gd__feature_at(s->cache.mem, c->dtype, slot[r] * c->dim + j)
                             : gd__feature_at(c->table, c->dtype, r * c->dim + j);
    }
    memset(got, 0xa5, (count + 1) * sizeof *got);
    const uint32_t sentinel = bits(got[count]);
    const gd__hetero_rows rows = gd__hetero_rows_store(s);
    gd__hetero_gather_cpu(&rows, c->dtype, c->dim, c->first, c->ids, c->n, got, threads);
    check_rows(c, want, got, "cpu, cached");
    T_EQ_INT(bits(got[count]), sentinel);
    free(slot);
    free(got);
}

#ifdef GD_WITH_CUDA
/*
 * The kernel through a CUDA store over the registered table (aligned, then shifted by one
 * element: the scalar path) built from the same candidates and budget as cpu (the same slots),
 * its cache overwritten with cpu's bytes, against want.
 */
static void gpu_cached_case(const gcase *c, const gd__tier_store *cpu, const int64_t *cand,
                            int64_t n, int64_t budget, const float *want, cudaStream_t stream) {
    const size_t esize = gd_dtype_size(c->dtype);
    const int64_t rb = c->dim * (int64_t)esize;
    const gd__row_shape shape = {c->rows, rb, NULL, NULL};
    gd_host_tensor_t *t = NULL;
    T_OK(gd_host_tensor_create(c->rows + 1, c->dim, c->dtype, 0, &t));
    T_OK(gd_host_tensor_register(t, NULL));
    for (int shift = 0; shift < 2; shift++) {
        gd__tier_store *s = NULL;
        memcpy((unsigned char *)gd_host_tensor_data(t) + shift * esize, c->table,
               (size_t)(c->rows * rb));
        T_OK(gd__tier_store_create(&shape, 0, GD__TIER_HOST,
                                   (const unsigned char *)t->device_ptr + shift * esize, c->rows,
                                   &s));
        T_OK(gd__tier_cache_build(s, cand, n, budget));
        T_EQ_INT(s->cache.count, cpu->cache.count);
        for (int64_t k = 0; k < s->cache.count; k++) {
            T_EQ_INT(s->cache.rows[k], cpu->cache.rows[k]);
            T_EQ_INT(s->cache.slots[k], cpu->cache.slots[k]);
        }
        CU(cudaMemcpy(s->cache.mem, cpu->cache.mem, (size_t)(cpu->cache.units * rb),
                      cudaMemcpyHostToDevice));
        CU(cudaDeviceSynchronize());
        const gd__hetero_rows rows = gd__hetero_rows_store(s);
        kernel_run(c, &rows, 0, want, stream,
                   shift ? "gpu cache + registered host memory, shifted table"
                         : "gpu cache + registered host memory");
        if (shift == 0)
            kernel_run(c, &rows, 1, want, stream, "gpu cache + registered host, shifted output");
        gd__tier_store_destroy(s);
    }
    gd_host_tensor_destroy(t);
}
#endif

int main(void) {
    const uint64_t seed = t_seed();
    uint64_t rng = seed;
    int gpu = 0;
#ifdef GD_WITH_CUDA
    cudaStream_t stream = NULL;
    gpu = gd_device_count() > 0;
    if (gpu) CU(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
#endif
    for (int d = 0; d < 3; d++)
        for (int w = 0; w < NUM_WIDTHS; w++) {
            /* No rows, one, and a random count (past the threads' threshold at wide rows). */
            const int64_t counts[3] = {0, 1, 1 + (int64_t)(t_rand(&rng) % 1500)};
            for (int k = 0; k < 3; k++) {
                gcase c = make_case(dtypes[d], widths[w], counts[k], &rng);
                float *want = malloc((size_t)(c.n * c.dim + 1) * sizeof *want);
                T_ASSERT(want);
                cpu_case(&c, 1 + (int)(t_rand(&rng) % 2), want);
#ifdef GD_WITH_CUDA
                if (gpu) gpu_case(&c, want, stream);
#endif
                int64_t *cand = NULL, n = 0, budget = 0;
                gd__tier_store *s = cached_store(&c, &rng, &cand, &n, &budget);
                cpu_cached_case(&c, s, 1 + (int)(t_rand(&rng) % 2), want);
#ifdef GD_WITH_CUDA
                if (gpu) gpu_cached_case(&c, s, cand, n, budget, want, stream);
#endif
                gd__tier_store_destroy(s);
                free(cand);
                free(want);
                free_case(&c);
            }
        }
#ifdef GD_WITH_CUDA
    if (gpu) CU(cudaStreamDestroy(stream));
#endif
    t_check_no_leaks();
    if (!gpu) {
        fprintf(stderr, "no GPU: the CPU gather is checked, the kernel is skipped\n");
        return GD_TEST_SKIP;
    }
    fprintf(stderr, "the per-type gather kernel equals the CPU gather\n");
    return 0;
}
