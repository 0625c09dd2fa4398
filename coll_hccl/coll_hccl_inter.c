/*
 * coll_hccl_inter.c - coll_hccl on intercommunicators: the module (query, enable), what the
 * families share (local-group sub-requests, the per-call line), and the all-to-one-to-all
 * collectives: Allreduce, Allgather(v), Reduce_scatter(_block), Barrier.
 *
 * MPI defines these with results from the remote group (Allreduce on group A reduces group B's
 * data), so each is a leader exchange, in one of two shapes:
 *  - blocking: the local group condenses its contribution at its rank 0 (a local collective), the
 *    two leaders swap over the intercommunicator, and each leader spreads what it received over
 *    its group (another local collective). The engine serves the local steps when it can,
 *    through the local group's own coll table.
 *  - MPI_I* and persistent: point-to-point only (each leader gathers and reduces the remote
 *    group's data and relays the other leader's result to the remote group; Reduce_scatter
 *    scatters over point-to-point on the local group). A nonblocking schedule reaches its later
 *    rounds at different times on different ranks, so local collectives started there could
 *    start in different orders on different ranks when several calls are in flight on the
 *    intercommunicator, or an MPI_Comm_dup of it runs its own local collectives meanwhile;
 *    point-to-point with the schedule's own tag matches whatever the order. Open MPI splits its
 *    own implementations the same way (coll/inter, libnbc).
 * Scan and Exscan are not defined on intercommunicators: their entries stay NULL, which Open MPI
 * expects.
 */
#include "coll_hccl_inter.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ompi/mca/pml/pml.h"
#include "opal/util/output.h"

/* --- shared helpers --- */

void mca_coll_hccl_form_name(char* buf, size_t len, const char* base, ompi_request_t** req,
                             bool persistent) {
  if (NULL == req) {
    snprintf(buf, len, "MPI_%s", base);
  } else if (persistent) {
    snprintf(buf, len, "MPIX_%s_init", base);
  } else {
    /* MPI_Iallreduce: I, then the name with its first letter in lower case */
    char first = (char)(base[0] >= 'A' && base[0] <= 'Z' ? base[0] - 'A' + 'a' : base[0]);
    snprintf(buf, len, "MPI_I%c%s", first, base + 1);
  }
}

void mca_coll_hccl_inter_log(ompi_communicator_t* comm, const char* base, ompi_request_t** req,
                             bool persistent, const char* how, const char* what_fmt, ...) {
  if (!mca_coll_hccl_wants_log(comm)) return;
  char name[64], what[256];
  mca_coll_hccl_form_name(name, sizeof name, base, req, persistent);
  va_list ap;
  va_start(ap, what_fmt);
  vsnprintf(what, sizeof what, what_fmt, ap);
  va_end(ap);
  char remote[48] = "";
  if (OMPI_COMM_IS_INTER(comm)) {
    snprintf(remote, sizeof remote, ", remote group of %d", ompi_comm_remote_size(comm));
  }
  opal_output(mca_coll_hccl_component.output, "%s on %s (cid %u, rank %d of %d%s): %s -> hccl: %s",
              name, MCA_COLL_HCCL_NAME(comm), (unsigned)MCA_COLL_HCCL_CID(comm),
              ompi_comm_rank(comm), ompi_comm_size(comm), remote, what, how);
}

int mca_coll_hccl_inter_count_error(ompi_communicator_t* comm, const char* base, size_t count) {
  opal_output(mca_coll_hccl_component.output,
              "MPI_%s on %s: %zu elements on the local group exceed what a collective count (an "
              "int, at most %d) can say; split the call",
              base, MCA_COLL_HCCL_NAME(comm), count, INT_MAX);
  return MPI_ERR_COUNT;
}

typedef struct local_sub {
  mca_coll_hccl_local_t what;
  ompi_communicator_t* local;
} local_sub_t;

