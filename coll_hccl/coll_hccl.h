/*
 * coll_hccl.h - internal declarations of the Open MPI adapter (C11, Open MPI 4.1 and 5.0).
 *
 * The adapter is a thin translation layer: it maps MPI calls onto hccl_coll_desc_t, asks the
 * engine (hccl_engine.h) whether it takes the call, and otherwise hands the call unchanged to the
 * component Open MPI had selected before coll_hccl, or, where there is none (coll_hccl listed
 * alone), to its own point-to-point floor (coll_hccl_floor.h). All HCCL logic lives behind the
 * engine API.
 */
#ifndef MCA_COLL_HCCL_H
#define MCA_COLL_HCCL_H

#include "ompi_config.h"

#include <stdbool.h>
#include <stddef.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_base_util.h" /* ompi_coll_base_nbc_request_t, pulls in op.h */
#include "ompi/mca/coll/coll.h"
#include "ompi/op/op.h"
#include "ompi/request/request.h"

#include "hccl_engine.h"

BEGIN_C_DECLS

#if OMPI_MAJOR_VERSION >= 5
#define MCA_COLL_HCCL_BASE_VERSION MCA_COLL_BASE_VERSION_2_4_0
#else
#define MCA_COLL_HCCL_BASE_VERSION MCA_COLL_BASE_VERSION_2_0_0
#endif

#if OMPI_MAJOR_VERSION >= 5
#define MCA_COLL_HCCL_CID(comm) ompi_comm_get_local_cid(comm)
/* 5.0 made c_name a pointer */
#define MCA_COLL_HCCL_NAME(comm) (NULL != (comm)->c_name ? (const char*)(comm)->c_name : "")
#else
#define MCA_COLL_HCCL_CID(comm) ompi_comm_get_cid(comm)
#define MCA_COLL_HCCL_NAME(comm) ((const char*)(comm)->c_name)
#endif

/* Above tuned (30) and han (35) so that installing the component means using it. */
#define MCA_COLL_HCCL_DEFAULT_PRIORITY 90

typedef struct mca_coll_hccl_component_t {
  mca_coll_base_component_t super;

  /* MCA parameters (storage owned by the MCA variable system). */
  int priority;
  int verbose; /* also `output`'s verbosity (hccl_open): what mca_coll_hccl_wants_log reads */
  char* setting_value[HCCL_SETTING_COUNT]; /* string settings; NULL or "" = not set */
  int setting_var[HCCL_SETTING_COUNT];     /* MCA variable index, -1 if none */

  int output; /* opal_output stream, prefix "coll:hccl: " */
  bool engine_ready;
  bool progress_registered;
  int force_floor; /* diagnostic (coll_hccl_force_floor): every call to the floor */
  int slots;       /* coll_hccl_slots: blocking small calls on the engine's slots */
} mca_coll_hccl_component_t;

OMPI_DECLSPEC extern mca_coll_hccl_component_t mca_coll_hccl_component;

/* The lower-priority implementation of one collective, saved at enable time and retained. */
#define MCA_COLL_HCCL_PREV(name)                  \
  mca_coll_base_module_##name##_fn_t prev_##name; \
  mca_coll_base_module_t* prev_##name##_module

/* A datatype and op as the engine sees them (mca_coll_hccl_map_reduction, coll_hccl_types.c). */
typedef struct mca_coll_hccl_elem_t {
  hccl_dtype_t dtype;
  size_t elem_size;
  ptrdiff_t true_lb; /* where the first byte of an element lies relative to the buffer pointer */
  hccl_op_t op;
  int user_commutative;
} mca_coll_hccl_elem_t;
/* A reduction of any datatype and op (mca_coll_hccl_map_any_reduction, coll_hccl_rooted.c). */
typedef struct mca_coll_hccl_reduction_t {
  mca_coll_hccl_elem_t elem;
  bool staged;   /* true: EXTENT staging */
  size_t extent; /* bytes per element when staged */
} mca_coll_hccl_reduction_t;

