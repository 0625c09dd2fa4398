/*
 * hccl_engine.h - the boundary between the Open MPI adapter (C11) and the coll_hccl engine (C++20).
 *
 * Plain C11, no Open MPI or MPI types, so that the engine never sees Open MPI's internal headers
 * (they do not compile as C++) and the adapter never sees C++. The engine implements every
 * function here; no C++ exception may leave any of them: each reports failure through its return
 * value and, where a buffer is given, a NUL-terminated message (truncated to fit, never NULL
 * unless errlen is 0).
 *
 * Threads: without hccl_engine_params_t.thread_multiple the adapter never calls into the engine
 * from two threads at once. With it, any function may be called from any thread at any time
 * (MPI_THREAD_MULTIPLE: threads run collectives on distinct communicators and create and free
 * communicators concurrently): the engine serialises what must be serialised itself, and
 * hccl_progress() never waits for another thread (one thread progresses, the others return).
 * No function blocks on communication except hccl_comm_create for MPI_COMM_WORLD.
 *
 * Call order:
 *   hccl_engine_init                         once, inside MPI_Init, before any other call
 *   hccl_comm_create / hccl_comm_destroy     per communicator that selected coll_hccl;
 *                                            MPI_COMM_WORLD's first
 *   hccl_coll_supported -> hccl_coll_start   per MPI call; start only after supported said yes
 *   hccl_progress                            from Open MPI's progress loop, any time after init;
 *                                            it hands back every request that completed
 *   hccl_req_error / hccl_req_free           per completed request
 *   hccl_engine_finalize                     once, in MPI_Finalize, after every comm was destroyed
 *
 * Write contract: a call writes only the memory the MPI standard names as its output: the whole
 * receive buffer of AllReduce and AllGather, and of ReduceScatter the rank's own result region
 * (recvcounts[rank] elements at the start of recvbuf, also when in place, where the rest of
 * recvbuf holds input that stays untouched); nothing on non-root ranks of rooted calls other than
 * their result (a Reduce or Gather writes the root's recvbuf only, a Broadcast root and an
 * in-place Scatter root get nothing written). Whatever the algorithm, level or chunking,
 * intermediate data lives in the engine's scratch memory, never in the user's buffers.
 */
#ifndef COLL_HCCL_HCCL_ENGINE_H
#define COLL_HCCL_HCCL_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any incompatible change; both parameter structs carry it so that an adapter and an
 * engine built from different trees refuse each other instead of misreading fields. */
#define HCCL_ENGINE_API_VERSION 7

/* ---------------------------------------------------------------------------------------------
 * Status codes. Every function returning hccl_status_t uses these; messages go to err buffers. */
typedef enum hccl_status {
  HCCL_SUCCESS = 0,
  HCCL_PENDING = 1,          /* hccl_req_test only: not finished yet */
  HCCL_ERR_ARG = -1,         /* NULL pointer, value out of range, API version mismatch */
  HCCL_ERR_CONFIG = -2,      /* a setting is malformed; the message names the setting, the bad
                                value, its source and what is valid */
  HCCL_ERR_UNSUPPORTED = -3, /* the engine declines (a communicator, a thread level): the adapter
                                falls back to the other components, it is not a user error */
  HCCL_ERR_BOOTSTRAP = -4,   /* the all-gather callback failed or ranks disagree */
  HCCL_ERR_TRANSPORT = -5,   /* the link layer failed (unreachable peer, UCX error) */
  HCCL_ERR_TIMEOUT = -6,     /* no progress for longer than the timeout setting */
  HCCL_ERR_NO_MEMORY = -7,
  HCCL_ERR_INTERNAL = -8,  /* a bug: an invariant of the engine does not hold */
  HCCL_ERR_PEER_LOST = -9, /* a peer's process exited or its link failed */
  HCCL_ERR_MISMATCH = -10  /* the ranks' calls do not match (a peer moved a different size) */
} hccl_status_t;

/* Static string naming a status ("success", "config error", ...); never NULL. */
const char* hccl_status_string(hccl_status_t status);

