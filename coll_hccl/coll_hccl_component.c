/*
 * coll_hccl_component.c - the component symbol Open MPI looks up (mca_coll_hccl_component), its
 * MCA parameters, and process-wide engine start-up and shut-down.
 *
 * register/open/close also run inside ompi_info, so they only declare parameters; the engine is
 * started from init_query, which only MPI_Init calls.
 */
#include "coll_hccl.h"
#include "coll_hccl_sched.h"
#include "coll_hccl_version.h"

#include <stdio.h>

#include "opal/mca/base/mca_base_var.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

/* Set from the mpi_yield_when_idle parameter, which the runtime turns on when ranks outnumber
 * cores; libmpi exports it but no installed header declares it (ompi_mpi_init.c does the same). */
extern bool ompi_mpi_yield_when_idle;

static int hccl_register(void);
static int hccl_open(void);
static int hccl_close(void);
static int hccl_init_query(bool enable_progress_threads, bool enable_mpi_threads);

OMPI_DECLSPEC mca_coll_hccl_component_t mca_coll_hccl_component = {
    .super =
        {
            .collm_version =
                {
                    MCA_COLL_HCCL_BASE_VERSION,
                    .mca_component_name = "hccl", /* must match the file name mca_coll_hccl.so */
                    MCA_BASE_MAKE_VERSION(component, COLL_HCCL_VERSION_MAJOR,
                                          COLL_HCCL_VERSION_MINOR, COLL_HCCL_VERSION_PATCH),
                    .mca_open_component = hccl_open,
                    .mca_close_component = hccl_close,
                    .mca_register_component_params = hccl_register,
                },
            .collm_data = {MCA_BASE_METADATA_PARAM_NONE},
            .collm_init_query = hccl_init_query,
            .collm_comm_query = mca_coll_hccl_comm_query,
        },
    .priority = MCA_COLL_HCCL_DEFAULT_PRIORITY,
    .verbose = 0,
    .output = -1,
};

static int hccl_register(void) {
  mca_coll_hccl_component_t* c = &mca_coll_hccl_component;
  c->priority = MCA_COLL_HCCL_DEFAULT_PRIORITY;
  (void)mca_base_component_var_register(
      &c->super.collm_version, "priority",
      "Priority of the hccl coll component. The default (90) is above tuned (30) and han (35), so "
      "that installing coll_hccl means using it for MPI_Allreduce, MPI_Allgather(v), "
      "MPI_Reduce_scatter(_block), MPI_Bcast, MPI_Reduce, MPI_Scatter, MPI_Gather, MPI_Alltoall, "
      "MPI_Barrier, MPI_Scan, MPI_Exscan (blocking, nonblocking and persistent) and "
      "MPI_Reduce_local; everything else, and every call the engine declines, goes to the "
      "component that would have been used without hccl, or, where there is none (--mca coll "
      "hccl alone), to coll_hccl's own point-to-point implementation. A "
      "negative value disables the component (as does --mca coll ^hccl).",
      MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
      &c->priority);
  c->verbose = 0;
  int verbose_var = mca_base_component_var_register(
      &c->super.collm_version, "verbose",
      "Verbosity of coll_hccl on stderr: 0 errors only; 1 one line per communicator set-up and "
      "per call (collective, bytes, decision and why), printed by rank 0 of the communicator; 2 "
      "the same on every rank plus the configuration layers handed to the engine; 3+ engine "
      "debugging.",
      MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY, &c->verbose);
  c->setting_var[HCCL_SETTING_VERBOSE] = verbose_var;
  c->force_floor = 0;
  (void)mca_base_component_var_register(
      &c->super.collm_version, "force_floor",
      "Diagnostic: 1 sends every collective to coll_hccl's own point-to-point implementation (the "
      "floor, linear algorithms over the PML that serve calls no engine path or other coll "
      "component takes, as with --mca coll hccl alone), bypassing the engine and the other "
      "components; for testing the floor. 0 (default): engine, else the previous component, else "
      "the floor.",
      MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
      &c->force_floor);
  c->slots = 1;
  (void)mca_base_component_var_register(
      &c->super.collm_version, "slots",
      "1 (default): blocking calls of a few KiB on a communicator that is its server's whole set "
      "of ranks run on the shared-memory link's slots, without a request: each rank writes its "
      "data once, every peer reads it in place. 0: every call through the engine's general "
      "executor (a diagnostic). Must be equal on every rank.",
      MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY, &c->slots);
  return mca_coll_hccl_register_settings();
}

