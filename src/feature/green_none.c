/*
 * Green contexts in a build without CUDA: there is no GPU to partition, so making one reports
 * GD_ERR_NO_DEVICE, like every other GPU operation of such a build, and the accessors answer
 * for the NULL handle. A CUDA build compiles green_cuda.cu instead and this file is empty.
 */
#include "green.h"

#ifndef GD_WITH_CUDA

static gd_status no_cuda(const char *what) {
    return gd__error(GD_ERR_NO_DEVICE,
                     "%s: graphdirect was built without CUDA: install the CUDA toolkit and "
                     "rebuild to use a GPU",
                     what);
}

gd_status gd__green_create(int device, int sms, unsigned flags, gd__green **out) {
    (void)device, (void)sms, (void)flags;
    if (out) *out = NULL;
    return no_cuda("a green context");
}

int gd__green_sms(const gd__green *g) {
    (void)g;
    return 0;
}

int gd__green_device(const gd__green *g) {
    (void)g;
    return -1;
}

void gd__green_split_rules(const gd__green *g, int *min_sms, int *alignment) {
    (void)g;
    if (min_sms) *min_sms = 0;
    if (alignment) *alignment = 0;
}

void *gd__green_stream(const gd__green *g) {
    (void)g;
    return NULL;
}

void gd__green_destroy(gd__green *g) { (void)g; }

gd_status gd__green_probe_sms(int device, void *stream, int *distinct_sms, int *max_smid) {
    (void)device, (void)stream;
    if (distinct_sms) *distinct_sms = 0;
    if (max_smid) *max_smid = -1;
    return no_cuda("the SM probe");
}

gd_status gd__green_probe_handoff(const gd__green *g, long long *mismatches) {
    (void)g;
    if (mismatches) *mismatches = 0;
    return no_cuda("the stream hand-off probe");
}

#endif /* GD_WITH_CUDA */