/* ---------------------------------------------------------------------------------------------
 * Logging. The engine never prints; it hands complete lines (no trailing newline) to this callback,
 * which the adapter routes through opal_output. Levels: 0 errors (always shown), 1 one line per
 * decision, 2 per-communicator set-up and effective configuration, 3+ debugging. The engine
 * formats a line only if its level <= log_level. The callback may be called from any engine
 * function, on the calling thread. */
typedef void (*hccl_log_fn)(int level, const char* line, void* ctx);

/* ---------------------------------------------------------------------------------------------
 * Process-wide initialisation. */
typedef struct hccl_engine_params {
  int api_version;     /* HCCL_ENGINE_API_VERSION */
  int thread_multiple; /* nonzero if the application runs MPI_THREAD_MULTIPLE */
  hccl_log_fn log;     /* may be NULL: the engine stays silent */
  void* log_ctx;       /* passed back to log */
  int log_level;       /* highest level the adapter shows (its verbose parameter) */
  int yield_when_idle; /* nonzero if the MPI library yields the core while it waits (Open MPI
                          does so when ranks outnumber cores) */
} hccl_engine_params_t;

/* Called once from MPI_Init (not from ompi_info). Must not communicate. Any error disables
 * coll_hccl for the whole job; HCCL_ERR_UNSUPPORTED does so quietly. */
hccl_status_t hccl_engine_init(const hccl_engine_params_t* params, char* err, size_t errlen);

/* Called once from MPI_Finalize after every hccl_comm_destroy (and also when init failed). Local:
 * must not communicate (Open MPI's point-to-point layer may already be closed). */
void hccl_engine_finalize(void);

/* Static, human-readable identification of the engine build, e.g. "coll_hccl engine 0.1.0". */
const char* hccl_engine_version(void);

/* ---------------------------------------------------------------------------------------------
 * Configuration. Every setting reaches the engine as the list of layers that set it, highest
 * precedence first, each with a printable source, so that the engine can both resolve it and
 * report where the effective value came from. The adapter's precedence is
 *   info key on the communicator  >  MCA parameter  >  environment variable  >  automatic,
 * and it lists only layers that are set (non-empty). The engine uses layers[0]; if that value is
 * malformed it fails hccl_comm_create with HCCL_ERR_CONFIG naming setting, value and source. It
 * never silently skips a bad layer. Lower layers are only for reporting ("shadowed by ...").
 *
 * Value syntax (the engine validates; the adapter passes strings through untouched):
 *   ALGORITHM      HCCL_ALGO grammar, e.g. "level0:NA;level1:ring" or
 *                  "allreduce=level0:NA;level1:H-D_R/allgather=level0:NA;level1:NHR"
 *   SELECTION      automatic selection mode: "model" (cost model) or "hccl_rules" (HCCL's rules)
 *   BUFFSIZE_MB    scratch buffer per communicator in MB, integer >= 1 (HCCL_BUFFSIZE)
 *   DETERMINISTIC  "false", "true" or "strict", case-insensitive (HCCL_DETERMINISTIC)
 *   HCCS_TLS       UCX transport list for peers on the same server, e.g. "self,sm,cma"
 *   ROCE_TLS       UCX transport list for peers on other servers, e.g. "rc_verbs,ud_verbs,tcp"
 *   INTRA_ROCE     "0" or "1": carry same-server traffic over the RoCE class
 *                  (HCCL_INTRA_ROCE_ENABLE)
 *   TUNING_FILE    path of a JSON cost-model tuning file
 *   TIMEOUT        seconds a call may go without progress before it fails; "0" = never
 *   VERBOSE        integer >= 0, the adapter's verbosity (also given as log_level)
 *   LEVEL0_LINK    what carries level0 (same-server) traffic: "auto" (the shared-memory link
 *                  where it can be set up, else UCX tagged messages), "shm" (the shared-memory
 *                  link; set-up fails without it) or "tagged" (UCX tagged messages)
 *   TRACE          file name for the engine's timeline (trace.hpp): each process writes FILE with
 *                  "%r" replaced by its MPI_COMM_WORLD rank, or FILE.<world rank>, at finalize
 *   TRACE_EVENTS   integer >= 1: records (steps and transfers) kept per process (default 100000)
 *   SHM_SLOT_BYTES payload of a shared-memory slot, a multiple of 64 from 1024 to 1048576 ("16K"
 *                  allowed); fixed when MPI_COMM_WORLD sets the segment up, equal on every rank
 *
 * Sources look like: "info key hccl_algo", "MCA coll_hccl_algorithm (command line)",
 * "MCA coll_hccl_buffsize_mb (OMPI_MCA_ environment or mpirun --mca)",
 * "MCA coll_hccl_verbose (file /x/y.conf)",
 * "env HCCL_ALGO". */
