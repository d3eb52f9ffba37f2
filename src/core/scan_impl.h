/*
 * The parallel exclusive prefix sum, written once for each element type: util.c includes this
 * file with GD__SCAN_T (the element type) and GD__SCAN_NAME (the function) defined. Each
 * thread sums a block, the block sums are scanned serially, then each thread rewrites its
 * block; sums are carried in int64 whatever the element type.
 */
int64_t GD__SCAN_NAME(GD__SCAN_T *a, int64_t n, int threads) {
    int64_t partial[GD__SCAN_MAX_THREADS + 1];
    if (threads > GD__SCAN_MAX_THREADS) threads = GD__SCAN_MAX_THREADS;
    if (threads < 1 || n < ((int64_t)1 << 16)) threads = 1;
    const int64_t block = (n + threads - 1) / threads;
#pragma omp parallel for schedule(static, 1) num_threads(threads)
    for (int t = 0; t < threads; t++) {
        int64_t lo = t * block, hi = lo + block < n ? lo + block : n, sum = 0;
        for (int64_t i = lo; i < hi; i++) sum += a[i];
        partial[t + 1] = sum;
    }
    partial[0] = 0;
    for (int t = 0; t < threads; t++) partial[t + 1] += partial[t];
#pragma omp parallel for schedule(static, 1) num_threads(threads)
    for (int t = 0; t < threads; t++) {
        int64_t lo = t * block, hi = lo + block < n ? lo + block : n, run = partial[t];
        for (int64_t i = lo; i < hi; i++) {
            const int64_t x = a[i];
            a[i] = (GD__SCAN_T)run;
            run += x;
        }
    }
    return partial[threads];
}
