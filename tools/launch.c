/*
 * The launcher of `graphdirect train --gpus N` (docs/multi_gpu.md, "Starting the ranks"): this
 * process starts one worker per GPU, each a new run of this executable (/proc/self/exe) with the
 * same command line minus --gpus, and watches them. It never initialises CUDA: everything it
 * knows about the GPUs it learns without the driver, and the workers open the devices.
 *
 * A worker learns its place from its environment: GD_RANK, GD_WORLD_SIZE, GD_LOCAL_RANK and
 * GD_DEVICE (its GPU). The communicator id goes through pipes: rank 0 makes it (NCCL's unique id
 * starts a listener in the process that made it, which must live as long as the run, so a worker
 * makes it, not the launcher) and writes its GD_COMM_ID_BYTES bytes to the fd named by
 * GD_COMM_ID_OUT_FD; the launcher writes them to every other rank, on the fd named by
 * GD_COMM_ID_IN_FD. tools/rank.c is the worker's side.
 *
 * The launcher stops the whole run when one rank fails: it names the rank and how it ended, sends
 * SIGTERM to the others, waits GD_LAUNCH_GRACE_S seconds (15) and then kills what is left. A
 * SIGINT, SIGTERM or SIGHUP it receives is forwarded to every worker, with the same grace; a
 * second one kills them at once. Each worker runs in its own process group, so that Ctrl-C on a
 * terminal reaches it once (through the launcher), and gets SIGTERM should the launcher die. The
 * launcher exits 0 only when every rank exited 0.
 */
#define _GNU_SOURCE /* pipe2 */
#include "launch.h"

#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ------------------------------------------------------------ --gpus */

/* A GPU number at *p (0..1023), moving *p past it: 0, or -1 if there is none. */
static int gpu_number(const char **p, int *out) {
    const char *s = *p;
    long v = 0;
    if (*s < '0' || *s > '9') return -1;
    while (*s >= '0' && *s <= '9' && v <= 1023) v = v * 10 + (*s++ - '0');
    if (v > 1023) return -1;
    *p = s;
    *out = (int)v;
    return 0;
}

static int parse_gpus(const char *text, cli_gpus *g) {
    const char *p = text;
    int v;
    g->count = 0;
    if (!strchr(text, ',')) {
        if (gpu_number(&p, &v) || *p || v < 1)
            return cli_usage_error("train",
                                   "--gpus '%s' is neither a count of GPUs (1 or more) "
                                   "nor a list of GPUs (e.g. 0,2)",
                                   text);
        if (v > CLI_MAX_GPUS)
            return cli_usage_error("train", "--gpus %d: at most %d GPUs", v, CLI_MAX_GPUS);
        for (int i = 0; i < v; i++) g->devices[i] = i;
        g->count = v;
        return 0;
    }
    for (;;) {
        if (gpu_number(&p, &v) || (*p && *p != ','))
            return cli_usage_error("train", "--gpus '%s' is not a list of GPU numbers (e.g. 0,2)",
                                   text);
        for (int i = 0; i < g->count; i++)
            if (g->devices[i] == v)
                return cli_usage_error("train", "--gpus '%s' names GPU %d twice", text, v);
        if (g->count == CLI_MAX_GPUS)
            return cli_usage_error("train", "--gpus '%s': at most %d GPUs", text, CLI_MAX_GPUS);
        g->devices[g->count++] = v;
        if (!*p) return 0;
        p++;
    }
}

int cli_gpus_option(cli_gpus *g, const char *arg, char **argv, int optind) {
    const size_t slots = sizeof g->drop / sizeof g->drop[0];
    size_t k = 0;
    while (k < slots && g->drop[k]) k++;
    if (k + 2 > slots) return cli_usage_error("train", "--gpus is given too many times");
    /* "--gpus=N" is one element; "--gpus N" two, the option just before its argument. */
    g->drop[k++] = argv[optind - 1];
    if (argv[optind - 1] == arg) g->drop[k] = argv[optind - 2];
    return parse_gpus(arg, g);
}

/* ------------------------------------------------------------ checks before starting */

/*
 * How many GPUs the workers will see, learnt without the driver: the entries of
 * CUDA_VISIBLE_DEVICES when it is set, else the /dev/nvidiaN device files. -1 when unknown (no
 * such files: no NVIDIA driver, or a container that hides them); the workers' own errors then
 * say what is missing. how gets where the number came from.
 */