typedef enum hccl_setting_id {
  HCCL_SETTING_ALGORITHM = 0,
  HCCL_SETTING_SELECTION,
  HCCL_SETTING_BUFFSIZE_MB,
  HCCL_SETTING_DETERMINISTIC,
  HCCL_SETTING_HCCS_TLS,
  HCCL_SETTING_ROCE_TLS,
  HCCL_SETTING_INTRA_ROCE,
  HCCL_SETTING_TUNING_FILE,
  HCCL_SETTING_TIMEOUT,
  HCCL_SETTING_VERBOSE,
  HCCL_SETTING_LEVEL0_LINK,
  HCCL_SETTING_TRACE,
  HCCL_SETTING_TRACE_EVENTS,
  HCCL_SETTING_SHM_SLOT_BYTES,
  HCCL_SETTING_COUNT
} hccl_setting_id_t;

#define HCCL_MAX_SETTING_LAYERS 4

typedef struct hccl_setting_layer {
  const char* value;  /* as the user wrote it; never NULL, never empty */
  const char* source; /* printable origin, see above; never NULL */
} hccl_setting_layer_t;

typedef struct hccl_setting {
  int num_layers; /* 0: set nowhere, the engine's default applies */
  hccl_setting_layer_t layers[HCCL_MAX_SETTING_LAYERS]; /* highest precedence first */
} hccl_setting_t;

/* ---------------------------------------------------------------------------------------------
 * Communicators. */

/* Blocking all-gather over MPI_COMM_WORLD: every rank contributes `bytes` bytes from `sendbuf`;
 * `recvbuf` (size * bytes) receives rank r's block at offset r * bytes. Returns 0 on success,
 * nonzero on failure (then recvbuf is undefined). The adapter runs it over Open MPI's
 * point-to-point layer, so it works before the engine does and without any other coll component.
 * Every rank makes the same sequence of calls with the same `bytes`. The engine calls it only from
 * hccl_comm_create of MPI_COMM_WORLD, inside MPI_Init; every other communicator is created without
 * communication (see hccl_comm_create), because Open MPI creates communicators inside its progress
 * loop, where a blocking exchange can deadlock with other threads' communicator creation. */
typedef int (*hccl_allgather_fn)(const void* sendbuf, void* recvbuf, size_t bytes, void* ctx);

typedef struct hccl_comm_params {
  int api_version;             /* HCCL_ENGINE_API_VERSION */
  int rank;                    /* 0 <= rank < size */
  int size;                    /* >= 2: the adapter never creates size-1 or inter-communicators */
  uint64_t comm_id;            /* equal on every rank of this communicator and distinct from every
                                  other communicator alive in this process (Open MPI's context
                                  id), e.g. to keep messages of different communicators apart */
  const char* name;            /* printable, for log lines only; may be "" */
  int world_rank;              /* this process's rank in MPI_COMM_WORLD */
  int world_size;              /* size of MPI_COMM_WORLD: communicators inside it share one
                                  transport, and rank tables describe MPI_COMM_WORLD */
  const int* world_ranks;      /* `size` entries: the MPI_COMM_WORLD rank of each communicator
                                  rank; NULL when a member is outside this process's
                                  MPI_COMM_WORLD (spawned or connected processes). Valid during
                                  the call only. */
  hccl_allgather_fn allgather; /* MPI_COMM_WORLD only; may be NULL for other communicators */
  void* allgather_ctx;         /* passed back to allgather */
  hccl_setting_t settings[HCCL_SETTING_COUNT]; /* indexed by hccl_setting_id_t */
} hccl_comm_params_t;

typedef struct hccl_comm hccl_comm_t;

