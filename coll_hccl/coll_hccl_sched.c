/*
 * coll_hccl_sched.c - schedules of rounds over Open MPI's PML (see coll_hccl_sched.h), and their
 * progress.
 *
 * A schedule is its own MPI request: ompi_coll_base_nbc_request_t comes first because the MPI
 * layer casts every coll request to it (reference section 6). Threads:
 *  - a blocking schedule is driven only by the thread that runs it (polling opal_progress), so it
 *    never enters the shared lists;
 *  - a started schedule is posted to `pending` under a mutex; whichever thread owns the progress
 *    flag (one at a time, and never re-entered: the callback runs inside opal_progress, which a
 *    sub-request or a completion callback may call again) moves it to `running`, which only the
 *    flag's owner touches, and advances it there. Completion (which runs user-visible callbacks
 *    and may start new schedules) happens after the flag is released.
 * The cost when no schedule is active is one atomic load per progress call.
 */
#include "coll_hccl_sched.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "opal/runtime/opal_progress.h"

typedef enum { ACT_SEND, ACT_RECV, ACT_COPY, ACT_REDUCE, ACT_SUB, ACT_ROUND } act_kind_t;

typedef struct act {
  act_kind_t kind;
  const void* src;
  void* dst;
  size_t scount, dcount;
  ompi_datatype_t *sdt, *ddt;
  ompi_op_t* op;
  int peer;
  int (*start)(void* ctx, ompi_request_t** req);
  void* ctx;
} act_t;

struct mca_coll_hccl_sched {
  ompi_coll_base_nbc_request_t super; /* must come first: the MPI layer casts to it */
  ompi_communicator_t* comm;
  int tag;
  act_t* acts;
  size_t nacts, cap_acts;
  void** tmps;
  size_t ntmps, cap_tmps;
  /* while running */
  size_t next; /* first action not started yet */
  ompi_request_t** live;
  size_t nlive;
  int error;
  bool persistent;
  bool user_freed; /* MPI_Request_free before completion: free once done */
  bool retained;   /* comm retained for this run */
  struct mca_coll_hccl_sched* link;
};

static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static mca_coll_hccl_sched_t* pending = NULL; /* under pending_lock */
static mca_coll_hccl_sched_t* running = NULL; /* owner of progress_busy only */
static atomic_int active = 0;                 /* started, not completed */
static atomic_int progress_busy = 0;

/* Persistent requests are not given back to malloc: Open MPI's free_objs_callback reads the
 * request after our req_free returned (coll_base_util.c, 4.1.4), which libnbc's free list makes
 * harmless. Ours keeps their memory the same way, for reuse by the next schedule. */
static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;
static mca_coll_hccl_sched_t* spare = NULL;

static int request_cancel(ompi_request_t* req, int complete) {
  (void)req;
  (void)complete;
  return MPI_ERR_REQUEST; /* collectives cannot be cancelled */
}

/* Next to Open MPI's blocking collective tags (-10..-26, coll_tags.h) and unused by any of its
 * components; not near INT_MIN, whose low 24 bits pml/ucx would read as user tag 0. */
#define MCA_COLL_HCCL_BLOCKING_TAG (MCA_COLL_BASE_TAG_ALLGATHER + 1)

mca_coll_hccl_sched_t* mca_coll_hccl_sched_new(ompi_communicator_t* comm) {
  mca_coll_hccl_sched_t* s = NULL;
  pthread_mutex_lock(&spare_lock);
  if (NULL != spare) {
    s = spare;
    spare = s->link;
  }
  pthread_mutex_unlock(&spare_lock);
  if (NULL == s) s = malloc(sizeof *s);
  if (NULL == s) return NULL;
  memset(s, 0, sizeof *s);
  OBJ_CONSTRUCT(&s->super, ompi_coll_base_nbc_request_t);
  s->comm = comm;
  /* Every rank builds the same schedules in the same order (collectives are ordered per
   * communicator), so every rank draws the same tag. */
  s->tag = ompi_coll_base_nbc_reserve_tags(comm, 1);
  return s;
}

