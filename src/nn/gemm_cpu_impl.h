/*
 * The GEMM of the CPU backend over one element type, included twice by gemm_cpu.c (float,
 * double): the built-in loop, and the entry that hands a GEMM to CBLAS or to the loop.
 * C = alpha op(A) op(B) + beta C; beta = 0 overwrites C without reading it (as BLAS does, so
 * garbage or NaN in C does not leak through). Row blocks of C are shared among threads.
 */
void NN_S(gd__nn_gemm_ref)(int ta, int tb, int64_t m, int64_t n, int64_t k, NN_T alpha,
                           const NN_T *a, const NN_T *b, NN_T beta, NN_T *c, int threads) {
    if (m <= 0 || n <= 0) return;
    const int par = m * n * (k > 0 ? k : 1) > (1 << 18) && m > GEMM_BI;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (par)
    for (int64_t i0 = 0; i0 < m; i0 += GEMM_BI) {
        const int64_t i1 = i0 + GEMM_BI < m ? i0 + GEMM_BI : m;
        for (int64_t i = i0; i < i1; i++) {
            NN_T *ci = c + i * n;
            if (beta == 0)
                for (int64_t j = 0; j < n; j++) ci[j] = 0;
            else if (beta != 1)
                for (int64_t j = 0; j < n; j++) ci[j] *= beta;
        }
        if (k <= 0 || alpha == 0) continue;
        if (!tb) {
            for (int64_t p0 = 0; p0 < k; p0 += GEMM_BK) {
                const int64_t p1 = p0 + GEMM_BK < k ? p0 + GEMM_BK : k;
                for (int64_t j0 = 0; j0 < n; j0 += GEMM_BJ) {
                    const int64_t j1 = j0 + GEMM_BJ < n ? j0 + GEMM_BJ : n;
                    for (int64_t i = i0; i < i1; i++) {
                        NN_T *restrict ci = c + i * n;
                        for (int64_t p = p0; p < p1; p++) {
                            const NN_T aip = alpha * (ta ? a[p * m + i] : a[i * k + p]);
                            const NN_T *restrict bp = b + p * n;
                            for (int64_t j = j0; j < j1; j++) ci[j] += aip * bp[j];
                        }
                    }
                }
            }
        } else if (!ta) {
            for (int64_t j0 = 0; j0 < n; j0 += GEMM_BJ) {
                const int64_t j1 = j0 + GEMM_BJ < n ? j0 + GEMM_BJ : n;
                for (int64_t i = i0; i < i1; i++) {
                    const NN_T *restrict ai = a + i * k;
                    NN_T *ci = c + i * n;
                    for (int64_t j = j0; j < j1; j++) {
                        const NN_T *restrict bj = b + j * k;
                        NN_T acc = 0;
                        for (int64_t p = 0; p < k; p++) acc += ai[p] * bj[p];
                        ci[j] += alpha * acc;
                    }
                }
            }
        } else {
            for (int64_t i = i0; i < i1; i++)
                for (int64_t j = 0; j < n; j++) {
                    NN_T acc = 0;
                    for (int64_t p = 0; p < k; p++) acc += a[p * m + i] * b[j * k + p];
                    c[i * n + j] += alpha * acc;
                }
        }
    }
}

#ifdef GD_HAVE_CBLAS
/*
 * C = alpha op(A) op(B) + beta C with C cut into `parts` row blocks, one CBLAS call each. Row
 * i of op(A) starts at a + i * lda untransposed and at a + i transposed (A is k x m then); op(B)
 * is the same for every block.
 */
static void NN_S(gemm_split)(int ta, int tb, int m, int n, int k, NN_T alpha, const NN_T *a,
                             const NN_T *b, NN_T beta, NN_T *c, int parts) {
    const int lda = ta ? m : k, ldb = tb ? k : n;
#pragma omp parallel for schedule(static, 1) num_threads(parts) if (parts > 1)
    for (int p = 0; p < parts; p++) {
        const int i0 = (int)((int64_t)m * p / parts), i1 = (int)((int64_t)m * (p + 1) / parts);
        NN_CBLAS_GEMM(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                      i1 - i0, n, k, alpha, ta ? a + i0 : a + (int64_t)i0 * lda, lda, b, ldb, beta,
                      c + (int64_t)i0 * n, n);
    }
}
#endif

/* CBLAS where the sizes fit its int arguments and there is work (k > 0), else the loop. */
void NN_S(gd__nn_gemm_cpu)(int ta, int tb, int64_t m, int64_t n, int64_t k, NN_T alpha,
                           const NN_T *a, const NN_T *b, NN_T beta, NN_T *c, int threads) {
#ifdef GD_HAVE_CBLAS
    if (m > 0 && n > 0 && k > 0 && m <= INT32_MAX && n <= INT32_MAX && k <= INT32_MAX) {
        NN_S(gemm_split)(ta, tb, (int)m, (int)n, (int)k, alpha, a, b, beta, c,
                         blas_parts(m, n, k, threads));
        return;
    }
#endif
    NN_S(gd__nn_gemm_ref)(ta, tb, m, n, k, alpha, a, b, beta, c, threads);
}
