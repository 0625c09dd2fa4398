/*
 * coll_hccl_inter_rooted.c - rooted collectives on intercommunicators: Bcast, Reduce, Scatter(v),
 * Gather(v).
 *
 * The root group passes MPI_ROOT at the root and MPI_PROC_NULL elsewhere (those ranks take no
 * part); the other group passes the root's rank in the root group. Blocking Bcast and Reduce
 * condense or spread through the other group's leader with a local collective (one message
 * crosses between the groups); their MPI_I* and persistent forms exchange directly between the
 * root and every remote rank, since local collectives started from later rounds could start in
 * different orders on different ranks (see coll_hccl_inter.c). Scatter(v) and Gather(v) always
 * exchange directly: the root holds or wants every block anyway, so a detour through a leader
 * would only copy the data once more.
 */
#include "coll_hccl_inter.h"

#include <stdio.h>
#include <string.h>

#define TRY(call)                      \
  do {                                 \
    rc = (call);                       \
    if (OMPI_SUCCESS != rc) goto fail; \
  } while (0)

/* What the root argument makes of this rank. */
typedef enum { ROLE_ROOT, ROLE_IDLE, ROLE_REMOTE, ROLE_BAD } role_t;
static role_t role_of(ompi_communicator_t* comm, int root) {
  if (MPI_ROOT == root) return ROLE_ROOT;
  if (MPI_PROC_NULL == root) return ROLE_IDLE;
  return root >= 0 && root < ompi_comm_remote_size(comm) ? ROLE_REMOTE : ROLE_BAD;
}
/* How the line names the root argument. */
static const char* root_text(char* buf, size_t len, role_t role, int root) {
  if (ROLE_ROOT == role) return "MPI_ROOT";
  if (ROLE_IDLE == role) return "MPI_PROC_NULL";
  snprintf(buf, len, "%d of the remote group", root);
  return buf;
}

/* --- Bcast: root to the remote leader, local bcast there --- */

static int bcast_sched(void* buf, int count, ompi_datatype_t* dtype, int root,
                       ompi_communicator_t* comm, ompi_request_t** req, bool persistent) {
  role_t role = role_of(comm, root);
  if (ROLE_BAD == role) return MPI_ERR_ROOT;
  char rt[40];
  mca_coll_hccl_inter_log(comm, "Bcast", req, persistent,
                          NULL != req ? "intercommunicator direct exchange (the root to every "
                                        "remote rank)"
                                      : "intercommunicator leader exchange (root to the remote "
                                        "leader, local bcast)",
                          "%d x %s, root %s", count, dtype->name,
                          root_text(rt, sizeof rt, role, root));
  mca_coll_hccl_sched_t* s = mca_coll_hccl_sched_new(comm);
  if (NULL == s) return OMPI_ERR_OUT_OF_RESOURCE;
  int rc = OMPI_SUCCESS;
  bool direct = NULL != req; /* MPI_I*, persistent */
  if (ROLE_ROOT == role) {
    int rsize = direct ? ompi_comm_remote_size(comm) : 1;
    for (int q = 0; q < rsize; ++q) TRY(mca_coll_hccl_sched_send(s, buf, (size_t)count, dtype, q));
  }
  if (ROLE_REMOTE == role && direct) {
    TRY(mca_coll_hccl_sched_recv(s, buf, (size_t)count, dtype, root));
  } else if (ROLE_REMOTE == role) {
    if (0 == ompi_comm_rank(comm)) {
      TRY(mca_coll_hccl_sched_recv(s, buf, (size_t)count, dtype, root));
      TRY(mca_coll_hccl_sched_round(s));
    }
    mca_coll_hccl_local_t bc = {
        .kind = LOCAL_BCAST, .rbuf = buf, .rcount = count, .rdt = dtype, .root = 0};
    TRY(mca_coll_hccl_inter_local(s, comm, &bc));
  }
  return mca_coll_hccl_sched_finish(s, req, persistent);
fail:
  mca_coll_hccl_sched_free(s);
  return rc;
}
MCA_COLL_HCCL_THREE_FORMS(bcast, (void* buf, int count, ompi_datatype_t* dtype, int root),
                          (buf, count, dtype, root))

/* --- Reduce: local reduce to the leader of the sending group, leader to the root --- */