static int start_local(void* ctx, ompi_request_t** req) {
  const local_sub_t* l = ctx;
  const mca_coll_hccl_local_t* w = &l->what;
  ompi_communicator_t* c = l->local;
  mca_coll_base_comm_coll_t* t = c->c_coll;
  switch (w->kind) {
    case LOCAL_REDUCE:
      return t->coll_ireduce(w->sbuf, w->rbuf, w->scount, w->sdt, w->op, w->root, c, req,
                             t->coll_ireduce_module);
    case LOCAL_BCAST:
      return t->coll_ibcast(w->rbuf, w->rcount, w->rdt, w->root, c, req, t->coll_ibcast_module);
    case LOCAL_SCATTER:
      return t->coll_iscatter(w->sbuf, w->scount, w->sdt, w->rbuf, w->rcount, w->rdt, w->root, c,
                              req, t->coll_iscatter_module);
    case LOCAL_SCATTERV:
      return t->coll_iscatterv(w->sbuf, w->counts, w->displs, w->sdt, w->rbuf, w->rcount, w->rdt,
                               w->root, c, req, t->coll_iscatterv_module);
    case LOCAL_BARRIER:
      return t->coll_ibarrier(c, req, t->coll_ibarrier_module);
  }
  return OMPI_ERR_BAD_PARAM;
}

int mca_coll_hccl_inter_local(mca_coll_hccl_sched_t* s, ompi_communicator_t* comm,
                              const mca_coll_hccl_local_t* what) {
  local_sub_t* l = mca_coll_hccl_sched_tmp(s, sizeof *l);
  if (NULL == l) return OMPI_ERR_OUT_OF_RESOURCE;
  l->what = *what;
  l->local = comm->c_local_comm; /* kept alive by the module (see inter_module_t) */
  return mca_coll_hccl_sched_sub(s, start_local, l);
}

typedef struct local_p2p {
  ompi_communicator_t* local;
  bool send;
  void* buf;
  size_t count;
  ompi_datatype_t* dtype;
  int peer, tag;
} local_p2p_t;

static int start_local_p2p(void* ctx, ompi_request_t** req) {
  const local_p2p_t* l = ctx;
  if (l->send) {
    return MCA_PML_CALL(isend(l->buf, l->count, l->dtype, l->peer, l->tag,
                              MCA_PML_BASE_SEND_STANDARD, l->local, req));
  }
  return MCA_PML_CALL(irecv(l->buf, l->count, l->dtype, l->peer, l->tag, l->local, req));
}

int mca_coll_hccl_inter_local_p2p(mca_coll_hccl_sched_t* s, ompi_communicator_t* comm, bool send,
                                  void* buf, size_t count, ompi_datatype_t* dtype, int peer,
                                  int tag) {
  local_p2p_t* l = mca_coll_hccl_sched_tmp(s, sizeof *l);
  if (NULL == l) return OMPI_ERR_OUT_OF_RESOURCE;
  *l = (local_p2p_t){.local = comm->c_local_comm,
                     .send = send,
                     .buf = buf,
                     .count = count,
                     .dtype = dtype,
                     .peer = peer,
                     .tag = tag};
  return mca_coll_hccl_sched_sub(s, start_local_p2p, l);
}

int mca_coll_hccl_inter_reduce_to_leader(mca_coll_hccl_sched_t* s, ompi_communicator_t* comm,
                                         const void* sbuf, int count, ompi_datatype_t* dtype,
                                         ompi_op_t* op, void** mine) {
  *mine = NULL;
  if (0 == ompi_comm_rank(comm)) {
    *mine = mca_coll_hccl_sched_tmp_dt(s, (size_t)count, dtype);
    if (NULL == *mine) return OMPI_ERR_OUT_OF_RESOURCE;
  }
  mca_coll_hccl_local_t red = {.kind = LOCAL_REDUCE,
                               .sbuf = sbuf,
                               .rbuf = *mine,
                               .scount = count,
                               .sdt = dtype,
                               .op = op,
                               .root = 0};
  return mca_coll_hccl_inter_local(s, comm, &red);
}

int mca_coll_hccl_inter_local_tag(ompi_communicator_t* comm) {
  return ompi_coll_base_nbc_reserve_tags(comm->c_local_comm, 1);
}

