/*
 * What the file system can do to a run (issue 13 items 1, 6, 11 and 13), one regression per
 * finding: a disk that fills while a dataset is written through a mapping (it used to kill the
 * process with SIGBUS), temporary files of a killed run (they used to stay forever), a FIFO or
 * another non-regular file in place of an input (a FIFO used to hang the reader), and a mapped
 * dataset changed in place while a trainer uses it (it used to crash training). The disk-full
 * case runs in a child on a small tmpfs when the process may mount one (as root, or in a user
 * namespace), and under RLIMIT_FSIZE always.
 */
#define _GNU_SOURCE
#include "io/dataset.h"
#include "test.h"
#include "train/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>

static char root[256];

/* root/name into buf. */
static const char *at(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "%s/%s", root, name);
    return buf;
}

static int exists(const char *path) {
    struct stat sb;
    return lstat(path, &sb) == 0;
}

/* The number of entries of dir whose name starts with prefix and holds ".tmp." or ".old.". */
static int temporaries(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0 &&
            (strstr(e->d_name, ".tmp.") || strstr(e->d_name, ".old.")))
            n++;
    closedir(d);
    return n;
}

/* A small generated dataset in dir. */
static void make_dataset(const char *dir, int64_t nodes) {
    gd_generate_options o = GD_GENERATE_OPTIONS_INIT;
    o.preset = "tiny";
    o.num_nodes = nodes;
    o.out_dir = dir;
    o.overwrite = 1;
    o.threads = 2;
    T_OK(gd_generate(&o, NULL));
}

/*
 * Run child `name` of this program with arg in a fresh process (fork and exec: OpenMP's
 * threads, which the parent has started, do not survive a bare fork); returns its exit status,
 * failing the test if a signal killed it.
 */
static int in_child(const char *name, const char *arg, const char *what) {
    fflush(NULL);
    pid_t pid = fork();
    T_ASSERT(pid >= 0);
    if (pid == 0) {
        execl("/proc/self/exe", "test_io_hazards", "child", name, arg, root, (char *)NULL);
        _exit(5);
    }
    int status = 0;
    T_ASSERT(waitpid(pid, &status, 0) == pid);
    if (WIFSIGNALED(status))
        T_FAIL_("%s: the child was killed by signal %d", what, WTERMSIG(status));
    return WEXITSTATUS(status);
}

/* A pid that no process has: a child that has exited and been reaped. */
static pid_t dead_pid(void) {
    pid_t pid = fork();
    T_ASSERT(pid >= 0);
    if (pid == 0) _exit(0);
    T_ASSERT(waitpid(pid, NULL, 0) == pid);
    return pid;
}

/* ------------------------------------------------------------ item 1: a full disk */

/* Generate into dir/x; 0 when it succeeded or failed cleanly, leaving no temporary behind. */
static int generate_into(const char *dir) {
    char out[512];
    snprintf(out, sizeof out, "%s/x", dir);
    gd_generate_options o = GD_GENERATE_OPTIONS_INIT;
    o.preset = "tiny";
    o.num_nodes = 4000;
    o.out_dir = out;
    o.threads = 2;
    gd_status st = gd_generate(&o, NULL);
    if (st != GD_OK && (st != GD_ERR_IO || !strstr(gd_last_error(), out))) {
        fprintf(stderr, "generate failed with %s: %s\n", gd_status_string(st), gd_last_error());
        return 2;
    }
    if (temporaries(dir, "x") != 0) {
        fprintf(stderr, "generate (%s) left a temporary directory in %s\n", gd_status_string(st),
                dir);
        return 3;
    }
    return st == GD_OK ? 0 : 1;
}

