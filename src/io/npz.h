/*
 * Reading the arrays of a NumPy .npz archive member by member, in chunks (npz.c).
 */
#ifndef GD_IO_NPZ_H
#define GD_IO_NPZ_H

#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gd__npz gd__npz;

/* Data bytes of a member, in order: bytes [offset, offset + n) of its array's data. */
typedef gd_status (*gd__npz_sink)(void *user, const void *data, size_t n, uint64_t offset);

gd_status gd__npz_open(const char *path, gd__npz **out);
void gd__npz_close(gd__npz *z);
/* 1 if the archive holds array `name` (member name.npy). */
int gd__npz_has(const gd__npz *z, const char *name);
/* The members, by index: their file names in the archive ("edge_index.npy"). */
int gd__npz_count(const gd__npz *z);
const char *gd__npz_member(const gd__npz *z, int i);
/*
 * Stream array `name`: its header into *info (dtype, shape, data bytes), then its data to sink
 * in chunks. Checks the member's sizes and CRC-32 at the end.
 */
gd_status gd__npz_read(const gd__npz *z, const char *name, gd_npy_info *info, gd__npz_sink sink,
                       void *user);

/* The header of array `name` (dtype, shape, data bytes), without reading its data. */
gd_status gd__npz_info(const gd__npz *z, const char *name, gd_npy_info *info);
/*
 * Read array `name` whole into caller memory: its data bytes, in order, fill parts[0..nparts)
 * (part k takes part_bytes[k] bytes; together they must be the array's data bytes). A stored
 * member (np.savez) is read by every core in large chunks straight into the parts, each chunk's
 * CRC-32 taken where it landed and the CRCs joined (crc32_combine); a deflated one is inflated
 * in order. Sizes and the CRC-32 are checked as by gd__npz_read.
 */
typedef void (*gd__npz_landed)(void *user, int part, int64_t offset, int64_t n);
/* landed (may be NULL) is told of each chunk once it is in its part (from any thread). */
gd_status gd__npz_read_into(const gd__npz *z, const char *name, gd_npy_info *info,
                            void *const *parts, const int64_t *part_bytes, int nparts,
                            gd__npz_landed landed, void *landed_user);

#ifdef __cplusplus
}
#endif

#endif /* GD_IO_NPZ_H */