int mca_coll_hccl_inter_reduce_remote(mca_coll_hccl_sched_t* s, ompi_communicator_t* comm,
                                      void* acc, size_t count, ompi_datatype_t* dtype,
                                      ompi_op_t* op) {
  int rsize = ompi_comm_remote_size(comm);
  int rc = mca_coll_hccl_sched_recv(s, acc, count, dtype, 0);
  if (OMPI_SUCCESS != rc) return rc;
  if (rsize < 2) return mca_coll_hccl_sched_round(s); /* what follows reads it */
  /* Two buffers in turn: the partial result and the next contribution; the reduce of round k
   * frees the buffer that round k's receive then fills. */
  void* other = mca_coll_hccl_sched_tmp_dt(s, count, dtype);
  if (NULL == other) return OMPI_ERR_OUT_OF_RESOURCE;
  void* partial = acc;
  void* next = other;
  rc = mca_coll_hccl_sched_round(s);
  for (int q = 1; q < rsize && OMPI_SUCCESS == rc; ++q) {
    rc = mca_coll_hccl_sched_recv(s, next, count, dtype, q);
    if (OMPI_SUCCESS == rc) rc = mca_coll_hccl_sched_round(s);
    /* next = partial op next: lower ranks on the left */
    if (OMPI_SUCCESS == rc) rc = mca_coll_hccl_sched_reduce(s, partial, next, count, dtype, op);
    void* t = partial;
    partial = next;
    next = t;
  }
  if (OMPI_SUCCESS == rc && partial != acc) {
    rc = mca_coll_hccl_sched_copy(s, partial, count, dtype, acc, count, dtype);
  }
  if (OMPI_SUCCESS == rc) rc = mca_coll_hccl_sched_round(s);
  return rc;
}

int mca_coll_hccl_inter_end(mca_coll_hccl_sched_t* s, int rc, ompi_request_t** req,
                            bool persistent) {
  if (OMPI_SUCCESS != rc) {
    mca_coll_hccl_sched_free(s);
    return rc;
  }
  return mca_coll_hccl_sched_finish(s, req, persistent);
}

#define TRY(x) MCA_COLL_HCCL_INTER_TRY(x)

/* --- Allreduce: local reduce to the leader, leaders swap, local bcast --- */

/* Every rank sends to the remote leader, which reduces the remote group's data (this group's
 * result, kept), swaps it with the other leader and relays what it got to its remote peers. */
static int allreduce_p2p(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                         ompi_op_t* op, ompi_communicator_t* comm, ompi_request_t** req,
                         bool persistent) {
  MCA_COLL_HCCL_INTER_NEW(s, comm, "Allreduce", req, persistent,
                          "intercommunicator leader exchange over point-to-point (remote leader "
                          "reduces, leaders swap, remote leader relays)",
                          "%d x %s, %s", count, dtype->name, op->o_name);
  size_t n = (size_t)count;
  TRY(mca_coll_hccl_sched_send(s, sbuf, n, dtype, 0));
  if (0 != ompi_comm_rank(comm)) {
    TRY(mca_coll_hccl_sched_recv(s, rbuf, n, dtype, 0));
  } else {
    int rsize = ompi_comm_remote_size(comm);
    void* theirs = mca_coll_hccl_sched_tmp_dt(s, n, dtype);
    if (NULL == theirs) TRY(OMPI_ERR_OUT_OF_RESOURCE);
    TRY(mca_coll_hccl_inter_reduce_remote(s, comm, rbuf, n, dtype, op));
    TRY(mca_coll_hccl_sched_send(s, rbuf, n, dtype, 0));
    TRY(mca_coll_hccl_sched_recv(s, theirs, n, dtype, 0));
    TRY(mca_coll_hccl_sched_round(s));
    for (int q = 1; q < rsize; ++q) TRY(mca_coll_hccl_sched_send(s, theirs, n, dtype, q));
  }
out:
  return mca_coll_hccl_inter_end(s, rc, req, persistent);
}

static int allreduce_sched(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                           ompi_op_t* op, ompi_communicator_t* comm, ompi_request_t** req,
                           bool persistent) {
  if (MPI_IN_PLACE == sbuf) return MPI_ERR_ARG; /* not defined on intercommunicators */
  if (NULL != req) return allreduce_p2p(sbuf, rbuf, count, dtype, op, comm, req, persistent);
  MCA_COLL_HCCL_INTER_NEW(s, comm, "Allreduce", req, persistent,
                          "intercommunicator leader exchange (local reduce, leaders swap, local "
                          "bcast)",
                          "%d x %s, %s", count, dtype->name, op->o_name);
  bool leader = 0 == ompi_comm_rank(comm);
  void* mine = NULL;
  TRY(mca_coll_hccl_inter_reduce_to_leader(s, comm, sbuf, count, dtype, op, &mine));
  TRY(mca_coll_hccl_sched_round(s));
  if (leader) {
    TRY(mca_coll_hccl_sched_send(s, mine, (size_t)count, dtype, 0));
    TRY(mca_coll_hccl_sched_recv(s, rbuf, (size_t)count, dtype, 0));
    TRY(mca_coll_hccl_sched_round(s));
  }
  mca_coll_hccl_local_t bc = {
      .kind = LOCAL_BCAST, .rbuf = rbuf, .rcount = count, .rdt = dtype, .root = 0};
  TRY(mca_coll_hccl_inter_local(s, comm, &bc));
out:
  return mca_coll_hccl_inter_end(s, rc, req, persistent);
}
MCA_COLL_HCCL_THREE_FORMS(allreduce,
                          (const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                           ompi_op_t* op),
                          (sbuf, rbuf, count, dtype, op))

