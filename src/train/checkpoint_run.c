/*
 * The checkpoint directory of a run (checkpoint.h, "The run in a checkpoint directory"): the
 * exclusive lock that keeps two runs from writing one directory at once, and the check that a
 * new run does not silently replace an earlier one.
 *
 * The lock is flock(LOCK_EX | LOCK_NB) on DIR/train.lock, taken by the first fit or resume of a
 * trainer on DIR and held until the trainer goes or turns to another directory. flock belongs to
 * the open file, so the kernel drops it when the process dies, however it dies: a killed run
 * never leaves its directory locked. The holder writes its process id into the file so that the
 * run refused can name it; the id is only a message, the lock is the flock alone.
 */
#include "train/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static const char lock_name[] = "train.lock";

void gd__run_dir_init(gd__run_dir *r) {
    memset(r, 0, sizeof *r);
    r->fd = -1;
}

void gd__run_dir_release(gd__run_dir *r) {
    /* Closing the file drops the flock; the file stays, empty of meaning, for the next run. */
    if (r->fd >= 0) close(r->fd);
    gd__run_dir_init(r);
}

/* The process id the lock file of a held lock names (0: none written yet). */
static long lock_holder(int fd) {
    char text[32];
    const ssize_t n = pread(fd, text, sizeof text - 1, 0);
    if (n <= 0) return 0;
    text[n] = '\0';
    long pid = 0;
    return sscanf(text, "%ld", &pid) == 1 && pid > 0 ? pid : 0;
}

/* Write this process's id into the lock file it holds (a failure only loses the message). */
static void name_holder(int fd) {
    char text[32];
    const int n = snprintf(text, sizeof text, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) == 0 && pwrite(fd, text, (size_t)n, 0) == n) return;
}

gd_status gd__run_dir_lock(gd__run_dir *r, const char *dir) {
    gd_status st = GD_OK;
    char *path = NULL;
    struct stat sb;
    int fd = -1;
    GD_REQUIRE(stat(dir, &sb) == 0, GD_ERR_IO, "cannot open the checkpoint directory '%s': %s",
               dir, strerror(errno));
    if (r->fd >= 0 && r->dev == sb.st_dev && r->ino == sb.st_ino) return GD_OK;
    path = gd__path_join(dir, lock_name);
    GD_REQUIRE(path, GD_ERR_NO_MEMORY, "out of memory for the path of %s in '%s'", lock_name, dir);
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    GD_REQUIRE(fd >= 0, GD_ERR_IO,
               "cannot open the lock file '%s': %s; give a checkpoint directory you may write",
               path, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        const int err = errno;
        const long pid = lock_holder(fd);
        if (err == EWOULDBLOCK && pid > 0)
            st = gd__error(GD_ERR_INVALID_ARG,
                           "checkpoint directory '%s' is in use by process %ld (another run "
                           "holds %s): wait for it to end, or give another directory",
                           dir, pid, path);
        else if (err == EWOULDBLOCK)
            st = gd__error(GD_ERR_INVALID_ARG,
                           "checkpoint directory '%s' is in use by another process (it holds "
                           "%s): wait for it to end, or give another directory",
                           dir, path);
        else
            st = gd__error(GD_ERR_IO, "cannot lock '%s': %s", path, strerror(err));
        goto fail;
    }
    name_holder(fd);
    gd__run_dir_release(r);
    r->fd = fd;
    r->dev = sb.st_dev;
    r->ino = sb.st_ino;
    gd_free(path);
    return GD_OK;
fail:
    if (fd >= 0) close(fd);
    gd_free(path);
    return st;
}

/* What the run in file path is, for the refusal: its epochs and its best valid accuracy. */
static void describe_run(const char *path, const char *name, char *text, size_t n) {
    gd__checkpoint_meta m;
    if (gd__checkpoint_peek(path, &m, NULL, NULL) != GD_OK) {
        gd_clear_error();
        snprintf(text, n, "%s, which cannot be read", name);
        return;
    }
    if (isnan(m.best_valid) || m.best_epoch < 0)
        snprintf(text, n, "%s: %lld epochs done", name, (long long)m.epochs_done);
    else
        snprintf(text, n, "%s: %lld epochs done, best valid accuracy %.4f at epoch %lld", name,
                 (long long)m.epochs_done, m.best_valid, (long long)m.best_epoch + 1);
}

gd_status gd__run_dir_claim(gd__run_dir *r, const char *dir, const char *checkpoint,
                            const char *best, int overwrite) {
    gd_status st = GD_OK;
    char what[200];
    if (r->owns_run) return GD_OK;
    const int have_ck = access(checkpoint, F_OK) == 0, have_best = access(best, F_OK) == 0;
    if (have_ck || have_best) {
        if (!overwrite) {
            describe_run(have_ck ? checkpoint : best, have_ck ? "checkpoint.gdc" : "best.gdc",
                         what, sizeof what);
            return gd__error(GD_ERR_INVALID_ARG,
                             "checkpoint directory '%s' already holds a run (%s); go on with "
                             "it: --resume on the command line, resume=True in Python, "
                             "resume = 1 in C; or start again, replacing its checkpoint.gdc "
                             "and best.gdc: --overwrite, overwrite=True, overwrite = 1",
                             dir, what);
        }
        /* Starting again: the earlier run's files go now, so that none of them outlives it. */
        GD_REQUIRE((!have_ck || unlink(checkpoint) == 0 || errno == ENOENT) &&
                       (!have_best || unlink(best) == 0 || errno == ENOENT),
                   GD_ERR_IO, "cannot remove the earlier run's files in '%s': %s", dir,
                   strerror(errno));
    }
    r->owns_run = 1;
fail:
    return st;
}
