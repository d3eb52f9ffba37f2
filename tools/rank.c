/*
 * A rank of a run on several GPUs, the worker's side of tools/launch.c: which rank this process
 * is, the communicator id, the context it trains with, and how it speaks. Two ways in:
 *   - a worker of `graphdirect train --gpus N`: GD_RANK, GD_WORLD_SIZE, GD_LOCAL_RANK and
 *     GD_DEVICE from the launcher; rank 0 makes the id and writes it to the fd named by
 *     GD_COMM_ID_OUT_FD, the others read it from the fd named by GD_COMM_ID_IN_FD;
 *   - a rank of `mpirun -np N graphdirect train ...` (Open MPI sets OMPI_COMM_WORLD_SIZE): in a
 *     build with MPI, MPI_Init gives the rank and the world size, rank 0 makes the id and
 *     MPI_Bcast hands it to the others; the GPU is GD_DEVICE, else the rank on its host
 *     (OMPI_COMM_WORLD_LOCAL_RANK). MPI does nothing else: NCCL moves the data.
 * Ranks other than 0 send stdout to /dev/null and draw no progress; every line a rank writes to
 * stderr starts with "rank R: ".
 *
 * The launcher's self-test (tests/cli_launch.sh) runs in builds without a GPU or NCCL:
 * GD_LAUNCH_SELFTEST makes a worker skip training after the id has gone round (rank 0 makes a
 * real id when the build has NCCL, else the id is GD_COMM_ID_BYTES zeros), and instead
 *   sleep[:S]  sleep S seconds (1) and exit 0;
 *   fail:R     rank R exits 1 with a message, the others sleep 60 s;
 *   crash:R    rank R is killed by SIGKILL, the others sleep 60 s;
 *   stubborn   ignore SIGINT, SIGTERM and SIGHUP and sleep 60 s (only SIGKILL stops it).
 * A sleep ends early on SIGINT, SIGTERM or SIGHUP with the exit code training would give (128 +
 * the signal). The launcher skips its NCCL check under the self-test.
 */
#define _GNU_SOURCE /* fopencookie */
#include "cli.h"
#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef GD_WITH_MPI
#include <mpi.h>
#endif

/* ------------------------------------------------------------ how a rank speaks */

static int quiet;
static char prefix[32];
static int line_start = 1;

int cli_quiet(void) {
    return quiet;
}

/*
 * The stderr of a rank: buf to fd 2 with the prefix at the start of every line. A carriage
 * return starts a line too, so that the progress bar redrawn in place keeps its prefix.
 */
static ssize_t prefixed_write(void *cookie, const char *buf, size_t size) {
    size_t done = 0;
    (void)cookie;
    while (done < size) {
        if (line_start && cli_write_all(STDERR_FILENO, prefix, strlen(prefix)))
            return done ? (ssize_t)done : -1;
        line_start = 0;
        size_t k = 0;
        while (done + k < size && buf[done + k] != '\n' && buf[done + k] != '\r') k++;
        if (done + k < size) {
            k++;
            line_start = 1;
        }
        if (cli_write_all(STDERR_FILENO, buf + done, k)) return done ? (ssize_t)done : -1;
        done += k;
    }
    return (ssize_t)size;
}

/*
 * Speak as rank me->rank. glibc lets a program assign stderr (the GNU C Library manual,
 * "Standard Streams"), so every message printed through it, the tool's and the library's log
 * alike, gets the prefix, while fd 2 stays what it was (a terminal is still one for isatty).
 */
static void become_rank(const cli_rank *me) {
    snprintf(prefix, sizeof prefix, "rank %d: ", me->rank);
    cookie_io_functions_t io = {NULL, prefixed_write, NULL, NULL};
    FILE *f = fopencookie(NULL, "w", io);
    if (f) {
        setvbuf(f, NULL, _IONBF, 0);
        fflush(stderr);
        stderr = f;
    }
    if (me->rank != 0) {
        quiet = 1;
        const int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
        fflush(stdout);
        if (fd >= 0 && dup2(fd, STDOUT_FILENO) >= 0) close(fd);
    }
}

/* ------------------------------------------------------------ the self-test */

const char *cli_launch_selftest(void) {
    const char *s = getenv("GD_LAUNCH_SELFTEST");
    return s && *s ? s : NULL;
}

