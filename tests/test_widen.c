/*
 * Widening half feature rows to float32 (feature/widen.h): the CPU conversion against the
 * public gd_half_to_float / gd_bfloat16_to_float on every one of the 65536 values of both
 * dtypes, bit for bit (NaN payloads, signed zeros and subnormals included); the "cpu" gather
 * that widens as it copies against a gather then a conversion, on fresh random tables and ids
 * (duplicates, out of order, none), its id check and its refusal of a float32 table. On a GPU,
 * the kernel against the CPU reference on every value and on fresh random values, for counts
 * around the pair path's and the grid's limits, with aligned and misaligned source and output
 * (the single-element path), outputs poisoned first and the element past the end checked for
 * a stray write. Without a GPU the CPU part runs and the test exits 77.
 */
#include "feature/internal.h"
#include "feature/widen.h"
#include "test.h"

#include <string.h>

#ifdef GD_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

static uint32_t float_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float reference(uint16_t h, gd_dtype dtype) {
    return dtype == GD_DTYPE_FLOAT16 ? gd_half_to_float(h) : gd_bfloat16_to_float(h);
}

/* out[0..n) holds the widening of src[0..n), bit for bit. */
static void check_widened(const uint16_t *src, gd_dtype dtype, int64_t n, const float *out,
                          const char *what) {
    for (int64_t i = 0; i < n; i++) {
        const uint32_t want = float_bits(reference(src[i], dtype)), got = float_bits(out[i]);
        if (want != got)
            T_FAIL_("%s (%s): element %lld, value 0x%04x: got 0x%08x, want 0x%08x", what,
                    gd_dtype_name(dtype), (long long)i, src[i], got, want);
    }
}

static const gd_dtype dtypes[2] = {GD_DTYPE_FLOAT16, GD_DTYPE_BFLOAT16};

static void every_value_cpu(uint16_t *all, float *out) {
    for (int d = 0; d < 2; d++) {
        memset(out, 0xff, 65536 * sizeof *out);
        gd__widen_cpu(all, dtypes[d], 65536, out);
        check_widened(all, dtypes[d], 65536, out, "cpu, every value");
    }
    T_EQ_INT(gd__widen_dtype(GD_DTYPE_FLOAT16), 1);
    T_EQ_INT(gd__widen_dtype(GD_DTYPE_BFLOAT16), 1);
    T_EQ_INT(gd__widen_dtype(GD_DTYPE_FLOAT32), 0);
    T_EQ_INT(gd__widen_dtype(GD_DTYPE_INT16), 0);
}

/* The widening "cpu" gather on a fresh random table of dtype against gather + conversion. */
static void gather_widen_cpu(gd_dtype dtype, int64_t rows, int64_t cols, uint64_t *rng) {
    gd_host_tensor_t *t = NULL;
    gd_gatherer_t *g = NULL;
    T_OK(gd_host_tensor_create(rows, cols, dtype, 0, &t));
    uint16_t *tab = gd_host_tensor_data(t);
    for (int64_t i = 0; i < rows * cols; i++) tab[i] = (uint16_t)t_rand(rng);
    gd_gatherer_options o = GD_GATHERER_OPTIONS_INIT;
    o.threads = 1 + (int)(t_rand(rng) % 4);
    T_OK(gd_gatherer_create(t, NULL, GD_GATHER_CPU, &o, &g));
    const int64_t n = 1 + (int64_t)(t_rand(rng) % (uint64_t)(3 * rows));
    int64_t *ids = malloc((size_t)n * sizeof *ids);
    float *out = malloc((size_t)(n * cols + 1) * sizeof *out);
    uint16_t *raw = malloc((size_t)(n * cols) * sizeof *raw);
    T_ASSERT(ids && out && raw);
    for (int64_t i = 0; i < n; i++) ids[i] = (int64_t)(t_rand(rng) % (uint64_t)rows);
    memset(out, 0xa5, (size_t)(n * cols + 1) * sizeof *out);
    const float sentinel = out[n * cols];
    T_OK(gd__gather_widen(g, ids, n, out));
    T_OK(gd_gather(g, ids, n, 0, raw, NULL));
    check_widened(raw, dtype, n * cols, out, "gather-widen");
    T_EQ_INT(float_bits(out[n * cols]), float_bits(sentinel));
    T_OK(gd__gather_widen(g, ids, 0, out)); /* no rows: nothing written, no error */
    ids[n / 2] = rows;
    T_FAILS(gd__gather_widen(g, ids, n, out), GD_ERR_RANGE, "outside");
    free(ids);
    free(out);
    free(raw);
    gd_gatherer_destroy(g);
    gd_host_tensor_destroy(t);
}

