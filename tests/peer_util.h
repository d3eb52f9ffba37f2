/*
 * The GPUs a test spreads peer stores over (test_tier_peer.c, test_sample_cuda.c): the first
 * `most` visible ones, with peer access enabled between every pair, where every pair has it;
 * otherwise 1 (the stores then share GPU 0).
 */
#ifndef GD_TEST_PEER_UTIL_H
#define GD_TEST_PEER_UTIL_H

#include "test.h"

#ifdef GD_WITH_CUDA
#include "core/cuda.h"

static inline int t_peer_devices(int most) {
    const int n = gd_device_count() < most ? gd_device_count() : most;
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            int yes = 0;
            T_OK(gd__cuda_can_access_peer(a, b, &yes));
            if (!yes) return 1;
        }
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) T_OK(gd__cuda_enable_peer_access(a, b));
    return n;
}
#endif

#endif /* GD_TEST_PEER_UTIL_H */