static void release_tmps(mca_coll_hccl_sched_t* s) {
  for (size_t i = 0; i < s->ntmps; ++i) free(s->tmps[i]);
  free(s->tmps);
  free(s->acts);
  free(s->live);
  s->tmps = NULL;
  s->acts = NULL;
  s->live = NULL;
  s->ntmps = s->nacts = 0;
}

void mca_coll_hccl_sched_free(mca_coll_hccl_sched_t* s) {
  if (NULL == s) return;
  release_tmps(s);
  OBJ_DESTRUCT(&s->super);
  free(s);
}

static act_t* add(mca_coll_hccl_sched_t* s, act_kind_t kind) {
  if (s->nacts == s->cap_acts) {
    size_t cap = 0 == s->cap_acts ? 16 : 2 * s->cap_acts;
    act_t* a = realloc(s->acts, cap * sizeof *a);
    if (NULL == a) return NULL;
    s->acts = a;
    s->cap_acts = cap;
  }
  act_t* a = &s->acts[s->nacts++];
  memset(a, 0, sizeof *a);
  a->kind = kind;
  return a;
}

int mca_coll_hccl_sched_send(mca_coll_hccl_sched_t* s, const void* buf, size_t count,
                             ompi_datatype_t* dtype, int peer) {
  if (MPI_PROC_NULL == peer) return OMPI_SUCCESS;
  act_t* a = add(s, ACT_SEND);
  if (NULL == a) return OMPI_ERR_OUT_OF_RESOURCE;
  a->src = buf;
  a->scount = count;
  a->sdt = dtype;
  a->peer = peer;
  return OMPI_SUCCESS;
}

int mca_coll_hccl_sched_recv(mca_coll_hccl_sched_t* s, void* buf, size_t count,
                             ompi_datatype_t* dtype, int peer) {
  if (MPI_PROC_NULL == peer) return OMPI_SUCCESS;
  act_t* a = add(s, ACT_RECV);
  if (NULL == a) return OMPI_ERR_OUT_OF_RESOURCE;
  a->dst = buf;
  a->dcount = count;
  a->ddt = dtype;
  a->peer = peer;
  return OMPI_SUCCESS;
}

int mca_coll_hccl_sched_copy(mca_coll_hccl_sched_t* s, const void* src, size_t scount,
                             ompi_datatype_t* sdt, void* dst, size_t dcount, ompi_datatype_t* ddt) {
  act_t* a = add(s, ACT_COPY);
  if (NULL == a) return OMPI_ERR_OUT_OF_RESOURCE;
  a->src = src;
  a->scount = scount;
  a->sdt = sdt;
  a->dst = dst;
  a->dcount = dcount;
  a->ddt = ddt;
  return OMPI_SUCCESS;
}

int mca_coll_hccl_sched_reduce(mca_coll_hccl_sched_t* s, const void* in, void* inout, size_t count,
                               ompi_datatype_t* dtype, ompi_op_t* op) {
  act_t* a = add(s, ACT_REDUCE);
  if (NULL == a) return OMPI_ERR_OUT_OF_RESOURCE;
  a->src = in;
  a->dst = inout;
  a->scount = count;
  a->sdt = dtype;
  a->op = op;
  return OMPI_SUCCESS;
}

int mca_coll_hccl_sched_sub(mca_coll_hccl_sched_t* s, int (*start)(void* ctx, ompi_request_t** req),
                            void* ctx) {
  act_t* a = add(s, ACT_SUB);
  if (NULL == a) return OMPI_ERR_OUT_OF_RESOURCE;
  a->start = start;
  a->ctx = ctx;
  return OMPI_SUCCESS;
}

int mca_coll_hccl_sched_round(mca_coll_hccl_sched_t* s) {
  /* an empty round (or two markers in a row) would only cost a pass */
  if (0 == s->nacts || ACT_ROUND == s->acts[s->nacts - 1].kind) return OMPI_SUCCESS;
  return NULL == add(s, ACT_ROUND) ? OMPI_ERR_OUT_OF_RESOURCE : OMPI_SUCCESS;
}

