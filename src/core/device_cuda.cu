/*
 * CUDA half of the core module: device discovery, and a kernel that evaluates the shared
 * Philox header on the GPU so tests can check that CPU and GPU draw the same numbers.
 */
#include "cuda.h"
#include "philox.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

extern "C" int gd__cuda_device_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

extern "C" gd_status gd__cuda_device_info(int device, gd_device_info *info) {
    gd_status st = GD_OK;
    cudaDeviceProp prop;
    size_t free_bytes = 0, total_bytes = 0;
    int prev = 0;
    GD_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    memcpy(info->name, prop.name, sizeof info->name - 1);
    info->name[sizeof info->name - 1] = '\0';
    info->major = prop.major;
    info->minor = prop.minor;
    info->multiprocessors = prop.multiProcessorCount;
    info->total_memory = (int64_t)prop.totalGlobalMem;
    info->pci_bus = prop.pciBusID;
    info->can_map_host_memory = prop.canMapHostMemory;
    GD_CUDA_CHECK(cudaGetDevice(&prev));
    GD_CUDA_CHECK(cudaSetDevice(device));
    GD_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    GD_CUDA_CHECK(cudaSetDevice(prev));
    info->free_memory = (int64_t)free_bytes;
    return GD_OK;
fail:
    return st;
}

__global__ void philox_fill_kernel(uint64_t seed, uint32_t c, uint32_t d, int64_t n,
                                   uint32_t *out) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        gd_philox_ctr r = gd_philox(seed, (uint32_t)i, (uint32_t)(i >> 32), c, d);
        for (int k = 0; k < 4; k++) out[4 * i + k] = r.v[k];
    }
}

extern "C" gd_status gd__cuda_philox_fill(int device, uint64_t seed, uint32_t c, uint32_t d,
                                          int64_t n, uint32_t *out) {
    gd_status st = GD_OK;
    uint32_t *dev = NULL;
    size_t bytes = (size_t)n * 4 * sizeof(uint32_t);
    GD_CUDA_CHECK(cudaSetDevice(device));
    GD_CUDA_CHECK(cudaMalloc(&dev, bytes ? bytes : 16));
    GD_CUDA_CHECK(cudaMemset(dev, 0xAB, bytes ? bytes : 16)); /* poison: unwritten words show */
    if (n > 0) {
        philox_fill_kernel<<<256, 256>>>(seed, c, d, n, dev);
        GD_CUDA_CHECK_LAUNCH();
    }
    GD_CUDA_CHECK(cudaMemcpy(out, dev, bytes, cudaMemcpyDeviceToHost));
    GD_CUDA_CHECK(cudaFree(dev));
    return GD_OK;
fail:
    if (dev) cudaFree(dev);
    return st;
}

extern "C" gd_status gd__cuda_check_device(int device, const char *what, const char *instead) {
    const int count = gd__cuda_device_count();
    if (count == 0) return gd__no_device(what, instead);
    if (device < 0 || device >= count)
        return gd__error(GD_ERR_RANGE, "%s: GPU %d does not exist: %d GPU(s) visible (0..%d)", what,
                         device, count, count - 1);
    return GD_OK;
}

extern "C" gd_status gd__cuda_enter_device(int device, int *prev) {
    gd_status st = GD_OK;
    *prev = -1;
    GD_CUDA_CHECK(cudaGetDevice(prev));
    if (*prev != device) GD_CUDA_CHECK(cudaSetDevice(device));
    return GD_OK;
fail:
    return st;
}

extern "C" void gd__cuda_leave_device(int device, int prev) {
    if (prev >= 0 && prev != device && cudaSetDevice(prev) != cudaSuccess) (void)cudaGetLastError();
}

extern "C" gd_status gd__cuda_pinned_alloc(void **p, size_t bytes, const char *what,
                                           const char *instead) {
    char lim[64];
    cudaError_t ce;
    *p = NULL;
    gd__memlock_text(lim, sizeof lim);
    if (gd__fault_hit(GD_FAULT_PIN))
        return gd__error(GD_ERR_PIN,
                         "cudaHostAlloc of %zu bytes for %s failed: injected fault "
                         "(GD_FAULT_PIN); the locked-memory limit (ulimit -l) is %s",
                         bytes, what, lim);
    ce = cudaHostAlloc(p, bytes ? bytes : 16, cudaHostAllocDefault);
    if (ce != cudaSuccess) {
        (void)cudaGetLastError();
        *p = NULL;
        return gd__error(GD_ERR_PIN,
                         "cudaHostAlloc of %zu bytes for %s failed: %s (%s): the locked-memory "
                         "limit (ulimit -l) is %s: raise it (`ulimit -l unlimited`, or docker "
                         "--ulimit memlock=-1), free host memory or %s",
                         bytes, what, cudaGetErrorString(ce), cudaGetErrorName(ce), lim, instead);
    }
    return GD_OK;
}