/* Called by every rank of a new communicator, inside its creation. Strings and arrays in params
 * need only live for the duration of the call: the engine copies what it keeps.
 *
 * MPI_COMM_WORLD (world_ranks is the identity): collective. The engine learns every rank's
 * placement, configuration and link addresses through params->allgather, the same number of times
 * with the same sizes on every rank even when it fails locally (a local failure travels in the
 * next exchange instead of returning early), so it returns the same status on every rank. The
 * adapter also agrees on the outcome afterwards and drops the engine everywhere if a rank failed.
 *
 * Any other communicator: local, no communication. Everything it needs about its peers was learnt
 * by MPI_COMM_WORLD's creation, so the outcome depends only on values every rank passes alike:
 * members (world_ranks), comm_id and settings. Settings therefore must be equal on every rank
 * (info keys such as hccl_algo must carry the same value on all ranks, as MPI asks of hints that
 * an implementation requires to match). A communicator without world_ranks, or created when
 * MPI_COMM_WORLD's engine set-up failed, is HCCL_ERR_UNSUPPORTED.
 *
 * On success *comm is set; on failure *comm is NULL and err explains. HCCL_ERR_UNSUPPORTED means
 * "not for this communicator" (logged at verbose level 1); other errors are shown to the user. */
hccl_status_t hccl_comm_create(const hccl_comm_params_t* params, hccl_comm_t** comm, char* err,
                               size_t errlen);

/* Local, must not communicate (peers may have destroyed theirs already; it runs in the module
 * destructor, possibly inside MPI_Finalize). No request of this communicator is active. NULL ok. */
void hccl_comm_destroy(hccl_comm_t* comm);

/* ---------------------------------------------------------------------------------------------
 * Collective calls. */
typedef enum hccl_coll {
  HCCL_COLL_ALLREDUCE = 0,
  HCCL_COLL_ALLGATHER,
  HCCL_COLL_REDUCE_SCATTER,       /* per-rank counts (MPI_Reduce_scatter) */
  HCCL_COLL_REDUCE_SCATTER_BLOCK, /* equal counts (MPI_Reduce_scatter_block) */
  HCCL_COLL_BCAST,
  HCCL_COLL_REDUCE,
  HCCL_COLL_SCATTER,
  HCCL_COLL_GATHER,
  HCCL_COLL_ALLTOALL,
  HCCL_COLL_ALLGATHERV,
  HCCL_COLL_GATHERV,
  HCCL_COLL_SCATTERV,
  HCCL_COLL_ALLTOALLV, /* also MPI_Alltoallw, after the adapter packed each peer's block */
  HCCL_COLL_BARRIER,
  HCCL_COLL_SCAN,
  HCCL_COLL_EXSCAN,
  HCCL_COLL_COUNT
} hccl_coll_t;

/* Element types; the values mirror hccl::DataType in algorithms/types.hpp (checked by the engine
 * with static_asserts). HCCL_DT_BYTE is an opaque element of desc.elem_size bytes. */
typedef enum hccl_dtype {
  HCCL_DT_INT8 = 0,
  HCCL_DT_INT16,
  HCCL_DT_INT32,
  HCCL_DT_INT64,
  HCCL_DT_UINT8,
  HCCL_DT_UINT16,
  HCCL_DT_UINT32,
  HCCL_DT_UINT64,
  HCCL_DT_FLOAT16,
  HCCL_DT_BFLOAT16,
  HCCL_DT_FLOAT32,
  HCCL_DT_FLOAT64,
  HCCL_DT_LONG_DOUBLE,    /* x87 80-bit extended stored in sizeof(long double) bytes */
  HCCL_DT_COMPLEX_FLOAT,  /* two float32 */
  HCCL_DT_COMPLEX_DOUBLE, /* two float64 */
  HCCL_DT_BOOL,           /* C _Bool: 0 or 1 */
  HCCL_DT_BYTE,           /* opaque: no arithmetic, only bitwise ops, copies or a user op */
  HCCL_DT_COUNT
} hccl_dtype_t;

/* Reduction operators; values 0..9 mirror hccl::ReduceOp in algorithms/types.hpp. */
typedef enum hccl_op {
  HCCL_OP_SUM = 0,
  HCCL_OP_PROD,
  HCCL_OP_MAX,
  HCCL_OP_MIN,
  HCCL_OP_LAND,
  HCCL_OP_LOR,
  HCCL_OP_LXOR,
  HCCL_OP_BAND,
  HCCL_OP_BOR,
  HCCL_OP_BXOR,
  HCCL_OP_USER = 100, /* reduce with desc.user_fn */
  HCCL_OP_NONE = 101  /* HCCL_COLL_ALLGATHER */
} hccl_op_t;

