/*
 * coll_hccl_inter.h - what the intercommunicator collectives (coll_hccl_inter*.c) share.
 *
 * Every collective on an intercommunicator is a schedule (coll_hccl_sched.h) on the
 * intercommunicator itself, whose sends and receives address the remote group, plus collectives
 * on the local group (comm->c_local_comm, an intracommunicator with its own coll table: the
 * engine, the floor or another component) started as sub-requests of its rounds. One builder per
 * collective serves its three forms, named as the floor names them: `req` NULL is blocking, else
 * `persistent` selects MPI_*_init over MPI_I*.
 */
#ifndef MCA_COLL_HCCL_INTER_H
#define MCA_COLL_HCCL_INTER_H

#include "coll_hccl_sched.h"

BEGIN_C_DECLS

/* "MPI_Allreduce", "MPI_Iallreduce", "MPIX_Allreduce_init" from "Allreduce" and the form. */
void mca_coll_hccl_form_name(char* buf, size_t len, const char* base, ompi_request_t** req,
                             bool persistent);

/* The per-call line at verbose 1 (the group's rank 0; every rank at 2), in coll_hccl_decide.c's
 * format: "<MPI name> on <comm> (cid, rank r of p, remote group of q): <what> -> hccl: <how>". */
void mca_coll_hccl_inter_log(ompi_communicator_t* comm, const char* base, ompi_request_t** req,
                             bool persistent, const char* how, const char* what_fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* The prologue of an intercommunicator builder: the per-call line (as mca_coll_hccl_inter_log),
 * then a new schedule `s` on comm and `int rc`; returns OMPI_ERR_OUT_OF_RESOURCE from the
 * builder when no schedule could be made. */
#define MCA_COLL_HCCL_INTER_NEW(s, comm, base, req, persistent, how, ...) \
  mca_coll_hccl_inter_log(comm, base, req, persistent, how, __VA_ARGS__); \
  mca_coll_hccl_sched_t* s = mca_coll_hccl_sched_new(comm);               \
  if (NULL == s) return OMPI_ERR_OUT_OF_RESOURCE;                         \
  int rc = OMPI_SUCCESS
/* Adds one action, stopping a builder at its first error: jumps to the builder's `out:` label,
 * which ends in `return mca_coll_hccl_inter_end(s, rc, req, persistent)`. */
#define MCA_COLL_HCCL_INTER_TRY(x)    \
  do {                                \
    rc = (x);                         \
    if (OMPI_SUCCESS != rc) goto out; \
  } while (0)
/* The epilogue: rc an error frees the schedule and returns it, else the schedule runs in its
 * form (mca_coll_hccl_sched_finish). */
int mca_coll_hccl_inter_end(mca_coll_hccl_sched_t* s, int rc, ompi_request_t** req,
                            bool persistent);

/* A collective on the local group, started as a sub-request of the current round. */
typedef enum {
  LOCAL_REDUCE,
  LOCAL_BCAST,
  LOCAL_SCATTER,
  LOCAL_SCATTERV,
  LOCAL_BARRIER
} mca_coll_hccl_local_kind_t;
typedef struct mca_coll_hccl_local {
  mca_coll_hccl_local_kind_t kind;
  const void* sbuf;
  void* rbuf;
  int scount, rcount;
  ompi_datatype_t *sdt, *rdt;
  ompi_op_t* op;
  int root;
  const int* counts; /* scatterv */
  const int* displs;
} mca_coll_hccl_local_t;
int mca_coll_hccl_inter_local(mca_coll_hccl_sched_t* s, ompi_communicator_t* comm,
                              const mca_coll_hccl_local_t* what);

/* The local group's reduce of `count` x `dtype` to its leader (local rank 0), into a new
 * temporary of the schedule, *mine (NULL on the other ranks), as a sub-request of the current
 * round. */
int mca_coll_hccl_inter_reduce_to_leader(mca_coll_hccl_sched_t* s, ompi_communicator_t* comm,
                                         const void* sbuf, int count, ompi_datatype_t* dtype,
                                         ompi_op_t* op, void** mine);

/* Point-to-point with the local group (on comm->c_local_comm, tag `tag` reserved there by every
 * rank of the group at the call), as a sub-request of the current round. */
int mca_coll_hccl_inter_local_p2p(mca_coll_hccl_sched_t* s, ompi_communicator_t* comm, bool send,
                                  void* buf, size_t count, ompi_datatype_t* dtype, int peer,
                                  int tag);
/* A tag on the local-group communicator for one schedule (every rank of the group, in call
 * order, as the collective's own tag is drawn on the intercommunicator). */
int mca_coll_hccl_inter_local_tag(ompi_communicator_t* comm);
/* Receives `count` x `dtype` from every remote rank in rank order and reduces them into `acc`
 * (remote rank 0 first: acc = r0 op r1 op ...), in rounds added to `s`. */
int mca_coll_hccl_inter_reduce_remote(mca_coll_hccl_sched_t* s, ompi_communicator_t* comm,
                                      void* acc, size_t count, ompi_datatype_t* dtype,
                                      ompi_op_t* op);

/* Where element `i` of `buf` starts (by extent). */
static inline char* mca_coll_hccl_at(const void* buf, ompi_datatype_t* dtype, size_t i) {
  ptrdiff_t lb = 0, extent = 0;
  ompi_datatype_get_extent(dtype, &lb, &extent);
  return (char*)(uintptr_t)buf + (ptrdiff_t)i * extent;
}

/* A count that the local group's int-count collectives cannot take: says so, returns the error. */
int mca_coll_hccl_inter_count_error(ompi_communicator_t* comm, const char* base, size_t count);

/* Each family installs its entries on an intercommunicator module (coll_hccl_inter*.c). */
void mca_coll_hccl_inter_install_all(mca_coll_base_module_t* m);
void mca_coll_hccl_inter_install_rooted(mca_coll_base_module_t* m);
void mca_coll_hccl_inter_install_alltoall(mca_coll_base_module_t* m);

/* The three entries of one collective (hccl_NAME, hccl_iNAME, hccl_NAME_init, file-local) around
 * its builder `name##_sched(ARGS, comm, req,
 * persistent)`: PARAMS and ARGS are parenthesised lists. */
#define MCA_COLL_HCCL_UNPAREN(...) __VA_ARGS__
#define MCA_COLL_HCCL_THREE_FORMS(name, PARAMS, ARGS)                                    \
  static int hccl_##name(MCA_COLL_HCCL_UNPAREN PARAMS, ompi_communicator_t* comm,        \
                         mca_coll_base_module_t* module) {                               \
    (void)module;                                                                        \
    return name##_sched(MCA_COLL_HCCL_UNPAREN ARGS, comm, NULL, false);                  \
  }                                                                                      \
  static int hccl_i##name(MCA_COLL_HCCL_UNPAREN PARAMS, ompi_communicator_t* comm,       \
                          ompi_request_t** request, mca_coll_base_module_t* module) {    \
    (void)module;                                                                        \
    return name##_sched(MCA_COLL_HCCL_UNPAREN ARGS, comm, request, false);               \
  }                                                                                      \
  static int hccl_##name##_init(MCA_COLL_HCCL_UNPAREN PARAMS, ompi_communicator_t* comm, \
                                struct ompi_info_t* info, ompi_request_t** request,      \
                                mca_coll_base_module_t* module) {                        \
    (void)module;                                                                        \
    (void)info;                                                                          \
    return name##_sched(MCA_COLL_HCCL_UNPAREN ARGS, comm, request, true);                \
  }
#define MCA_COLL_HCCL_INSTALL_THREE(m, name) \
  (m)->coll_##name = hccl_##name;            \
  (m)->coll_i##name = hccl_i##name;          \
  (m)->coll_##name##_init = hccl_##name##_init

END_C_DECLS

#endif /* MCA_COLL_HCCL_INTER_H */