void* mca_coll_hccl_sched_tmp(mca_coll_hccl_sched_t* s, size_t bytes) {
  if (s->ntmps == s->cap_tmps) {
    size_t cap = 0 == s->cap_tmps ? 8 : 2 * s->cap_tmps;
    void** t = realloc(s->tmps, cap * sizeof *t);
    if (NULL == t) return NULL;
    s->tmps = t;
    s->cap_tmps = cap;
  }
  void* p = malloc(bytes > 0 ? bytes : 1);
  if (NULL != p) s->tmps[s->ntmps++] = p;
  return p;
}

void* mca_coll_hccl_sched_tmp_dt(mca_coll_hccl_sched_t* s, size_t count, ompi_datatype_t* dtype) {
  ptrdiff_t lb = 0, extent = 0, true_lb = 0, true_extent = 0;
  ompi_datatype_get_extent(dtype, &lb, &extent);
  ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
  size_t bytes = 0;
  if (count > 0) {
    /* coll/base's sizing: the true extent of one element plus whole extents for the others */
    bytes = (size_t)true_extent + (count - 1) * (size_t)(extent < 0 ? -extent : extent);
  }
  char* p = mca_coll_hccl_sched_tmp(s, bytes);
  return NULL == p ? NULL : p - true_lb;
}

/* --- running --- */

static int copy(const act_t* a) {
  if (0 == a->scount && 0 == a->dcount) return OMPI_SUCCESS;
  if (a->sdt == a->ddt && a->scount == a->dcount) {
    return ompi_datatype_copy_content_same_ddt(a->ddt, a->dcount, (char*)a->dst,
                                               (char*)(uintptr_t)a->src);
  }
  if (a->scount > INT_MAX || a->dcount > INT_MAX) return OMPI_ERR_NOT_SUPPORTED;
  return ompi_datatype_sndrcv(a->src, (int32_t)a->scount, a->sdt, a->dst, (int32_t)a->dcount,
                              a->ddt);
}

/* Starts the actions of the current round, up to the next round marker. */
static void start_round(mca_coll_hccl_sched_t* s) {
  while (s->next < s->nacts && OMPI_SUCCESS == s->error) {
    const act_t* a = &s->acts[s->next];
    if (ACT_ROUND == a->kind) break;
    ++s->next;
    ompi_request_t* req = MPI_REQUEST_NULL;
    int rc = OMPI_SUCCESS;
    switch (a->kind) {
      case ACT_SEND:
        rc = MCA_PML_CALL(isend(a->src, a->scount, a->sdt, a->peer, s->tag,
                                MCA_PML_BASE_SEND_STANDARD, s->comm, &req));
        break;
      case ACT_RECV:
        rc = MCA_PML_CALL(irecv(a->dst, a->dcount, a->ddt, a->peer, s->tag, s->comm, &req));
        break;
      case ACT_SUB:
        rc = a->start(a->ctx, &req);
        break;
      case ACT_COPY:
        rc = copy(a);
        break;
      case ACT_REDUCE:
        ompi_op_reduce(a->op, (void*)(uintptr_t)a->src, a->dst, a->scount, a->sdt);
        break;
      case ACT_ROUND:
        break;
    }
    if (OMPI_SUCCESS != rc) {
      s->error = rc;
    } else if (MPI_REQUEST_NULL != req && NULL != req) {
      s->live[s->nlive++] = req;
    }
  }
}

/* Collects the current round if it completed and starts the following ones; true when the whole
 * schedule is done (or failed and nothing of it is in flight any more). */
