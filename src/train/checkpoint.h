/*
 * Checkpoint files of the trainer: the model's parameters, Adam's state and what a run needs to
 * continue where it stopped (epochs done, Adam's step, the best validation accuracy so far), with
 * the model's shape and the run's settings so that `graphdirect eval --model FILE` can rebuild
 * the model and `--resume` can refuse a file written for another model, dataset or config.
 *
 * Randomness in training is counter-based (Philox keyed by the seed, the epoch and the
 * minibatch), so the whole "RNG state" of a run is its seed and the number of epochs done: a
 * run resumed from a checkpoint draws exactly what the uninterrupted run would have drawn.
 *
 * The functions work on HOST memory only: the trainer copies its device buffers to the host
 * before saving and back after loading. A save is atomic (a temporary file in the same
 * directory, fsync, rename, fsync of the directory): a failed or interrupted save leaves the
 * previous file at the path intact and no temporary file behind. A load checks the size and a
 * CRC32 of the whole file before trusting any byte of it, so a truncated or corrupted file
 * fails with a message that says so, never with garbage. The format is documented in
 * docs/formats.md ("Checkpoint and model files").
 */
#ifndef GD_TRAIN_CHECKPOINT_H
#define GD_TRAIN_CHECKPOINT_H

#include "nn/model.h"

#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The binary format's version (bytes 8..11 of the file) and its JSON header's "format". */
#define GD__CHECKPOINT_VERSION 1
#define GD__CHECKPOINT_FORMAT "graphdirect-checkpoint"
/* Headers larger than this are refused before they are read. */
#define GD__CHECKPOINT_MAX_HEADER (1 << 20)

typedef struct {
    /*
     * The model's kind, its gd__model_kind_name. A file written before the field
     * existed reads as GD__MODEL_DEFAULT; a kind this build does not know is refused.
     */
    char model[32];
    int num_layers; /* the model's shape: 1..GD_SAMPLER_MAX_LAYERS layers */
    int64_t in_dim, hidden_dim, num_classes;
    int heads; /* GAT's attention heads (1 for other kinds; a file without the key reads 1) */
    int fanouts[GD_SAMPLER_MAX_LAYERS]; /* training fanouts, hop order (-1: all neighbours) */
    uint64_t seed;                      /* the run's seed (parameters, shuffle, draws, dropout) */
    int64_t epochs_done; /* epochs completed when saved (a resumed run starts at this one) */
    int64_t adam_step;   /* Adam steps taken (gd__nn_params.step) */
    double best_valid;   /* best validation accuracy so far (NaN: none) */
    int64_t best_epoch;  /* its epoch (-1: none) */
    char dataset[256];   /* dataset name and sizes, compared on resume */
    char config[1024];   /* the rest of the config as text, compared on resume */
} gd__checkpoint_meta;

/* Empty meta: the default model kind, no best validation accuracy (NaN, epoch -1), else zero. */
void gd__checkpoint_meta_init(gd__checkpoint_meta *meta);

/*
 * Save atomically: meta, the parameters (layout->numel elements of layout->dtype at params, in
 * the layout's flat order, padding included) and, when state is non-NULL, Adam's state
 * (2 * numel elements: m then v). layout->step is not read: meta->adam_step is what is stored.
 * The layout must be float32 or float64. A NaN or infinity in the parameters or the state is
 * refused (GD_ERR_RANGE, naming the tensor and the element) before anything is written, so a
 * diverged run never replaces a good checkpoint.
 */
gd_status gd__checkpoint_save(const char *path, const gd__checkpoint_meta *meta,
                              const gd__nn_params *layout, const void *params, const void *state);

/*
 * Read the meta and the stored layout (dtype, tensor count, shapes, offsets, fan-ins, numel;
 * step = meta's adam_step; the params, grads and state tensors empty) without the data, e.g. so
 * that `graphdirect eval --model FILE` can build the model before loading it. The whole file is
 * checked (size and CRC) first. meta, layout_out and has_state (1 when the file holds Adam's
 * state) may each be NULL.
 */
gd_status gd__checkpoint_peek(const char *path, gd__checkpoint_meta *meta,
                              gd__nn_params *layout_out, int *has_state);

/*
 * Load into host buffers: params receives layout->numel elements. The stored layout must equal
 * `layout` (dtype, tensor count, every shape and offset, numel): a mismatch fails with
 * GD_ERR_INVALID_ARG naming the tensor and both shapes. meta (optional) receives the stored
 * meta. state NULL: the optimizer state is not read. state non-NULL: it receives 2 * numel
 * elements (m then v); a file without state then fails if has_state is NULL, and otherwise
 * zeroes state (Adam starts afresh) and sets *has_state to 0. *has_state (optional) tells
 * whether the file holds a state. On failure the contents of params and state are unspecified.
 */
gd_status gd__checkpoint_load(const char *path, const gd__nn_params *layout,
                              gd__checkpoint_meta *meta, void *params, void *state, int *has_state);

/*
 * Resuming: check that the checkpoint's meta (saved, read from path) fits this run's (run):
 * the model's kind and shape, the fanouts, the seed, the dataset and the config text must be equal.
 * A difference fails with GD_ERR_INVALID_ARG naming the field and both values (for the config, the
 * first differing item), and saying to use the same settings or start without --resume.
 */
gd_status gd__checkpoint_check_resume(const char *path, const gd__checkpoint_meta *saved,
                                      const gd__checkpoint_meta *run);

/*
 * The run in a checkpoint directory (checkpoint_run.c). A trainer holds at most one directory:
 * an exclusive lock on DIR/train.lock, so that a second run on DIR fails at once naming the
 * process that holds it, and whether the run in DIR is this trainer's (it resumed it, or
 * started it), so that a new run never silently replaces an earlier one.
 */
typedef struct {
    int fd;       /* the lock file, flocked (-1: no directory held) */
    dev_t dev;    /* the directory held */
    ino_t ino;
    int owns_run; /* 1: the run in the directory is this trainer's */
} gd__run_dir;

void gd__run_dir_init(gd__run_dir *r);
/* Drop the lock (if any); r then holds no directory. */
void gd__run_dir_release(gd__run_dir *r);
/*
 * Hold dir (which must exist): nothing to do when r holds it already; else its lock is taken
 * (GD_ERR_INVALID_ARG "... is in use by process PID" when another holds it) and the directory
 * r held before is let go.
 */
gd_status gd__run_dir_lock(gd__run_dir *r, const char *dir);
/*
 * A new run in dir, whose run files are checkpoint and best: when dir holds a run that is not
 * r's, it is refused (GD_ERR_INVALID_ARG naming the run found, its epochs and best valid
 * accuracy, and the two ways out: resume, overwrite) unless overwrite, which removes the files.
 * Then the run in dir is r's.
 */
gd_status gd__run_dir_claim(gd__run_dir *r, const char *dir, const char *checkpoint,
                            const char *best, int overwrite);

#ifdef __cplusplus
}
#endif

#endif /* GD_TRAIN_CHECKPOINT_H */
