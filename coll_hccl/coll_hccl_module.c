/*
 * coll_hccl_module.c - per-communicator life cycle: query, enable, disable, destruction.
 *
 * Enable runs inside communicator creation, after Open MPI enabled the lower-priority components,
 * so comm->c_coll then holds what coll_hccl replaces: those functions are saved (and retained)
 * for fallback; an entry with nothing below it (coll_hccl listed alone) is served by coll_hccl's
 * point-to-point floor (coll_hccl_floor.h), and so is every intracommunicator the engine is not
 * set up on, single ranks included. MPI_COMM_WORLD's enable (inside MPI_Init) bootstraps the engine
 * over the PML (coll_hccl_bootstrap.c); every other communicator's enable runs inside Open MPI's
 * progress loop, so it does not communicate: the engine builds it from what MPI_COMM_WORLD's
 * bootstrap learnt and the members' world ranks, which every rank knows locally.
 */
#include "coll_hccl.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/proc/proc.h"
#include "opal/util/output.h"

#define FOR_EACH_COLL(X)       \
  X(allreduce)                 \
  X(iallreduce)                \
  X(allgather)                 \
  X(iallgather)                \
  X(reduce_scatter)            \
  X(ireduce_scatter)           \
  X(reduce_scatter_block)      \
  X(ireduce_scatter_block)     \
  X(bcast)                     \
  X(ibcast)                    \
  X(reduce)                    \
  X(ireduce)                   \
  X(scatter)                   \
  X(iscatter)                  \
  X(alltoall)                  \
  X(ialltoall)                 \
  X(allgatherv)                \
  X(iallgatherv)               \
  X(allreduce_init)            \
  X(reduce_scatter_block_init) \
  X(reduce_scatter_init)       \
  X(allgather_init)            \
  X(allgatherv_init)           \
  X(alltoall_init)             \
  X(bcast_init)                \
  X(reduce_init)               \
  X(scatter_init)              \
  X(gather)                    \
  X(igather)                   \
  X(gather_init)               \
  X(scan)                      \
  X(iscan)                     \
  X(scan_init)                 \
  X(exscan)                    \
  X(iexscan)                   \
  X(exscan_init)               \
  X(barrier)                   \
  X(ibarrier)                  \
  X(barrier_init)              \
  X(reduce_local)              \
  X(gatherv)                   \
  X(igatherv)                  \
  X(gatherv_init)              \
  X(scatterv)                  \
  X(iscatterv)                 \
  X(scatterv_init)             \
  X(alltoallv)                 \
  X(ialltoallv)                \
  X(alltoallv_init)            \
  X(alltoallw)                 \
  X(ialltoallw)                \
  X(alltoallw_init)

static void module_construct(mca_coll_hccl_module_t* m) {
  m->comm = NULL;
  m->engine_comm = NULL;
  m->last_dtype = NULL;
  m->last_op = NULL;
  m->memo_allreduce = NULL;
  m->memo_bcast = NULL;
#define CLEAR_PREV(name) \
  m->prev_##name = NULL; \
  m->prev_##name##_module = NULL;
  FOR_EACH_COLL(CLEAR_PREV)
#undef CLEAR_PREV
}

static void module_destruct(mca_coll_hccl_module_t* m) {
  hccl_comm_destroy(m->engine_comm);
  m->engine_comm = NULL;
  free(m->memo_allreduce);
  free(m->memo_bcast);
  m->memo_allreduce = m->memo_bcast = NULL;
#define RELEASE_PREV(name)                                                   \
  if (NULL != m->prev_##name##_module) OBJ_RELEASE(m->prev_##name##_module); \
  m->prev_##name##_module = NULL;
  FOR_EACH_COLL(RELEASE_PREV)
#undef RELEASE_PREV
}

OBJ_CLASS_INSTANCE(mca_coll_hccl_module_t, mca_coll_base_module_t, module_construct,
                   module_destruct);

/* Base calls this once per c_coll slot the module owns, then destroys the module: idempotent. */
static int module_disable(mca_coll_base_module_t* module, ompi_communicator_t* comm) {
  (void)comm;
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  hccl_comm_destroy(m->engine_comm);
  m->engine_comm = NULL;
  return OMPI_SUCCESS;
}

/* The engine's bootstrap exchange (MPI_COMM_WORLD only). */
static int bootstrap_allgather(const void* sendbuf, void* recvbuf, size_t bytes, void* ctx) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)ctx;
  return OMPI_SUCCESS == mca_coll_hccl_bootstrap_allgather(m->comm, sendbuf, recvbuf, bytes) ? 0
                                                                                             : -1;
}

