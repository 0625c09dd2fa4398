/*
 * coll_hccl_inter_alltoall.c - Alltoall, Alltoallv, Alltoallw on intercommunicators.
 *
 * Every rank has a distinct block for every remote rank and receives one from each: there is
 * nothing for a leader to combine, so each is one round of sends and receives with the remote
 * group, in remote rank order (Open MPI's PML progresses them together).
 */
#include "coll_hccl_inter.h"

/* Block q on either side: counts[q] elements of types[q] (or dtype) at byte displacement
 * bytes[q], element displacement displs[q], or q * count. */
typedef struct side {
  const void* buf;
  int count;
  const int* counts;
  const int* displs; /* in elements (Alltoallv) */
  const int* bytes;  /* in bytes (Alltoallw) */
  ompi_datatype_t* dtype;
  ompi_datatype_t* const* types; /* Alltoallw */
} side_t;

static void block_of(const side_t* sd, int q, char** at, size_t* n, ompi_datatype_t** dt) {
  *dt = NULL != sd->types ? sd->types[q] : sd->dtype;
  *n = (size_t)(NULL != sd->counts ? sd->counts[q] : sd->count);
  if (NULL != sd->bytes) {
    *at = (char*)(uintptr_t)sd->buf + sd->bytes[q];
  } else {
    size_t i = NULL != sd->displs ? (size_t)sd->displs[q] : (size_t)q * (size_t)sd->count;
    *at = mca_coll_hccl_at(sd->buf, *dt, i);
  }
}

static int exchange_sched(const char* base, const side_t* snd, const side_t* rcv,
                          ompi_communicator_t* comm, ompi_request_t** req, bool persistent) {
  if (MPI_IN_PLACE == snd->buf) return MPI_ERR_ARG; /* not defined on intercommunicators */
  int rsize = ompi_comm_remote_size(comm);
  MCA_COLL_HCCL_INTER_NEW(s, comm, base, req, persistent,
                          "intercommunicator direct exchange (one round with every remote rank)",
                          "%s, %d remote peers",
                          NULL != snd->types ? "per-peer types" : snd->dtype->name, rsize);
  for (int q = 0; q < rsize && OMPI_SUCCESS == rc; ++q) {
    char* at;
    size_t n;
    ompi_datatype_t* dt;
    block_of(rcv, q, &at, &n, &dt);
    rc = mca_coll_hccl_sched_recv(s, at, n, dt, q);
  }
  for (int q = 0; q < rsize && OMPI_SUCCESS == rc; ++q) {
    char* at;
    size_t n;
    ompi_datatype_t* dt;
    block_of(snd, q, &at, &n, &dt);
    rc = mca_coll_hccl_sched_send(s, at, n, dt, q);
  }
  return mca_coll_hccl_inter_end(s, rc, req, persistent);
}

static int alltoall_sched(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                          int rcount, ompi_datatype_t* rdtype, ompi_communicator_t* comm,
                          ompi_request_t** req, bool persistent) {
  side_t snd = {.buf = sbuf, .count = scount, .dtype = sdtype};
  side_t rcv = {.buf = rbuf, .count = rcount, .dtype = rdtype};
  return exchange_sched("Alltoall", &snd, &rcv, comm, req, persistent);
}
MCA_COLL_HCCL_THREE_FORMS(alltoall,
                          (const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                           int rcount, ompi_datatype_t* rdtype),
                          (sbuf, scount, sdtype, rbuf, rcount, rdtype))

static int alltoallv_sched(const void* sbuf, const int* scounts, const int* sdispls,
                           ompi_datatype_t* sdtype, void* rbuf, const int* rcounts,
                           const int* rdispls, ompi_datatype_t* rdtype, ompi_communicator_t* comm,
                           ompi_request_t** req, bool persistent) {
  side_t snd = {.buf = sbuf, .counts = scounts, .displs = sdispls, .dtype = sdtype};
  side_t rcv = {.buf = rbuf, .counts = rcounts, .displs = rdispls, .dtype = rdtype};
  return exchange_sched("Alltoallv", &snd, &rcv, comm, req, persistent);
}
MCA_COLL_HCCL_THREE_FORMS(alltoallv,
                          (const void* sbuf, const int* scounts, const int* sdispls,
                           ompi_datatype_t* sdtype, void* rbuf, const int* rcounts,
                           const int* rdispls, ompi_datatype_t* rdtype),
                          (sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype))

static int alltoallw_sched(const void* sbuf, const int* scounts, const int* sdispls,
                           ompi_datatype_t* const* sdtypes, void* rbuf, const int* rcounts,
                           const int* rdispls, ompi_datatype_t* const* rdtypes,
                           ompi_communicator_t* comm, ompi_request_t** req, bool persistent) {
  side_t snd = {.buf = sbuf, .counts = scounts, .bytes = sdispls, .types = sdtypes};
  side_t rcv = {.buf = rbuf, .counts = rcounts, .bytes = rdispls, .types = rdtypes};
  return exchange_sched("Alltoallw", &snd, &rcv, comm, req, persistent);
}
MCA_COLL_HCCL_THREE_FORMS(alltoallw,
                          (const void* sbuf, const int* scounts, const int* sdispls,
                           ompi_datatype_t* const* sdtypes, void* rbuf, const int* rcounts,
                           const int* rdispls, ompi_datatype_t* const* rdtypes),
                          (sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes))

void mca_coll_hccl_inter_install_alltoall(mca_coll_base_module_t* m) {
  MCA_COLL_HCCL_INSTALL_THREE(m, alltoall);
  MCA_COLL_HCCL_INSTALL_THREE(m, alltoallv);
  MCA_COLL_HCCL_INSTALL_THREE(m, alltoallw);
}
