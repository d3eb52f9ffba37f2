/*
 * The record of a full validation (issue 19, item 2): once gd_dataset_open has checked every
 * index, label and feature value of a dataset directory, it writes `.validated` there, listing
 * meta.json and each array file with its size, modification and change times (ns), inode and
 * device. A later open that finds every file as recorded checks the sizes only: on papers the
 * full check reads 60 GB, the record a few hundred bytes. Any change to a file (a write moves
 * its ctime, which no program can set back) or to the list of files makes the record stale, and
 * the open validates again. The record is written atomically (a temporary file renamed) and on
 * a best-effort basis: a read-only directory or a full disk only means the next open checks
 * again.
 */
#include "dataset.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RECORD ".validated"
#define HEADER "graphdirect validated 1"

int gd__path_identity(const char *path, char *buf, size_t n) {
    struct stat sb;
    if (stat(path, &sb) != 0) return -1;
    snprintf(buf, n, "%lld %lld.%09ld %lld.%09ld %llu %llu", (long long)sb.st_size,
             (long long)sb.st_mtim.tv_sec, (long)sb.st_mtim.tv_nsec, (long long)sb.st_ctim.tv_sec,
             (long)sb.st_ctim.tv_nsec, (unsigned long long)sb.st_ino,
             (unsigned long long)sb.st_dev);
    return 0;
}

/* One file's identity as a line of the record (without the name). */
static int identity(const char *dir, const char *name, char *buf, size_t n) {
    char path[4096];
    /* A striped table's file may lie elsewhere (another disk): named by its absolute path. */
    if (name[0] == '/') return gd__path_identity(name, buf, n);
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) return -1;
    return gd__path_identity(path, buf, n);
}

/* The record's text for files[0..n) (plus meta.json), or -1 when a file cannot be stat'ed. */
static int record_text(const char *dir, const char *const *files, int n, char *buf, size_t size) {
    size_t used = (size_t)snprintf(buf, size, "%s\n", HEADER);
    for (int i = -1; i < n && used < size; i++) {
        const char *name = i < 0 ? "meta.json" : files[i];
        char id[192];
        if (identity(dir, name, id, sizeof id) != 0) return -1;
        used += (size_t)snprintf(buf + used, size - used, "%s %s\n", name, id);
    }
    return used < size ? 0 : -1;
}

int gd__validated_matches(const char *dir, const char *const *files, int n) {
    char want[8192], have[8192], path[4200];
    if (record_text(dir, files, n, want, sizeof want) != 0) return 0;
    snprintf(path, sizeof path, "%s/%s", dir, RECORD);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    const size_t got = fread(have, 1, sizeof have - 1, f);
    fclose(f);
    have[got] = '\0';
    return strcmp(have, want) == 0;
}

void gd__validated_write(const char *dir, const char *const *files, int n) {
    char text[8192], path[4200], tmp[4300];
    if (record_text(dir, files, n, text, sizeof text) != 0) return;
    snprintf(path, sizeof path, "%s/%s", dir, RECORD);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        GD_DEBUG("dataset %s: no record of the validation (%s): the next open checks again", dir,
                 strerror(errno));
        return;
    }
    const size_t len = strlen(text);
    const int ok = fwrite(text, 1, len, f) == len && fflush(f) == 0 && fsync(fileno(f)) == 0;
    if (fclose(f) != 0 || !ok || rename(tmp, path) != 0) {
        GD_DEBUG("dataset %s: no record of the validation (%s): the next open checks again", dir,
                 strerror(errno));
        unlink(tmp);
    }
}
