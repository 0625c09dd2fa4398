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

#define TRY(x) MCA_COLL_HCCL_INTER_TRY(x)

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
  MCA_COLL_HCCL_INTER_NEW(s, comm, "Bcast", req, persistent,
                          NULL != req ? "intercommunicator direct exchange (the root to every "
                                        "remote rank)"
                                      : "intercommunicator leader exchange (root to the remote "
                                        "leader, local bcast)",
                          "%d x %s, root %s", count, dtype->name,
                          root_text(rt, sizeof rt, role, root));
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
out:
  return mca_coll_hccl_inter_end(s, rc, req, persistent);
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
  MCA_COLL_HCCL_INTER_NEW(s, comm, "Reduce", req, persistent,
                          NULL != req ? "intercommunicator direct exchange (the root receives and "
                                        "reduces in rank order)"
                                      : "intercommunicator leader exchange (local reduce, leader "
                                        "to the root)",
                          "%d x %s, %s, root %s", count, dtype->name, op->o_name,
                          root_text(rt, sizeof rt, role, root));
  bool direct = NULL != req; /* MPI_I*, persistent */
  if (ROLE_ROOT == role && direct) {
    TRY(mca_coll_hccl_inter_reduce_remote(s, comm, rbuf, (size_t)count, dtype, op));
  } else if (ROLE_ROOT == role) {
    TRY(mca_coll_hccl_sched_recv(s, rbuf, (size_t)count, dtype, 0));
  }
  if (ROLE_REMOTE == role && direct) {
    TRY(mca_coll_hccl_sched_send(s, sbuf, (size_t)count, dtype, root));
  } else if (ROLE_REMOTE == role) {
    void* mine = NULL;
    TRY(mca_coll_hccl_inter_reduce_to_leader(s, comm, sbuf, count, dtype, op, &mine));
    if (0 == ompi_comm_rank(comm)) {
      TRY(mca_coll_hccl_sched_round(s));
      TRY(mca_coll_hccl_sched_send(s, mine, (size_t)count, dtype, root));
    }
  }
out:
  return mca_coll_hccl_inter_end(s, rc, req, persistent);
}
MCA_COLL_HCCL_THREE_FORMS(reduce,
                          (const void* sbuf, void* rbuf, int count, ompi_datatype_t* dtype,
                           ompi_op_t* op, int root),
                          (sbuf, rbuf, count, dtype, op, root))

/* --- Scatter(v), Gather(v): the root and every remote rank, one round --- */

/* One schedule for the four, `to_root` the direction (Gather(v)): the root moves block q
 * (counts[q] or `count` elements of rootdt at displs[q] or q * count in rootbuf) with remote rank
 * q; every remote rank moves `mine` elements of localdt at localbuf with the root. */
static int rooted_v_sched(bool to_root, const char* base, const void* rootbuf, int count,
                          const int* counts, const int* displs, ompi_datatype_t* rootdt,
                          const void* localbuf, int mine, ompi_datatype_t* localdt, int root,
                          ompi_communicator_t* comm, ompi_request_t** req, bool persistent) {
  role_t role = role_of(comm, root);
  if (ROLE_BAD == role) return MPI_ERR_ROOT;
  char rt[40];
  if (ROLE_REMOTE == role && MPI_IN_PLACE == localbuf) return MPI_ERR_ARG;
  MCA_COLL_HCCL_INTER_NEW(s, comm, base, req, persistent,
                          to_root ? "intercommunicator direct exchange (every remote rank to "
                                    "the root)"
                                  : "intercommunicator direct exchange (the root to every "
                                    "remote rank)",
                          "%s, root %s",
                          ROLE_ROOT == role     ? rootdt->name
                          : ROLE_REMOTE == role ? localdt->name
                                                : "no data",
                          root_text(rt, sizeof rt, role, root));
  if (ROLE_ROOT == role) {
    int rsize = ompi_comm_remote_size(comm);
    for (int q = 0; q < rsize; ++q) {
      size_t n = (size_t)(NULL == counts ? count : counts[q]);
      size_t at = NULL == counts ? (size_t)q * (size_t)count : (size_t)displs[q];
      char* block = mca_coll_hccl_at(rootbuf, rootdt, at);
      TRY(to_root ? mca_coll_hccl_sched_recv(s, block, n, rootdt, q)
                  : mca_coll_hccl_sched_send(s, block, n, rootdt, q));
    }
  }
  if (ROLE_REMOTE == role) {
    void* buf = (void*)(uintptr_t)localbuf;
    TRY(to_root ? mca_coll_hccl_sched_send(s, buf, (size_t)mine, localdt, root)
                : mca_coll_hccl_sched_recv(s, buf, (size_t)mine, localdt, root));
  }
out:
  return mca_coll_hccl_inter_end(s, rc, req, persistent);
}

static int scatter_sched(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                         int rcount, ompi_datatype_t* rdtype, int root, ompi_communicator_t* comm,
                         ompi_request_t** req, bool persistent) {
  return rooted_v_sched(false, "Scatter", sbuf, scount, NULL, NULL, sdtype, rbuf, rcount, rdtype,
                        root, comm, req, persistent);
}
MCA_COLL_HCCL_THREE_FORMS(scatter,
                          (const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                           int rcount, ompi_datatype_t* rdtype, int root),
                          (sbuf, scount, sdtype, rbuf, rcount, rdtype, root))

static int scatterv_sched(const void* sbuf, const int* scounts, const int* displs,
                          ompi_datatype_t* sdtype, void* rbuf, int rcount, ompi_datatype_t* rdtype,
                          int root, ompi_communicator_t* comm, ompi_request_t** req,
                          bool persistent) {
  return rooted_v_sched(false, "Scatterv", sbuf, 0, scounts, displs, sdtype, rbuf, rcount, rdtype,
                        root, comm, req, persistent);
}
MCA_COLL_HCCL_THREE_FORMS(scatterv,
                          (const void* sbuf, const int* scounts, const int* displs,
                           ompi_datatype_t* sdtype, void* rbuf, int rcount, ompi_datatype_t* rdtype,
                           int root),
                          (sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root))

static int gather_sched(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                        int rcount, ompi_datatype_t* rdtype, int root, ompi_communicator_t* comm,
                        ompi_request_t** req, bool persistent) {
  return rooted_v_sched(true, "Gather", rbuf, rcount, NULL, NULL, rdtype, sbuf, scount, sdtype,
                        root, comm, req, persistent);
}
MCA_COLL_HCCL_THREE_FORMS(gather,
                          (const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                           int rcount, ompi_datatype_t* rdtype, int root),
                          (sbuf, scount, sdtype, rbuf, rcount, rdtype, root))

static int gatherv_sched(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                         const int* rcounts, const int* displs, ompi_datatype_t* rdtype, int root,
                         ompi_communicator_t* comm, ompi_request_t** req, bool persistent) {
  return rooted_v_sched(true, "Gatherv", rbuf, 0, rcounts, displs, rdtype, sbuf, scount, sdtype,
                        root, comm, req, persistent);
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
