/*
 * File I/O wrappers. Readers use them so that every failure names the path and the system's
 * reason, and so that fault injection can make any open, read or map fail. Output files are
 * written to a temporary name and renamed into place only once complete and flushed: a crash or
 * an error never leaves a half-written file under the final name.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

gd_status gd__file_open_read(const char *path, int *fd, int64_t *size) {
    if (gd__fault_hit(GD_FAULT_READ))
        return gd__error(GD_ERR_IO, "cannot open '%s': injected fault", path);
    int f = open(path, O_RDONLY | O_CLOEXEC);
    if (f < 0)
        return gd__error(errno == ENOENT ? GD_ERR_NOT_FOUND : GD_ERR_IO, "cannot open '%s': %s",
                         path, strerror(errno));
    struct stat sb;
    if (fstat(f, &sb) != 0) {
        int e = errno;
        close(f);
        return gd__error(GD_ERR_IO, "cannot stat '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(f);
        return gd__error(GD_ERR_IO, "'%s' is not a regular file", path);
    }
    *fd = f;
    if (size) *size = (int64_t)sb.st_size;
    return GD_OK;
}

gd_status gd__file_pread(int fd, const char *path, void *buf, size_t bytes, int64_t offset) {
    if (gd__fault_hit(GD_FAULT_READ))
        return gd__error(GD_ERR_IO, "cannot read '%s': injected fault", path);
    unsigned char *p = buf;
    size_t done = 0;
    while (done < bytes) {
        size_t want = bytes - done;
        if (want > (1u << 30)) want = 1u << 30;
        ssize_t got = pread(fd, p + done, want, (off_t)(offset + (int64_t)done));
        if (got < 0) {
            if (errno == EINTR) continue;
            return gd__error(GD_ERR_IO, "cannot read '%s' at offset %lld: %s", path,
                             (long long)(offset + (int64_t)done), strerror(errno));
        }
        if (got == 0)
            return gd__error(GD_ERR_FORMAT,
                             "'%s' is truncated: needed %zu bytes at offset %lld, the file ends "
                             "after %zu",
                             path, bytes, (long long)offset, done);
        done += (size_t)got;
    }
    return GD_OK;
}

gd_status gd__file_read_all(const char *path, int64_t max_bytes, char **buf, size_t *len) {
    gd_status st = GD_OK;
    int fd = -1;
    int64_t size = 0;
    char *data = NULL;
    GD_CHECK(gd__file_open_read(path, &fd, &size));
    GD_REQUIRE(size <= max_bytes, GD_ERR_FORMAT, "'%s' is %lld bytes, more than the %lld allowed",
               path, (long long)size, (long long)max_bytes);
    GD_ALLOC(data, (size_t)size + 1, path);
    GD_CHECK(gd__file_pread(fd, path, data, (size_t)size, 0));
    data[size] = '\0';
    close(fd);
    *buf = data;
    if (len) *len = (size_t)size;
    return GD_OK;
fail:
    gd_free(data);
    if (fd >= 0) close(fd);
    return st;
}

gd_status gd__file_map(int fd, const char *path, int64_t offset, int64_t bytes, void **base,
                       void **data, size_t *map_len) {
    if (gd__fault_hit(GD_FAULT_READ))
        return gd__error(GD_ERR_IO, "cannot map '%s': injected fault", path);
    long page = sysconf(_SC_PAGESIZE);
    int64_t start = offset - offset % page;
    size_t len = (size_t)(bytes + (offset - start));
    if (len == 0) len = (size_t)page;
    void *p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)start);
    if (p == MAP_FAILED)
        return gd__error(GD_ERR_IO, "cannot map %lld bytes of '%s' at offset %lld: %s",
                         (long long)bytes, path, (long long)offset, strerror(errno));
    *base = p;
    *data = (char *)p + (offset - start);
    *map_len = len;
    return GD_OK;
}

void gd__file_unmap(void *base, size_t map_len) {
    if (base) munmap(base, map_len);
}

gd_status gd__outfile_create(gd__outfile *f, const char *path) {
    gd_status st = GD_OK;
    f->fd = -1;
    f->tmp_path = NULL;
    f->path = gd__strdup(path);
    GD_REQUIRE(f->path, GD_ERR_NO_MEMORY, "out of memory naming output file '%s'", path);
    f->tmp_path = gd__path_sibling(path, "tmp");
    GD_REQUIRE(f->tmp_path, GD_ERR_NO_MEMORY, "out of memory naming a file beside '%s'", path);
    GD_REQUIRE(!gd__fault_hit(GD_FAULT_WRITE), GD_ERR_IO, "cannot create '%s': injected fault",
               f->tmp_path);
    f->fd = open(f->tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    GD_REQUIRE(f->fd >= 0, GD_ERR_IO, "cannot create '%s': %s", f->tmp_path, strerror(errno));
    return GD_OK;
fail:
    gd_free(f->path);
    gd_free(f->tmp_path);
    f->path = f->tmp_path = NULL;
    return st;
}

gd_status gd__outfile_write(gd__outfile *f, const void *data, size_t bytes) {
    if (gd__fault_hit(GD_FAULT_WRITE))
        return gd__error(GD_ERR_IO, "cannot write '%s': injected fault", f->tmp_path);
    const unsigned char *p = data;
    while (bytes > 0) {
        size_t want = bytes > (1u << 30) ? (1u << 30) : bytes;
        ssize_t put = write(f->fd, p, want);
        if (put < 0) {
            if (errno == EINTR) continue;
            return gd__error(GD_ERR_IO, "cannot write '%s': %s (is the disk full?)", f->tmp_path,
                             strerror(errno));
        }
        p += put;
        bytes -= (size_t)put;
    }
    return GD_OK;
}

gd_status gd__outfile_truncate(gd__outfile *f, int64_t bytes) {
    if (gd__fault_hit(GD_FAULT_WRITE))
        return gd__error(GD_ERR_IO, "cannot size '%s': injected fault", f->tmp_path);
    if (ftruncate(f->fd, (off_t)bytes) != 0)
        return gd__error(GD_ERR_IO, "cannot size '%s' to %lld bytes: %s", f->tmp_path,
                         (long long)bytes, strerror(errno));
    return GD_OK;
}

static void outfile_release(gd__outfile *f) {
    if (f->fd >= 0) close(f->fd);
    f->fd = -1;
    gd_free(f->path);
    gd_free(f->tmp_path);
    f->path = f->tmp_path = NULL;
}

gd_status gd__outfile_commit(gd__outfile *f) {
    gd_status st = GD_OK;
    GD_REQUIRE(!gd__fault_hit(GD_FAULT_WRITE), GD_ERR_IO, "cannot flush '%s': injected fault",
               f->tmp_path);
    GD_REQUIRE(fsync(f->fd) == 0, GD_ERR_IO, "cannot flush '%s' to disk: %s", f->tmp_path,
               strerror(errno));
    GD_REQUIRE(close(f->fd) == 0, GD_ERR_IO, "cannot close '%s': %s", f->tmp_path,
               strerror(errno));
    f->fd = -1;
    GD_REQUIRE(rename(f->tmp_path, f->path) == 0, GD_ERR_IO, "cannot rename '%s' to '%s': %s",
               f->tmp_path, f->path, strerror(errno));
    outfile_release(f);
    return GD_OK;
fail:
    gd__outfile_abort(f);
    return st;
}

void gd__outfile_abort(gd__outfile *f) {
    if (f->tmp_path) unlink(f->tmp_path);
    outfile_release(f);
}

gd_status gd__fsync_dir(const char *dir, bool fault) {
    if (fault && gd__fault_hit(GD_FAULT_WRITE))
        return gd__error(GD_ERR_IO, "cannot flush directory '%s': injected fault", dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return gd__error(GD_ERR_IO, "cannot open directory '%s': %s", dir, strerror(errno));
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    if (rc != 0 && e != EINVAL)
        return gd__error(GD_ERR_IO, "cannot flush directory '%s': %s", dir, strerror(e));
    return GD_OK;
}