static int visible_gpus(char *how, size_t n) {
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    int count = 0;
    if (cvd) {
        for (const char *p = cvd; *p;) {
            const char *end = strchr(p, ',');
            const size_t len = end ? (size_t)(end - p) : strlen(p);
            if (len > 0) count++;
            p += len + (end ? 1 : 0);
        }
        snprintf(how, n, "CUDA_VISIBLE_DEVICES=%s", cvd);
        return count;
    }
    DIR *d = opendir("/dev");
    if (!d) return -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *s = e->d_name;
        if (strncmp(s, "nvidia", 6) != 0 || !s[6]) continue;
        s += 6;
        while (*s >= '0' && *s <= '9') s++;
        if (!*s) count++;
    }
    closedir(d);
    snprintf(how, n, "/dev/nvidia0..%d", count - 1);
    return count ? count : -1;
}

/* The grace period of GD_LAUNCH_GRACE_S (seconds, default 15): 0, or -1 with a message. */
static int grace_seconds(double *out) {
    const char *text = getenv("GD_LAUNCH_GRACE_S");
    *out = 15;
    if (!text || !*text) return 0;
    char *end;
    errno = 0;
    const double v = strtod(text, &end);
    if (errno || *end || !(v >= 0 && v <= 86400)) {
        fprintf(stderr,
                "graphdirect train: GD_LAUNCH_GRACE_S='%s' is not a number of seconds "
                "(0 to 86400)\n",
                text);
        return -1;
    }
    *out = v;
    return 0;
}

/* What must hold before any worker starts: 0, or the exit code (message printed). */
static int launch_check(const cli_gpus *g) {
    if (!cli_launch_selftest() && !gd_comm_available()) {
        fprintf(stderr, "graphdirect train: --gpus: this build has no NCCL: install libnccl-dev "
                        "/ the CUDA toolkit's NCCL and rebuild (or train on one GPU without "
                        "--gpus)\n");
        return CLI_EXIT_FAIL;
    }
    char how[256];
    const int visible = visible_gpus(how, sizeof how);
    for (int i = 0; visible >= 0 && i < g->count; i++)
        if (g->devices[i] >= visible) {
            fprintf(stderr,
                    "graphdirect train: --gpus asks for GPU %d, but this machine shows "
                    "%d GPU%s (%s)\n",
                    g->devices[i], visible, visible == 1 ? "" : "s", how);
            return CLI_EXIT_FAIL;
        }
    return 0;
}

/* ------------------------------------------------------------ starting the workers */

/* The workers and what the launcher holds of them. */
typedef struct {
    int n;
    pid_t pid[CLI_MAX_GPUS]; /* 0 once reaped */
    int live;
    int id_in;                /* read end of rank 0's id pipe (-1: closed) */
    int id_out[CLI_MAX_GPUS]; /* write ends of the others' id pipes (-1: closed or none) */
    unsigned char id[GD_COMM_ID_BYTES];
    size_t id_got;
    double grace_s, deadline;
    int stopping; /* the workers were asked to stop (a failure or a signal) */
    int killed;   /* and then killed */
    int failed;   /* a rank failed (reported) */
} launch_run;

/* The variables the launcher sets for a worker; a worker's environment has none of the outer. */
static const char *const worker_vars[] = {"GD_RANK",   "GD_WORLD_SIZE",     "GD_LOCAL_RANK",
                                          "GD_DEVICE", "GD_COMM_ID_OUT_FD", "GD_COMM_ID_IN_FD"};
#define NUM_WORKER_VARS ((int)(sizeof worker_vars / sizeof worker_vars[0]))

static int is_worker_var(const char *entry) {
    for (int i = 0; i < NUM_WORKER_VARS; i++) {
        const size_t len = strlen(worker_vars[i]);
        if (!strncmp(entry, worker_vars[i], len) && entry[len] == '=') return 1;
    }
    return 0;
}

/*
 * The environment of rank r: the launcher's, less any worker variable, plus r's. One allocation
 * holds the pointers and the new strings; NULL when out of memory.
 */
static char **worker_env(int r, const cli_gpus *g, int fd) {
    size_t n = 0;
    while (environ[n]) n++;
    const size_t text = 48;
    char **env = malloc((n + NUM_WORKER_VARS + 1) * sizeof *env + NUM_WORKER_VARS * text);
    if (!env) return NULL;
    char *store = (char *)(env + n + NUM_WORKER_VARS + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!is_worker_var(environ[i])) env[k++] = environ[i];
    const int values[] = {r, g->count, r, g->devices[r], fd, fd};
    for (int i = 0; i < NUM_WORKER_VARS; i++) {
        /* Rank 0 gets GD_COMM_ID_OUT_FD (index 4), the others GD_COMM_ID_IN_FD (5). */
        if ((i == 4 && r != 0) || (i == 5 && r == 0)) continue;
        snprintf(store, text, "%s=%d", worker_vars[i], values[i]);
        env[k++] = store;
        store += text;
    }
    env[k] = NULL;
    return env;
}