/* Spreads rbuf's `n` pieces (piece q: counts[q] elements at displs[q], or `count` each at q *
 * count) from the leader over the local group. One bcast when the whole fits an int count. */
static int spread(mca_coll_hccl_sched_t* s, ompi_communicator_t* comm, void* rbuf, int n, int count,
                  const int* counts, const int* displs, ompi_datatype_t* dtype) {
  int rc = OMPI_SUCCESS;
  if (NULL == counts && (size_t)n * (size_t)count <= INT_MAX) {
    mca_coll_hccl_local_t bc = {
        .kind = LOCAL_BCAST, .rbuf = rbuf, .rcount = n * count, .rdt = dtype, .root = 0};
    return mca_coll_hccl_inter_local(s, comm, &bc);
  }
  for (int q = 0; q < n && OMPI_SUCCESS == rc; ++q) {
    int c = NULL == counts ? count : counts[q];
    if (0 == c) continue; /* counts are equal on every rank of the group: all skip alike */
    size_t at = NULL == counts ? (size_t)q * (size_t)count : (size_t)displs[q];
    mca_coll_hccl_local_t bc = {.kind = LOCAL_BCAST,
                                .rbuf = mca_coll_hccl_at(rbuf, dtype, at),
                                .rcount = c,
                                .rdt = dtype,
                                .root = 0};
    rc = mca_coll_hccl_inter_local(s, comm, &bc);
  }
  return rc;
}

/* --- Allgather(v): every rank sends to the remote leader, each leader spreads what it got --- */

/* MPI_I* and persistent Allgather(v): every rank sends its block to every remote rank, one round
 * (`counts` NULL: `rcount` per remote rank at q * rcount). */
static int allgather_direct(const char* base, const void* sbuf, int scount, ompi_datatype_t* sdtype,
                            void* rbuf, int rcount, const int* counts, const int* displs,
                            ompi_datatype_t* rdtype, ompi_communicator_t* comm,
                            ompi_request_t** req, bool persistent) {
  int rsize = ompi_comm_remote_size(comm);
  MCA_COLL_HCCL_INTER_NEW(s, comm, base, req, persistent,
                          "intercommunicator direct exchange (one round with every remote rank)",
                          "%d x %s sent, %s received", scount, sdtype->name, rdtype->name);
  for (int q = 0; q < rsize; ++q) {
    size_t n = (size_t)(NULL == counts ? rcount : counts[q]);
    size_t at = NULL == counts ? (size_t)q * (size_t)rcount : (size_t)displs[q];
    TRY(mca_coll_hccl_sched_recv(s, mca_coll_hccl_at(rbuf, rdtype, at), n, rdtype, q));
  }
  for (int q = 0; q < rsize; ++q) TRY(mca_coll_hccl_sched_send(s, sbuf, (size_t)scount, sdtype, q));
out:
  return mca_coll_hccl_inter_end(s, rc, req, persistent);
}

static int allgather_sched(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                           int rcount, ompi_datatype_t* rdtype, ompi_communicator_t* comm,
                           ompi_request_t** req, bool persistent) {
  if (MPI_IN_PLACE == sbuf) return MPI_ERR_ARG;
  if (NULL != req) {
    return allgather_direct("Allgather", sbuf, scount, sdtype, rbuf, rcount, NULL, NULL, rdtype,
                            comm, req, persistent);
  }
  int rsize = ompi_comm_remote_size(comm);
  MCA_COLL_HCCL_INTER_NEW(s, comm, "Allgather", req, persistent,
                          "intercommunicator leader exchange (ranks to the remote leader, local "
                          "bcast)",
                          "%d x %s sent, %d x %s per remote rank", scount, sdtype->name, rcount,
                          rdtype->name);
  TRY(mca_coll_hccl_sched_send(s, sbuf, (size_t)scount, sdtype, 0));
  if (0 == ompi_comm_rank(comm)) {
    for (int q = 0; q < rsize; ++q) {
      TRY(mca_coll_hccl_sched_recv(s, mca_coll_hccl_at(rbuf, rdtype, (size_t)q * (size_t)rcount),
                                   (size_t)rcount, rdtype, q));
    }
  }
  TRY(mca_coll_hccl_sched_round(s));
  TRY(spread(s, comm, rbuf, rsize, rcount, NULL, NULL, rdtype));
out:
  return mca_coll_hccl_inter_end(s, rc, req, persistent);
}
MCA_COLL_HCCL_THREE_FORMS(allgather,
                          (const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                           int rcount, ompi_datatype_t* rdtype),
                          (sbuf, scount, sdtype, rbuf, rcount, rdtype))