typedef struct mca_coll_hccl_module_t {
  mca_coll_base_module_t super;
  ompi_communicator_t* comm;
  hccl_comm_t* engine_comm; /* NULL once disabled */
  MCA_COLL_HCCL_PREV(allreduce);
  MCA_COLL_HCCL_PREV(iallreduce);
  MCA_COLL_HCCL_PREV(allgather);
  MCA_COLL_HCCL_PREV(iallgather);
  MCA_COLL_HCCL_PREV(reduce_scatter);
  MCA_COLL_HCCL_PREV(ireduce_scatter);
  MCA_COLL_HCCL_PREV(reduce_scatter_block);
  MCA_COLL_HCCL_PREV(ireduce_scatter_block);
  MCA_COLL_HCCL_PREV(bcast);
  MCA_COLL_HCCL_PREV(ibcast);
  MCA_COLL_HCCL_PREV(reduce);
  MCA_COLL_HCCL_PREV(ireduce);
  MCA_COLL_HCCL_PREV(scatter);
  MCA_COLL_HCCL_PREV(iscatter);
  MCA_COLL_HCCL_PREV(alltoall);
  MCA_COLL_HCCL_PREV(ialltoall);
  MCA_COLL_HCCL_PREV(allgatherv);
  MCA_COLL_HCCL_PREV(iallgatherv);
  MCA_COLL_HCCL_PREV(allreduce_init);
  MCA_COLL_HCCL_PREV(reduce_scatter_block_init);
  MCA_COLL_HCCL_PREV(reduce_scatter_init);
  MCA_COLL_HCCL_PREV(allgather_init);
  MCA_COLL_HCCL_PREV(allgatherv_init);
  MCA_COLL_HCCL_PREV(alltoall_init);
  MCA_COLL_HCCL_PREV(bcast_init);
  MCA_COLL_HCCL_PREV(reduce_init);
  MCA_COLL_HCCL_PREV(scatter_init);
  MCA_COLL_HCCL_PREV(gather);
  MCA_COLL_HCCL_PREV(igather);
  MCA_COLL_HCCL_PREV(gather_init);
  MCA_COLL_HCCL_PREV(scan);
  MCA_COLL_HCCL_PREV(iscan);
  MCA_COLL_HCCL_PREV(scan_init);
  MCA_COLL_HCCL_PREV(exscan);
  MCA_COLL_HCCL_PREV(iexscan);
  MCA_COLL_HCCL_PREV(exscan_init);
  MCA_COLL_HCCL_PREV(barrier);
  MCA_COLL_HCCL_PREV(ibarrier);
  MCA_COLL_HCCL_PREV(barrier_init);
  MCA_COLL_HCCL_PREV(reduce_local);
  MCA_COLL_HCCL_PREV(gatherv);
  MCA_COLL_HCCL_PREV(igatherv);
  MCA_COLL_HCCL_PREV(gatherv_init);
  MCA_COLL_HCCL_PREV(scatterv);
  MCA_COLL_HCCL_PREV(iscatterv);
  MCA_COLL_HCCL_PREV(scatterv_init);
  MCA_COLL_HCCL_PREV(alltoallv);
  MCA_COLL_HCCL_PREV(ialltoallv);
  MCA_COLL_HCCL_PREV(alltoallv_init);
  MCA_COLL_HCCL_PREV(alltoallw);
  MCA_COLL_HCCL_PREV(ialltoallw);
  MCA_COLL_HCCL_PREV(alltoallw_init);
  /* The last reduction mapped on this communicator (mca_coll_hccl_map_reduction_of), kept only
   * for a predefined datatype with a predefined op: objects MPI never frees, so the pointers keep
   * naming the same pair. One thread at a time uses a communicator's collectives. */
  ompi_datatype_t* last_dtype;
  ompi_op_t* last_op;
  mca_coll_hccl_reduction_t last_reduction;
  /* The last blocking MPI_Allreduce and MPI_Bcast described (mca_coll_hccl_memo_t). */
  struct mca_coll_hccl_memo_t* memo_allreduce;
  struct mca_coll_hccl_memo_t* memo_bcast;
} mca_coll_hccl_module_t;

OBJ_CLASS_DECLARATION(mca_coll_hccl_module_t);

/* Component (coll_hccl_component.c) */
void mca_coll_hccl_log_from_engine(int level, const char* line, void* ctx);

/* Bootstrap (coll_hccl_bootstrap.c): blocking all-gather of `bytes` per rank over the PML. */
int mca_coll_hccl_bootstrap_allgather(ompi_communicator_t* comm, const void* sbuf, void* rbuf,
                                      size_t bytes);

/* Module (coll_hccl_module.c) */
mca_coll_base_module_t* mca_coll_hccl_comm_query(ompi_communicator_t* comm, int* priority);

/* Settings (coll_hccl_settings.c): the MCA table and the per-communicator layers. */
typedef struct mca_coll_hccl_settings_t {
  hccl_setting_t layers[HCCL_SETTING_COUNT];
  char* owned[HCCL_SETTING_COUNT * HCCL_MAX_SETTING_LAYERS * 2]; /* strings to free */
  int num_owned;
} mca_coll_hccl_settings_t;

int mca_coll_hccl_register_settings(void);
/* Nonzero when the communicator's info carries `key`. */
int mca_coll_hccl_has_info(ompi_communicator_t* comm, const char* key);
int mca_coll_hccl_collect_settings(ompi_communicator_t* comm, mca_coll_hccl_settings_t* out);
void mca_coll_hccl_free_settings(mca_coll_hccl_settings_t* s);
void mca_coll_hccl_log_settings(const mca_coll_hccl_settings_t* s, const char* comm_name);

/* Datatypes and ops (coll_hccl_types.c). Each returns false with *why set when the engine cannot
 * be given the call; the answer depends only on values equal on every rank. */