static int write_text(const char *path, const char *text) {
    int fd = open(path, O_WRONLY);
    if (fd < 0) return -1;
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* In a child: mount a tmpfs of `size` on root/small, private to the child; 0 on success. */
static int mount_small_tmpfs(const char *size) {
    char dir[300], opts[64];
    at(dir, sizeof dir, "small");
    if (unshare(CLONE_NEWNS) != 0) {
        uid_t uid = geteuid();
        gid_t gid = getegid();
        char map[64];
        if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return -1;
        write_text("/proc/self/setgroups", "deny");
        snprintf(map, sizeof map, "0 %u 1", (unsigned)uid);
        if (write_text("/proc/self/uid_map", map) != 0) return -1;
        snprintf(map, sizeof map, "0 %u 1", (unsigned)gid);
        if (write_text("/proc/self/gid_map", map) != 0) return -1;
    }
    if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) return -1;
    snprintf(opts, sizeof opts, "size=%s", size);
    return mount("none", dir, "tmpfs", 0, opts);
}

/* The child of the tmpfs case: 77 when no tmpfs can be mounted here. */
static int generate_on_small_tmpfs(const char *size) {
    char dir[300];
    if (mount_small_tmpfs(size) != 0) return 77;
    return generate_into(at(dir, sizeof dir, "small"));
}

/* The child of the RLIMIT_FSIZE case: a file may not grow past 200 KB (SIGXFSZ ignored). */
static int generate_under_fsize_limit(const char *dir) {
    struct rlimit rl = {200 << 10, 200 << 10};
    signal(SIGXFSZ, SIG_IGN);
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0) return 4;
    return generate_into(dir);
}

static void generate_sigbus_when_the_disk_fills(void) {
    char dir[300];
    T_ASSERT(mkdir(at(dir, sizeof dir, "small"), 0755) == 0);
    /* Free space from nothing to more than the dataset needs: each level either completes or
     * fails with a message naming the file, never a signal, never a leftover. */
    int mounted = 0, failed = 0, done = 0;
    for (int kb = 64; kb <= 1600; kb += 96) {
        char size[32];
        snprintf(size, sizeof size, "%dk", kb);
        int rc = in_child("tmpfs", size, "generate on a small tmpfs");
        if (rc == 77) break;
        if (rc > 1) T_FAIL_("generate on a %s tmpfs: exit %d", size, rc);
        mounted = 1;
        rc ? failed++ : done++;
    }
    if (mounted)
        T_ASSERT(failed > 0 && done > 0);
    else
        fprintf(stderr, "no tmpfs can be mounted here: only the RLIMIT_FSIZE case runs\n");
    T_EQ_INT(in_child("fsize", dir, "generate under RLIMIT_FSIZE"), 1);

    /* The reservation is a write fault point like any other: failing it fails the build. */
    int64_t n = 0;
    gd_status st;
    gd_generate_options o = GD_GENERATE_OPTIONS_INIT;
    o.preset = "tiny";
    o.num_nodes = 300;
    o.out_dir = dir;
    o.overwrite = 1;
    o.threads = 1;
    do {
        gd_fault_set(GD_FAULT_WRITE, ++n);
        st = gd_generate(&o, NULL);
        gd_fault_set(GD_FAULT_WRITE, 0);
    } while (st != GD_OK && !strstr(gd_last_error(), "cannot reserve") && n < 100);
    T_ASSERT(st == GD_ERR_IO && strstr(gd_last_error(), "cannot reserve"));
    T_EQ_INT(temporaries(root, "small"), 0);
    fprintf(stderr, "disk full: %s, RLIMIT_FSIZE and the reservation fault fail cleanly\n",
            mounted ? "tmpfs levels" : "(no tmpfs)");
}

/* ------------------------------------------------------------ item 6: killed runs */

/* Children that die by SIGKILL in the middle of a write. */
static int killed_building(const char *target) {
    gd_dataset_t *ds = NULL;
    if (gd__dataset_new("x", target, 1, &ds) != GD_OK) return 1;
    raise(SIGKILL);
    return 1;
}

