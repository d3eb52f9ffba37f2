/*
 * NumPy .npz archives (np.savez: stored; np.savez_compressed: deflate), read member by member
 * without loading one whole (issue 19, item 3: OGB's papers100M-bin ships a 57 GB data.npz).
 * The zip's central directory gives each member's method, sizes, CRC and local header (zip64
 * records and extra fields where sizes pass 4 GiB); a member's bytes are read in chunks with
 * pread, inflated with zlib (raw deflate) in chunks, its .npy header parsed from the first
 * bytes, and its data handed to a sink in order. The CRC-32 and the sizes are checked at the
 * end, so a corrupt or truncated archive is an error naming the archive and the member, never
 * wrong data.
 */
#include "npz.h"

#include "npy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define CHUNK (4u << 20)
#define MAX_MEMBERS 256

typedef struct {
    char name[256];
    int method; /* 0 stored, 8 deflate */
    uint32_t crc;
    uint64_t csize, usize, local;
} member;

struct gd__npz {
    char *path;
    int fd;
    int64_t size;
    int count;
    member m[MAX_MEMBERS];
};

static uint16_t u16(const unsigned char *p) {
    return (uint16_t)(p[0] | p[1] << 8);
}
static uint32_t u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t u64(const unsigned char *p) {
    return u32(p) | (uint64_t)u32(p + 4) << 32;
}

static gd_status read_at(const gd__npz *z, void *buf, size_t n, int64_t off, const char *what) {
    gd_status st = GD_OK;
    size_t done = 0;
    GD_REQUIRE(off >= 0 && off + (int64_t)n <= z->size, GD_ERR_FORMAT,
               "%s: %s runs past the end of the file (it is truncated)", z->path, what);
    while (done < n) {
        const ssize_t r = pread(z->fd, (char *)buf + done, n - done, (off_t)(off + (int64_t)done));
        if (r < 0 && errno == EINTR) continue;
        GD_REQUIRE(r > 0, GD_ERR_IO, "%s: reading %s failed: %s", z->path, what,
                   r < 0 ? strerror(errno) : "unexpected end of file");
        done += (size_t)r;
    }
fail:
    return st;
}

/* The end of central directory record (zip64 where the classic one overflows). */
static gd_status directory(gd__npz *z, uint64_t *entries, uint64_t *cd_off, uint64_t *cd_size) {
    gd_status st = GD_OK;
    unsigned char tail[65536 + 22];
    const int64_t n = z->size < (int64_t)sizeof tail ? z->size : (int64_t)sizeof tail;
    GD_REQUIRE(n >= 22, GD_ERR_FORMAT, "%s is not a .npz (zip) archive: too short", z->path);
    GD_CHECK(read_at(z, tail, (size_t)n, z->size - n, "the end of central directory"));
    int64_t at = -1;
    for (int64_t i = n - 22; i >= 0; i--)
        if (u32(tail + i) == 0x06054b50u) {
            at = i;
            break;
        }
    GD_REQUIRE(at >= 0, GD_ERR_FORMAT,
               "%s is not a .npz (zip) archive, or it is truncated: no end of central directory",
               z->path);
    *entries = u16(tail + at + 10);
    *cd_size = u32(tail + at + 12);
    *cd_off = u32(tail + at + 16);
    if (*entries == 0xffff || *cd_size == 0xffffffffu || *cd_off == 0xffffffffu) {
        GD_REQUIRE(at >= 20 && u32(tail + at - 20) == 0x07064b50u, GD_ERR_FORMAT,
                   "%s: a zip64 archive without its zip64 locator (corrupt)", z->path);
        unsigned char rec[56];
        GD_CHECK(read_at(z, rec, sizeof rec, (int64_t)u64(tail + at - 20 + 8),
                         "the zip64 end of central directory"));
        GD_REQUIRE(u32(rec) == 0x06064b50u, GD_ERR_FORMAT,
                   "%s: the zip64 end of central directory is corrupt", z->path);
        *entries = u64(rec + 32);
        *cd_size = u64(rec + 40);
        *cd_off = u64(rec + 48);
    }
fail:
    return st;
}