/* A reduction the engine cannot compute itself (an MPI user op, or an MPI op on a type without
 * kernel): for i < count, inout[i] = in[i] (op) inout[i], elements of desc.elem_size bytes. `in`
 * always holds the contribution of LOWER ranks than `inout`, so for a non-commutative op the
 * engine gets exactly the rank-order result a0 op a1 op ... op a(p-1) as long as it combines
 * neighbouring rank ranges in this orientation. `in` and `inout` never overlap. Called only from
 * inside hccl_coll_start, hccl_progress or hccl_req_test, on the calling thread. */
typedef void (*hccl_user_op_fn)(const void* in, void* inout, size_t count, void* ctx);

/* One collective call. Buffers are contiguous arrays of `elem_size`-byte elements (the adapter
 * stages or falls back for anything else). All counts and offsets are elements, size_t: no int
 * overflow however large the call. Layout by collective, p = communicator size, "packed" = block r
 * at the sum of the counts before it:
 *   ALLREDUCE             sendbuf: count; recvbuf: count.
 *                         in place: input in recvbuf.
 *   ALLGATHER             sendbuf: count; recvbuf: p * count, rank r's block at r * count.
 *                         in place: this rank's block already sits at recvbuf + rank * count.
 *   REDUCE_SCATTER_BLOCK  sendbuf: p * count, block r at r * count; recvbuf: count (block rank).
 *                         in place: input in recvbuf (p * count), result at its start.
 *   REDUCE_SCATTER        sendbuf: sum(recvcounts), block r at sum(recvcounts[0..r));
 *                         recvbuf: recvcounts[rank]. in place: input in recvbuf, result at start.
 *   BCAST                 recvbuf: count on every rank, the root's is the input (sendbuf NULL,
 *                         in_place 0). The root's buffer is never written.
 *   REDUCE                sendbuf: count; recvbuf: count at the root only (NULL elsewhere).
 *                         in place (root only): input in the root's recvbuf.
 *   SCATTER               root: sendbuf p * count, block r at r * count; recvbuf: count on every
 *                         rank. in place (root only): recvbuf is the root's send buffer
 *                         (p * count), sendbuf NULL, and nothing is written on the root.
 *   GATHER                sendbuf: count; recvbuf: p * count at the root only, block r at
 *                         r * count. in place (root only): the root's block already sits at
 *                         recvbuf + root * count.
 *   ALLTOALL              sendbuf: p * count, block r goes to rank r; recvbuf: p * count, block r
 *                         came from rank r. in place: input in recvbuf.
 *   ALLGATHERV            sendbuf: recvcounts[rank]; recvbuf: block r of recvcounts[r] at
 *                         rdispls[r] (packed if rdispls is NULL). in place: own block in recvbuf.
 *   GATHERV               sendbuf: count (this rank's block); root: recvcounts/rdispls as
 *                         ALLGATHERV. in place (root only) as GATHER.
 *   SCATTERV              root: sendbuf block r of sendcounts[r] at sdispls[r]; recvbuf: count
 *                         (this rank's block). in place (root only) as SCATTER.
 *   ALLTOALLV             sendbuf: block r of sendcounts[r] at sdispls[r]; recvbuf: block r of
 *                         recvcounts[r] at rdispls[r] (NULL displacements: packed). in place:
 *                         recvbuf holds the input in the receive layout.
 *   BARRIER               no buffers, count 0.
 *   SCAN, EXSCAN          sendbuf: count; recvbuf: count (EXSCAN: rank 0's recvbuf is not
 *                         written). in place: input in recvbuf.
 * Fields marked [same] are equal on every rank (MPI requires it), and the decision of
 * hccl_coll_supported may depend on them only; [local] fields are this rank's own knowledge
 * (MPI leaves them rank-local: Gatherv's counts at the root only, Alltoallv's row and column).
 * Buffer addresses and user_fn/user_ctx differ. in_place is [same] except for the rooted
 * collectives, where only the root can be in place. */