static int killed_saving(const char *path) {
    gd__outfile f;
    if (gd__outfile_create(&f, path) != GD_OK || gd__outfile_write(&f, "partial", 7) != GD_OK)
        return 1;
    raise(SIGKILL);
    return 1;
}

/* Fork fn(arg), which must die by SIGKILL; returns its pid. */
static pid_t killed_child(int (*fn)(const char *), const char *arg) {
    fflush(NULL);
    pid_t pid = fork();
    T_ASSERT(pid >= 0);
    if (pid == 0) _exit(fn(arg));
    int status = 0;
    T_ASSERT(waitpid(pid, &status, 0) == pid);
    T_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    return pid;
}

static void temporary_files_of_a_killed_run_stay_forever(void) {
    char ds[300], tmp[800], live[400], old[400];
    at(ds, sizeof ds, "kept");
    make_dataset(ds, 300);
    /* A build killed mid-write leaves "<dir>.tmp.<pid>"; opening the dataset removes it. */
    pid_t pid = killed_child(killed_building, ds);
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", ds, (int)pid);
    T_ASSERT(exists(tmp));
    /* A temporary whose process is alive (pid 1) is someone's write in progress: kept. */
    snprintf(live, sizeof live, "%s.tmp.1", ds);
    T_ASSERT(mkdir(live, 0755) == 0);
    gd_dataset_t *d = NULL;
    T_OK(gd_dataset_open(ds, NULL, &d));
    gd_dataset_close(d);
    T_ASSERT(!exists(tmp));
    T_ASSERT(exists(live));
    T_ASSERT(rmdir(live) == 0);

    /* The next run of the same command (a build of the same target) removes it as well. */
    pid = killed_child(killed_building, ds);
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", ds, (int)pid);
    T_ASSERT(exists(tmp));
    make_dataset(ds, 300);
    T_ASSERT(!exists(tmp));

    /* Killed between renaming the old dataset away and putting the new one in place: the old
     * one comes back. */
    snprintf(old, sizeof old, "%s.old.%d", ds, (int)dead_pid());
    T_ASSERT(rename(ds, old) == 0);
    T_OK(gd_dataset_open(ds, NULL, &d));
    gd_dataset_close(d);
    T_ASSERT(!exists(old));

    /* A checkpoint save killed mid-write leaves "<name>.gdc.tmp.<pid>": the next save of that
     * checkpoint, or reading any checkpoint of the directory, removes it. */
    char ck[300], path[600];
    at(ck, sizeof ck, "ck");
    T_ASSERT(mkdir(ck, 0755) == 0);
    snprintf(path, sizeof path, "%s/last.gdc", ck);
    pid = killed_child(killed_saving, path);
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)pid);
    T_ASSERT(exists(tmp));
    snprintf(path, sizeof path, "%s/best.gdc", ck);
    T_FAILS(gd__checkpoint_peek(path, NULL, NULL, NULL), GD_ERR_NOT_FOUND, "best.gdc");
    T_ASSERT(!exists(tmp));
    snprintf(path, sizeof path, "%s/last.gdc", ck);
    pid = killed_child(killed_saving, path);
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)pid);
    gd__outfile f;
    T_OK(gd__outfile_create(&f, path));
    gd__outfile_abort(&f);
    T_ASSERT(!exists(tmp));
    T_EQ_INT(temporaries(ck, ""), 0);
    fprintf(stderr, "killed runs: dataset and checkpoint temporaries swept, a live one kept\n");
}

/* ------------------------------------------------------------ item 11: FIFOs */

/* Put a FIFO, a directory, a symlink loop and a device in place of path in turn; each must be
 * refused by open_fn with a message naming path. */