bool mca_coll_hccl_map_reduction(ompi_datatype_t* dtype, ompi_op_t* op, mca_coll_hccl_elem_t* out,
                                 const char** why);
const char* mca_coll_hccl_dtype_name(hccl_dtype_t t);

/* How one side of a call reaches the engine when the MPI layout is not the engine's contiguous
 * array (coll_hccl_stage.c). PACK: through Open MPI's convertor, packed bytes in a temporary;
 * EXTENT: whole extents of the datatype in a temporary, for reductions through Open MPI's op
 * (element = one extent). Either way the user's buffer is written by the datatype engine after
 * completion, data bytes only: the gaps of a derived type are never written. */
typedef enum mca_coll_hccl_stage_kind_t {
  MCA_COLL_HCCL_DIRECT = 0, /* the engine uses the user's memory */
  MCA_COLL_HCCL_PACK,
  MCA_COLL_HCCL_EXTENT
} mca_coll_hccl_stage_kind_t;

typedef struct mca_coll_hccl_region_t {
  const void* user; /* MPI buffer pointer (before the datatype's lower bound) */
  size_t count;     /* of dtype; 0: nothing to copy */
  ompi_datatype_t* dtype;
  size_t offset; /* bytes into the temporary */
} mca_coll_hccl_region_t;

/* The per-rank blocks of a V form (Gatherv, Scatterv, Allgatherv, Alltoallv/w) on one side:
 * block i is counts[i] x types[i] (dtype when types is NULL) at user + displs[i] bytes, and the
 * blocks lie one after another in the temporary, which is the engine's packed layout. The table
 * need only live until stage_in, which keeps a copy with the temporary. */
typedef struct mca_coll_hccl_blocks_t {
  const void* user;
  ompi_datatype_t* dtype;
  ompi_datatype_t* const* types; /* per-block types (Alltoallw), or NULL */
  size_t n;                      /* 0: no block table */
  const size_t* counts;
  const ptrdiff_t* displs;
  bool in;  /* the blocks are input: packed into the temporary before the call */
  bool out; /* the blocks are the result: unpacked to the user after the call succeeded */
} mca_coll_hccl_blocks_t;

typedef struct mca_coll_hccl_stage_t {
  mca_coll_hccl_stage_kind_t kind;
  size_t bytes;                  /* size of the temporary */
  mca_coll_hccl_region_t in;     /* copied into the temporary before the call */
  mca_coll_hccl_region_t out;    /* copied back to the user after the call succeeded */
  mca_coll_hccl_blocks_t blocks; /* in addition to `in`, instead of `out` when blocks.out */
} mca_coll_hccl_stage_t;

/* One call on its way to the engine: the descriptor plus what the adapter must do around it. */
typedef struct mca_coll_hccl_call_t {
  hccl_coll_desc_t desc;
  const char* mpi_name; /* "MPI_Allreduce", for log lines */
  size_t bytes;         /* data volume shown in log lines (see mca_coll_hccl_log_call) */
  /* for log lines, and the context of the user-op callback */
  ompi_op_t* op;          /* NULL for collectives that do not reduce */
  ompi_datatype_t* dtype; /* the type shown in log lines; the reduced type */
  ptrdiff_t true_lb;      /* reductions: element i lies at its buffer + true_lb + i * elem_size */
  mca_coll_hccl_stage_t send; /* sendbuf side */
  mca_coll_hccl_stage_t recv; /* recvbuf side */
  bool persistent;            /* MPI_*_init: prepared once, started by MPI_Start */
  /* Moves nothing, and every rank knows it from values MPI makes equal everywhere (a count of 0,
   * all of a V form's [same] counts 0): completed locally, without the engine. Never a Barrier. */
  bool empty;
  /* Nonzero: the MPI error code the call returns once it completed (see
   * mca_coll_hccl_root_mismatch). */
  int error_after;
} mca_coll_hccl_call_t;

/* Staging (coll_hccl_stage.c). stage_in allocates the temporaries the call needs, fills them and
 * points desc at them; stage_out copies results back into the user's buffers. */
int mca_coll_hccl_stage_in(mca_coll_hccl_call_t* call, void** tmp_send, void** tmp_recv);
int mca_coll_hccl_stage_out(const mca_coll_hccl_call_t* call, const void* tmp_recv);
/* Persistent calls: the temporaries stay, each start reloads the inputs into them. */
int mca_coll_hccl_stage_refill(const mca_coll_hccl_call_t* call, void* tmp_send, void* tmp_recv);
/* Describes `count` x `dtype` at `buf` as one side: directly when contiguous, else packed.
 * Returns the engine's pointer for a direct side (NULL when staged); `prefill` and `result` say
 * whether the call reads the user's data and writes results back. */
void* mca_coll_hccl_side(mca_coll_hccl_stage_t* st, const void* buf, size_t count,
                         ompi_datatype_t* dtype, bool prefill, bool result);
