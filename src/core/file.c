/*
 * File I/O wrappers. Readers use them so that every failure names the path and the system's
 * reason, and so that fault injection can make any open, read or map fail. Every input is
 * opened through gd__file_open_read, which refuses anything but a regular file without ever
 * blocking (a FIFO in place of meta.json used to hang the reader forever). Output files are
 * written to a temporary name and renamed into place only once complete and flushed: a crash or
 * an error never leaves a half-written file under the final name, and the temporary names of a
 * process that was killed are swept by the next writer or reader of the same path.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* What a path that is not a regular file is, for the message that refuses it. */
static const char *file_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    return "of an unknown kind";
}

gd_status gd__file_open_read(const char *path, int *fd, int64_t *size) {
    if (gd__fault_hit(GD_FAULT_READ))
        return gd__error(GD_ERR_IO, "cannot open '%s': injected fault", path);
    /*
     * O_NONBLOCK: opening a FIFO for reading otherwise waits for a writer, forever if none
     * comes, before fstat could say what the path is. O_NOCTTY: a terminal named by mistake
     * does not become this process's controlling terminal.
     */
    int f = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
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
        return gd__error(GD_ERR_IO,
                         "'%s' is not a regular file (it is %s): graphdirect reads its inputs "
                         "only from regular files; put the file itself at that path",
                         path, file_kind(sb.st_mode));
    }
    /* A regular file ignores O_NONBLOCK; it is cleared so that later readers (zlib) see a plain
     * descriptor. */
    int flags = fcntl(f, F_GETFL);
    if (flags >= 0) (void)fcntl(f, F_SETFL, flags & ~O_NONBLOCK);
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
    /* A writer of this path that was killed mid-write left its temporary file beside it. */
    gd__sweep_stale(path);
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

gd_status gd__file_reserve(int fd, const char *path, int64_t bytes) {
    if (gd__fault_hit(GD_FAULT_WRITE))
        return gd__error(GD_ERR_IO, "cannot reserve %lld bytes for '%s': injected fault",
                         (long long)bytes, path);
    if (ftruncate(fd, (off_t)bytes) != 0)
        return gd__error(GD_ERR_IO, "cannot size '%s' to %lld bytes: %s (is the disk full?)", path,
                         (long long)bytes, strerror(errno));
    if (bytes == 0) return GD_OK;
    /*
     * A sized file has no blocks yet: writing through a mapping allocates them page by page,
     * and a page the file system cannot allocate kills the process with SIGBUS. Allocating
     * them all now turns a full disk into this error, before anything is written.
     */
    int e;
    do {
        e = posix_fallocate(fd, 0, (off_t)bytes);
    } while (e == EINTR);
    if (e == 0) return GD_OK;
    if (e == EOPNOTSUPP) {
        GD_DEBUG("'%s': the file system cannot reserve space; writing without a reservation",
                 path);
        return GD_OK;
    }
    char free_text[64] = "";
    struct statvfs sv;
    if (fstatvfs(fd, &sv) == 0)
        snprintf(free_text, sizeof free_text, "; the file system has %llu bytes free",
                 (unsigned long long)sv.f_bavail * (unsigned long long)sv.f_frsize);
    return gd__error(GD_ERR_IO,
                     "cannot reserve %lld bytes for '%s': %s%s: free some space or write "
                     "elsewhere",
                     (long long)bytes, path, strerror(e), free_text);
}

gd_status gd__file_identity(int fd, const char *path, gd__file_id *id) {
    struct stat sb;
    if (fstat(fd, &sb) != 0)
        return gd__error(GD_ERR_IO, "cannot stat '%s': %s", path, strerror(errno));
    id->dev = (uint64_t)sb.st_dev;
    id->ino = (uint64_t)sb.st_ino;
    id->size = (int64_t)sb.st_size;
    id->mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + (int64_t)sb.st_mtim.tv_nsec;
    return GD_OK;
}

gd_status gd__file_check_unchanged(const char *path, const gd__file_id *id) {
    struct stat sb;
    /*
     * A path that is gone, or that names another file now, was replaced by rename or unlink:
     * the mapping still holds the file that was opened, whose pages stay valid. Only a change
     * of that same file (written or truncated in place) pulls data from under the mapping.
     */
    if (stat(path, &sb) != 0 || (uint64_t)sb.st_dev != id->dev || (uint64_t)sb.st_ino != id->ino)
        return GD_OK;
    const int64_t mtime_ns =
        (int64_t)sb.st_mtim.tv_sec * 1000000000 + (int64_t)sb.st_mtim.tv_nsec;
    if ((int64_t)sb.st_size == id->size && mtime_ns == id->mtime_ns) return GD_OK;
    return gd__error(GD_ERR_IO,
                     "'%s' was changed in place while in use (%lld bytes when opened, %lld now%s): "
                     "the file is mapped, so the data read from it can no longer be trusted; "
                     "restore the file or re-create the dataset, then start again (train "
                     "--resume continues from the last checkpoint); replace a dataset's files "
                     "by writing new ones and renaming them, never in place",
                     path, (long long)id->size, (long long)sb.st_size,
                     (int64_t)sb.st_size == id->size ? ", modified since" : "");
}