static bool advance(mca_coll_hccl_sched_t* s) {
  for (;;) {
    for (size_t i = 0; i < s->nlive; ++i) {
      if (!REQUEST_COMPLETE(s->live[i])) return false;
    }
    for (size_t i = 0; i < s->nlive; ++i) {
      int rc = s->live[i]->req_status.MPI_ERROR;
      if (MPI_SUCCESS != rc && OMPI_SUCCESS == s->error) s->error = rc;
      ompi_request_free(&s->live[i]);
    }
    s->nlive = 0;
    if (OMPI_SUCCESS != s->error || s->next >= s->nacts) return true;
    if (ACT_ROUND == s->acts[s->next].kind) ++s->next;
    start_round(s);
  }
}

static int prepare_run(mca_coll_hccl_sched_t* s) {
  if (NULL == s->live && s->nacts > 0) {
    s->live = malloc(s->nacts * sizeof *s->live);
    if (NULL == s->live) return OMPI_ERR_OUT_OF_RESOURCE;
  }
  s->next = 0;
  s->nlive = 0;
  s->error = OMPI_SUCCESS;
  return OMPI_SUCCESS;
}

static void init_request(mca_coll_hccl_sched_t* s, bool persistent) {
  ompi_request_t* req = &s->super.super;
  OMPI_REQUEST_INIT(req, persistent);
  req->req_type = OMPI_REQUEST_COLL;
  req->req_status.MPI_ERROR = MPI_SUCCESS;
  req->req_cancel = request_cancel;
  req->req_mpi_object.comm = s->comm;
  s->persistent = persistent;
}

int mca_coll_hccl_sched_run(mca_coll_hccl_sched_t* s) {
  int rc = prepare_run(s);
  if (OMPI_SUCCESS == rc) {
    start_round(s);
    while (!advance(s)) opal_progress();
    rc = s->error;
  }
  mca_coll_hccl_sched_free(s);
  return rc;
}

/* The end of one run of a started schedule, outside the progress flag. */
static void complete(mca_coll_hccl_sched_t* s) {
  ompi_request_t* req = &s->super.super;
  ompi_communicator_t* comm = s->retained ? s->comm : NULL;
  s->retained = false;
  bool free_now = s->user_freed;
  req->req_status.MPI_ERROR = s->error;
  atomic_fetch_sub(&active, 1);
  ompi_request_complete(req, true);
  if (free_now) {
    OMPI_REQUEST_FINI(req);
    mca_coll_hccl_sched_free(s);
  }
  if (NULL != comm) OBJ_RELEASE(comm);
}

/* One run: the first rounds in the caller's thread, the rest from the progress loop. */
static int launch(mca_coll_hccl_sched_t* s) {
  ompi_request_t* req = &s->super.super;
  int rc = prepare_run(s);
  if (OMPI_SUCCESS != rc) return rc;
  req->req_status.MPI_ERROR = MPI_SUCCESS;
  req->req_state = OMPI_REQUEST_ACTIVE;
  req->req_complete = REQUEST_PENDING;
  OBJ_RETAIN(s->comm); /* MPI_Comm_free may come before the completion */
  s->retained = true;
  atomic_fetch_add(&active, 1);
  start_round(s);
  if (advance(s)) {
    complete(s);
    return OMPI_SUCCESS;
  }
  pthread_mutex_lock(&pending_lock);
  s->link = pending;
  pending = s;
  pthread_mutex_unlock(&pending_lock);
  return OMPI_SUCCESS;
}

static int request_free(ompi_request_t** rptr) {
  mca_coll_hccl_sched_t* s = (mca_coll_hccl_sched_t*)*rptr;
  *rptr = MPI_REQUEST_NULL;
  if (!REQUEST_COMPLETE(&s->super.super)) {
    /* completes later (the progress loop owns it now); then it frees itself */
    s->user_freed = true;
    return OMPI_SUCCESS;
  }
  OMPI_REQUEST_FINI(&s->super.super);
  if (!s->persistent) {
    mca_coll_hccl_sched_free(s);
    return OMPI_SUCCESS;
  }
  release_tmps(s);
  OBJ_DESTRUCT(&s->super);
  pthread_mutex_lock(&spare_lock);
  s->link = spare;
  spare = s;
  pthread_mutex_unlock(&spare_lock);
  return OMPI_SUCCESS;
}