/* Bytes of `count` x `dtype` (size_t: never overflows for MPI's int counts). */
size_t mca_coll_hccl_bytes(ompi_datatype_t* dtype, size_t count);
/* Per-rank tables of one V-form side, filled by mca_coll_hccl_blocks_side (p entries each). */
typedef struct mca_coll_hccl_vtable_t {
  size_t* bytes;     /* block r's bytes: the engine's per-rank counts (elem_size 1) */
  size_t* counts;    /* block r's count of its type */
  ptrdiff_t* displs; /* block r's byte offset from the user's pointer */
  size_t total;      /* sum of bytes */
} mca_coll_hccl_vtable_t;
/* Allocates the tables of `sides` V-form sides of p ranks in one block (*mem, to free). */
int mca_coll_hccl_vtables(size_t p, int sides, mca_coll_hccl_vtable_t* tables, void** mem);
/* Describes the p blocks of a V form as one side: block r is counts[r] x (types ? types[r] :
 * dtype) at displs[r] extents of dtype from buf, or displs[r] bytes when types is given
 * (Alltoallw); displs NULL: packed. The engine's pointer when the blocks already lie packed and
 * contiguous (direct), else NULL and the side is staged through the block table. `prefill` and
 * `result` as for mca_coll_hccl_side. */
void* mca_coll_hccl_blocks_side(mca_coll_hccl_stage_t* st, mca_coll_hccl_vtable_t* t,
                                const void* buf, size_t p, const int* counts, const int* displs,
                                ompi_datatype_t* dtype, ompi_datatype_t* const* types, bool prefill,
                                bool result);

/* Reductions that may stage (coll_hccl_rooted.c): any datatype, any op. The element is the
 * predefined type for an op with an engine kernel, else one extent of the datatype reduced by
 * Open MPI's op, staged when the layout has gaps. */
bool mca_coll_hccl_map_any_reduction(ompi_datatype_t* dtype, ompi_op_t* op,
                                     mca_coll_hccl_reduction_t* out, const char** why);
/* The same through the module's last mapping (a loop reduces the same pair call after call). */
bool mca_coll_hccl_map_reduction_of(mca_coll_hccl_module_t* m, ompi_datatype_t* dtype,
                                    ompi_op_t* op, mca_coll_hccl_reduction_t* out,
                                    const char** why);
/* Errors (coll_hccl_errors.c): the MPI error code, of the registered class for `st`, whose
 * MPI_Error_string is `message` (cut to MPI_MAX_ERROR_STRING at a word); MPI_ERR_INTERN when MPI
 * refuses to register it. Any thread, any time after MPI_Init returned. */
int mca_coll_hccl_error_code(hccl_status_t st, const char* message);
void mca_coll_hccl_errors_finalize(void);

/* Requests (coll_hccl_request.c) */
typedef struct mca_coll_hccl_request_t {
  ompi_coll_base_nbc_request_t super; /* must come first: the MPI layer casts to it */
  mca_coll_hccl_call_t call;          /* its desc.recvcounts is not kept (the engine copies it) */
  hccl_req_t* engine_req;
  ompi_communicator_t* comm; /* retained while the call runs */
  void* tmp_send;
  void* tmp_recv;
  /* persistent requests (coll_hccl_persistent.c): the prepared call and what completes a start */
  hccl_prepared_t* prepared;
  void (*complete)(struct mca_coll_hccl_request_t* r, hccl_status_t st);
} mca_coll_hccl_request_t;

/* The engine's callback for reductions without an engine kernel (Open MPI's op). */
void mca_coll_hccl_reduce_with_ompi(const void* in, void* inout, size_t count, void* ctx);
/* Persistent requests (coll_hccl_persistent.c), from mca_coll_hccl_run for call->persistent. */
int mca_coll_hccl_persistent_init(mca_coll_hccl_module_t* m, const mca_coll_hccl_call_t* call,
                                  ompi_request_t** request);

/* A blocking call's description kept for the next call with the same arguments: a loop calls a
 * collective with the same buffers, count, type and op call after call, and describing it again
 * (clearing the call, mapping type and op, deciding the sides' staging) cost ~180 instructions
 * per 8 B MPI_Allreduce at np=2 (callgrind), a third of the adapter's and engine's work outside
 * the wait. Kept only when the description is a function of these arguments alone: a predefined
 * datatype (and op), which MPI never frees, so the pointers keep naming the same objects; both
 * sides direct; no reason to decline; not empty. A communicator's collectives run on one thread at
 * a time, so the module's memo needs no lock. */
typedef struct mca_coll_hccl_memo_t {
  const void* sbuf;
  void* rbuf;
  int count;
  int root;
  ompi_datatype_t* dtype;
  ompi_op_t* op;
  mca_coll_hccl_call_t call;
} mca_coll_hccl_memo_t;
/* Remembers `call` (described from these arguments; `why` the adapter's reason to decline) in
 * *slot when the rules above allow it, allocating the memo on first use. */