static void refuse_non_regular(const char *path, gd_status (*open_fn)(const char *),
                               const char *what) {
    char aside[400];
    snprintf(aside, sizeof aside, "%s.aside", path);
    int had = exists(path);
    if (had) T_ASSERT(rename(path, aside) == 0);
    /* convert says "folder" for a directory given as an edge list. */
    static const char *const kinds[4] = {"FIFO", "director", "symbolic links", "device"};
    for (int k = 0; k < 4; k++) {
        if (k == 0) T_ASSERT(mkfifo(path, 0644) == 0);
        if (k == 1) T_ASSERT(mkdir(path, 0755) == 0);
        if (k == 2) T_ASSERT(symlink(path, path) == 0);
        if (k == 3) T_ASSERT(symlink("/dev/null", path) == 0);
        gd_status st = open_fn(path);
        const char *msg = gd_last_error();
        if (st == GD_OK || (!strstr(msg, kinds[k]) && !(k == 1 && strstr(msg, "folder"))))
            T_FAIL_("%s with a %s in place of %s: %s: %s", what, kinds[k], path,
                    gd_status_string(st), gd_last_error());
        if (k == 1)
            T_ASSERT(rmdir(path) == 0);
        else
            T_ASSERT(unlink(path) == 0);
    }
    if (had) T_ASSERT(rename(aside, path) == 0);
}

static char dataset_dir[300];

static gd_status open_mapped(const char *path) {
    (void)path;
    gd_dataset_t *d = NULL;
    gd_status st = gd_dataset_open(dataset_dir, NULL, &d);
    gd_dataset_close(d);
    return st;
}

static gd_status open_loaded(const char *path) {
    (void)path;
    gd_dataset_open_options o = GD_DATASET_OPEN_OPTIONS_INIT;
    o.mode = GD_OPEN_LOAD;
    gd_dataset_t *d = NULL;
    gd_status st = gd_dataset_open(dataset_dir, &o, &d);
    gd_dataset_close(d);
    return st;
}

static gd_status convert_edge_list(const char *path) {
    gd_convert_options o = GD_CONVERT_OPTIONS_INIT;
    gd_dataset_t *d = NULL;
    gd_status st = gd_convert(path, &o, &d);
    gd_dataset_close(d);
    return st;
}

static gd_status read_checkpoint(const char *path) {
    return gd__checkpoint_peek(path, NULL, NULL, NULL);
}

static void fifo_in_place_of_an_input_hangs(void) {
    char path[400];
    /* A hang is the failure: the alarm's default action ends the test. */
    alarm(120);
    at(dataset_dir, sizeof dataset_dir, "fifo");
    make_dataset(dataset_dir, 300);
    snprintf(path, sizeof path, "%s/meta.json", dataset_dir);
    refuse_non_regular(path, open_mapped, "opening a dataset");
    snprintf(path, sizeof path, "%s/features.npy", dataset_dir);
    refuse_non_regular(path, open_mapped, "mapping a dataset");
    snprintf(path, sizeof path, "%s/labels.npy", dataset_dir);
    refuse_non_regular(path, open_loaded, "loading a dataset");
    refuse_non_regular(at(path, sizeof path, "edges.txt"), convert_edge_list, "convert");
    refuse_non_regular(at(path, sizeof path, "model.gdc"), read_checkpoint, "a checkpoint");
    /* An unreadable file says so (root reads everything: nothing to check there). */
    if (geteuid() != 0) {
        snprintf(path, sizeof path, "%s/meta.json", dataset_dir);
        T_ASSERT(chmod(path, 0) == 0);
        T_FAILS(open_mapped(path), GD_ERR_IO, "Permission denied");
        T_ASSERT(chmod(path, 0644) == 0);
    }
    T_OK(open_mapped(NULL));
    alarm(0);
    fprintf(stderr, "non-regular inputs: refused without blocking\n");
}

/* ------------------------------------------------------------ item 13: changed in place */

static void append_byte(const char *path) {
    int fd = open(path, O_WRONLY | O_APPEND);
    T_ASSERT(fd >= 0);
    T_ASSERT(write(fd, "", 1) == 1);
    close(fd);
}

