/*
 * Host memory this process may still take, read before large work so that a run that cannot
 * fit fails at once with the numbers, instead of minutes later or by the kernel's OOM killer:
 * the plan counts it (train/plan.c) and the in-memory generator checks it (io/generate.c).
 */
#ifndef GD_CORE_HOSTMEM_H
#define GD_CORE_HOSTMEM_H

#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Host memory available now: MemAvailable of /proc/meminfo and, under a cgroup memory limit
 * (v2 memory.max, v1 memory.limit_in_bytes), the limit less the group's usage, whichever is
 * smaller; INT64_MAX when neither can be read.
 */
int64_t gd__host_mem_available(void);

/*
 * The host memory budget: asked when > 0, else GD_HOST_MEM_MB when set (> 0), else what is
 * available. *source (optional) names where it came from, for messages.
 */
gd_status gd__host_mem_budget(int64_t asked, int64_t *budget, const char **source);

/*
 * GD_ERR_NO_MEMORY when need bytes exceed the budget of asked (see gd__host_mem_budget): the
 * message names what (e.g. "generate: the dataset in memory"), the bytes needed, the budget
 * and its source, and fix (what the user can do).
 */
gd_status gd__host_mem_check(int64_t need, int64_t asked, const char *what, const char *fix);

#ifdef __cplusplus
}
#endif

#endif /* GD_CORE_HOSTMEM_H */
