/*
 * The host memory probe (hostmem.h). Inside a container MemAvailable is the machine's, not the
 * container's, so the cgroup limit is read too: the smaller of the two is what a run may take
 * before the kernel's OOM killer ends it without a word. Files that cannot be read count as no
 * limit, so that the probe never refuses work on a system it does not understand.
 */
#include "core/hostmem.h"

#include <stdio.h>
#include <string.h>

/* A cgroup v1 "no limit" is a page-rounded INT64_MAX; any value past this is none. */
#define NO_LIMIT (INT64_C(1) << 60)

/* The first integer of file path (-1: unreadable or "max"). */
static int64_t read_count(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    long long v = -1;
    if (fscanf(f, "%lld", &v) != 1) v = -1;
    fclose(f);
    return v;
}

/* MemAvailable of /proc/meminfo in bytes (INT64_MAX: unknown). */
static int64_t meminfo_available(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return INT64_MAX;
    char line[256];
    int64_t bytes = INT64_MAX;
    long long kib;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lld kB", &kib) == 1) {
            bytes = (int64_t)kib * 1024;
            break;
        }
    fclose(f);
    return bytes;
}

/* limit less usage of one cgroup's files (INT64_MAX: no limit there). */
static int64_t cgroup_left(const char *dir, const char *limit_name, const char *usage_name) {
    char path[704];
    snprintf(path, sizeof path, "%s/%s", dir, limit_name);
    const int64_t limit = read_count(path);
    if (limit < 0 || limit >= NO_LIMIT) return INT64_MAX;
    snprintf(path, sizeof path, "%s/%s", dir, usage_name);
    const int64_t usage = read_count(path);
    return usage < 0 ? limit : limit > usage ? limit - usage : 0;
}

/* The cgroup v2 path of this process ("0::/path" in /proc/self/cgroup), into buf. */
static int cgroup2_path(char *buf, size_t n) {
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f) return -1;
    char line[512];
    int found = -1;
    while (found < 0 && fgets(line, sizeof line, f))
        if (strncmp(line, "0::", 3) == 0) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(buf, n, "%s", line + 3);
            found = 0;
        }
    fclose(f);
    return found;
}

int64_t gd__host_mem_available(void) {
    int64_t left = meminfo_available();
    char rel[512], dir[640];
    /* v2: the process's own group, and the namespace root (a container's own limit). */
    if (cgroup2_path(rel, sizeof rel) == 0 && strcmp(rel, "/") != 0) {
        snprintf(dir, sizeof dir, "/sys/fs/cgroup%s", rel);
        left = gd__min64(left, cgroup_left(dir, "memory.max", "memory.current"));
    }
    left = gd__min64(left, cgroup_left("/sys/fs/cgroup", "memory.max", "memory.current"));
    left = gd__min64(left, cgroup_left("/sys/fs/cgroup/memory", "memory.limit_in_bytes",
                                       "memory.usage_in_bytes"));
    return left;
}

gd_status gd__host_mem_budget(int64_t asked, int64_t *budget, const char **source) {
    gd_status st = GD_OK;
    int64_t mb = 0;
    const char *from = "available host memory (MemAvailable and the cgroup limit)";
    if (asked > 0) {
        *budget = asked;
        from = "the host memory budget asked";
    } else {
        GD_CHECK(gd_param_get_int("GD_HOST_MEM_MB", &mb));
        GD_REQUIRE(mb >= 0 && mb <= (INT64_C(1) << 40), GD_ERR_INVALID_ARG,
                   "GD_HOST_MEM_MB=%lld must be between 0 (what is available) and 2^40 MiB",
                   (long long)mb);
        if (mb > 0) {
            *budget = mb << 20;
            from = "GD_HOST_MEM_MB";
        } else {
            *budget = gd__host_mem_available();
        }
    }
    if (source) *source = from;
fail:
    return st;
}

gd_status gd__host_mem_check(int64_t need, int64_t asked, const char *what, const char *fix) {
    gd_status st = GD_OK;
    int64_t budget;
    const char *source;
    GD_CHECK(gd__host_mem_budget(asked, &budget, &source));
    GD_REQUIRE(need <= budget, GD_ERR_NO_MEMORY,
               "%s needs %lld bytes (%.2f GiB) of host memory, more than the %lld bytes "
               "(%.2f GiB) of %s: %s",
               what, (long long)need, (double)need / (double)(INT64_C(1) << 30), (long long)budget,
               (double)budget / (double)(INT64_C(1) << 30), source, fix);
fail:
    return st;
}