gd_status gd__npz_open(const char *path, gd__npz **out) {
    gd_status st = GD_OK;
    gd__npz *z = NULL;
    unsigned char *cd = NULL;
    struct stat sb;
    *out = NULL;
    GD_ALLOC(z, sizeof *z, "a .npz archive");
    memset(z, 0, sizeof *z);
    z->fd = -1;
    z->path = gd__strdup(path);
    GD_REQUIRE(z->path, GD_ERR_NO_MEMORY, "out of memory opening %s", path);
    z->fd = open(path, O_RDONLY | O_CLOEXEC);
    GD_REQUIRE(z->fd >= 0, errno == ENOENT ? GD_ERR_NOT_FOUND : GD_ERR_IO, "cannot open %s: %s",
               path, strerror(errno));
    GD_REQUIRE(fstat(z->fd, &sb) == 0, GD_ERR_IO, "cannot stat %s: %s", path, strerror(errno));
    z->size = (int64_t)sb.st_size;
    uint64_t entries, cd_off, cd_size;
    GD_CHECK(directory(z, &entries, &cd_off, &cd_size));
    GD_REQUIRE(entries <= MAX_MEMBERS && cd_size <= (1u << 26), GD_ERR_UNSUPPORTED,
               "%s holds %llu members; a .npz of at most %d arrays is read", path,
               (unsigned long long)entries, MAX_MEMBERS);
    GD_ALLOC(cd, cd_size ? (size_t)cd_size : 1, "the archive's central directory");
    GD_CHECK(read_at(z, cd, (size_t)cd_size, (int64_t)cd_off, "the central directory"));
    for (uint64_t k = 0, p = 0; k < entries; k++) {
        GD_REQUIRE(p + 46 <= cd_size && u32(cd + p) == 0x02014b50u, GD_ERR_FORMAT,
                   "%s: central directory entry %llu is corrupt", path, (unsigned long long)k);
        const unsigned char *e = cd + p;
        const size_t nlen = u16(e + 28), xlen = u16(e + 30), clen = u16(e + 32);
        GD_REQUIRE(p + 46 + nlen + xlen + clen <= cd_size && nlen < sizeof z->m[0].name,
                   GD_ERR_FORMAT, "%s: central directory entry %llu is corrupt", path,
                   (unsigned long long)k);
        member *m = &z->m[z->count++];
        memcpy(m->name, e + 46, nlen);
        m->name[nlen] = '\0';
        m->method = u16(e + 10);
        m->crc = u32(e + 16);
        m->csize = u32(e + 20);
        m->usize = u32(e + 24);
        m->local = u32(e + 42);
        /* zip64: the fields that overflowed, in this order, in extra field 0x0001. */
        for (size_t x = 0; x + 4 <= xlen;) {
            const unsigned char *f = e + 46 + nlen + x;
            const size_t len = u16(f + 2);
            if (u16(f) == 0x0001) {
                size_t q = 4;
                if (m->usize == 0xffffffffu && q + 8 <= 4 + len) m->usize = u64(f + q), q += 8;
                if (m->csize == 0xffffffffu && q + 8 <= 4 + len) m->csize = u64(f + q), q += 8;
                if (m->local == 0xffffffffu && q + 8 <= 4 + len) m->local = u64(f + q);
            }
            x += 4 + len;
        }
        p += 46 + nlen + xlen + clen;
    }
    gd_free(cd);
    *out = z;
    return GD_OK;
fail:
    gd_free(cd);
    gd__npz_close(z);
    return st;
}

void gd__npz_close(gd__npz *z) {
    if (!z) return;
    if (z->fd >= 0) close(z->fd);
    gd_free(z->path);
    gd_free(z);
}

static const member *find(const gd__npz *z, const char *name) {
    char want[300];
    snprintf(want, sizeof want, "%s.npy", name);
    for (int i = 0; i < z->count; i++)
        if (strcmp(z->m[i].name, want) == 0) return &z->m[i];
    return NULL;
}

int gd__npz_has(const gd__npz *z, const char *name) {
    return find(z, name) != NULL;
}

int gd__npz_count(const gd__npz *z) {
    return z->count;
}

const char *gd__npz_member(const gd__npz *z, int i) {
    return i >= 0 && i < z->count ? z->m[i].name : NULL;
}

/* What a member's decoded bytes go through: the header first, then the data to the sink. */
typedef struct {
    const gd__npz *z;
    const member *m;
    unsigned char head[8192];
    size_t head_len;
    int have_info;
    gd_npy_info *info;
    uint64_t data_done;
    uint32_t crc;
    gd__npz_sink sink;
    void *user;
} decoder;