static int reduce_sched(const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                        ompi_op_t* op, int root, ompi_communicator_t* comm, ompi_request_t** req,
                        bool persistent) {
  role_t role = role_of(comm, root);
  if (ROLE_BAD == role) return MPI_ERR_ROOT;
  char rt[40];
  if (ROLE_REMOTE == role && MPI_IN_PLACE == sbuf) return MPI_ERR_ARG;
  mca_coll_hccl_inter_log(comm, "Reduce", req, persistent,
                          NULL != req ? "intercommunicator direct exchange (the root receives and "
                                        "reduces in rank order)"
                                      : "intercommunicator leader exchange (local reduce, leader "
                                        "to the root)",
                          "%d x %s, %s, root %s", count, dtype->name, op->o_name,
                          root_text(rt, sizeof rt, role, root));
  mca_coll_hccl_sched_t* s = mca_coll_hccl_sched_new(comm);
  if (NULL == s) return OMPI_ERR_OUT_OF_RESOURCE;
  int rc = OMPI_SUCCESS;
  bool direct = NULL != req; /* MPI_I*, persistent */
  if (ROLE_ROOT == role && direct) {
    TRY(mca_coll_hccl_inter_reduce_remote(s, comm, rbuf, (size_t)count, dtype, op));
  } else if (ROLE_ROOT == role) {
    TRY(mca_coll_hccl_sched_recv(s, rbuf, (size_t)count, dtype, 0));
  }
  if (ROLE_REMOTE == role && direct) {
    TRY(mca_coll_hccl_sched_send(s, sbuf, (size_t)count, dtype, root));
  } else if (ROLE_REMOTE == role) {
    bool leader = 0 == ompi_comm_rank(comm);
    void* mine = leader ? mca_coll_hccl_sched_tmp_dt(s, (size_t)count, dtype) : NULL;
    if (leader && NULL == mine) TRY(OMPI_ERR_OUT_OF_RESOURCE);
    mca_coll_hccl_local_t red = {.kind = LOCAL_REDUCE,
                                 .sbuf = sbuf,
                                 .rbuf = mine,
                                 .scount = count,
                                 .sdt = dtype,
                                 .op = op,
                                 .root = 0};
    TRY(mca_coll_hccl_inter_local(s, comm, &red));
    if (leader) {
      TRY(mca_coll_hccl_sched_round(s));
      TRY(mca_coll_hccl_sched_send(s, mine, (size_t)count, dtype, root));
    }
  }
  return mca_coll_hccl_sched_finish(s, req, persistent);
fail:
  mca_coll_hccl_sched_free(s);
  return rc;
}
MCA_COLL_HCCL_THREE_FORMS(reduce,
                          (const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                           ompi_op_t* op, int root),
                          (sbuf, rbuf, count, dtype, op, root))

/* --- Scatter(v), Gather(v): the root and every remote rank, one round --- */

/* One schedule for the four: the root moves block q (counts[q] or `count` elements at displs[q]
 * or q * count) with remote rank q; every remote rank moves `mine` elements with the root. */
typedef struct rooted_v {
  const char* base;
  bool to_root; /* Gather(v) */
  const void* rootbuf;
  int count;         /* per block, when counts is NULL */
  const int* counts; /* or per remote rank */
  const int* displs; /* with counts */
  ompi_datatype_t* rootdt;
  const void* localbuf; /* the non-root side */
  int mine;
  ompi_datatype_t* localdt;
  int root;
} rooted_v_t;

static int rooted_v_sched(const rooted_v_t* a, ompi_communicator_t* comm, ompi_request_t** req,
                          bool persistent) {
  role_t role = role_of(comm, a->root);
  if (ROLE_BAD == role) return MPI_ERR_ROOT;
  char rt[40];
  if (ROLE_REMOTE == role && MPI_IN_PLACE == a->localbuf) return MPI_ERR_ARG;
  if (mca_coll_hccl_wants_log(comm)) {
    const char* type = ROLE_ROOT == role     ? a->rootdt->name
                       : ROLE_REMOTE == role ? a->localdt->name
                                             : "no data";
    mca_coll_hccl_inter_log(comm, a->base, req, persistent,
                            a->to_root ? "intercommunicator direct exchange (every remote rank to "
                                         "the root)"
                                       : "intercommunicator direct exchange (the root to every "
                                         "remote rank)",
                            "%s, root %s", type, root_text(rt, sizeof rt, role, a->root));
  }
  mca_coll_hccl_sched_t* s = mca_coll_hccl_sched_new(comm);
  if (NULL == s) return OMPI_ERR_OUT_OF_RESOURCE;
  int rc = OMPI_SUCCESS;
  if (ROLE_ROOT == role) {
    int rsize = ompi_comm_remote_size(comm);
    for (int q = 0; q < rsize; ++q) {
      size_t n = (size_t)(NULL == a->counts ? a->count : a->counts[q]);
      size_t at = NULL == a->counts ? (size_t)q * (size_t)a->count : (size_t)a->displs[q];
      char* block = mca_coll_hccl_at(a->rootbuf, a->rootdt, at);
      TRY(a->to_root ? mca_coll_hccl_sched_recv(s, block, n, a->rootdt, q)
                     : mca_coll_hccl_sched_send(s, block, n, a->rootdt, q));
    }
  }
  if (ROLE_REMOTE == role) {
    void* buf = (void*)(uintptr_t)a->localbuf;
    TRY(a->to_root ? mca_coll_hccl_sched_send(s, buf, (size_t)a->mine, a->localdt, a->root)
                   : mca_coll_hccl_sched_recv(s, buf, (size_t)a->mine, a->localdt, a->root));
  }
  return mca_coll_hccl_sched_finish(s, req, persistent);
fail:
  mca_coll_hccl_sched_free(s);
  return rc;
}