/* Sleep s seconds; a stop signal ends it early unless stubborn. 0 or the interrupted code. */
static int nap(double s, int stubborn) {
    const double end = cli_now() + s;
    while (cli_now() < end) {
        if (!stubborn && cli_interrupted()) return cli_interrupted_exit();
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

/* The self-test's part of rank me->rank (see the top of the file): its exit code. */
static int selftest(const char *what, const cli_rank *me) {
    char *end;
    if (!strcmp(what, "sleep")) return nap(1, 0);
    if (!strncmp(what, "sleep:", 6)) {
        const double s = strtod(what + 6, &end);
        if (end != what + 6 && !*end && s >= 0) return nap(s, 0);
    } else if (!strncmp(what, "fail:", 5) || !strncmp(what, "crash:", 6)) {
        const char *r = strchr(what, ':') + 1;
        const long rank = strtol(r, &end, 10);
        if (end != r && !*end) {
            if (rank != me->rank) return nap(60, 0);
            if (what[0] == 'c') raise(SIGKILL);
            fprintf(stderr, "graphdirect: self-test failure (GD_LAUNCH_SELFTEST=%s)\n", what);
            return CLI_EXIT_FAIL;
        }
    } else if (!strcmp(what, "stubborn")) {
        signal(SIGINT, SIG_IGN);
        signal(SIGTERM, SIG_IGN);
        signal(SIGHUP, SIG_IGN);
        /* The test sends its signal only after this line: sooner, the default action kills. */
        fprintf(stderr, "graphdirect: rank %d: self-test: ignoring SIGINT, SIGTERM and SIGHUP\n",
                me->rank);
        return nap(60, 1);
    }
    fprintf(stderr,
            "graphdirect: GD_LAUNCH_SELFTEST='%s' is not sleep[:S], fail:R, crash:R or "
            "stubborn\n",
            what);
    return CLI_EXIT_USAGE;
}

/* ------------------------------------------------------------ joining */

/* Environment variable name as an integer in [lo, hi]: 1, 0 when unset, -1 (message) if bad. */
static int env_int(const char *name, int lo, int hi, int *out) {
    const char *t = getenv(name);
    if (!t) return 0;
    char *end;
    errno = 0;
    const long v = strtol(t, &end, 10);
    if (errno || end == t || *end || v < lo || v > hi) {
        fprintf(stderr, "graphdirect train: %s='%s' is not an integer in %d..%d\n", name, t, lo,
                hi);
        return -1;
    }
    *out = (int)v;
    return 1;
}

/* Rank 0's id: NCCL's unique id, or zeros in the self-test of a build without NCCL. */
static int make_id(unsigned char *id) {
    if (cli_launch_selftest() && !gd_comm_available()) {
        memset(id, 0, GD_COMM_ID_BYTES);
        return 0;
    }
    const gd_status st = gd_comm_id_create(id);
    return st == GD_OK ? 0 : cli_fail("making the communicator id", st);
}

/* Hand the id over on fd (rank 0 writes, the others read), then close fd: 0 or an exit code. */
static int relay_id(const cli_rank *me, int fd) {
    unsigned char *p = (unsigned char *)me->comm_id;
    size_t n = GD_COMM_ID_BYTES;
    int rc = me->rank == 0 ? make_id(p) : 0;
    while (rc == 0 && n > 0) {
        const ssize_t k = me->rank == 0 ? write(fd, p, n) : read(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            if (cli_interrupted()) {
                rc = cli_interrupted_exit();
            } else {
                fprintf(stderr,
                        "graphdirect train: the launcher closed the pipe of the "
                        "communicator id before the id went through (%s; another rank "
                        "failed?)\n",
                        k < 0 ? strerror(errno) : "end of file");
                rc = CLI_EXIT_FAIL;
            }
            break;
        }
        p += k;
        n -= (size_t)k;
    }
    close(fd);
    return rc;
}

/* A worker of `train --gpus`: -1 to train, or the exit code. */
static int join_launcher(const cli_gpus *g, cli_rank *me) {
    int world = 0, fd = -1;
    if (env_int("GD_RANK", 0, CLI_MAX_GPUS - 1, &me->rank) < 0) return CLI_EXIT_FAIL;
    const int has_world = env_int("GD_WORLD_SIZE", 1, CLI_MAX_GPUS, &world);
    if (has_world <= 0 || me->rank >= world) {
        if (has_world == 0)
            fprintf(stderr, "graphdirect train: GD_RANK is set but GD_WORLD_SIZE is not\n");
        else if (has_world > 0)
            fprintf(stderr, "graphdirect train: GD_RANK=%d is not below GD_WORLD_SIZE=%d\n",
                    me->rank, world);
        return CLI_EXIT_FAIL;
    }
    me->local_rank = me->rank;
    if (env_int("GD_LOCAL_RANK", 0, CLI_MAX_GPUS - 1, &me->local_rank) < 0) return CLI_EXIT_FAIL;
    me->device = me->local_rank;
    if (env_int("GD_DEVICE", 0, 1023, &me->device) < 0) return CLI_EXIT_FAIL;
    if (world == 1) return -1; /* a world of one trains alone */
    me->world_size = world;
    become_rank(me);
    if (g->count > 1)
        return cli_usage_error("train",
                               "--gpus in a worker (GD_RANK=%d is set): the launcher "
                               "starts the ranks, a rank cannot start more",
                               me->rank);
    const char *name = me->rank == 0 ? "GD_COMM_ID_OUT_FD" : "GD_COMM_ID_IN_FD";
    const int has_fd = env_int(name, 0, INT_MAX, &fd);
    if (has_fd <= 0) {
        if (has_fd == 0)
            fprintf(stderr,
                    "graphdirect train: GD_RANK is set but %s is not: these variables "
                    "are for the workers that `graphdirect train --gpus N` starts\n",
                    name);
        return CLI_EXIT_FAIL;
    }
    const int rc = relay_id(me, fd);
    return rc ? rc : -1;
}

/* A rank that mpirun started (OMPI_COMM_WORLD_SIZE > 1): -1 to train, or the exit code. */
static int join_mpi(const cli_gpus *g, cli_rank *me, const char *size) {
    if (g->count > 1)
        return cli_usage_error("train", "--gpus under mpirun: mpirun -np N starts the ranks; "
                                        "leave out --gpus");
#ifndef GD_WITH_MPI
    (void)me;
    fprintf(stderr,
            "graphdirect train: started by mpirun (OMPI_COMM_WORLD_SIZE=%s), but this "
            "build has no MPI: install libopenmpi-dev and rebuild, or start the ranks "
            "of one host with --gpus N\n",
            size);
    return CLI_EXIT_FAIL;
#else
    (void)size;
    if (MPI_Init(NULL, NULL) != MPI_SUCCESS) {
        fprintf(stderr, "graphdirect train: MPI_Init failed under mpirun\n");
        return CLI_EXIT_FAIL;
    }
    me->mpi = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &me->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &me->world_size);
    me->local_rank = me->rank;
    if (env_int("OMPI_COMM_WORLD_LOCAL_RANK", 0, INT_MAX, &me->local_rank) < 0)
        return cli_rank_end(me, CLI_EXIT_FAIL);
    me->device = me->local_rank;
    if (env_int("GD_DEVICE", 0, 1023, &me->device) < 0) return cli_rank_end(me, CLI_EXIT_FAIL);
    become_rank(me);
    /* A failed id must not leave the others in MPI_Bcast: cli_rank_end aborts the job. */
    const int rc = me->rank == 0 ? make_id(me->comm_id) : 0;
    if (rc) return cli_rank_end(me, rc);
    MPI_Bcast(me->comm_id, GD_COMM_ID_BYTES, MPI_BYTE, 0, MPI_COMM_WORLD);
    return -1;
#endif
}

int cli_rank_start(int argc, char **argv, const cli_gpus *g, const char *mode, cli_rank *me) {
    const char *mpi_size = getenv("OMPI_COMM_WORLD_SIZE");
    const int cpu = mode && !strcmp(mode, "cpu");
    int rc;
    memset(me, 0, sizeof *me);
    me->world_size = 1;
    me->device = -1;
    if (getenv("GD_RANK")) {
        cli_catch_stop_signals(); /* the id's wait and the self-test stop on a signal too */
        rc = join_launcher(g, me);
    } else if (mpi_size && strcmp(mpi_size, "1") != 0) {
        rc = join_mpi(g, me, mpi_size);
        cli_catch_stop_signals();
    } else if (g->count > 1) {
        if (cpu)
            return cli_usage_error("train", "--gpus trains on GPUs; --mode cpu runs on the CPU");
        return cli_launch(argc, argv, g);
    } else {
        return -1; /* alone */
    }
    if (rc < 0 && me->world_size > 1 && cpu)
        rc = cli_usage_error("train", "%d ranks train on GPUs; --mode cpu runs on the CPU",
                             me->world_size);
    if (rc < 0 && me->world_size > 1 && cli_launch_selftest())
        rc = selftest(cli_launch_selftest(), me);
    return rc < 0 ? rc : cli_rank_end(me, rc);
}

gd_status cli_rank_context(const cli_rank *me, gd_context_t **out) {
    gd_context_options o = GD_CONTEXT_OPTIONS_INIT;
    o.device = me->device;
    o.rank = me->rank;
    o.world_size = me->world_size;
    o.comm_id = me->comm_id;
    o.abort_flag = cli_interrupt_flag();
    return gd_context_create(&o, out);
}

/*
 * Under mpirun: a rank that succeeded finalizes; one that failed aborts the job, so that no rank
 * waits for it; one that was stopped by a signal just exits (mpirun is ending the job, and
 * MPI_Finalize could wait for ranks that are gone).
 */
int cli_rank_end(cli_rank *me, int rc) {
#ifdef GD_WITH_MPI
    if (me->mpi) {
        me->mpi = 0;
        fflush(NULL);
        if (rc == 0)
            MPI_Finalize();
        else if (!cli_interrupted() || rc != cli_interrupted_exit())
            MPI_Abort(MPI_COMM_WORLD, rc);
    }
#else
    (void)me;
#endif
    return rc;
}