void mca_coll_hccl_memo_keep(mca_coll_hccl_memo_t** slot, const mca_coll_hccl_call_t* call,
                             const char* why, const void* sbuf, void* rbuf, int count, int root,
                             ompi_datatype_t* dtype, ompi_op_t* op);
/* The remembered call for these arguments, or NULL. */
static inline const mca_coll_hccl_call_t* mca_coll_hccl_memo_find(
    const mca_coll_hccl_memo_t* k, const void* sbuf, const void* rbuf, int count, int root,
    const ompi_datatype_t* dtype, const ompi_op_t* op) {
  if (NULL == k || k->sbuf != sbuf || k->rbuf != rbuf || k->count != count || k->root != root ||
      k->dtype != dtype || k->op != op)
    return NULL;
  return &k->call;
}

/* A blocking call on the engine's slots (hccl_fast_start) before any decision: true when the
 * engine took it (*rc is then its result), false when the call must go the general way. `why`
 * is the adapter's reason to decline, NULL if none. */
bool mca_coll_hccl_try_fast(mca_coll_hccl_module_t* m, const mca_coll_hccl_call_t* call,
                            const char* why, int* rc);
/* The verbose line of a call the engine ran on its slots (nothing below verbose level). */
void mca_coll_hccl_log_fast(mca_coll_hccl_module_t* m, const mca_coll_hccl_call_t* call);

/* Runs a call the engine accepted: nonblocking if request is non-NULL, else waits for it. */
int mca_coll_hccl_run(mca_coll_hccl_module_t* m, const mca_coll_hccl_call_t* call,
                      ompi_request_t** request);
int mca_coll_hccl_progress(void);

/* Entry points (coll_hccl_reductions.c, coll_hccl_allgather.c) */
int mca_coll_hccl_allreduce(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                            ompi_op_t* op, ompi_communicator_t* comm,
                            mca_coll_base_module_t* module);
int mca_coll_hccl_iallreduce(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                             ompi_op_t* op, ompi_communicator_t* comm, ompi_request_t** request,
                             mca_coll_base_module_t* module);
int mca_coll_hccl_allgather(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                            int rcount, ompi_datatype_t* rdtype, ompi_communicator_t* comm,
                            mca_coll_base_module_t* module);
int mca_coll_hccl_iallgather(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                             int rcount, ompi_datatype_t* rdtype, ompi_communicator_t* comm,
                             ompi_request_t** request, mca_coll_base_module_t* module);
int mca_coll_hccl_reduce_scatter(const void* sbuf, void* rbuf, const int* rcounts,
                                 ompi_datatype_t* dtype, ompi_op_t* op, ompi_communicator_t* comm,
                                 mca_coll_base_module_t* module);
int mca_coll_hccl_ireduce_scatter(const void* sbuf, void* rbuf, const int* rcounts,
                                  ompi_datatype_t* dtype, ompi_op_t* op, ompi_communicator_t* comm,
                                  ompi_request_t** request, mca_coll_base_module_t* module);
int mca_coll_hccl_reduce_scatter_block(const void* sbuf, void* rbuf, int rcount,
                                       ompi_datatype_t* dtype, ompi_op_t* op,
                                       ompi_communicator_t* comm, mca_coll_base_module_t* module);
int mca_coll_hccl_ireduce_scatter_block(const void* sbuf, void* rbuf, int rcount,
                                        ompi_datatype_t* dtype, ompi_op_t* op,
                                        ompi_communicator_t* comm, ompi_request_t** request,
                                        mca_coll_base_module_t* module);

/* Rooted collectives (coll_hccl_rooted.c), all-to-all (coll_hccl_alltoall.c), local reduction
 * (coll_hccl_reduce_local.c) */
int mca_coll_hccl_bcast(void* buff, int count, ompi_datatype_t* datatype, int root,
                        ompi_communicator_t* comm, mca_coll_base_module_t* module);
int mca_coll_hccl_ibcast(void* buff, int count, ompi_datatype_t* datatype, int root,
                         ompi_communicator_t* comm, ompi_request_t** request,
                         mca_coll_base_module_t* module);
int mca_coll_hccl_reduce(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                         ompi_op_t* op, int root, ompi_communicator_t* comm,
                         mca_coll_base_module_t* module);
int mca_coll_hccl_ireduce(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                          ompi_op_t* op, int root, ompi_communicator_t* comm,
                          ompi_request_t** request, mca_coll_base_module_t* module);
int mca_coll_hccl_scatter(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                          int rcount, ompi_datatype_t* rdtype, int root, ompi_communicator_t* comm,
                          mca_coll_base_module_t* module);
int mca_coll_hccl_iscatter(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                           int rcount, ompi_datatype_t* rdtype, int root, ompi_communicator_t* comm,
                           ompi_request_t** request, mca_coll_base_module_t* module);
