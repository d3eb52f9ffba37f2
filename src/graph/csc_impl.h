/*
 * The index-type-specific kernels of the CSC build, written once and instantiated by csc.c for
 * int32 and int64 indices (the graph stores int32 whenever the node count allows, which halves
 * what samplers read over PCIe). Before including this file, define CSC_T (the index type) and
 * CSC_NAME(x) (which appends the type suffix to a name). Everything here is static.
 */

/*
 * Scatter edges [begin, end) into their destination lists. cursor[v] starts at the first slot of
 * v's list and is bumped atomically when several threads run, so no two write the same slot;
 * the order inside a list depends on the schedule, which is why every list is sorted
 * afterwards. The count pass has already checked every id, so none is out of range here.
 */
static void CSC_NAME(scatter)(const int64_t *src, const int64_t *dst, int64_t begin, int64_t end,
                              int symmetrize, int drop_loops, int64_t *cursor, CSC_T *idx,
                              int threads) {
    int atomic = threads > 1;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t i = begin; i < end; i++) {
        int64_t s = src[i], d = dst[i];
        if (s == d && drop_loops) continue;
        int64_t pos = bump(&cursor[d], atomic);
        idx[pos] = (CSC_T)s;
        if (symmetrize && s != d) {
            pos = bump(&cursor[s], atomic);
            idx[pos] = (CSC_T)d;
        }
    }
}

/*
 * Sort and deduplicate the lists of one chunk of nodes [lo, hi) whose slots are
 * [first, last), packing the kept ids to the front of the chunk. Reading a list always happens
 * at or after the write cursor, so packing in place is safe. indptr[v] is rewritten to the new
 * start of v's list (indptr[v + 1] is read before it is rewritten, and the chunk's own end comes
 * from `last`, so chunks run in parallel without touching each other's entries). Returns the
 * number of ids kept.
 */
static int64_t CSC_NAME(sort_chunk)(int64_t *indptr, CSC_T *idx, int64_t lo, int64_t hi,
                                    int64_t first, int64_t last) {
    int64_t w = first, s = first;
    for (int64_t v = lo; v < hi; v++) {
        int64_t e = v + 1 < hi ? indptr[v + 1] : last;
        CSC_T *a = idx + s;
        int64_t n = e - s;
        CSC_NAME(gd__sort)(a, n); /* core/sort_impl.h */
        indptr[v] = w;
        if (n > 0) {
            CSC_T prev = a[0];
            idx[w++] = prev;
            for (int64_t j = 1; j < n; j++) {
                if (a[j] != prev) {
                    prev = a[j];
                    idx[w++] = prev;
                }
            }
        }
        s = e;
    }
    return w - first;
}

/* First position in [begin, end) whose index is outside [0, num_nodes), or end if none. */
static int64_t CSC_NAME(first_bad_index)(const CSC_T *idx, int64_t begin, int64_t end,
                                         int64_t num_nodes, int threads) {
    int64_t bad = end;
#pragma omp parallel for schedule(static) reduction(min : bad) num_threads(threads)
    for (int64_t i = begin; i < end; i++) {
        int64_t x = (int64_t)idx[i];
        if ((x < 0 || x >= num_nodes) && i < bad) bad = i;
    }
    return bad;
}