static int allgatherv_sched(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                            const int* rcounts, const int* displs, ompi_datatype_t* rdtype,
                            ompi_communicator_t* comm, ompi_request_t** req, bool persistent) {
  if (MPI_IN_PLACE == sbuf) return MPI_ERR_ARG;
  if (NULL != req) {
    return allgather_direct("Allgatherv", sbuf, scount, sdtype, rbuf, 0, rcounts, displs, rdtype,
                            comm, req, persistent);
  }
  int rsize = ompi_comm_remote_size(comm);
  MCA_COLL_HCCL_INTER_NEW(s, comm, "Allgatherv", req, persistent,
                          "intercommunicator leader exchange (ranks to the remote leader, local "
                          "bcast per remote rank)",
                          "%d x %s sent, %s received (per-rank counts)", scount, sdtype->name,
                          rdtype->name);
  /* read once, at the call, as the floor reads them */
  int* counts = mca_coll_hccl_sched_tmp(s, 2 * (size_t)rsize * sizeof(int));
  if (NULL == counts) TRY(OMPI_ERR_OUT_OF_RESOURCE);
  int* disps = counts + rsize;
  memcpy(counts, rcounts, (size_t)rsize * sizeof(int));
  memcpy(disps, displs, (size_t)rsize * sizeof(int));
  TRY(mca_coll_hccl_sched_send(s, sbuf, (size_t)scount, sdtype, 0));
  if (0 == ompi_comm_rank(comm)) {
    for (int q = 0; q < rsize; ++q) {
      TRY(mca_coll_hccl_sched_recv(s, mca_coll_hccl_at(rbuf, rdtype, (size_t)disps[q]),
                                   (size_t)counts[q], rdtype, q));
    }
  }
  TRY(mca_coll_hccl_sched_round(s));
  TRY(spread(s, comm, rbuf, rsize, 0, counts, disps, rdtype));
out:
  return mca_coll_hccl_inter_end(s, rc, req, persistent);
}
MCA_COLL_HCCL_THREE_FORMS(allgatherv,
                          (const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                           const int* rcounts, const int* displs, ompi_datatype_t* rdtype),
                          (sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype))

/* --- Reduce_scatter(_block): local reduce to the leader, leaders swap, local scatter(v) --- */

/* MPI_I* and persistent: every rank sends its `total` elements to the remote leader, which
 * reduces them (this group's vector), then scatters the blocks over point-to-point on the local
 * group. */
static int reduce_scatter_p2p(const char* base, const void* sbuf, void* rbuf, int rcount,
                              const int* rcounts, size_t total, ompi_datatype_t* dtype,
                              ompi_op_t* op, ompi_communicator_t* comm, ompi_request_t** req,
                              bool persistent) {
  int lsize = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
  MCA_COLL_HCCL_INTER_NEW(s, comm, base, req, persistent,
                          "intercommunicator leader exchange over point-to-point (remote leader "
                          "reduces, local scatter)",
                          "%zu x %s, %s in, %d x %s here", total, dtype->name, op->o_name,
                          NULL == rcounts ? rcount : rcounts[rank], dtype->name);
  int tag = mca_coll_hccl_inter_local_tag(comm);
  TRY(mca_coll_hccl_sched_send(s, sbuf, total, dtype, 0));
  if (0 != rank) {
    size_t mine = (size_t)(NULL == rcounts ? rcount : rcounts[rank]);
    TRY(mca_coll_hccl_inter_local_p2p(s, comm, false, rbuf, mine, dtype, 0, tag));
  } else {
    void* whole = mca_coll_hccl_sched_tmp_dt(s, total, dtype);
    if (NULL == whole) TRY(OMPI_ERR_OUT_OF_RESOURCE);
    TRY(mca_coll_hccl_inter_reduce_remote(s, comm, whole, total, dtype, op));
    size_t at = 0;
    for (int q = 0; q < lsize; ++q) {
      size_t n = (size_t)(NULL == rcounts ? rcount : rcounts[q]);
      char* block = mca_coll_hccl_at(whole, dtype, at);
      if (0 == q) {
        TRY(mca_coll_hccl_sched_copy(s, block, n, dtype, rbuf, n, dtype));
      } else {
        TRY(mca_coll_hccl_inter_local_p2p(s, comm, true, block, n, dtype, q, tag));
      }
      at += n;
    }
  }
out:
  return mca_coll_hccl_inter_end(s, rc, req, persistent);
}

