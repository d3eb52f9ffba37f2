/*
 * The CPU GEMM behind every linear layer of the CPU backend: CBLAS (OpenBLAS from Debian's
 * libopenblas-dev) when the build found it (GD_HAVE_CBLAS), else a built-in blocked loop. The
 * loop is always compiled: it is the fallback on machines without OpenBLAS (such as the GPU
 * machines, which have no internet to install it), and the tests compare it with CBLAS where
 * both exist. Matrices are row-major and contiguous; see gd__nn_backend.gemm.
 *
 * OpenBLAS and OpenMP threads. OpenBLAS (Debian's pthread build) starts its own pool of one
 * thread per core, and its threads keep spinning after a call while the OpenMP threads of the
 * other ops and of the sampler want the same cores: on 2 cores a `small` epoch took 6.0 s
 * instead of 3.8 s. So, unless the user set OPENBLAS_NUM_THREADS, the first CBLAS call sets
 * OpenBLAS to one thread (once, for the process), and a large GEMM is cut into row blocks of C
 * that our own OpenMP threads hand to single-threaded CBLAS calls: one pool for all the CPU
 * work. With OPENBLAS_NUM_THREADS set, OpenBLAS keeps its threads and each GEMM is one call.
 */
#include "nn/gemm_cpu.h"

#ifdef GD_HAVE_CBLAS
#include <cblas.h>
#include <pthread.h>
#include <stdlib.h>
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

int gd__nn_have_cblas(void) {
#ifdef GD_HAVE_CBLAS
    return 1;
#else
    return 0;
#endif
}

#ifdef GD_HAVE_CBLAS
static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static int blas_split; /* 1: OpenBLAS runs one thread and our OpenMP threads split GEMMs */

static void blas_init(void) {
    const char *env = getenv("OPENBLAS_NUM_THREADS");
    if (env && *env) return;
    openblas_set_num_threads(1);
    blas_split = 1;
}

/*
 * The number of row blocks to cut C into: 1 (one call) unless the GEMM is large enough to pay
 * for a parallel region (2^20 multiply-adds, 16 rows a block at least); m fits an int.
 */
static int blas_parts(int64_t m, int64_t n, int64_t k, int threads) {
    pthread_once(&blas_once, blas_init);
    if (!blas_split || threads <= 1 || m < 32 || (double)m * (double)n * (double)k < 1048576.0)
        return 1;
    return m / 16 < threads ? (int)(m / 16) : threads;
}
#endif

#define NN_IMPL "nn/gemm_cpu_impl.h"
#include "nn/each_dtype.h"
#undef NN_IMPL