typedef struct hccl_coll_desc {
  hccl_coll_t coll;         /* [same] */
  int nonblocking;          /* [same] nonzero for the MPI_I* forms (informational) */
  int in_place;             /* nonzero for MPI_IN_PLACE; then sendbuf is NULL */
  const void* sendbuf;      /* NULL when in_place */
  void* recvbuf;            /* never NULL unless this rank receives no data */
  size_t count;             /* [same] elements, see the layout table; this rank's own block for
                               GATHERV and SCATTERV ([local]); unused by the per-rank forms */
  const size_t* recvcounts; /* p entries or NULL, see the layout table: [same] for
                               REDUCE_SCATTER and ALLGATHERV, [local] otherwise; valid during the
                               call */
  hccl_dtype_t dtype;       /* [same] */
  size_t elem_size;         /* [same] bytes per element: the size of dtype, or any size >= 1 for
                               HCCL_DT_BYTE (a contiguous derived type, moved or user-reduced) */
  hccl_op_t op;             /* [same] HCCL_OP_NONE for collectives that do not reduce */
  int user_commutative;     /* [same] HCCL_OP_USER: nonzero if the op is commutative */
  hccl_user_op_fn user_fn;  /* HCCL_OP_USER only, from hccl_coll_start on (NULL when asking
                               hccl_coll_supported); valid until the request completes */
  void* user_ctx;           /* passed back to user_fn */
  int root;                 /* [same] BCAST, REDUCE, SCATTER(V), GATHER(V): 0 <= root < p */
  const size_t* sendcounts; /* [local] SCATTERV (root), ALLTOALLV: p entries, valid during the
                               call */
  const size_t* sdispls;    /* [local] with sendcounts; NULL = packed */
  const size_t* rdispls;    /* [local] with recvcounts; NULL = packed. This engine takes packed
                               layouts only (NULL displacements): the adapter stages others. */
} hccl_coll_desc_t;

/* Whether the engine executes this call: 1 yes, 0 no (the adapter hands the call to the previous
 * component), < 0 an hccl_status_t error. Must be decided from [same] fields and communicator state
 * only, so that every rank decides alike. `explain` (may be NULL if explainlen is 0) receives one
 * line: for 1 the decision, e.g. "level0 -> ring (model), level1 -> NHR (forced by env HCCL_ALGO)";
 * for 0 the reason, e.g. "no kernel for long double complex". Never communicates. */
int hccl_coll_supported(hccl_comm_t* comm, const hccl_coll_desc_t* desc, char* explain,
                        size_t explainlen);

typedef struct hccl_req hccl_req_t;

/* Starts a call hccl_coll_supported accepted with the same descriptor. The descriptor and the
 * recvcounts array may be reused as soon as this returns; buffers and user_ctx must stay valid
 * until the request completes. `owner` is the adapter's handle for the call, handed back on
 * completion. On success *req is set and the engine owns the call until hccl_progress reports it
 * complete (even a call with nothing to move completes through hccl_progress); on failure *req is
 * NULL and nothing is in flight. */
hccl_status_t hccl_coll_start(hccl_comm_t* comm, const hccl_coll_desc_t* desc, void* owner,
                              hccl_req_t** req, char* err, size_t errlen);

/* Persistent collectives (MPI_*_init, MPIX_*_init in Open MPI 4.1): a call accepted by
 * hccl_coll_supported is planned once, with the buffers (and user_fn/user_ctx) every start uses,
 * which stay valid until hccl_prepared_free. hccl_prepared_start runs the prepared plan: it only
 * binds buffers and starts the executor, reusing the request of the previous start; it completes
 * through hccl_progress like hccl_coll_start, and the prepared call may start again once the
 * request was freed. Starts take their place in the communicator's order of collectives like
 * any other call. hccl_prepared_free: not while a start is in flight; NULL is ignored. */
typedef struct hccl_prepared hccl_prepared_t;
hccl_status_t hccl_coll_prepare(hccl_comm_t* comm, const hccl_coll_desc_t* desc,
                                hccl_prepared_t** prepared, char* err, size_t errlen);