/* `total` elements reduced over the local group at the leader, swapped, then scattered by
 * `counts` (NULL: `rcount` each). */
static int reduce_scatter_common(const char* base, const void* sbuf, void* rbuf, int rcount,
                                 const int* rcounts, ompi_datatype_t* dtype, ompi_op_t* op,
                                 ompi_communicator_t* comm, ompi_request_t** req, bool persistent) {
  if (MPI_IN_PLACE == sbuf) return MPI_ERR_ARG;
  int lsize = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
  size_t total = 0;
  for (int q = 0; q < lsize; ++q) total += (size_t)(NULL == rcounts ? rcount : rcounts[q]);
  if (total > INT_MAX) return mca_coll_hccl_inter_count_error(comm, base, total);
  if (NULL != req) {
    return reduce_scatter_p2p(base, sbuf, rbuf, rcount, rcounts, total, dtype, op, comm, req,
                              persistent);
  }
  MCA_COLL_HCCL_INTER_NEW(s, comm, base, req, persistent,
                          "intercommunicator leader exchange (local reduce, leaders swap, local "
                          "scatter)",
                          "%zu x %s, %s in, %d x %s here", total, dtype->name, op->o_name,
                          NULL == rcounts ? rcount : rcounts[rank], dtype->name);
  bool leader = 0 == rank;
  void* mine = NULL;
  void* theirs = leader ? mca_coll_hccl_sched_tmp_dt(s, total, dtype) : NULL;
  if (leader && NULL == theirs) TRY(OMPI_ERR_OUT_OF_RESOURCE);
  TRY(mca_coll_hccl_inter_reduce_to_leader(s, comm, sbuf, (int)total, dtype, op, &mine));
  TRY(mca_coll_hccl_sched_round(s));
  if (leader) {
    TRY(mca_coll_hccl_sched_send(s, mine, total, dtype, 0));
    TRY(mca_coll_hccl_sched_recv(s, theirs, total, dtype, 0));
    TRY(mca_coll_hccl_sched_round(s));
  }
  if (NULL == rcounts) {
    mca_coll_hccl_local_t sc = {.kind = LOCAL_SCATTER,
                                .sbuf = theirs,
                                .scount = rcount,
                                .sdt = dtype,
                                .rbuf = rbuf,
                                .rcount = rcount,
                                .rdt = dtype,
                                .root = 0};
    TRY(mca_coll_hccl_inter_local(s, comm, &sc));
  } else {
    int* counts = mca_coll_hccl_sched_tmp(s, 2 * (size_t)lsize * sizeof(int));
    if (NULL == counts) TRY(OMPI_ERR_OUT_OF_RESOURCE);
    int* displs = counts + lsize;
    int at = 0;
    for (int q = 0; q < lsize; ++q) {
      counts[q] = rcounts[q];
      displs[q] = at;
      at += rcounts[q];
    }
    mca_coll_hccl_local_t sc = {.kind = LOCAL_SCATTERV,
                                .sbuf = theirs,
                                .counts = counts,
                                .displs = displs,
                                .sdt = dtype,
                                .rbuf = rbuf,
                                .rcount = rcounts[rank],
                                .rdt = dtype,
                                .root = 0};
    TRY(mca_coll_hccl_inter_local(s, comm, &sc));
  }
out:
  return mca_coll_hccl_inter_end(s, rc, req, persistent);
}

static int reduce_scatter_block_sched(const void* sbuf, void* rbuf, int rcount,
                                      ompi_datatype_t* dtype, ompi_op_t* op,
                                      ompi_communicator_t* comm, ompi_request_t** req,
                                      bool persistent) {
  return reduce_scatter_common("Reduce_scatter_block", sbuf, rbuf, rcount, NULL, dtype, op, comm,
                               req, persistent);
}
MCA_COLL_HCCL_THREE_FORMS(reduce_scatter_block,
                          (const void* sbuf, void* rbuf, int rcount, ompi_datatype_t* dtype,
                           ompi_op_t* op),
                          (sbuf, rbuf, rcount, dtype, op))

