// Scratch: random 4-byte reads of pinned host memory by page size of the backing memory.
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif
#define CK(x)                                                                              \
    do {                                                                                   \
        cudaError_t e_ = (x);                                                              \
        if (e_ != cudaSuccess) {                                                           \
            printf("%s: %s\n", #x, cudaGetErrorString(e_));                                \
            return -1;                                                                     \
        }                                                                                  \
    } while (0)

__global__ void probe(const int *src, long long span, long long n, unsigned long long seed,
                      unsigned long long *out) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    unsigned long long acc = 0;
    for (long long i = t; i < n; i += stride) {
        unsigned long long x = (i + 1) * 0x9e3779b97f4a7c15ull ^ seed;
        x ^= x >> 31;
        x *= 0xbf58476d1ce4e5b9ull;
        x ^= x >> 29;
        acc += __ldg(src + (x % (unsigned long long)span));
    }
    atomicAdd(out, acc);
}

static double rate(const int *dp, long long span_ints) {
    cudaEvent_t a, b;
    float ms;
    unsigned long long *d;
    long long n = 1 << 22;
    CK(cudaMalloc(&d, 8));
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    probe<<<132 * 8, 256>>>(dp, span_ints, n, 1, d);
    CK(cudaDeviceSynchronize());
    CK(cudaEventRecord(a));
    probe<<<132 * 8, 256>>>(dp, span_ints, n, 2, d);
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    CK(cudaEventElapsedTime(&ms, a, b));
    cudaFree(d);
    return n / (ms * 1e3); /* M reads/s */
}

static long long anon_huge_kb(void) {
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    long long kb = -1;
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "AnonHugePages:", 14)) kb = atoll(line + 14);
    fclose(f);
    return kb;
}

int main(int argc, char **argv) {
    size_t gib = argc > 1 ? atoll(argv[1]) : 4;
    size_t bytes = gib << 30;
    const char *how[] = {"4K (nohugepage)", "THP 2M", "hugetlb 2M", "hugetlb 1G", "cudaHostAlloc"};
    for (int k = 0; k < 5; k++) {
        void *p = NULL, *dp = NULL;
        if (k == 4) {
            if (cudaHostAlloc(&p, bytes, cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess) {
                printf("%s: failed\n", how[k]);
                continue;
            }
            memset(p, 1, bytes);
        } else {
            int flags = MAP_PRIVATE | MAP_ANONYMOUS;
            size_t len = bytes;
            if (k == 2) flags |= MAP_HUGETLB | (21 << MAP_HUGE_SHIFT);
            if (k == 3) flags |= MAP_HUGETLB | (30 << MAP_HUGE_SHIFT);
            if (k == 1) len = bytes + (2u << 20);
            p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, -1, 0);
            if (p == MAP_FAILED) {
                printf("%s: mmap failed\n", how[k]);
                continue;
            }
            if (k == 1) {
                p = (void *)(((uintptr_t)p + (2u << 20) - 1) & ~(uintptr_t)((2u << 20) - 1));
                madvise(p, bytes, MADV_HUGEPAGE);
            }
            if (k == 0) madvise(p, bytes, MADV_NOHUGEPAGE);
            memset(p, 1, bytes);
            printf("%s: AnonHugePages %lld kB\n", how[k], anon_huge_kb());
            if (cudaHostRegister(p, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable) !=
                cudaSuccess) {
                printf("%s: register failed\n", how[k]);
                cudaGetLastError();
                continue;
            }
        }
        if (cudaHostGetDevicePointer(&dp, p, 0) != cudaSuccess) continue;
        printf("%-16s random 4-byte reads: 64 MiB %.0fM/s, 1 GiB %.0fM/s, %zu GiB %.0fM/s\n",
               how[k], rate((const int *)dp, (64ll << 20) / 4), rate((const int *)dp, (1ll << 30) / 4),
               gib, rate((const int *)dp, (long long)(bytes / 4)));
        fflush(stdout);
        if (k == 4)
            cudaFreeHost(p);
        else
            cudaHostUnregister(p); /* leak the mapping: scratch */
    }
    return 0;
}