/* Where a member's bytes start in the file, after its local header (checked). */
static gd_status member_start(const gd__npz *z, const member *m, int64_t *at) {
    gd_status st = GD_OK;
    unsigned char lh[30];
    GD_REQUIRE(m->method == 0 || m->method == 8, GD_ERR_UNSUPPORTED,
               "%s: member %s is compressed with zip method %d; numpy writes stored (0) or "
               "deflate (8)",
               z->path, m->name, m->method);
    GD_CHECK(read_at(z, lh, sizeof lh, (int64_t)m->local, "a member's local header"));
    GD_REQUIRE(u32(lh) == 0x04034b50u, GD_ERR_FORMAT, "%s: the local header of %s is corrupt",
               z->path, m->name);
    *at = (int64_t)m->local + 30 + u16(lh + 26) + u16(lh + 28);
    GD_REQUIRE(*at + (int64_t)m->csize <= z->size, GD_ERR_FORMAT,
               "%s: member %s runs past the end of the file (the archive is truncated)", z->path,
               m->name);
fail:
    return st;
}

/*
 * Hand n bytes of the member's data to the sink. A corrupt deflate stream can inflate past the
 * member's declared size: refused before anything lands past the array's bytes.
 */
static gd_status to_sink(decoder *d, const unsigned char *p, size_t n) {
    gd_status st = GD_OK;
    GD_REQUIRE(d->data_done + n <= (uint64_t)d->info->data_bytes, GD_ERR_FORMAT,
               "%s: member %s holds more than its %lld bytes of data: the archive is corrupt",
               d->z->path, d->m->name, (long long)d->info->data_bytes);
    GD_CHECK(d->sink(d->user, p, n, d->data_done));
    d->data_done += n;
fail:
    return st;
}

static gd_status decoded(decoder *d, const unsigned char *p, size_t n) {
    gd_status st = GD_OK;
    d->crc = (uint32_t)crc32(d->crc, p, (uInt)n);
    if (!d->have_info) {
        /* The header: gathered until its length field and that many bytes are there. */
        const size_t take = n < sizeof d->head - d->head_len ? n : sizeof d->head - d->head_len;
        memcpy(d->head + d->head_len, p, take);
        d->head_len += take;
        if (d->head_len < 12 && (uint64_t)d->head_len < d->m->usize) return GD_OK;
        const int v2 = d->head[6] >= 2;
        const size_t need = v2 ? 12 + (size_t)u32(d->head + 8) : 10 + (size_t)u16(d->head + 8);
        if (d->head_len < need && d->head_len < sizeof d->head &&
            (uint64_t)d->head_len < d->m->usize)
            return GD_OK;
        char what[600];
        snprintf(what, sizeof what, "%s member %s", d->z->path, d->m->name);
        GD_CHECK(gd__npy_parse_header(d->head, d->head_len, (int64_t)d->m->usize, what, d->info));
        d->have_info = 1;
        /* The data that came with the header, then the rest of this call's bytes. */
        const size_t off = (size_t)d->info->data_offset;
        if (d->head_len > off) GD_CHECK(to_sink(d, d->head + off, d->head_len - off));
        if (take < n) GD_CHECK(to_sink(d, p + take, n - take));
        return GD_OK;
    }
    GD_CHECK(to_sink(d, p, n));
fail:
    return st;
}

gd_status gd__npz_read(const gd__npz *z, const char *name, gd_npy_info *info, gd__npz_sink sink,
                       void *user) {
    gd_status st = GD_OK;
    unsigned char *in = NULL, *outb = NULL;
    z_stream zs;
    int zs_made = 0;
    decoder *d = NULL;
    const member *m = find(z, name);
    GD_REQUIRE(m, GD_ERR_NOT_FOUND, "%s has no array '%s' (no member %s.npy)", z->path, name, name);
    int64_t at = 0;
    GD_CHECK(member_start(z, m, &at));
    GD_ALLOC(d, sizeof *d, "a .npz member's decoder");
    memset(d, 0, sizeof *d);
    d->z = z, d->m = m, d->info = info, d->sink = sink, d->user = user;
    d->crc = (uint32_t)crc32(0, Z_NULL, 0);
    GD_ALLOC(in, CHUNK, "a .npz read buffer");
    if (m->method == 8) {
        GD_ALLOC(outb, CHUNK, "a .npz inflate buffer");
        memset(&zs, 0, sizeof zs);
        GD_REQUIRE(inflateInit2(&zs, -MAX_WBITS) == Z_OK, GD_ERR_NO_MEMORY,
                   "zlib could not start inflating %s", m->name);
        zs_made = 1;
    }
    uint64_t left = m->csize, produced = 0;
    int ended = m->method == 0;
    while (left > 0) {
        const size_t n = left < CHUNK ? (size_t)left : CHUNK;
        GD_CHECK(read_at(z, in, n, at, m->name));
        at += (int64_t)n;
        left -= n;
        if (m->method == 0) {
            GD_CHECK(decoded(d, in, n));
            produced += n;
            continue;
        }
        zs.next_in = in;
        zs.avail_in = (uInt)n;
        while (zs.avail_in > 0 && !ended) {
            zs.next_out = outb;
            zs.avail_out = CHUNK;
            const int r = inflate(&zs, Z_NO_FLUSH);
            GD_REQUIRE(r == Z_OK || r == Z_STREAM_END, GD_ERR_FORMAT,
                       "%s: member %s does not inflate (%s): the archive is corrupt", z->path,
                       m->name, zs.msg ? zs.msg : "zlib error");
            const size_t got = CHUNK - zs.avail_out;
            if (got) GD_CHECK(decoded(d, outb, got));
            produced += got;
            if (r == Z_STREAM_END) ended = 1;
        }
    }
    GD_REQUIRE(ended && produced == m->usize && d->have_info, GD_ERR_FORMAT,
               "%s: member %s gave %llu bytes, the archive says %llu: it is truncated or corrupt",
               z->path, m->name, (unsigned long long)produced, (unsigned long long)m->usize);
    GD_REQUIRE(d->crc == m->crc, GD_ERR_FORMAT,
               "%s: member %s fails its CRC-32 check (%08x, expected %08x): the archive is "
               "corrupt",
               z->path, m->name, d->crc, m->crc);
    GD_REQUIRE((int64_t)d->data_done == info->data_bytes, GD_ERR_FORMAT,
               "%s: member %s holds %llu data bytes, its header says %lld", z->path, m->name,
               (unsigned long long)d->data_done, (long long)info->data_bytes);
fail:
    if (zs_made) inflateEnd(&zs);
    gd_free(in);
    gd_free(outb);
    gd_free(d);
    return st;
}