/* The command line of a worker: ours (argv[0] is "train") minus every --gpus. */
static char **worker_argv(int argc, char **argv, const cli_gpus *g) {
    char **out = malloc((size_t)(argc + 2) * sizeof *out);
    if (!out) return NULL;
    int k = 0;
    out[k++] = "graphdirect";
    for (int i = 0; i < argc; i++) {
        int drop = 0;
        for (size_t j = 0; j < sizeof g->drop / sizeof g->drop[0] && g->drop[j]; j++)
            drop |= argv[i] == g->drop[j];
        if (!drop) out[k++] = argv[i];
    }
    out[k] = NULL;
    return out;
}

/*
 * In the child of fork: become rank r and run the executable again. Its own process group keeps
 * the terminal's signals away from it (the launcher forwards them once); PR_SET_PDEATHSIG stops
 * it should the launcher die. Only its own end of its id pipe survives the exec (the others are
 * close-on-exec).
 */
static void exec_worker(int r, pid_t launcher, int fd, char **cargv, char **env) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != launcher) _exit(CLI_EXIT_FAIL);
    fcntl(fd, F_SETFD, 0);
    execve("/proc/self/exe", cargv, env);
    dprintf(STDERR_FILENO, "graphdirect: rank %d: cannot run /proc/self/exe: %s\n", r,
            strerror(errno));
    _exit(127);
}

/* Start the workers: 0, or -1 with a message (the ones started are then stopped by the caller). */
static int start_workers(launch_run *run, int argc, char **argv, const cli_gpus *g) {
    char **cargv = worker_argv(argc, argv, g);
    const pid_t self = getpid();
    int rc = -1;
    if (!cargv) {
        fprintf(stderr, "graphdirect train: --gpus: out of memory\n");
        return -1;
    }
    for (int r = 0; r < run->n; r++) {
        int p[2];
        if (pipe2(p, O_CLOEXEC) != 0) {
            fprintf(stderr, "graphdirect train: --gpus: pipe: %s\n", strerror(errno));
            goto done;
        }
        /* Rank 0 writes the id (p[1] is its end); the others read it (p[0]). */
        const int mine = r == 0 ? p[1] : p[0], theirs = r == 0 ? p[0] : p[1];
        char **env = worker_env(r, g, mine);
        const pid_t pid = env ? fork() : -1;
        if (pid == 0) exec_worker(r, self, mine, cargv, env);
        const int err = errno, no_env = env == NULL;
        free(env);
        close(mine);
        if (pid < 0) {
            close(theirs);
            fprintf(stderr, "graphdirect train: --gpus: cannot start rank %d: %s\n", r,
                    no_env ? "out of memory" : strerror(err));
            goto done;
        }
        setpgid(pid, pid); /* also here: whichever of the two runs first */
        run->pid[r] = pid;
        run->live++;
        if (r == 0)
            run->id_in = theirs;
        else
            run->id_out[r] = theirs;
        if (gd_log_level_get() >= GD_LOG_INFO)
            fprintf(stderr, "graphdirect: rank %d: pid %d, GPU %d\n", r, (int)pid, g->devices[r]);
    }
    rc = 0;
done:
    free(cargv);
    return rc;
}

/* ------------------------------------------------------------ watching them */

/* The first stop signal the launcher received, and how many arrived. */
static volatile sig_atomic_t stop_signal, stop_count;

static void on_stop(int sig) {
    if (!stop_signal) stop_signal = sig;
    stop_count++;
}

