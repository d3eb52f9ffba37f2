/*
 * The link ceiling's read plan as the sampler module sees it: its types and functions are
 * declared in instrument/read_plan.h (what benchmark code may include); this header adds the
 * hash the replay kernel (read_plan_cuda.cu) and the CPU checksum (read_plan.c) both sum, which
 * rests on the sampler's own hash. The tests include it to reach both.
 */
#ifndef GD_SAMPLE_READ_PLAN_H
#define GD_SAMPLE_READ_PLAN_H

#include "instrument/read_plan.h"
#include "internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The hash the replay sums for entry value x of plan item `item`. */
GD_HOST_DEVICE uint64_t gd__read_plan_mix(uint64_t x, uint64_t item) {
    return gd__sample_hash(x + (item + 1) * 0x9e3779b97f4a7c15ull);
}

#ifdef __cplusplus
}
#endif

#endif /* GD_SAMPLE_READ_PLAN_H */