int mca_coll_hccl_sched_start(mca_coll_hccl_sched_t* s, ompi_request_t** req) {
  init_request(s, false);
  s->super.super.req_free = request_free;
  int rc = launch(s);
  if (OMPI_SUCCESS != rc) {
    mca_coll_hccl_sched_free(s);
    return rc;
  }
  *req = &s->super.super;
  return OMPI_SUCCESS;
}

static int persistent_start(size_t count, ompi_request_t** requests) {
  int rc = OMPI_SUCCESS;
  for (size_t i = 0; i < count; ++i) {
    mca_coll_hccl_sched_t* s = (mca_coll_hccl_sched_t*)requests[i];
    if (!REQUEST_COMPLETE(&s->super.super)) { /* still running */
      rc = MPI_ERR_REQUEST;
      continue;
    }
    int one = launch(s);
    if (OMPI_SUCCESS != one) rc = one;
  }
  return rc;
}

int mca_coll_hccl_sched_persistent(mca_coll_hccl_sched_t* s, ompi_request_t** req) {
  init_request(s, true);
  ompi_request_t* r = &s->super.super;
  r->req_state = OMPI_REQUEST_INACTIVE;
  r->req_complete = REQUEST_COMPLETED; /* inactive: MPI_Wait returns at once */
  r->req_start = persistent_start;
  r->req_free = request_free;
  *req = r;
  return OMPI_SUCCESS;
}

int mca_coll_hccl_sched_finish(mca_coll_hccl_sched_t* s, ompi_request_t** req, bool persistent) {
  /* A blocking schedule sends with one fixed tag, as Open MPI's blocking components do (matching
   * stays right through MPI's non-overtaking order): the MPI layer returns before the component
   * from some zero-count calls on some ranks only (MPI_PROC_NULL ranks of an intercommunicator
   * Bcast, non-roots of a Gather), so those ranks would not draw the per-call tag and every later
   * call on the communicator would match the wrong messages (mpi4py's intercommunicator bcast got
   * its payload as its length, then hung). */
  if (NULL == req) {
    s->tag = MCA_COLL_HCCL_BLOCKING_TAG;
    return mca_coll_hccl_sched_run(s);
  }
  return persistent ? mca_coll_hccl_sched_persistent(s, req) : mca_coll_hccl_sched_start(s, req);
}

int mca_coll_hccl_sched_progress(void) {
  if (0 == atomic_load_explicit(&active, memory_order_relaxed)) return 0;
  int idle = 0;
  if (!atomic_compare_exchange_strong(&progress_busy, &idle, 1)) return 0;
  pthread_mutex_lock(&pending_lock);
  mca_coll_hccl_sched_t* fresh = pending;
  pending = NULL;
  pthread_mutex_unlock(&pending_lock);
  while (NULL != fresh) {
    mca_coll_hccl_sched_t* n = fresh->link;
    fresh->link = running;
    running = fresh;
    fresh = n;
  }
  mca_coll_hccl_sched_t* done = NULL;
  mca_coll_hccl_sched_t** at = &running;
  while (NULL != *at) {
    mca_coll_hccl_sched_t* s = *at;
    if (advance(s)) {
      *at = s->link;
      s->link = done;
      done = s;
    } else {
      at = &s->link;
    }
  }
  atomic_store(&progress_busy, 0);
  int n = 0;
  while (NULL != done) {
    mca_coll_hccl_sched_t* s = done;
    done = s->link;
    s->link = NULL;
    complete(s);
    ++n;
  }
  return n;
}

void mca_coll_hccl_sched_finalize(void) {
  pthread_mutex_lock(&spare_lock);
  while (NULL != spare) {
    mca_coll_hccl_sched_t* s = spare;
    spare = s->link;
    free(s);
  }
  pthread_mutex_unlock(&spare_lock);
}