/* Without SA_RESTART, so that the wait loop wakes at once. */
static void catch_stop(void) {
    static const int signals[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
        sigaction(signals[i], &sa, NULL);
}

static const char *signal_name(int sig, char *buf, size_t n) {
    static const struct {
        int sig;
        const char *name;
    } names[] = {{SIGKILL, "SIGKILL"}, {SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"},
                 {SIGHUP, "SIGHUP"},   {SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"},
                 {SIGABRT, "SIGABRT"}, {SIGFPE, "SIGFPE"},   {SIGILL, "SIGILL"},
                 {SIGPIPE, "SIGPIPE"}, {SIGQUIT, "SIGQUIT"}, {SIGUSR1, "SIGUSR1"},
                 {SIGUSR2, "SIGUSR2"}, {SIGXCPU, "SIGXCPU"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].sig == sig) return names[i].name;
    snprintf(buf, n, "signal %d", sig);
    return buf;
}

static void close_id_pipes(launch_run *run) {
    if (run->id_in >= 0) close(run->id_in);
    run->id_in = -1;
    for (int r = 0; r < run->n; r++) {
        if (run->id_out[r] >= 0) close(run->id_out[r]);
        run->id_out[r] = -1;
    }
}

/*
 * Send sig to every live worker and give them the grace period. The id pipes close, so a worker
 * still waiting for the id stops waiting.
 */
static void stop_all(launch_run *run, int sig) {
    for (int r = 0; r < run->n; r++)
        if (run->pid[r] > 0) kill(run->pid[r], sig);
    if (!run->stopping) run->deadline = cli_now() + run->grace_s;
    run->stopping = 1;
    close_id_pipes(run);
}

static void kill_all(launch_run *run) {
    stop_all(run, SIGKILL);
    run->killed = 1;
}

/*
 * Read what rank 0 wrote of the id; once complete, hand it to every other rank. A pipe that
 * ends early is rank 0 ending: reap() reports that.
 */
static void relay_id(launch_run *run) {
    const ssize_t k = read(run->id_in, run->id + run->id_got, sizeof run->id - run->id_got);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (k <= 0) {
        close(run->id_in);
        run->id_in = -1;
        return;
    }
    run->id_got += (size_t)k;
    if (run->id_got < sizeof run->id) return;
    close(run->id_in);
    run->id_in = -1;
    /* A rank that is gone makes the write fail (EPIPE; SIGPIPE is ignored): reap() says why. */
    for (int r = 1; r < run->n; r++) {
        if (run->id_out[r] >= 0) (void)cli_write_all(run->id_out[r], run->id, sizeof run->id);
        if (run->id_out[r] >= 0) close(run->id_out[r]);
        run->id_out[r] = -1;
    }
}

/* A rank that just ended: report it when it is the first to fail. */
static void ended(launch_run *run, int r, int status) {
    char how[64], buf[32];
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        /* Rank 0 ending with success before its id arrived would leave the others waiting. Its
           end of the pipe is closed now, so what it wrote can be read without waiting. */
        if (r != 0 || run->stopping) return;
        while (run->id_in >= 0) relay_id(run);
        if (run->id_got == sizeof run->id) return;
        snprintf(how, sizeof how, "it ended without handing over the communicator id");
    } else if (WIFEXITED(status)) {
        snprintf(how, sizeof how, "exit status %d", WEXITSTATUS(status));
    } else {
        snprintf(how, sizeof how, "killed by signal %s",
                 signal_name(WTERMSIG(status), buf, sizeof buf));
    }
    if (run->stopping) return; /* asked to stop: how it ended is no news */
    fprintf(stderr, "graphdirect: rank %d failed (%s)%s\n", r, how,
            run->live > 0 ? "; stopping the other ranks" : "");
    run->failed = 1;
    stop_all(run, SIGTERM);
}

static void reap(launch_run *run) {
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (int r = 0; r < run->n; r++)
            if (run->pid[r] == pid) {
                run->pid[r] = 0;
                run->live--;
                ended(run, r, status);
            }
    }
}

/* Relay the id, reap, forward signals and enforce the grace period until every worker ended. */
static void watch(launch_run *run) {
    sig_atomic_t seen = 0;
    char buf[32];
    while (run->live > 0) {
        struct pollfd pfd = {run->id_in, POLLIN, 0};
        if (poll(&pfd, run->id_in >= 0 ? 1 : 0, 20) > 0) relay_id(run);
        reap(run);
        if (stop_count != seen && run->live > 0) {
            if (seen == 0 && !run->stopping) {
                stop_all(run, stop_signal);
            } else if (!run->killed) {
                fprintf(stderr, "graphdirect: %s while the ranks stop: killing them\n",
                        signal_name(stop_signal, buf, sizeof buf));
                kill_all(run);
            }
            seen = stop_count;
        }
        if (run->stopping && !run->killed && cli_now() > run->deadline) {
            for (int r = 0; r < run->n; r++)
                if (run->pid[r] > 0)
                    fprintf(stderr,
                            "graphdirect: rank %d did not stop within %g s of being "
                            "asked; killing it\n",
                            r, run->grace_s);
            kill_all(run);
        }
    }
}

int cli_launch(int argc, char **argv, const cli_gpus *g) {
    launch_run run;
    int rc = launch_check(g);
    if (rc) return rc;
    memset(&run, 0, sizeof run);
    run.n = g->count;
    run.id_in = -1;
    for (int r = 0; r < run.n; r++) run.id_out[r] = -1;
    if (grace_seconds(&run.grace_s)) return CLI_EXIT_FAIL;
    /* Before the first fork, so that no worker inherits an ignored SIGINT (a shell's `&`). */
    catch_stop();
    fflush(NULL);
    if (start_workers(&run, argc, argv, g) != 0) {
        run.failed = 1;
        stop_all(&run, SIGTERM);
    }
    /* Writing the id to a rank that is gone must not kill the launcher; the workers are
       started, so none inherits this. */
    signal(SIGPIPE, SIG_IGN);
    watch(&run);
    close_id_pipes(&run);
    if (stop_signal) return 128 + stop_signal;
    return run.failed ? CLI_EXIT_FAIL : 0;
}