int mca_coll_hccl_alltoall(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                           int rcount, ompi_datatype_t* rdtype, ompi_communicator_t* comm,
                           mca_coll_base_module_t* module);
int mca_coll_hccl_ialltoall(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                            int rcount, ompi_datatype_t* rdtype, ompi_communicator_t* comm,
                            ompi_request_t** request, mca_coll_base_module_t* module);
int mca_coll_hccl_allgatherv(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                             const int* rcounts, const int* disps, ompi_datatype_t* rdtype,
                             ompi_communicator_t* comm, mca_coll_base_module_t* module);
int mca_coll_hccl_iallgatherv(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                              const int* rcounts, const int* disps, ompi_datatype_t* rdtype,
                              ompi_communicator_t* comm, ompi_request_t** request,
                              mca_coll_base_module_t* module);
/* Persistent entries (MPIX_*_init), next to each collective's blocking and nonblocking ones */
int mca_coll_hccl_allreduce_init(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                                 ompi_op_t* op, ompi_communicator_t* comm, struct ompi_info_t* info,
                                 ompi_request_t** request, mca_coll_base_module_t* module);
int mca_coll_hccl_reduce_scatter_block_init(const void* sbuf, void* rbuf, int rcount,
                                            ompi_datatype_t* dtype, ompi_op_t* op,
                                            ompi_communicator_t* comm, struct ompi_info_t* info,
                                            ompi_request_t** request,
                                            mca_coll_base_module_t* module);
int mca_coll_hccl_reduce_scatter_init(const void* sbuf, void* rbuf, const int* rcounts,
                                      ompi_datatype_t* dtype, ompi_op_t* op,
                                      ompi_communicator_t* comm, struct ompi_info_t* info,
                                      ompi_request_t** request, mca_coll_base_module_t* module);
int mca_coll_hccl_allgather_init(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                                 int rcount, ompi_datatype_t* rdtype, ompi_communicator_t* comm,
                                 struct ompi_info_t* info, ompi_request_t** request,
                                 mca_coll_base_module_t* module);
int mca_coll_hccl_allgatherv_init(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                                  const int* rcounts, const int* disps, ompi_datatype_t* rdtype,
                                  ompi_communicator_t* comm, struct ompi_info_t* info,
                                  ompi_request_t** request, mca_coll_base_module_t* module);
int mca_coll_hccl_alltoall_init(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                                int rcount, ompi_datatype_t* rdtype, ompi_communicator_t* comm,
                                struct ompi_info_t* info, ompi_request_t** request,
                                mca_coll_base_module_t* module);
int mca_coll_hccl_bcast_init(void* buff, int count, ompi_datatype_t* datatype, int root,
                             ompi_communicator_t* comm, struct ompi_info_t* info,
                             ompi_request_t** request, mca_coll_base_module_t* module);
int mca_coll_hccl_reduce_init(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                              ompi_op_t* op, int root, ompi_communicator_t* comm,
                              struct ompi_info_t* info, ompi_request_t** request,
                              mca_coll_base_module_t* module);
int mca_coll_hccl_scatter_init(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                               int rcount, ompi_datatype_t* rdtype, int root,
                               ompi_communicator_t* comm, struct ompi_info_t* info,
                               ompi_request_t** request, mca_coll_base_module_t* module);
int mca_coll_hccl_gather(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                         int rcount, ompi_datatype_t* rdtype, int root, ompi_communicator_t* comm,
                         mca_coll_base_module_t* module);
int mca_coll_hccl_igather(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                          int rcount, ompi_datatype_t* rdtype, int root, ompi_communicator_t* comm,
                          ompi_request_t** request, mca_coll_base_module_t* module);
int mca_coll_hccl_gather_init(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                              int rcount, ompi_datatype_t* rdtype, int root,
                              ompi_communicator_t* comm, struct ompi_info_t* info,
                              ompi_request_t** request, mca_coll_base_module_t* module);
/* Scan, Exscan, Barrier (coll_hccl_scan.c) */
int mca_coll_hccl_scan(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                       ompi_op_t* op, ompi_communicator_t* comm, mca_coll_base_module_t* module);
int mca_coll_hccl_iscan(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                        ompi_op_t* op, ompi_communicator_t* comm, ompi_request_t** request,
                        mca_coll_base_module_t* module);
int mca_coll_hccl_scan_init(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                            ompi_op_t* op, ompi_communicator_t* comm, struct ompi_info_t* info,
                            ompi_request_t** request, mca_coll_base_module_t* module);
int mca_coll_hccl_exscan(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                         ompi_op_t* op, ompi_communicator_t* comm, mca_coll_base_module_t* module);
int mca_coll_hccl_iexscan(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                          ompi_op_t* op, ompi_communicator_t* comm, ompi_request_t** request,
                          mca_coll_base_module_t* module);
int mca_coll_hccl_exscan_init(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                              ompi_op_t* op, ompi_communicator_t* comm, struct ompi_info_t* info,
                              ompi_request_t** request, mca_coll_base_module_t* module);