static int reduce_scatter_sched(const void* sbuf, void* rbuf, const int* rcounts,
                                ompi_datatype_t* dtype, ompi_op_t* op, ompi_communicator_t* comm,
                                ompi_request_t** req, bool persistent) {
  return reduce_scatter_common("Reduce_scatter", sbuf, rbuf, 0, rcounts, dtype, op, comm, req,
                               persistent);
}
MCA_COLL_HCCL_THREE_FORMS(reduce_scatter,
                          (const void* sbuf, void* rbuf, const int* rcounts, ompi_datatype_t* dtype,
                           ompi_op_t* op),
                          (sbuf, rbuf, rcounts, dtype, op))

/* --- Barrier: local barrier (all here entered), leaders swap (all there entered), local barrier
 * (nobody leaves before its leader knows both) --- */

/* MPI_I* and persistent: every rank tells the remote leader it entered; each leader, having
 * heard from the whole remote group, tells the other leader; a leader that heard that knows both
 * groups entered, leaves, and releases its remote peers. */
static int barrier_p2p(ompi_communicator_t* comm, ompi_request_t** req, bool persistent) {
  MCA_COLL_HCCL_INTER_NEW(s, comm, "Barrier", req, persistent,
                          "intercommunicator leader exchange over point-to-point (ranks to the "
                          "remote leader, leaders swap, remote leader releases)",
                          "no data");
  ompi_datatype_t* byte = &ompi_mpi_byte.dt;
  TRY(mca_coll_hccl_sched_send(s, NULL, 0, byte, 0));
  if (0 != ompi_comm_rank(comm)) {
    TRY(mca_coll_hccl_sched_recv(s, NULL, 0, byte, 0)); /* the release */
  } else {
    int rsize = ompi_comm_remote_size(comm);
    for (int q = 0; q < rsize; ++q) TRY(mca_coll_hccl_sched_recv(s, NULL, 0, byte, q));
    TRY(mca_coll_hccl_sched_round(s));
    TRY(mca_coll_hccl_sched_send(s, NULL, 0, byte, 0));
    TRY(mca_coll_hccl_sched_recv(s, NULL, 0, byte, 0));
    TRY(mca_coll_hccl_sched_round(s));
    for (int q = 1; q < rsize; ++q) TRY(mca_coll_hccl_sched_send(s, NULL, 0, byte, q));
  }
out:
  return mca_coll_hccl_inter_end(s, rc, req, persistent);
}

static int barrier_sched(ompi_communicator_t* comm, ompi_request_t** req, bool persistent) {
  if (NULL != req) return barrier_p2p(comm, req, persistent);
  MCA_COLL_HCCL_INTER_NEW(s, comm, "Barrier", req, persistent,
                          "intercommunicator leader exchange (local barrier, leaders swap, local "
                          "barrier)",
                          "no data");
  mca_coll_hccl_local_t bar = {.kind = LOCAL_BARRIER};
  TRY(mca_coll_hccl_inter_local(s, comm, &bar));
  TRY(mca_coll_hccl_sched_round(s));
  if (0 == ompi_comm_rank(comm)) {
    TRY(mca_coll_hccl_sched_send(s, NULL, 0, &ompi_mpi_byte.dt, 0));
    TRY(mca_coll_hccl_sched_recv(s, NULL, 0, &ompi_mpi_byte.dt, 0));
    TRY(mca_coll_hccl_sched_round(s));
  }
  TRY(mca_coll_hccl_inter_local(s, comm, &bar));
out:
  return mca_coll_hccl_inter_end(s, rc, req, persistent);
}
static int hccl_barrier(ompi_communicator_t* comm, mca_coll_base_module_t* module) {
  (void)module;
  return barrier_sched(comm, NULL, false);
}
static int hccl_ibarrier(ompi_communicator_t* comm, ompi_request_t** request,
                         mca_coll_base_module_t* module) {
  (void)module;
  return barrier_sched(comm, request, false);
}
static int hccl_barrier_init(ompi_communicator_t* comm, struct ompi_info_t* info,
                             ompi_request_t** request, mca_coll_base_module_t* module) {
  (void)module;
  (void)info;
  return barrier_sched(comm, request, true);
}