/* The MPI_COMM_WORLD rank of every rank of `comm`, from the process names Open MPI keeps (no
 * communication). False when a member belongs to another job (spawned or connected processes). */
static bool world_ranks_of(ompi_communicator_t* comm, int* out) {
  int p = ompi_comm_size(comm);
  opal_jobid_t mine = ompi_proc_local()->super.proc_name.jobid;
  for (int r = 0; r < p; ++r) {
    opal_process_name_t name = ompi_group_get_proc_name(comm->c_local_group, r);
    if (name.jobid != mine) return false;
    out[r] = (int)name.vpid;
  }
  return true;
}

/* Every rank learns every rank's outcome, so that all keep or all drop the engine. */
static int agree(mca_coll_hccl_module_t* m, hccl_status_t mine, int* first_failed, int* failed) {
  int p = ompi_comm_size(m->comm);
  int* all = malloc((size_t)p * sizeof *all);
  if (NULL == all) return OMPI_ERR_OUT_OF_RESOURCE;
  int local = (int)mine;
  int rc = mca_coll_hccl_bootstrap_allgather(m->comm, &local, all, sizeof local);
  *first_failed = -1;
  *failed = 0;
  for (int r = 0; OMPI_SUCCESS == rc && r < p; ++r) {
    if (HCCL_SUCCESS == all[r]) continue;
    if (*first_failed < 0) *first_failed = r;
    ++*failed;
  }
  free(all);
  return rc;
}

/* Who serves a communicator the engine is not set up on (SAVE_PREV ran before). */
static const char* serves_it(const mca_coll_hccl_module_t* m) {
  return NULL != m->prev_allreduce ? "this communicator uses the other coll components"
                                   : "coll_hccl's point-to-point floor serves it";
}

static int create_engine_comm(mca_coll_hccl_module_t* m, ompi_communicator_t* comm) {
  mca_coll_hccl_component_t* c = &mca_coll_hccl_component;
  int rank = ompi_comm_rank(comm);
  unsigned cid = (unsigned)MCA_COLL_HCCL_CID(comm);
  hccl_comm_params_t params;
  memset(&params, 0, sizeof params);
  params.api_version = HCCL_ENGINE_API_VERSION;
  params.rank = rank;
  params.size = ompi_comm_size(comm);
  params.comm_id = cid;
  params.name =
      MCA_COLL_HCCL_NAME(comm); /* often still empty here: Open MPI names communicators later */
  params.world_rank = ompi_comm_rank(&ompi_mpi_comm_world.comm);
  params.world_size = ompi_comm_size(&ompi_mpi_comm_world.comm);
  bool is_world = comm == &ompi_mpi_comm_world.comm;
  int* world_ranks = malloc((size_t)params.size * sizeof *world_ranks);
  if (NULL == world_ranks) return OMPI_ERR_OUT_OF_RESOURCE;
  params.world_ranks = world_ranks_of(comm, world_ranks) ? world_ranks : NULL;
  params.allgather = is_world ? bootstrap_allgather : NULL;
  params.allgather_ctx = m;

  char label[MPI_MAX_OBJECT_NAME + 32];
  snprintf(label, sizeof label, "'%s' (cid %u)", MCA_COLL_HCCL_NAME(comm), cid);
  mca_coll_hccl_settings_t settings;
  mca_coll_hccl_collect_settings(comm, &settings);
  memcpy(params.settings, settings.layers, sizeof params.settings);
  mca_coll_hccl_log_settings(&settings, label);

  char err_prefix[1] = "";
  hccl_status_t st = hccl_comm_create(&params, &m->engine_comm, err_prefix, sizeof err_prefix);
  /* The whole message (agree() below calls into Open MPI, which may call the engine). */
  char* err = strdup(HCCL_SUCCESS == st ? "" : hccl_last_error());
  mca_coll_hccl_free_settings(&settings);
  free(world_ranks);

  /* Only MPI_COMM_WORLD's set-up communicates; every other one has the same outcome everywhere. */
  int first_failed = -1, failed = HCCL_SUCCESS == st ? 0 : params.size;
  int rc = is_world ? agree(m, st, &first_failed, &failed) : OMPI_SUCCESS;
  if (OMPI_SUCCESS == rc && 0 == failed) {
    opal_output_verbose(0 == rank ? 1 : 2, c->output, "enabled on %s, %d ranks (%s)", label,
                        params.size, hccl_engine_version());
    free(err);
    return OMPI_SUCCESS;
  }
  hccl_comm_destroy(m->engine_comm);
  m->engine_comm = NULL;
  if (OMPI_SUCCESS != rc) {
    opal_output(c->output, "%s: could not agree on the engine set-up; %s", label, serves_it(m));
    free(err);
    return OMPI_ERROR;
  }
  /* One rank tells the user; "not for this communicator" is not an error. */
  if (HCCL_SUCCESS != st && failed == params.size) {
    /* The engine fails on every rank alike, naming the rank that caused it: rank 0 says it. */
    int level = 0 == rank ? (HCCL_ERR_UNSUPPORTED == st ? 1 : 0) : 2;
    opal_output_verbose(level, c->output, "%s: engine set-up failed: %s: %s; %s", label,
                        hccl_status_string(st), NULL != err ? err : "out of memory", serves_it(m));
  } else if (HCCL_SUCCESS != st) {
    int level = 2;
    if (rank == first_failed) level = HCCL_ERR_UNSUPPORTED == st ? 1 : 0;
    opal_output_verbose(level, c->output,
                        "%s: engine set-up failed on rank %d (%d of %d ranks failed): %s: %s; %s",
                        label, rank, failed, params.size, hccl_status_string(st),
                        NULL != err ? err : "out of memory", serves_it(m));
  } else {
    opal_output_verbose(2, c->output, "%s: disabled because %d rank(s) failed, first rank %d",
                        label, failed, first_failed);
  }
  free(err);
  return OMPI_ERROR;
}

