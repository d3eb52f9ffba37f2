/*
 * Several GPUs from the command line (docs/multi_gpu.md, "Starting the ranks"). One process
 * trains on each GPU. `graphdirect train --gpus N` makes this process the launcher
 * (tools/launch.c): it starts N workers of itself, relays the communicator id from rank 0 to the
 * others, waits for them and stops them all when one fails or when it is interrupted; it never
 * initialises CUDA. A worker, or a rank that `mpirun` started, joins the run (tools/rank.c): it
 * learns its rank, gets the id and creates its context with them; only rank 0 prints results and
 * writes files, and every line a worker writes to stderr starts with "rank R: ".
 */
#ifndef GD_TOOLS_LAUNCH_H
#define GD_TOOLS_LAUNCH_H

#include "graphdirect.h"

/* The most GPUs one launcher starts. */
#define CLI_MAX_GPUS 64

/*
 * The GPUs of --gpus: "N" (GPUs 0..N-1) or a list ("0,2"). The launcher starts its workers with
 * the command line minus --gpus, so the option's argv elements are noted as they are parsed
 * (getopt reorders argv, but the strings keep their addresses).
 */
typedef struct {
    int count; /* 0: no --gpus */
    int devices[CLI_MAX_GPUS];
    const char *drop[16]; /* the argv elements of every --gpus seen, NULL-padded */
} cli_gpus;

/*
 * One --gpus option that getopt_long just returned (arg is optarg, argv and optind are its
 * state): parse it into g and note its elements. 0, or the exit code of a usage error.
 */
int cli_gpus_option(cli_gpus *g, const char *arg, char **argv, int optind);

/* This process's place in a run: alone (world_size 1), or rank `rank` of `world_size`. */
typedef struct {
    int rank, world_size, local_rank;
    int device; /* the GPU of this rank; -1 when alone */
    int mpi;    /* 1: started by mpirun (MPI_Finalize or MPI_Abort at the end) */
    unsigned char comm_id[GD_COMM_ID_BYTES];
} cli_rank;

/*
 * Who runs `train`, asked once after its options are parsed (mode: --mode). Returns -1 when this
 * process trains: *me says whether alone or as which rank of a run (then with the communicator
 * id). Otherwise the command's exit code: this process was the launcher and its workers are
 * done, or the run was refused (the message printed), or a self-test worker is done.
 */
int cli_rank_start(int argc, char **argv, const cli_gpus *g, const char *mode, cli_rank *me);

/*
 * The context a rank trains with: its device, rank, world size and id, and the interrupt flag
 * of the signal handlers (cli_interrupt_flag) as the abort flag of its communicator.
 */
gd_status cli_rank_context(const cli_rank *me, gd_context_t **out);

/*
 * At the end of a rank's command, under mpirun: MPI_Finalize (rc 0), MPI_Abort (a failure) or
 * nothing (stopped by a signal). Returns rc.
 */
int cli_rank_end(cli_rank *me, int rc);

/* 1 in the workers other than rank 0, which print no progress and no results. */
int cli_quiet(void);

/*
 * The launcher of `train --gpus` (tools/launch.c), for g->count > 1: refuses what cannot run (no
 * NCCL in the build, a GPU the machine does not show), then starts and watches the workers.
 * Returns the exit code: 0 when every rank exited 0.
 */
int cli_launch(int argc, char **argv, const cli_gpus *g);

/* The self-test of the launcher (GD_LAUNCH_SELFTEST, tools/rank.c); NULL when off. */
const char *cli_launch_selftest(void);

#endif
