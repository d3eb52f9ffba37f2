/*
 * Device discovery for the public API. Without CUDA (at build time, or no driver or GPU at run
 * time) there are no devices, and that is not an error: callers fall back to the CPU path.
 */
#include "cuda.h"

#include <string.h>

int gd_has_cuda(void) {
#ifdef GD_WITH_CUDA
    return 1;
#else
    return 0;
#endif
}

int gd_device_count(void) {
#ifdef GD_WITH_CUDA
    return gd__cuda_device_count();
#else
    return 0;
#endif
}

gd_status gd_device_info_get(int device, gd_device_info *info) {
    if (!info) return gd__error(GD_ERR_INVALID_ARG, "gd_device_info_get: NULL info");
    memset(info, 0, sizeof *info);
#ifdef GD_WITH_CUDA
    int n = gd__cuda_device_count();
    if (n == 0)
        return gd__error(GD_ERR_NO_DEVICE,
                         "no CUDA GPU is visible (check the driver with nvidia-smi and "
                         "CUDA_VISIBLE_DEVICES)");
    if (device < 0 || device >= n)
        return gd__error(GD_ERR_RANGE, "GPU %d does not exist: %d GPU(s) visible (0..%d)",
                         device, n, n - 1);
    return gd__cuda_device_info(device, info);
#else
    (void)device;
    return gd__error(GD_ERR_NO_DEVICE,
                     "graphdirect was built without CUDA: install the CUDA toolkit and rebuild "
                     "to use a GPU");
#endif
}

gd_status gd__no_device(const char *what, const char *instead) {
#ifdef GD_WITH_CUDA
    return gd__error(GD_ERR_NO_DEVICE,
                     "%s needs a GPU and none is visible (check nvidia-smi and "
                     "CUDA_VISIBLE_DEVICES), or %s",
                     what, instead);
#else
    return gd__error(GD_ERR_NO_DEVICE,
                     "%s needs a GPU, but graphdirect was built without CUDA: install the CUDA "
                     "toolkit and rebuild, or %s",
                     what, instead);
#endif
}
