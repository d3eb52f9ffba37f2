/*
 * The option and info initialisers: gd_<struct>_init(o) fills *o with the struct's *_INIT
 * macro, for callers that cannot expand a C macro (the Python binding, other languages through
 * a foreign-function interface), so that the defaults are stated once, in the header. The
 * defaults are copied from a static object, whose padding is zero, so an initialised struct is
 * the same bytes every time.
 */
#include "internal.h"

#include <string.h>

#define GD_INIT_FN_(type, init)                                                           \
    void type##_init(type *o) {                                                           \
        static const type defaults = init;                                                \
        if (o) memcpy(o, &defaults, sizeof *o);                                           \
    }

GD_INIT_FN_(gd_dataset_open_options, GD_DATASET_OPEN_OPTIONS_INIT)
GD_INIT_FN_(gd_dataset_arrays, GD_DATASET_ARRAYS_INIT)
GD_INIT_FN_(gd_csc_options, GD_CSC_OPTIONS_INIT)
GD_INIT_FN_(gd_generate_options, GD_GENERATE_OPTIONS_INIT)
GD_INIT_FN_(gd_stripe_options, GD_STRIPE_OPTIONS_INIT)
GD_INIT_FN_(gd_convert_options, GD_CONVERT_OPTIONS_INIT)
GD_INIT_FN_(gd_gatherer_options, GD_GATHERER_OPTIONS_INIT)
GD_INIT_FN_(gd_gatherer_info, GD_GATHERER_INFO_INIT)
GD_INIT_FN_(gd_graph_options, GD_GRAPH_OPTIONS_INIT)
GD_INIT_FN_(gd_graph_info, GD_GRAPH_INFO_INIT)
GD_INIT_FN_(gd_sampler_options, GD_SAMPLER_OPTIONS_INIT)
GD_INIT_FN_(gd_sampler_info, GD_SAMPLER_INFO_INIT)
GD_INIT_FN_(gd_loader_options, GD_LOADER_OPTIONS_INIT)
GD_INIT_FN_(gd_context_options, GD_CONTEXT_OPTIONS_INIT)
GD_INIT_FN_(gd_context_info, GD_CONTEXT_INFO_INIT)
GD_INIT_FN_(gd_train_options, GD_TRAIN_OPTIONS_INIT)
GD_INIT_FN_(gd_model_info, GD_MODEL_INFO_INIT)
GD_INIT_FN_(gd_trainer_info, GD_TRAINER_INFO_INIT)
GD_INIT_FN_(gd_fit_options, GD_FIT_OPTIONS_INIT)
GD_INIT_FN_(gd_fit_result, GD_FIT_RESULT_INIT)
GD_INIT_FN_(gd_checkpoint_info, GD_CHECKPOINT_INFO_INIT)
GD_INIT_FN_(gd_loader_info, GD_LOADER_INFO_INIT)
GD_INIT_FN_(gd_batch_info, GD_BATCH_INFO_INIT)
