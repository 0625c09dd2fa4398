/*
 * coll_hccl_sched.h - a small nonblocking schedule of rounds over Open MPI's PML: what coll_hccl's
 * point-to-point floor (and its intercommunicator and neighbourhood collectives) are built from.
 *
 * A schedule is a list of actions cut into rounds. The actions of a round start in the order they
 * were added, once every action of the previous round completed; local ones (copy, reduce) run
 * at once when reached, so a copy followed by a send of what it wrote may share a round, while a
 * reduce of received data belongs in the round after the receive. Send and receive to
 * MPI_PROC_NULL are no-ops. Point-to-point is addressed as on the schedule's communicator (on an
 * intercommunicator: ranks of the remote group).
 *
 * The same schedule serves the three forms of a collective: sched_run (blocking: runs and frees
 * it), sched_start (MPI_I*: the request returned owns the schedule) and sched_persistent
 * (MPI_*_init: every MPI_Start re-runs it from the first round; freed with the request).
 * Every schedule takes one tag from the communicator's nonblocking tag counter (the one libnbc
 * uses, ompi_coll_base_nbc_reserve_tags), so concurrent schedules and Open MPI's own collectives
 * on the same communicator never match each other's messages.
 */
#ifndef MCA_COLL_HCCL_SCHED_H
#define MCA_COLL_HCCL_SCHED_H

#include "coll_hccl.h"

BEGIN_C_DECLS

typedef struct mca_coll_hccl_sched mca_coll_hccl_sched_t;

/* NULL when out of memory. The communicator is retained while a started schedule runs. */
mca_coll_hccl_sched_t* mca_coll_hccl_sched_new(ompi_communicator_t* comm);
int mca_coll_hccl_sched_send(mca_coll_hccl_sched_t* s, const void* buf, size_t count,
                             ompi_datatype_t* dtype, int peer);
int mca_coll_hccl_sched_recv(mca_coll_hccl_sched_t* s, void* buf, size_t count,
                             ompi_datatype_t* dtype, int peer);
/* dst = src through the datatype engine (types of equal signatures) */
int mca_coll_hccl_sched_copy(mca_coll_hccl_sched_t* s, const void* src, size_t scount,
                             ompi_datatype_t* sdt, void* dst, size_t dcount, ompi_datatype_t* ddt);
/* inout = in op inout (ompi_op_reduce), so in-order chains give rank order */
int mca_coll_hccl_sched_reduce(mca_coll_hccl_sched_t* s, const void* in, void* inout, size_t count,
                               ompi_datatype_t* dtype, ompi_op_t* op);
/* Starts any nonblocking MPI request as part of the round, e.g. a collective on another
 * communicator (an intercommunicator's local group: local->c_coll->coll_ibcast(...)). The request
 * is polled for completion and freed by the schedule; its error fails the schedule. `ctx` must
 * live as long as the schedule (sched_tmp is a good place for it). */
int mca_coll_hccl_sched_sub(mca_coll_hccl_sched_t* s, int (*start)(void* ctx, ompi_request_t** req),
                            void* ctx);
/* What follows starts once everything before completed. */
int mca_coll_hccl_sched_round(mca_coll_hccl_sched_t* s);
/* Scratch memory freed with the schedule (NULL when out of memory; bytes == 0 gives a valid
 * pointer). */
void* mca_coll_hccl_sched_tmp(mca_coll_hccl_sched_t* s, size_t bytes);
/* Scratch for `count` x `dtype` laid out as the datatype lays them out (true extent and lower
 * bound, as coll/base sizes its temporaries): the pointer returned is the MPI buffer pointer. */
void* mca_coll_hccl_sched_tmp_dt(mca_coll_hccl_sched_t* s, size_t count, ompi_datatype_t* dtype);

/* MPI_I*: the request owns and frees the schedule. On error the schedule is freed. */
int mca_coll_hccl_sched_start(mca_coll_hccl_sched_t* s, ompi_request_t** req);
/* Blocking: start, wait, free. */
int mca_coll_hccl_sched_run(mca_coll_hccl_sched_t* s);
/* *_init: an inactive persistent request; every MPI_Start re-runs the schedule. On error the
 * schedule is freed. */
int mca_coll_hccl_sched_persistent(mca_coll_hccl_sched_t* s, ompi_request_t** req);
/* Frees a schedule that was never started (on an error while building it). */
void mca_coll_hccl_sched_free(mca_coll_hccl_sched_t* s);

/* One of the three forms, as the floor's entries take it: request NULL runs blocking, else
 * persistent selects *_init over MPI_I*. Frees the schedule on error. */
int mca_coll_hccl_sched_finish(mca_coll_hccl_sched_t* s, ompi_request_t** req, bool persistent);

/* From coll_hccl's progress callback: advances started schedules; costs one load when none is
 * active. Returns how many completed. */
int mca_coll_hccl_sched_progress(void);
/* Component close: gives back the memory kept for freed persistent requests. */
void mca_coll_hccl_sched_finalize(void);

END_C_DECLS

#endif /* MCA_COLL_HCCL_SCHED_H */