static int scatter_sched(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                         int rcount, ompi_datatype_t* rdtype, int root, ompi_communicator_t* comm,
                         ompi_request_t** req, bool persistent) {
  rooted_v_t a = {.base = "Scatter",
                  .to_root = false,
                  .rootbuf = sbuf,
                  .count = scount,
                  .rootdt = sdtype,
                  .localbuf = rbuf,
                  .mine = rcount,
                  .localdt = rdtype,
                  .root = root};
  return rooted_v_sched(&a, comm, req, persistent);
}
MCA_COLL_HCCL_THREE_FORMS(scatter,
                          (const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                           int rcount, ompi_datatype_t* rdtype, int root),
                          (sbuf, scount, sdtype, rbuf, rcount, rdtype, root))

static int scatterv_sched(const void* sbuf, const int* scounts, const int* displs,
                          ompi_datatype_t* sdtype, void* rbuf, int rcount, ompi_datatype_t* rdtype,
                          int root, ompi_communicator_t* comm, ompi_request_t** req,
                          bool persistent) {
  rooted_v_t a = {.base = "Scatterv",
                  .to_root = false,
                  .rootbuf = sbuf,
                  .counts = scounts,
                  .displs = displs,
                  .rootdt = sdtype,
                  .localbuf = rbuf,
                  .mine = rcount,
                  .localdt = rdtype,
                  .root = root};
  return rooted_v_sched(&a, comm, req, persistent);
}
MCA_COLL_HCCL_THREE_FORMS(scatterv,
                          (const void* sbuf, const int* scounts, const int* displs,
                           ompi_datatype_t* sdtype, void* rbuf, int rcount, ompi_datatype_t* rdtype,
                           int root),
                          (sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root))

static int gather_sched(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                        int rcount, ompi_datatype_t* rdtype, int root, ompi_communicator_t* comm,
                        ompi_request_t** req, bool persistent) {
  rooted_v_t a = {.base = "Gather",
                  .to_root = true,
                  .rootbuf = rbuf,
                  .count = rcount,
                  .rootdt = rdtype,
                  .localbuf = sbuf,
                  .mine = scount,
                  .localdt = sdtype,
                  .root = root};
  return rooted_v_sched(&a, comm, req, persistent);
}
MCA_COLL_HCCL_THREE_FORMS(gather,
                          (const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                           int rcount, ompi_datatype_t* rdtype, int root),
                          (sbuf, scount, sdtype, rbuf, rcount, rdtype, root))

static int gatherv_sched(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                         const int* rcounts, const int* displs, ompi_datatype_t* rdtype, int root,
                         ompi_communicator_t* comm, ompi_request_t** req, bool persistent) {
  rooted_v_t a = {.base = "Gatherv",
                  .to_root = true,
                  .rootbuf = rbuf,
                  .counts = rcounts,
                  .displs = displs,
                  .rootdt = rdtype,
                  .localbuf = sbuf,
                  .mine = scount,
                  .localdt = sdtype,
                  .root = root};
  return rooted_v_sched(&a, comm, req, persistent);
}
MCA_COLL_HCCL_THREE_FORMS(gatherv,
                          (const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                           const int* rcounts, const int* displs, ompi_datatype_t* rdtype,
                           int root),
                          (sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root))

void mca_coll_hccl_inter_install_rooted(mca_coll_base_module_t* m) {
  MCA_COLL_HCCL_INSTALL_THREE(m, bcast);
  MCA_COLL_HCCL_INSTALL_THREE(m, reduce);
  MCA_COLL_HCCL_INSTALL_THREE(m, scatter);
  MCA_COLL_HCCL_INSTALL_THREE(m, scatterv);
  MCA_COLL_HCCL_INSTALL_THREE(m, gather);
  MCA_COLL_HCCL_INSTALL_THREE(m, gatherv);
}