/* ------------------------------------------------ whole members into caller memory */


/* The .npy header at the start of a stored member; *head_len = the bytes it spans. */
static gd_status stored_header(const gd__npz *z, const member *m, int64_t at, gd_npy_info *info,
                               unsigned char *head, size_t *head_len) {
    gd_status st = GD_OK;
    char what[600];
    const size_t n = m->usize < 8192 ? (size_t)m->usize : 8192;
    GD_CHECK(read_at(z, head, n, at, m->name));
    snprintf(what, sizeof what, "%s member %s", z->path, m->name);
    GD_CHECK(gd__npy_parse_header(head, n, (int64_t)m->usize, what, info));
    GD_REQUIRE(info->data_offset + info->data_bytes == (int64_t)m->usize, GD_ERR_FORMAT,
               "%s: member %s holds %llu bytes, its header says %lld of data after %lld of "
               "header: the archive is corrupt",
               z->path, m->name, (unsigned long long)m->usize, (long long)info->data_bytes,
               (long long)info->data_offset);
    *head_len = (size_t)info->data_offset;
fail:
    return st;
}

/* A sink that never receives data: gd__npz_info stops at the header through it. */
static gd_status info_only(void *user, const void *data, size_t n, uint64_t offset) {
    (void)user, (void)data, (void)n, (void)offset;
    return GD_ERR_INTERRUPTED;
}

gd_status gd__npz_info(const gd__npz *z, const char *name, gd_npy_info *info) {
    gd_status st = GD_OK;
    unsigned char *head = NULL;
    const member *m = find(z, name);
    int64_t at;
    size_t hl;
    memset(info, 0, sizeof *info);
    GD_REQUIRE(m, GD_ERR_NOT_FOUND, "%s has no array '%s' (no member %s.npy)", z->path, name, name);
    GD_CHECK(member_start(z, m, &at));
    if (m->method == 0) {
        GD_ALLOC(head, 8192, "a .npy header");
        GD_CHECK(stored_header(z, m, at, info, head, &hl));
    } else {
        /* Deflated: inflate until the header is parsed (the first data byte stops it). */
        st = gd__npz_read(z, name, info, info_only, NULL);
        if (st == GD_ERR_INTERRUPTED) st = GD_OK; /* the data began: the header is parsed */
        if (st != GD_OK) goto fail;
    }
fail:
    gd_free(head);
    return st;
}

/* Sequential fallback (deflated members): the sink copies into the parts. */
typedef struct {
    void *const *parts;
    const int64_t *part_bytes;
    int nparts;
} parts_sink;

static gd_status to_parts(void *user, const void *data, size_t n, uint64_t offset) {
    const parts_sink *ps = user;
    const char *p = data;
    uint64_t base = 0;
    for (int k = 0; k < ps->nparts && n > 0; k++) {
        const uint64_t end = base + (uint64_t)ps->part_bytes[k];
        if (offset < end) {
            const size_t take = (size_t)(end - offset) < n ? (size_t)(end - offset) : n;
            memcpy((char *)ps->parts[k] + (offset - base), p, take);
            p += take;
            n -= take;
            offset += take;
        }
        base = end;
    }
    return GD_OK;
}