/* MPI_Reduce_local runs through MPI_COMM_SELF, never here; the entry only has to exist. */
static int inter_reduce_local(const void* inbuf, void* inoutbuf, int count, ompi_datatype_t* dtype,
                              ompi_op_t* op, mca_coll_base_module_t* module) {
  (void)module;
  ompi_op_reduce(op, (void*)(uintptr_t)inbuf, inoutbuf, (size_t)count, dtype);
  return OMPI_SUCCESS;
}

void mca_coll_hccl_inter_install_all(mca_coll_base_module_t* m) {
  MCA_COLL_HCCL_INSTALL_THREE(m, allreduce);
  MCA_COLL_HCCL_INSTALL_THREE(m, allgather);
  MCA_COLL_HCCL_INSTALL_THREE(m, allgatherv);
  MCA_COLL_HCCL_INSTALL_THREE(m, reduce_scatter_block);
  MCA_COLL_HCCL_INSTALL_THREE(m, reduce_scatter);
  MCA_COLL_HCCL_INSTALL_THREE(m, barrier);
  m->coll_reduce_local = inter_reduce_local;
}

/* --- the module --- */

/* MPI_Comm_free of an intercommunicator frees its local-group communicator at once
 * (ompi_comm_free), while its own destruction waits for the collectives still running on it
 * (each schedule retains the intercommunicator): the module keeps the local communicator alive
 * until then, so that a schedule's later rounds still find it. */
typedef struct inter_module {
  mca_coll_base_module_t super;
  ompi_communicator_t* local; /* retained while enabled */
} inter_module_t;

static void inter_module_construct(inter_module_t* m) {
  m->local = NULL;
}
static void inter_module_destruct(inter_module_t* m) {
  if (NULL != m->local) OBJ_RELEASE(m->local);
  m->local = NULL;
}
static OBJ_CLASS_INSTANCE(inter_module_t, mca_coll_base_module_t, inter_module_construct,
                          inter_module_destruct);

/* The local-group collectives the schedules start. */
static const char* missing_local(ompi_communicator_t* comm) {
  ompi_communicator_t* l = comm->c_local_comm;
  if (NULL == l || NULL == l->c_coll) return "no local-group communicator";
  const mca_coll_base_comm_coll_t* t = l->c_coll;
  if (NULL == t->coll_ireduce) return "no MPI_Ireduce on the local group";
  if (NULL == t->coll_ibcast) return "no MPI_Ibcast on the local group";
  if (NULL == t->coll_iscatter) return "no MPI_Iscatter on the local group";
  if (NULL == t->coll_iscatterv) return "no MPI_Iscatterv on the local group";
  if (NULL == t->coll_ibarrier) return "no MPI_Ibarrier on the local group";
  return NULL;
}

static int inter_enable(mca_coll_base_module_t* module, ompi_communicator_t* comm) {
  inter_module_t* m = (inter_module_t*)module;
  /* Open MPI builds the local group's communicator (and selects its components) before the
   * intercommunicator's: if that ever changed, say so and leave the intercommunicator to others. */
  const char* why = missing_local(comm);
  if (NULL != why) {
    opal_output_verbose(1, mca_coll_hccl_component.output,
                        "intercommunicator cid %u: %s; using the other coll components",
                        (unsigned)MCA_COLL_HCCL_CID(comm), why);
    return OMPI_ERROR;
  }
  if (NULL == m->local) {
    m->local = comm->c_local_comm;
    OBJ_RETAIN(m->local);
  }
  opal_output_verbose(0 == ompi_comm_rank(comm) ? 2 : 3, mca_coll_hccl_component.output,
                      "enabled on intercommunicator cid %u, %d local and %d remote ranks "
                      "(leader exchange over local cid %u)",
                      (unsigned)MCA_COLL_HCCL_CID(comm), ompi_comm_size(comm),
                      ompi_comm_remote_size(comm), (unsigned)MCA_COLL_HCCL_CID(comm->c_local_comm));
  return OMPI_SUCCESS;
}

mca_coll_base_module_t* mca_coll_hccl_inter_query(ompi_communicator_t* comm) {
  (void)comm;
  inter_module_t* m = OBJ_NEW(inter_module_t);
  if (NULL == m) return NULL;
  m->super.coll_module_enable = inter_enable;
  mca_coll_hccl_inter_install_all(&m->super);
  mca_coll_hccl_inter_install_rooted(&m->super);
  mca_coll_hccl_inter_install_alltoall(&m->super);
  return &m->super;
}