static void copy_file(const char *from, const char *to) {
    char buf[4096];
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    T_ASSERT(in >= 0 && out >= 0);
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0) T_ASSERT(write(out, buf, (size_t)n) == n);
    close(in);
    close(out);
}

static void changing_a_mapped_dataset_in_place_crashes_training(void) {
    char dir[300], path[400], fresh[400];
    at(dir, sizeof dir, "changed");
    make_dataset(dir, 2000);
    gd_dataset_t *ds = NULL;
    T_OK(gd_dataset_open(dir, NULL, &ds));
    T_OK(gd__dataset_check_unchanged(ds));

    /* Replaced by a rename: the mapping keeps the file it opened, which is intact. */
    snprintf(path, sizeof path, "%s/valid_idx.npy", dir);
    snprintf(fresh, sizeof fresh, "%s/valid_idx.npy.new", dir);
    copy_file(path, fresh);
    T_ASSERT(rename(fresh, path) == 0);
    T_OK(gd__dataset_check_unchanged(ds));

    /* Touched in place, same size: the data can no longer be trusted. */
    snprintf(path, sizeof path, "%s/test_idx.npy", dir);
    struct timespec times[2] = {{0, UTIME_OMIT}, {12345, 0}};
    T_ASSERT(utimensat(AT_FDCWD, path, times, 0) == 0);
    T_FAILS(gd__dataset_check_unchanged(ds), GD_ERR_IO, "test_idx.npy' was changed in place");
    gd_dataset_close(ds);

    /* A trainer stops at the next epoch boundary with the file's name. */
    T_OK(gd_dataset_open(dir, NULL, &ds));
    gd_train_options o = GD_TRAIN_OPTIONS_INIT;
    o.mode = "cpu";
    o.threads = 2;
    o.hidden = 16;
    o.batch_size = 256;
    gd_trainer_t *t = NULL;
    T_OK(gd_trainer_create(ds, &o, &t));
    gd_fit_options f = GD_FIT_OPTIONS_INIT;
    f.epochs = 1;
    T_OK(gd_trainer_fit(t, &f, NULL));
    snprintf(path, sizeof path, "%s/features.npy", dir);
    append_byte(path);
    f.epochs = 3;
    gd_fit_result r = GD_FIT_RESULT_INIT;
    T_FAILS(gd_trainer_fit(t, &f, &r), GD_ERR_IO, "features.npy' was changed in place");
    T_EQ_INT(r.epochs_done, 1);
    gd_trainer_destroy(t);
    /* So does a loader, at the start of an epoch. */
    gd_loader_options lo = GD_LOADER_OPTIONS_INIT;
    lo.mode = "cpu";
    lo.threads = 2;
    lo.batch_size = 256;
    gd_loader_t *l = NULL;
    T_OK(gd_loader_create(ds, &lo, &l));
    T_FAILS(gd_loader_start_epoch(l, 0), GD_ERR_IO, "features.npy' was changed in place");
    gd_loader_destroy(l);
    gd_dataset_close(ds);
    fprintf(stderr, "changed in place: caught at open-time identity and at the epoch boundaries "
                    "of a trainer and a loader\n");
}

int main(int argc, char **argv) {
    if (argc == 5 && strcmp(argv[1], "child") == 0) {
        snprintf(root, sizeof root, "%s", argv[4]);
        if (strcmp(argv[2], "tmpfs") == 0) return generate_on_small_tmpfs(argv[3]);
        return generate_under_fsize_limit(argv[3]);
    }
    t_tmpdir(root, sizeof root);
    fifo_in_place_of_an_input_hangs();
    changing_a_mapped_dataset_in_place_crashes_training();
    temporary_files_of_a_killed_run_stay_forever();
    generate_sigbus_when_the_disk_fills();
    t_check_no_leaks();
    t_rmtree(root);
    printf("test_io_hazards: ok\n");
    return 0;
}