#define PCHUNK ((int64_t)32 << 20)

typedef struct {
    int part;
    int64_t in_part, len, file_off;
    uint32_t crc;
    int err; /* errno of a failed read, -1 for the end of the file */
} pchunk;

gd_status gd__npz_read_into(const gd__npz *z, const char *name, gd_npy_info *info,
                            void *const *parts, const int64_t *part_bytes, int nparts,
                            gd__npz_landed landed, void *landed_user) {
    gd_status st = GD_OK;
    unsigned char *head = NULL;
    pchunk *ch = NULL;
    const member *m = find(z, name);
    int64_t at, total = 0, nch = 0;
    size_t hl = 0;
    memset(info, 0, sizeof *info);
    GD_REQUIRE(m, GD_ERR_NOT_FOUND, "%s has no array '%s' (no member %s.npy)", z->path, name, name);
    for (int k = 0; k < nparts; k++) total += part_bytes[k];
    GD_CHECK(member_start(z, m, &at));
    if (m->method != 0) {
        parts_sink ps = {parts, part_bytes, nparts};
        GD_CHECK(gd__npz_info(z, name, info));
        GD_REQUIRE(info->data_bytes == total, GD_ERR_INTERNAL,
                   "%s: member %s has %lld data bytes; %lld were asked for", z->path, m->name,
                   (long long)info->data_bytes, (long long)total);
        GD_CHECK(gd__npz_read(z, name, info, to_parts, &ps));
        for (int k = 0; k < nparts && landed; k++) landed(landed_user, k, 0, part_bytes[k]);
        return GD_OK;
    }
    GD_ALLOC(head, 8192, "a .npy header");
    GD_CHECK(stored_header(z, m, at, info, head, &hl));
    GD_REQUIRE(info->data_bytes == total, GD_ERR_INTERNAL,
               "%s: member %s has %lld data bytes; %lld were asked for", z->path, m->name,
               (long long)info->data_bytes, (long long)total);
    for (int k = 0; k < nparts; k++) nch += (part_bytes[k] + PCHUNK - 1) / PCHUNK;
    GD_ALLOC(ch, (size_t)(nch ? nch : 1) * sizeof *ch, "the chunks of a .npz member");
    {
        int64_t c = 0, file_off = at + (int64_t)hl;
        for (int k = 0; k < nparts; k++)
            for (int64_t o = 0; o < part_bytes[k]; o += PCHUNK) {
                const int64_t len = part_bytes[k] - o < PCHUNK ? part_bytes[k] - o : PCHUNK;
                ch[c++] = (pchunk){k, o, len, file_off, 0, 0};
                file_off += len;
            }
    }
    /*
     * Several reads in flight keep the disk's queue full, and the CRC of each chunk is taken
     * by the thread that read it, while it is still in that core's cache.
     */
#pragma omp parallel for schedule(dynamic, 1) num_threads(gd__num_threads()) if (nch > 1)
    for (int64_t c = 0; c < nch; c++) {
        char *dst = (char *)parts[ch[c].part] + ch[c].in_part;
        int64_t done = 0;
        while (done < ch[c].len) {
            const ssize_t r = pread(z->fd, dst + done, (size_t)(ch[c].len - done),
                                    (off_t)(ch[c].file_off + done));
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) {
                ch[c].err = r < 0 ? errno : -1;
                break;
            }
            done += r;
        }
        if (!ch[c].err) {
            ch[c].crc = (uint32_t)crc32(crc32(0, Z_NULL, 0), (const Bytef *)dst, (uInt)ch[c].len);
            if (landed) landed(landed_user, ch[c].part, ch[c].in_part, ch[c].len);
        }
    }
    uint32_t crc = (uint32_t)crc32(crc32(0, Z_NULL, 0), head, (uInt)hl);
    for (int64_t c = 0; c < nch; c++) {
        GD_REQUIRE(!ch[c].err, GD_ERR_IO, "%s: reading %s failed: %s", z->path, m->name,
                   ch[c].err < 0 ? "unexpected end of file" : strerror(ch[c].err));
        crc = (uint32_t)crc32_combine(crc, ch[c].crc, (z_off_t)ch[c].len);
    }
    GD_REQUIRE(crc == m->crc, GD_ERR_FORMAT,
               "%s: member %s fails its CRC-32 check (%08x, expected %08x): the archive is "
               "corrupt",
               z->path, m->name, crc, m->crc);
fail:
    gd_free(head);
    gd_free(ch);
    return st;
}
