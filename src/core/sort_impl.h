/*
 * The in-place ascending sort of an id list, written once for each element type: util.c
 * includes this file with GD__SORT_T (the element type) and GD__SORT_NAME(x) (which appends the
 * type suffix to a name) defined, and exports gd__sort_<suffix>. The CSC build sorts every
 * node's in-neighbour list with it and the generators every list they draw. Lists are mostly
 * short (power-law graphs have a median in-degree of a few) and a comparison callback (qsort)
 * costs more than the comparisons, so small lists take insertion sort; long ones (hubs) take an
 * introsort whose depth limit falls back to heapsort, so adversarial orders cannot make it
 * quadratic.
 */

/* Lists up to this long take insertion sort alone. */
#ifndef GD__SORT_SMALL
#define GD__SORT_SMALL 32
#endif

static void GD__SORT_NAME(insertion_sort)(GD__SORT_T *a, int64_t n) {
    for (int64_t i = 1; i < n; i++) {
        GD__SORT_T x = a[i];
        int64_t j = i - 1;
        while (j >= 0 && a[j] > x) {
            a[j + 1] = a[j];
            j--;
        }
        a[j + 1] = x;
    }
}

static void GD__SORT_NAME(sift_down)(GD__SORT_T *a, int64_t root, int64_t n) {
    GD__SORT_T x = a[root];
    for (;;) {
        int64_t child = 2 * root + 1;
        if (child >= n) break;
        if (child + 1 < n && a[child + 1] > a[child]) child++;
        if (a[child] <= x) break;
        a[root] = a[child];
        root = child;
    }
    a[root] = x;
}

static void GD__SORT_NAME(heap_sort)(GD__SORT_T *a, int64_t n) {
    for (int64_t i = n / 2 - 1; i >= 0; i--) GD__SORT_NAME(sift_down)(a, i, n);
    for (int64_t end = n - 1; end > 0; end--) {
        GD__SORT_T t = a[0];
        a[0] = a[end];
        a[end] = t;
        GD__SORT_NAME(sift_down)(a, 0, end);
    }
}

static void GD__SORT_NAME(intro_sort)(GD__SORT_T *a, int64_t n, int depth) {
    while (n > GD__SORT_SMALL) {
        if (depth-- == 0) {
            GD__SORT_NAME(heap_sort)(a, n);
            return;
        }
        /* Median of three as the pivot; Hoare partitioning splits runs of equal ids (duplicate
         * edges) evenly instead of degrading on them. */
        GD__SORT_T lo = a[0], mid = a[n / 2], hi = a[n - 1], p;
        if (lo < mid) p = mid < hi ? mid : (lo < hi ? hi : lo);
        else p = lo < hi ? lo : (mid < hi ? hi : mid);
        int64_t i = -1, j = n;
        for (;;) {
            do i++; while (a[i] < p);
            do j--; while (a[j] > p);
            if (i >= j) break;
            GD__SORT_T t = a[i];
            a[i] = a[j];
            a[j] = t;
        }
        /* Recurse into the smaller side, loop on the larger: stack depth stays O(log n). */
        int64_t left = j + 1;
        if (left < n - left) {
            GD__SORT_NAME(intro_sort)(a, left, depth);
            a += left;
            n -= left;
        } else {
            GD__SORT_NAME(intro_sort)(a + left, n - left, depth);
            n = left;
        }
    }
    GD__SORT_NAME(insertion_sort)(a, n);
}

void GD__SORT_NAME(gd__sort)(GD__SORT_T *a, int64_t n) {
    if (n <= GD__SORT_SMALL) {
        GD__SORT_NAME(insertion_sort)(a, n);
        return;
    }
    int depth = 0;
    for (int64_t m = n; m > 1; m >>= 1) depth += 2;
    GD__SORT_NAME(intro_sort)(a, n, depth);
}