hccl_status_t hccl_prepared_start(hccl_prepared_t* prepared, void* owner, hccl_req_t** req,
                                  char* err, size_t errlen);
void hccl_prepared_free(hccl_prepared_t* prepared);
/* A communicator whose call failed once is broken: every later start fails with the first
 * failure's status and "communicator '<name>' (cid N) broken since call K: <first failure>"
 * (calls count from 1). */

/* Blocking small calls without a request (the shared-memory link's slots, for a communicator
 * that is its server's whole set of ranks): the adapter tries this first for every blocking call
 * of the collectives it serves, and spins on hccl_fast_poll while it says PENDING (a rank whose
 * layout is not contiguous asks hccl_fast_accepts first and packs only for a shape the slots
 * take: ranks may describe equal signatures with different layouts, so the path must not depend
 * on them).
 * Returns HCCL_SUCCESS (done: results in recvbuf), HCCL_PENDING (poll again; between polls the
 * adapter may run Open MPI's progress loop, which may progress other calls but must not start
 * one on this communicator), HCCL_ERR_UNSUPPORTED (this call shape does not run on slots;
 * nothing happened: ask hccl_coll_supported and start it), or the error that failed the call
 * (then the communicator is broken, as after any failed call). Whether a shape runs on slots
 * depends on [same] fields and communicator state only, so every rank decides alike; in_place
 * does not enter it for Reduce, Gather, Scatter, Alltoall, Scan and Exscan, where one rank alone
 * may be in place (it only rebinds that rank's buffers). The
 * descriptor's buffers must stay valid until the call is over; user ops never run here. Not
 * with thread_multiple (always HCCL_ERR_UNSUPPORTED). */
/* It polls the call up to `spins` times (at least once) before it answers PENDING, as
 * hccl_fast_poll does: a call that completes within them crosses into the engine once. */
hccl_status_t hccl_fast_start(hccl_comm_t* comm, const hccl_coll_desc_t* desc, int spins, char* err,
                              size_t errlen);
/* 1 when hccl_fast_start would run this shape on slots (the same decision, remembered; the
 * descriptor's buffers are not read), else 0. Starts nothing. */
int hccl_fast_accepts(hccl_comm_t* comm, const hccl_coll_desc_t* desc);
/* Polls the call up to `spins` times (at least once) while it is pending. */
hccl_status_t hccl_fast_poll(hccl_comm_t* comm, int spins, char* err, size_t errlen);

/* The whole text of the last message an engine function wrote into an err or explain buffer on
 * this thread (the buffer holds at most its length - 1 bytes of it); valid until the next engine
 * call on this thread. */
const char* hccl_last_error(void);

/* A finished call: HCCL_SUCCESS (results are in recvbuf) or the error that ended it (then
 * hccl_req_error says why). Either way nothing more happens to the call's buffers. */
typedef struct hccl_completion {
  void* owner; /* as given to hccl_coll_start */
  hccl_req_t* req;
  hccl_status_t status;
} hccl_completion_t;

/* Advances every call in flight on every communicator and hands back up to `max` calls that
 * completed, in `done`; returns how many (0 when nothing completed, or when another thread, or
 * this thread further up its stack, is progressing already). Called from Open MPI's progress loop
 * (then very often: cheap when idle). Never blocks, never calls the all-gather callback. A
 * completed call is reported exactly once; the caller then frees it. */
int hccl_progress(hccl_completion_t* done, int max);

/* Why a completed call failed ("" if it did not); valid until hccl_req_free. */
const char* hccl_req_error(const hccl_req_t* req);

/* Releases a request hccl_progress reported complete. NULL is ignored. */
void hccl_req_free(hccl_req_t* req);

/* MPI_Reduce_local on the engine's kernels: inout[i] = in[i] (op) inout[i] for i < count
 * elements of dtype (op a predefined op, never HCCL_OP_USER). HCCL_ERR_UNSUPPORTED when the engine
 * has no kernel for the pair (then nothing was written). Local, any thread, no communicator. */
hccl_status_t hccl_reduce_local(const void* in, void* inout, size_t count, hccl_dtype_t dtype,
                                hccl_op_t op);

#ifdef __cplusplus
}
#endif

#endif /* COLL_HCCL_HCCL_ENGINE_H */
