/*
 * The CPU GEMM of the nn module (gemm_cpu.c): CBLAS where the build found OpenBLAS, else the
 * built-in blocked loop, which is always available as gd__nn_gemm_ref_* for the tests.
 * Row-major, contiguous: op(A) is m x k, op(B) k x n, C m x n; ta / tb non-zero = transposed.
 */
#ifndef GD_NN_GEMM_CPU_H
#define GD_NN_GEMM_CPU_H

#include <stdint.h>

/* 1 when the CPU GEMM is CBLAS (OpenBLAS), 0 when it is the built-in loop. */
int gd__nn_have_cblas(void);

void gd__nn_gemm_cpu_f32(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                         const float *a, const float *b, float beta, float *c, int threads);
void gd__nn_gemm_cpu_f64(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                         const double *a, const double *b, double beta, double *c, int threads);
void gd__nn_gemm_ref_f32(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                         const float *a, const float *b, float beta, float *c, int threads);
void gd__nn_gemm_ref_f64(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                         const double *a, const double *b, double beta, double *c, int threads);

#endif