static int hccl_open(void) {
  mca_coll_hccl_component_t* c = &mca_coll_hccl_component;
  opal_output_stream_t lds;
  OBJ_CONSTRUCT(&lds, opal_output_stream_t);
  lds.lds_want_stderr = true;
  lds.lds_prefix = "coll:hccl: ";
  c->output = opal_output_open(&lds);
  OBJ_DESTRUCT(&lds);
  opal_output_set_verbosity(c->output, c->verbose);
  c->engine_ready = false;
  c->progress_registered = false;
  return OMPI_SUCCESS;
}

static int hccl_close(void) {
  mca_coll_hccl_component_t* c = &mca_coll_hccl_component;
  if (c->progress_registered) {
    opal_progress_unregister(mca_coll_hccl_progress);
    c->progress_registered = false;
  }
  if (c->engine_ready) {
    hccl_engine_finalize();
    c->engine_ready = false;
  }
  mca_coll_hccl_errors_finalize();
  mca_coll_hccl_sched_finalize();
  if (c->output >= 0) {
    opal_output_close(c->output);
    c->output = -1;
  }
  return OMPI_SUCCESS;
}

void mca_coll_hccl_log_from_engine(int level, const char* line, void* ctx) {
  (void)ctx;
  opal_output_verbose(level, mca_coll_hccl_component.output, "engine: %s", line);
}

/* Called once from MPI_Init: start the engine; any failure makes the component unavailable for
 * every communicator, so that the job runs on the other components. */
static int hccl_init_query(bool enable_progress_threads, bool enable_mpi_threads) {
  (void)enable_progress_threads;
  mca_coll_hccl_component_t* c = &mca_coll_hccl_component;
  if (c->priority < 0) return OMPI_ERR_NOT_AVAILABLE;

  hccl_engine_params_t params = {
      .api_version = HCCL_ENGINE_API_VERSION,
      .thread_multiple = enable_mpi_threads ? 1 : 0,
      .log = mca_coll_hccl_log_from_engine,
      .log_ctx = NULL,
      .log_level = c->verbose,
      .yield_when_idle = ompi_mpi_yield_when_idle ? 1 : 0,
  };
  char err[512] = "";
  hccl_status_t rc = hccl_engine_init(&params, err, sizeof err);
  if (HCCL_SUCCESS != rc) {
    opal_output_verbose(HCCL_ERR_UNSUPPORTED == rc ? 1 : 0, c->output,
                        "engine start-up failed (%s): %s; coll_hccl is disabled for this job",
                        hccl_status_string(rc), hccl_last_error());
    hccl_engine_finalize();
    return OMPI_ERR_NOT_AVAILABLE;
  }
  c->engine_ready = true;
  opal_output_verbose(0 == OPAL_PROC_MY_NAME.vpid ? 1 : 2, c->output,
                      "%s started (thread multiple: %s)", hccl_engine_version(),
                      enable_mpi_threads ? "yes" : "no");
  if (OPAL_SUCCESS == opal_progress_register(mca_coll_hccl_progress)) {
    c->progress_registered = true;
  } else {
    opal_output(c->output, "could not register the progress function; coll_hccl is disabled");
    hccl_engine_finalize();
    c->engine_ready = false;
    return OMPI_ERR_NOT_AVAILABLE;
  }
  return OMPI_SUCCESS;
}
