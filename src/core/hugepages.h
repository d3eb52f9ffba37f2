/*
 * Host memory for the large tables the library allocates itself: the in-memory generator's
 * arrays, arrays a dataset loads into memory, pinned copies of a feature table (host tensors).
 * The GPU reads such a table at random with zero-copy loads, and on the lent H100 those reads
 * were bound by address translation over a 28 GiB table (docs/feature_store.md): 2 MiB pages
 * cut the entries to translate 512-fold on the CPU side, and may on the GPU's. So a table of
 * 2 MiB or more is mapped 2 MiB-aligned and advised MADV_HUGEPAGE before its first touch, so
 * that transparent huge pages can back it (the kernel's THP setting decides; "never" leaves it
 * on 4 KiB pages). GD_HUGEPAGES=0 advises MADV_NOHUGEPAGE instead, so that A/B runs compare 2
 * MiB with 4 KiB pages even where THP is "always". Tables mapped from a dataset's files are the
 * page cache's and are left alone.
 */
#ifndef GD_CORE_HUGEPAGES_H
#define GD_CORE_HUGEPAGES_H

#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Tables from this size on are 2 MiB-aligned and advised. */
#define GD__HUGE_PAGE_BYTES ((size_t)2 << 20)

/*
 * Zero-filled anonymous memory of bytes (> 0) bytes for a table: *base, *len (what to give to
 * gd__table_unmap; len >= bytes) and *advice (1: MADV_HUGEPAGE was applied, -1: MADV_NOHUGEPAGE
 * by GD_HUGEPAGES=0, 0: neither: a small table, or not Linux). GD_ERR_NO_MEMORY naming what,
 * also under allocation fault injection (GD_FAULT_ALLOC).
 */
gd_status gd__table_map(size_t bytes, const char *what, void **base, size_t *len, int *advice);
void gd__table_unmap(void *base, size_t len);

/*
 * Bytes of [p, p + len) that huge pages back now, from the AnonHugePages of the mappings
 * /proc/self/smaps lists over it (a mapping partly outside counts in proportion); -1 where
 * that cannot be read.
 */
int64_t gd__huge_bytes(const void *p, size_t len);
/* The kernel's THP setting, "always", "madvise" or "never", into buf ("unknown" elsewhere). */
const char *gd__thp_mode(char *buf, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* GD_CORE_HUGEPAGES_H */
