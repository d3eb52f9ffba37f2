/*
 * The CPU GEMM behind every linear layer of the CPU backend: CBLAS (OpenBLAS from Debian's
 * libopenblas-dev) when the build found it (GD_HAVE_CBLAS), else a built-in blocked loop. The
 * loop is always compiled: it is the fallback on machines without OpenBLAS (such as the GPU
 * machines, which have no internet to install it), and the tests compare it with CBLAS where
 * both exist. Matrices are row-major and contiguous; see gd__nn_backend.gemm.
 */
#include "nn/gemm_cpu.h"

#ifdef GD_HAVE_CBLAS
#include <cblas.h>
#endif

/*
 * The loop orders keep the innermost loop contiguous in C and B: rows of C are updated with
 * rows of B (N x N and T x N), or C[i][j] is a dot product of two contiguous rows (N x T). Blocks
 * of GEMM_BK rows of B and GEMM_BJ columns of C stay in cache while a block of rows of A passes
 * over them. T x T is rare (no op of the module uses it) and takes the plain path.
 */
#define GEMM_BI 64
#define GEMM_BJ 256
#define GEMM_BK 128

#define NN_T float
#define NN_S(x) x##_f32
#include "nn/gemm_cpu_impl.h"
#undef NN_T
#undef NN_S

#define NN_T double
#define NN_S(x) x##_f64
#include "nn/gemm_cpu_impl.h"
#undef NN_T
#undef NN_S

int gd__nn_have_cblas(void) {
#ifdef GD_HAVE_CBLAS
    return 1;
#else
    return 0;
#endif
}

void gd__nn_gemm_cpu_f32(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                         const float *a, const float *b, float beta, float *c, int threads) {
#ifdef GD_HAVE_CBLAS
    if (m > 0 && n > 0 && m <= INT32_MAX && n <= INT32_MAX && k <= INT32_MAX) {
        if (k == 0) {
            gd__nn_gemm_ref_f32(ta, tb, m, n, k, alpha, a, b, beta, c, threads);
            return;
        }
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    (int)m, (int)n, (int)k, alpha, a, ta ? (int)m : (int)k, b, tb ? (int)k : (int)n,
                    beta, c, (int)n);
        return;
    }
#endif
    gd__nn_gemm_ref_f32(ta, tb, m, n, k, alpha, a, b, beta, c, threads);
}

void gd__nn_gemm_cpu_f64(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                         const double *a, const double *b, double beta, double *c, int threads) {
#ifdef GD_HAVE_CBLAS
    if (m > 0 && n > 0 && m <= INT32_MAX && n <= INT32_MAX && k <= INT32_MAX) {
        if (k == 0) {
            gd__nn_gemm_ref_f64(ta, tb, m, n, k, alpha, a, b, beta, c, threads);
            return;
        }
        cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    (int)m, (int)n, (int)k, alpha, a, ta ? (int)m : (int)k, b, tb ? (int)k : (int)n,
                    beta, c, (int)n);
        return;
    }
#endif
    gd__nn_gemm_ref_f64(ta, tb, m, n, k, alpha, a, b, beta, c, threads);
}
