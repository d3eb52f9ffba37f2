/*
 * The relabelling hash table's insert, shared by the CUDA samplers (sample_kernels.cuh for the
 * homogeneous one, hetero_cuda.cu for the typed one): open addressing with linear probing over
 * 64-bit keys, an empty slot holding GD__TABLE_EMPTY. CUDA only.
 */
#ifndef GD_SAMPLE_TABLE_INSERT_CUH
#define GD_SAMPLE_TABLE_INSERT_CUH

#include "internal.h"

#define GD__TABLE_EMPTY 0xffffffffffffffffull

/* The slot of key, inserting it if absent (the table never fills: load <= 1/2). */
__device__ __forceinline__ unsigned long long
gd__table_insert(unsigned long long *keys, unsigned long long mask, unsigned long long key) {
    unsigned long long h = gd__sample_hash(key) & mask;
    for (;;) {
        unsigned long long cur = *(volatile unsigned long long *)&keys[h];
        if (cur == key) return h;
        if (cur == GD__TABLE_EMPTY) {
            cur = atomicCAS(&keys[h], GD__TABLE_EMPTY, key);
            if (cur == GD__TABLE_EMPTY || cur == key) return h;
        }
        h = (h + 1) & mask;
    }
}

#endif