int mca_coll_hccl_barrier(ompi_communicator_t* comm, mca_coll_base_module_t* module);
int mca_coll_hccl_ibarrier(ompi_communicator_t* comm, ompi_request_t** request,
                           mca_coll_base_module_t* module);
int mca_coll_hccl_barrier_init(ompi_communicator_t* comm, struct ompi_info_t* info,
                               ompi_request_t** request, mca_coll_base_module_t* module);
int mca_coll_hccl_reduce_local(const void* inbuf, void* inoutbuf, int count, ompi_datatype_t* dtype,
                               ompi_op_t* op, mca_coll_base_module_t* module);

/* The V forms with rank-local counts: Gatherv (coll_hccl_gatherv.c), Scatterv
 * (coll_hccl_scatterv.c), Alltoallv and Alltoallw (coll_hccl_alltoallv.c) */
int mca_coll_hccl_gatherv(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                          const int* rcounts, const int* displs, ompi_datatype_t* rdtype, int root,
                          ompi_communicator_t* comm, mca_coll_base_module_t* module);
int mca_coll_hccl_igatherv(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                           const int* rcounts, const int* displs, ompi_datatype_t* rdtype, int root,
                           ompi_communicator_t* comm, ompi_request_t** request,
                           mca_coll_base_module_t* module);
int mca_coll_hccl_gatherv_init(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                               const int* rcounts, const int* displs, ompi_datatype_t* rdtype,
                               int root, ompi_communicator_t* comm, struct ompi_info_t* info,
                               ompi_request_t** request, mca_coll_base_module_t* module);
int mca_coll_hccl_scatterv(const void* sbuf, const int* scounts, const int* displs,
                           ompi_datatype_t* sdtype, void* rbuf, int rcount, ompi_datatype_t* rdtype,
                           int root, ompi_communicator_t* comm, mca_coll_base_module_t* module);
int mca_coll_hccl_iscatterv(const void* sbuf, const int* scounts, const int* displs,
                            ompi_datatype_t* sdtype, void* rbuf, int rcount,
                            ompi_datatype_t* rdtype, int root, ompi_communicator_t* comm,
                            ompi_request_t** request, mca_coll_base_module_t* module);
int mca_coll_hccl_scatterv_init(const void* sbuf, const int* scounts, const int* displs,
                                ompi_datatype_t* sdtype, void* rbuf, int rcount,
                                ompi_datatype_t* rdtype, int root, ompi_communicator_t* comm,
                                struct ompi_info_t* info, ompi_request_t** request,
                                mca_coll_base_module_t* module);
int mca_coll_hccl_alltoallv(const void* sbuf, const int* scounts, const int* sdispls,
                            ompi_datatype_t* sdtype, void* rbuf, const int* rcounts,
                            const int* rdispls, ompi_datatype_t* rdtype, ompi_communicator_t* comm,
                            mca_coll_base_module_t* module);
int mca_coll_hccl_ialltoallv(const void* sbuf, const int* scounts, const int* sdispls,
                             ompi_datatype_t* sdtype, void* rbuf, const int* rcounts,
                             const int* rdispls, ompi_datatype_t* rdtype, ompi_communicator_t* comm,
                             ompi_request_t** request, mca_coll_base_module_t* module);
int mca_coll_hccl_alltoallv_init(const void* sbuf, const int* scounts, const int* sdispls,
                                 ompi_datatype_t* sdtype, void* rbuf, const int* rcounts,
                                 const int* rdispls, ompi_datatype_t* rdtype,
                                 ompi_communicator_t* comm, struct ompi_info_t* info,
                                 ompi_request_t** request, mca_coll_base_module_t* module);
int mca_coll_hccl_alltoallw(const void* sbuf, const int* scounts, const int* sdispls,
                            ompi_datatype_t* const* stypes, void* rbuf, const int* rcounts,
                            const int* rdispls, ompi_datatype_t* const* rtypes,
                            ompi_communicator_t* comm, mca_coll_base_module_t* module);
int mca_coll_hccl_ialltoallw(const void* sbuf, const int* scounts, const int* sdispls,
                             ompi_datatype_t* const* stypes, void* rbuf, const int* rcounts,
                             const int* rdispls, ompi_datatype_t* const* rtypes,
                             ompi_communicator_t* comm, ompi_request_t** request,
                             mca_coll_base_module_t* module);
int mca_coll_hccl_alltoallw_init(const void* sbuf, const int* scounts, const int* sdispls,
                                 ompi_datatype_t* const* stypes, void* rbuf, const int* rcounts,
                                 const int* rdispls, ompi_datatype_t* const* rtypes,
                                 ompi_communicator_t* comm, struct ompi_info_t* info,
                                 ompi_request_t** request, mca_coll_base_module_t* module);

