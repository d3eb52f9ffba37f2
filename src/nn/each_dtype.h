/*
 * Instantiates a type-generic implementation file of the CPU backend for both of its element
 * types: define NN_IMPL as the file's name in quotes, include this file, then undefine NN_IMPL.
 * The file is compiled with NN_T float and NN_S(x) appending _f32 to a name, then with NN_T
 * double and _f64 (no include guard: every user includes it once per implementation file).
 * NN_CBLAS_GEMM names the CBLAS GEMM of the type, for files that include <cblas.h>.
 */
#define NN_T float
#define NN_S(x) x##_f32
#define NN_CBLAS_GEMM cblas_sgemm
#include NN_IMPL
#undef NN_T
#undef NN_S
#undef NN_CBLAS_GEMM

#define NN_T double
#define NN_S(x) x##_f64
#define NN_CBLAS_GEMM cblas_dgemm
#include NN_IMPL
#undef NN_T
#undef NN_S
#undef NN_CBLAS_GEMM
