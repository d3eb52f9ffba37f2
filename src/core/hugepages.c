/*
 * Huge pages for the tables the library allocates (hugepages.h): a 2 MiB-aligned anonymous
 * mapping, advised before anything touches it, and what /proc says about it afterwards.
 */
#include "core/hugepages.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

/* GD_HUGEPAGES: 1 unless it says 0 (unreadable: on). */
static int huge_wanted(void) {
    const char *v = NULL;
    if (gd_param_get("GD_HUGEPAGES", &v) != GD_OK || !v) {
        gd_clear_error();
        return 1;
    }
    return strcmp(v, "0") != 0;
}

gd_status gd__table_map(size_t bytes, const char *what, void **base, size_t *len, int *advice) {
    const long pg = sysconf(_SC_PAGESIZE);
    const size_t page = pg > 0 ? (size_t)pg : 4096;
    const int big = bytes >= GD__HUGE_PAGE_BYTES;
    const size_t H = GD__HUGE_PAGE_BYTES;
    *base = NULL;
    *len = 0;
    *advice = 0;
    if (bytes == 0) bytes = 1;
    /* A big table is rounded to whole 2 MiB pages, and mapped with a page of slack to align. */
    const size_t want = big ? round_up(bytes, H) : round_up(bytes, page);
    const size_t map = big ? want + H : want;
    if (want < bytes || map < want || gd__fault_hit(GD_FAULT_ALLOC))
        return gd__error(GD_ERR_NO_MEMORY, "out of memory allocating %zu bytes for %s", bytes,
                         what);
    void *p = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return gd__error(GD_ERR_NO_MEMORY,
                         "out of memory allocating %zu bytes for %s: %s (free host memory or "
                         "use a smaller dataset)",
                         bytes, what, strerror(errno));
    unsigned char *b = p;
    if (big) {
        /* Keep the 2 MiB-aligned want bytes; give back the slack on either side. */
        unsigned char *a = (unsigned char *)round_up((size_t)(uintptr_t)b, H);
        const size_t head = (size_t)(a - b), tail = map - head - want;
        if (head) (void)munmap(b, head);
        if (tail) (void)munmap(a + want, tail);
        b = a;
#if defined(MADV_HUGEPAGE) && defined(MADV_NOHUGEPAGE)
        if (huge_wanted())
            *advice = madvise(b, want, MADV_HUGEPAGE) == 0 ? 1 : 0;
        else
            *advice = madvise(b, want, MADV_NOHUGEPAGE) == 0 ? -1 : 0;
#endif
    }
    *base = b;
    *len = want;
    return GD_OK;
}

void gd__table_unmap(void *base, size_t len) {
    if (base && len) (void)munmap(base, len);
}

int64_t gd__huge_bytes(const void *p, size_t len) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    const uintptr_t lo = (uintptr_t)p, hi = lo + len;
    char line[512];
    uintptr_t vlo = 0, vhi = 0;
    int in = 0, seen = 0;
    double total = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long a, b;
        long long kib;
        char c;
        /* A mapping's first line: "start-end perms offset dev inode [path]". */
        if (sscanf(line, "%lx-%lx %c", &a, &b, &c) == 3 && strchr(line, '-') &&
            (c == 'r' || c == '-')) {
            vlo = a;
            vhi = b;
            in = vhi > lo && vlo < hi;
            continue;
        }
        if (in && sscanf(line, "AnonHugePages: %lld kB", &kib) == 1) {
            const uintptr_t s = vlo > lo ? vlo : lo, e = vhi < hi ? vhi : hi;
            /* The mapping's share that lies inside the range, in proportion. */
            total += (double)kib * 1024.0 * (double)(e - s) / (double)(vhi - vlo);
            seen = 1;
        }
    }
    fclose(f);
    if (!seen) return len ? -1 : 0;
    return (int64_t)total;
}

const char *gd__thp_mode(char *buf, size_t n) {
    snprintf(buf, n, "unknown");
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f) return buf;
    char line[128];
    if (fgets(line, sizeof line, f)) {
        /* "always [madvise] never": the bracketed word is in force. */
        char *l = strchr(line, '['), *r = l ? strchr(l, ']') : NULL;
        if (l && r && r > l + 1) snprintf(buf, n, "%.*s", (int)(r - l - 1), l + 1);
    }
    fclose(f);
    return buf;
}