/* Intercommunicators (coll_hccl_inter*.c): a module of leader exchanges over the local group,
 * every collective but Scan and Exscan. Neighbourhood collectives (coll_hccl_neighbor.c): installed
 * on every intracommunicator module. */
mca_coll_base_module_t* mca_coll_hccl_inter_query(ompi_communicator_t* comm);
void mca_coll_hccl_neighbor_install(mca_coll_base_module_t* m);

/* The prologue of every entry (coll_hccl_decide.c): zeroes the call, names it after its form
 * (names[0] blocking, [1] MPI_I* when request is non-NULL, [2] MPIX_*_init when persistent) and
 * records the form in call->persistent and desc.nonblocking. */
void mca_coll_hccl_call_init(mca_coll_hccl_call_t* call, const char* const names[3],
                             ompi_request_t** request, bool persistent);
/* Decides (mca_coll_hccl_decide) and, when the engine takes the call, runs it with *rc its
 * result; false means the previous component or the floor must run it. */
bool mca_coll_hccl_offer(mca_coll_hccl_module_t* m, const mca_coll_hccl_call_t* call,
                         const char* adapter_why, ompi_request_t** request, int* rc);
/* A V form's describe step: fills `call` from the form's own arguments `args`, with `t` its
 * block tables (one per side the form asked for); returns the reason to decline, or NULL. */
typedef const char* (*mca_coll_hccl_describe_v_t)(mca_coll_hccl_module_t* m,
                                                  mca_coll_hccl_call_t* call, const void* args,
                                                  mca_coll_hccl_vtable_t* t);
/* The arguments of Gatherv and Allgatherv (root unused), for their describe steps. */
typedef struct mca_coll_hccl_gatherv_args_t {
  const void* sbuf;
  int scount;
  ompi_datatype_t* sdtype;
  void* rbuf;
  const int* rcounts;
  const int* displs;
  ompi_datatype_t* rdtype;
  int root;
} mca_coll_hccl_gatherv_args_t;
/* The body the V forms share: the prologue, `sides` (1 or 2) block tables of p entries,
 * `describe_v`, mca_coll_hccl_offer, the tables freed (the engine copied the counts, the staging
 * its block tables). Out of memory: true with *rc OMPI_ERR_OUT_OF_RESOURCE, nothing decided. */
bool mca_coll_hccl_offer_v(mca_coll_hccl_module_t* m, const char* const names[3],
                           ompi_request_t** request, bool persistent, int sides,
                           mca_coll_hccl_describe_v_t describe_v, const void* args, int* rc);

/* Decision (coll_hccl_decide.c): asks the engine and prints the per-call line. Returns true if
 * the engine takes the call; `adapter_why` non-NULL means the adapter already declined. A call
 * the engine does not take goes to the previous component when there is one (and
 * coll_hccl_force_floor is off), else to the floor (coll_hccl_floor.h); the line names which. */
bool mca_coll_hccl_decide(mca_coll_hccl_module_t* m, const mca_coll_hccl_call_t* call,
                          const char* adapter_why);
/* For a describe function whose call moves nothing on any rank: marks it empty (see
 * mca_coll_hccl_call_t) and returns NULL, no reason to decline. */
const char* mca_coll_hccl_nothing(mca_coll_hccl_call_t* call);
/* A rooted call whose root gives its own block two sizes (send and receive differ: erroneous).
 * Declining on the root alone would leave the other ranks waiting in the engine, so the call
 * runs with the root in place (its own block is not copied) and then fails with
 * MPI_ERR_TRUNCATE, after a line naming both sizes. Sets desc.in_place. */
void mca_coll_hccl_root_mismatch(mca_coll_hccl_call_t* call, size_t send_bytes, size_t recv_bytes);
/* Whether the lower-priority implementation of the entry `slot` ("iallreduce",
 * "allreduce_init") exists on this module (coll_hccl_module.c). */
bool mca_coll_hccl_has_prev_slot(const mca_coll_hccl_module_t* m, const char* slot);
/* The choice every entry makes for a call the engine does not take. */
static inline bool mca_coll_hccl_use_prev(bool has_prev) {
  return has_prev && !mca_coll_hccl_component.force_floor;
}
#define MCA_COLL_HCCL_HAS_PREV(m, name) mca_coll_hccl_use_prev(NULL != (m)->prev_##name)

/* Whether a call's verbose line prints: rank 0 of `comm` (its local group) speaks at verbose 1,
 * every rank at 2. Every call asks, so it reads the parameter's storage (one load; a write to
 * the MCA variable lands there) rather than calling opal_output_get_verbosity, which was 1.5% of
 * an 8 B AllReduce's samples on the slots. */
static inline bool mca_coll_hccl_wants_log(ompi_communicator_t* comm) {
  const int level = mca_coll_hccl_component.verbose;
  return level > 0 && level >= (0 == ompi_comm_rank(comm) ? 1 : 2);
}

END_C_DECLS

#endif /* MCA_COLL_HCCL_H */