static int module_enable(mca_coll_base_module_t* module, ompi_communicator_t* comm) {
  mca_coll_hccl_module_t* m = (mca_coll_hccl_module_t*)module;
  m->comm = comm;
  /* Open MPI fills c_coll in ascending priority: what is there now is what coll_hccl falls back
   * on. An entry with nothing below it (coll_hccl listed alone) is served by the floor. */
#define SAVE_PREV(name)                                            \
  m->prev_##name = comm->c_coll->coll_##name;                      \
  m->prev_##name##_module = comm->c_coll->coll_##name##_module;    \
  if (NULL != m->prev_##name && NULL != m->prev_##name##_module) { \
    OBJ_RETAIN(m->prev_##name##_module);                           \
  } else {                                                         \
    m->prev_##name = NULL;                                         \
    m->prev_##name##_module = NULL;                                \
  }
  FOR_EACH_COLL(SAVE_PREV)
#undef SAVE_PREV
  /* The engine needs two ranks: a single rank's collectives are local copies, which the previous
   * component or the floor does; MPI_Reduce_local (which Open MPI 4.1 runs through
   * MPI_COMM_SELF) stays on the engine's kernels. */
  if (ompi_comm_size(comm) < 2) return OMPI_SUCCESS;
  int rc = create_engine_comm(m, comm);
  /* Without a previous component the module must stay: the floor serves what the engine can't. */
  if (OMPI_SUCCESS != rc && NULL == m->prev_allreduce) return OMPI_SUCCESS;
  return rc;
}

bool mca_coll_hccl_has_prev_slot(const mca_coll_hccl_module_t* m, const char* slot) {
#define HAS_PREV(name) \
  if (0 == strcmp(slot, #name)) return NULL != m->prev_##name;
  FOR_EACH_COLL(HAS_PREV)
#undef HAS_PREV
  return false;
}

mca_coll_base_module_t* mca_coll_hccl_comm_query(ompi_communicator_t* comm, int* priority) {
  mca_coll_hccl_component_t* c = &mca_coll_hccl_component;
  *priority = c->priority;
  if (!c->engine_ready || c->priority < 0) return NULL;
  /* Same answer on every rank: it depends only on the communicator's shape. */
  if (OMPI_COMM_IS_INTER(comm)) return mca_coll_hccl_inter_query(comm);
  /* HAN builds its own two-level hierarchy out of sub-communicators it marks with this key and
   * hands them to tuned/sm/libnbc by preference, without excluding us: taking them would run
   * our hierarchy inside HAN's and make a HAN comparison partly ours. */
  if (mca_coll_hccl_has_info(comm, "ompi_comm_coll_han_topo_level")) {
    opal_output_verbose(3, c->output, "declining cid %u: a HAN sub-communicator",
                        (unsigned)MCA_COLL_HCCL_CID(comm));
    return NULL;
  }
  mca_coll_hccl_module_t* m = OBJ_NEW(mca_coll_hccl_module_t);
  if (NULL == m) return NULL;
  m->super.coll_module_enable = module_enable;
  m->super.coll_module_disable = module_disable;
  /* Every entry, on every intracommunicator including single ranks: the engine where it can, else
   * the previous component, else the floor (so that `--mca coll hccl` alone runs any program). */
#define INSTALL(name) m->super.coll_##name = mca_coll_hccl_##name;
  FOR_EACH_COLL(INSTALL)
#undef INSTALL
  mca_coll_hccl_neighbor_install(&m->super);
  return &m->super;
}