/* ------------------------------------------------- temporary files of killed processes */

/* Remove path and, for a directory, what it holds (16 levels at most: a dataset has one). */
static void remove_tree_at(const char *path, int depth) {
    struct stat sb;
    if (lstat(path, &sb) != 0) return;
    if (!S_ISDIR(sb.st_mode) || depth > 16) {
        if (unlink(path) != 0 && errno != ENOENT)
            GD_WARN("could not remove '%s': %s", path, strerror(errno));
        return;
    }
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        char child[PATH_MAX];
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            if (snprintf(child, sizeof child, "%s/%s", path, e->d_name) >= (int)sizeof child)
                continue;
            remove_tree_at(child, depth + 1);
        }
        closedir(d);
    }
    if (rmdir(path) != 0 && errno != ENOENT)
        GD_WARN("could not remove '%s': %s", path, strerror(errno));
}

void gd__remove_tree(const char *path) { remove_tree_at(path, 0); }

/*
 * The process that wrote name, when name is a temporary name "<prefix>.tmp.<pid>" or
 * "<prefix>.old.<pid>" (gd__path_sibling) whose prefix is base, or, base NULL, ends in ext;
 * *old tells which; 0 when name is neither.
 */
static long temp_owner(const char *name, const char *base, const char *ext, bool *old) {
    const char *dot = strrchr(name, '.');
    if (!dot || dot[1] < '0' || dot[1] > '9' || dot - name < 5) return 0;
    char *end;
    long pid = strtol(dot + 1, &end, 10);
    /* Beyond INT_MAX it is no pid (and kill() would see a negative one: a process group). */
    if (*end || pid <= 0 || pid > INT_MAX) return 0;
    const char *tag = dot - 4;
    if (strncmp(tag, ".tmp", 4) != 0 && strncmp(tag, ".old", 4) != 0) return 0;
    *old = tag[1] == 'o';
    size_t prefix = (size_t)(tag - name);
    if (base) return strlen(base) == prefix && strncmp(name, base, prefix) == 0 ? pid : 0;
    size_t e = strlen(ext);
    return prefix > e && strncmp(tag - e, ext, e) == 0 ? pid : 0;
}

/* Whether process pid has ended: kill(pid, 0) says there is no such process (a process of
 * another user answers EPERM: it is alive). */
static bool process_gone(long pid) {
    return pid != (long)getpid() && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* Sweep dir of the temporary names that temp_owner(base, ext) matches and whose writer is gone. */
static void sweep(const char *dir, const char *base, const char *ext) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char child[PATH_MAX], target[PATH_MAX];
    while ((e = readdir(d)) != NULL) {
        bool old = false;
        long pid = temp_owner(e->d_name, base, ext, &old);
        if (pid == 0 || !process_gone(pid)) continue;
        /* A bare name for the current directory, so that messages show the name given. */
        int len = strcmp(dir, ".") == 0 ? snprintf(child, sizeof child, "%s", e->d_name)
                                        : snprintf(child, sizeof child, "%s/%s", dir, e->d_name);
        if (len >= (int)sizeof child) continue;
        /*
         * "<x>.old.<pid>" is a dataset that a replacement renamed away before putting the new
         * one in place. Killed between the two renames, the writer left no x: the old dataset
         * goes back; otherwise the new one is in place and the old one is only garbage.
         */
        snprintf(target, sizeof target, "%s", child);
        target[strlen(child) - strlen(strrchr(e->d_name, '.')) - 4] = '\0';
        struct stat sb;
        if (old && lstat(target, &sb) != 0 && errno == ENOENT && rename(child, target) == 0) {
            GD_WARN("restored '%s' from '%s', which process %ld left when it was killed while "
                    "replacing it",
                    target, child, pid);
            continue;
        }
        gd__remove_tree(child);
        GD_WARN("removed '%s', left by process %ld, which ended before finishing its write",
                child, pid);
    }
    closedir(d);
}

/*
 * Sweep the directory that holds path: for the temporary names of path itself (ext NULL) or
 * of every name ending in ext. Stack buffers only, like the rest of the sweep.
 */
static void sweep_beside(const char *path, const char *ext) {
    char dir[PATH_MAX];
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    if (n == 0 || n >= sizeof dir) return;
    memcpy(dir, path, n);
    dir[n] = '\0';
    char *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : dir;
    if (!slash)
        sweep(".", ext ? NULL : base, ext);
    else if (slash == dir)
        sweep("/", ext ? NULL : base, ext);
    else {
        *slash = '\0';
        sweep(dir, ext ? NULL : base, ext);
    }
}

void gd__sweep_stale(const char *path) { sweep_beside(path, NULL); }

void gd_sweep_stale_temporaries(const char *path) {
    if (path && *path) sweep_beside(path, NULL);
}

void gd__sweep_stale_beside(const char *path, const char *ext) { sweep_beside(path, ext); }