static void refuses_float32(void) {
    gd_host_tensor_t *t = NULL;
    gd_gatherer_t *g = NULL;
    float out[4];
    int64_t id = 0;
    T_OK(gd_host_tensor_create(2, 4, GD_DTYPE_FLOAT32, 0, &t));
    T_OK(gd_gatherer_create(t, NULL, GD_GATHER_CPU, NULL, &g));
    T_FAILS(gd__gather_widen(g, &id, 1, out), GD_ERR_INTERNAL, "float32");
    gd_gatherer_destroy(g);
    gd_host_tensor_destroy(t);
}

#ifdef GD_WITH_CUDA
/*
 * The kernel on count values of src (copied to the GPU at element offset src_off), into an
 * output at element offset out_off, poisoned first; compared with the CPU reference.
 */
static void kernel_case(const uint16_t *src, gd_dtype dtype, int64_t count, int src_off,
                        int out_off, cudaStream_t stream) {
    uint16_t *d_src = NULL;
    float *d_out = NULL;
    const size_t out_elems = (size_t)(count + out_off + 1);
    float *out = malloc(out_elems * sizeof *out);
    T_ASSERT(out);
    CU(cudaMalloc((void **)&d_src, (size_t)(count + src_off + 1) * sizeof *d_src));
    CU(cudaMalloc((void **)&d_out, out_elems * sizeof *d_out));
    CU(cudaMemcpy(d_src + src_off, src, (size_t)count * sizeof *src, cudaMemcpyHostToDevice));
    CU(cudaMemset(d_out, 0xa5, out_elems * sizeof *d_out));
    CU(cudaDeviceSynchronize()); /* the memset is on the legacy stream, the kernel is not */
    T_OK(gd__widen_cuda(0, d_src + src_off, dtype, count, d_out + out_off, stream));
    CU(cudaStreamSynchronize(stream));
    CU(cudaMemcpy(out, d_out, out_elems * sizeof *out, cudaMemcpyDeviceToHost));
    char what[96];
    snprintf(what, sizeof what, "kernel, %lld values, offsets %d/%d", (long long)count, src_off,
             out_off);
    check_widened(src, dtype, count, out + out_off, what);
    for (int i = 0; i < out_off; i++) T_EQ_INT(float_bits(out[i]), 0xa5a5a5a5u);
    T_EQ_INT(float_bits(out[count + out_off]), 0xa5a5a5a5u);
    CU(cudaFree(d_src));
    CU(cudaFree(d_out));
    free(out);
}

static void kernel_vs_cpu(const uint16_t *all, uint64_t *rng) {
    cudaStream_t stream;
    CU(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    /* 3M values: more than the grid's 4096 blocks of 256 threads cover in one step. */
    const int64_t big = 3 << 20;
    uint16_t *fresh = malloc((size_t)big * sizeof *fresh);
    T_ASSERT(fresh);
    for (int64_t i = 0; i < big; i++) fresh[i] = (uint16_t)t_rand(rng);
    static const int64_t counts[] = {1, 2, 3, 255, 256, 513, 4097};
    for (int d = 0; d < 2; d++) {
        for (int s = 0; s < 2; s++)
            for (int o = 0; o < 2; o++) {
                kernel_case(all, dtypes[d], 65536, s, o, stream);
                kernel_case(fresh, dtypes[d], big - s - o, s, o, stream);
                for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
                    kernel_case(fresh + t_rand(rng) % 1000, dtypes[d], counts[c], s, o, stream);
            }
        T_OK(gd__widen_cuda(0, NULL, dtypes[d], 0, NULL, stream)); /* nothing to widen */
    }
    T_FAILS(gd__widen_cuda(0, fresh, GD_DTYPE_FLOAT32, 4, (float *)fresh, stream), GD_ERR_INTERNAL,
            "float16");
    CU(cudaStreamDestroy(stream));
    free(fresh);
}
#endif

int main(void) {
    uint64_t rng = t_seed();
    uint16_t *all = malloc(65536 * sizeof *all);
    float *out = malloc(65536 * sizeof *out);
    T_ASSERT(all && out);
    for (uint32_t i = 0; i < 65536; i++) all[i] = (uint16_t)i;
    every_value_cpu(all, out);
    static const int64_t shapes[][2] = {{1, 1}, {7, 3}, {100, 32}, {3000, 129}, {20000, 64}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int d = 0; d < 2; d++) gather_widen_cpu(dtypes[d], shapes[i][0], shapes[i][1], &rng);
    refuses_float32();
    free(out);
    if (gd_device_count() == 0) {
        free(all);
        t_check_no_leaks();
        fprintf(stderr, "skip: no GPU (the CPU conversion and the widening gather passed)\n");
        return GD_TEST_SKIP;
    }
#ifdef GD_WITH_CUDA
    kernel_vs_cpu(all, &rng);
#endif
    free(all);
    t_check_no_leaks();
    return 0;
}
