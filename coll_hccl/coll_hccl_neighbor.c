/*
 * coll_hccl_neighbor.c - the neighbourhood collectives (Neighbor_allgather(v),
 * Neighbor_alltoall(v,w), blocking, MPI_I* and persistent) on Cartesian, graph and distributed
 * graph communicators: one round of point-to-point with the topology's neighbours.
 *
 * Receive slot k belongs to sources[k] and send block j to destinations[j], in the order
 * Open MPI's topology queries give them (Cartesian: per dimension the -1, then the +1
 * neighbour). A Cartesian MPI_PROC_NULL neighbour keeps its slot and moves nothing. When one rank
 * is both neighbours of a dimension (periodic, of size 1 or 2), MPI 4.0 matches by direction:
 * the slot of the -1 neighbour gets what that rank sent to its +1 neighbour. Messages of one
 * schedule share a tag and match in posting order, so the receives of each dimension are posted
 * +1 slot first: the first message from that rank (sent towards its -1 neighbour, us) lands in
 * our +1 slot. Open MPI's blocking coll/basic gives the same result (by tags); libnbc 4.1.4 gives
 * the other order in its MPI_I* and persistent forms. On graphs, repeated edges match in order.
 *
 * Open MPI 4.1 attaches the topology after selecting coll components (topo_base_cart_create.c:
 * ompi_comm_enable, then c_topo), so comm_query cannot tell a topology communicator: the entries
 * are installed on every intracommunicator and look at the topology when called.
 */
#include "coll_hccl_inter.h"

#include <stdio.h>

#include "ompi/mca/topo/base/base.h"

#define TRY(x) MCA_COLL_HCCL_INTER_TRY(x)

/* The neighbour lists in slot order, and the order in which to post the receives. */
typedef struct neighbours {
  int in, out;
  int *src, *dst, *recv_order;
  char kind[32];
} neighbours_t;

static int neighbours_of(mca_coll_hccl_sched_t* s, ompi_communicator_t* comm, neighbours_t* nb) {
  if (NULL == comm->c_topo) return MPI_ERR_TOPOLOGY;
  int rc = OMPI_SUCCESS;
  if (OMPI_COMM_IS_CART(comm)) {
    int ndims = comm->c_topo->mtc.cart->ndims;
    nb->in = nb->out = 2 * ndims;
    snprintf(nb->kind, sizeof nb->kind, "Cartesian %d-D", ndims);
  } else if (OMPI_COMM_IS_GRAPH(comm)) {
    rc = mca_topo_base_graph_neighbors_count(comm, ompi_comm_rank(comm), &nb->in);
    nb->out = nb->in;
    snprintf(nb->kind, sizeof nb->kind, "graph");
  } else if (OMPI_COMM_IS_DIST_GRAPH(comm)) {
    int weighted = 0;
    rc = mca_topo_base_dist_graph_neighbors_count(comm, &nb->in, &nb->out, &weighted);
    snprintf(nb->kind, sizeof nb->kind, "distributed graph");
  } else {
    return MPI_ERR_TOPOLOGY;
  }
  if (OMPI_SUCCESS != rc) return rc;
  int* all = mca_coll_hccl_sched_tmp(s, (size_t)(2 * nb->in + nb->out) * sizeof(int));
  if (NULL == all) return OMPI_ERR_OUT_OF_RESOURCE;
  nb->src = all;
  nb->recv_order = all + nb->in;
  nb->dst = all + 2 * nb->in;
  for (int k = 0; k < nb->in; ++k) nb->recv_order[k] = k;
  if (OMPI_COMM_IS_CART(comm)) {
    for (int d = 0; d < nb->in / 2; ++d) {
      int minus = MPI_PROC_NULL, plus = MPI_PROC_NULL;
      rc = mca_topo_base_cart_shift(comm, d, 1, &minus, &plus);
      if (OMPI_SUCCESS != rc) return rc;
      nb->src[2 * d] = nb->dst[2 * d] = minus;
      nb->src[2 * d + 1] = nb->dst[2 * d + 1] = plus;
      nb->recv_order[2 * d] = 2 * d + 1;
      nb->recv_order[2 * d + 1] = 2 * d;
    }
  } else if (OMPI_COMM_IS_GRAPH(comm)) {
    rc = mca_topo_base_graph_neighbors(comm, ompi_comm_rank(comm), nb->in, nb->src);
    for (int k = 0; k < nb->in; ++k) nb->dst[k] = nb->src[k];
  } else {
/* MPI_UNWEIGHTED (no weights wanted) is a small pointer constant gcc takes for an empty array */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
    rc = mca_topo_base_dist_graph_neighbors(comm, nb->in, nb->src, MPI_UNWEIGHTED, nb->out, nb->dst,
                                            MPI_UNWEIGHTED);
#pragma GCC diagnostic pop
  }
  return rc;
}

/* One side of a neighbourhood call: block k is counts[k] (or count) x types[k] (or dtype) at byte
 * offset bytes[k], element offset displs[k], or k * count; `whole` sends the whole buffer to every
 * destination (Neighbor_allgather(v)). */
typedef struct nside {
  const void* buf;
  int count;
  const int* counts;
  const int* displs;
  const MPI_Aint* bytes;
  ompi_datatype_t* dtype;
  ompi_datatype_t* const* types;
  bool whole;
} nside_t;

static void nblock(const nside_t* sd, int k, char** at, size_t* n, ompi_datatype_t** dt) {
  *dt = NULL != sd->types ? sd->types[k] : sd->dtype;
  *n = (size_t)(NULL != sd->counts ? sd->counts[k] : sd->count);
  if (sd->whole) {
    *at = (char*)(uintptr_t)sd->buf;
  } else if (NULL != sd->bytes) {
    *at = (char*)(uintptr_t)sd->buf + sd->bytes[k];
  } else {
    size_t i = NULL != sd->displs ? (size_t)sd->displs[k] : (size_t)k * (size_t)sd->count;
    *at = mca_coll_hccl_at(sd->buf, *dt, i);
  }
}

static int neighbor_sched(const char* base, const nside_t* snd, const nside_t* rcv,
                          ompi_communicator_t* comm, ompi_request_t** req, bool persistent) {
  mca_coll_hccl_sched_t* s = mca_coll_hccl_sched_new(comm);
  if (NULL == s) return OMPI_ERR_OUT_OF_RESOURCE;
  neighbours_t nb;
  int rc = OMPI_SUCCESS;
  TRY(neighbours_of(s, comm, &nb));
  if (mca_coll_hccl_wants_log(comm)) {
    const char* type = NULL != snd->types ? "per-neighbour types" : snd->dtype->name;
    mca_coll_hccl_inter_log(comm, base, req, persistent,
                            "neighbourhood exchange (one round of point-to-point)",
                            "%s, %d in / %d out, %s", nb.kind, nb.in, nb.out, type);
  }
  for (int i = 0; i < nb.in; ++i) {
    int k = nb.recv_order[i];
    char* at;
    size_t n;
    ompi_datatype_t* dt;
    nblock(rcv, k, &at, &n, &dt);
    TRY(mca_coll_hccl_sched_recv(s, at, n, dt, nb.src[k]));
  }
  for (int j = 0; j < nb.out; ++j) {
    char* at;
    size_t n;
    ompi_datatype_t* dt;
    nblock(snd, j, &at, &n, &dt);
    TRY(mca_coll_hccl_sched_send(s, at, n, dt, nb.dst[j]));
  }
out:
  return mca_coll_hccl_inter_end(s, rc, req, persistent);
}

static int neighbor_allgather_sched(const void* sbuf, int scount, ompi_datatype_t* sdtype,
                                    void* rbuf, int rcount, ompi_datatype_t* rdtype,
                                    ompi_communicator_t* comm, ompi_request_t** req,
                                    bool persistent) {
  nside_t snd = {.buf = sbuf, .count = scount, .dtype = sdtype, .whole = true};
  nside_t rcv = {.buf = rbuf, .count = rcount, .dtype = rdtype};
  return neighbor_sched("Neighbor_allgather", &snd, &rcv, comm, req, persistent);
}
MCA_COLL_HCCL_THREE_FORMS(neighbor_allgather,
                          (const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                           int rcount, ompi_datatype_t* rdtype),
                          (sbuf, scount, sdtype, rbuf, rcount, rdtype))

static int neighbor_allgatherv_sched(const void* sbuf, int scount, ompi_datatype_t* sdtype,
                                     void* rbuf, const int* rcounts, const int* displs,
                                     ompi_datatype_t* rdtype, ompi_communicator_t* comm,
                                     ompi_request_t** req, bool persistent) {
  nside_t snd = {.buf = sbuf, .count = scount, .dtype = sdtype, .whole = true};
  nside_t rcv = {.buf = rbuf, .counts = rcounts, .displs = displs, .dtype = rdtype};
  return neighbor_sched("Neighbor_allgatherv", &snd, &rcv, comm, req, persistent);
}
MCA_COLL_HCCL_THREE_FORMS(neighbor_allgatherv,
                          (const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                           const int* rcounts, const int* displs, ompi_datatype_t* rdtype),
                          (sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype))

static int neighbor_alltoall_sched(const void* sbuf, int scount, ompi_datatype_t* sdtype,
                                   void* rbuf, int rcount, ompi_datatype_t* rdtype,
                                   ompi_communicator_t* comm, ompi_request_t** req,
                                   bool persistent) {
  nside_t snd = {.buf = sbuf, .count = scount, .dtype = sdtype};
  nside_t rcv = {.buf = rbuf, .count = rcount, .dtype = rdtype};
  return neighbor_sched("Neighbor_alltoall", &snd, &rcv, comm, req, persistent);
}
MCA_COLL_HCCL_THREE_FORMS(neighbor_alltoall,
                          (const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                           int rcount, ompi_datatype_t* rdtype),
                          (sbuf, scount, sdtype, rbuf, rcount, rdtype))

static int neighbor_alltoallv_sched(const void* sbuf, const int* scounts, const int* sdispls,
                                    ompi_datatype_t* sdtype, void* rbuf, const int* rcounts,
                                    const int* rdispls, ompi_datatype_t* rdtype,
                                    ompi_communicator_t* comm, ompi_request_t** req,
                                    bool persistent) {
  nside_t snd = {.buf = sbuf, .counts = scounts, .displs = sdispls, .dtype = sdtype};
  nside_t rcv = {.buf = rbuf, .counts = rcounts, .displs = rdispls, .dtype = rdtype};
  return neighbor_sched("Neighbor_alltoallv", &snd, &rcv, comm, req, persistent);
}
MCA_COLL_HCCL_THREE_FORMS(neighbor_alltoallv,
                          (const void* sbuf, const int* scounts, const int* sdispls,
                           ompi_datatype_t* sdtype, void* rbuf, const int* rcounts,
                           const int* rdispls, ompi_datatype_t* rdtype),
                          (sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype))

static int neighbor_alltoallw_sched(const void* sbuf, const int* scounts, const MPI_Aint* sdispls,
                                    ompi_datatype_t* const* sdtypes, void* rbuf, const int* rcounts,
                                    const MPI_Aint* rdispls, ompi_datatype_t* const* rdtypes,
                                    ompi_communicator_t* comm, ompi_request_t** req,
                                    bool persistent) {
  nside_t snd = {.buf = sbuf, .counts = scounts, .bytes = sdispls, .types = sdtypes};
  nside_t rcv = {.buf = rbuf, .counts = rcounts, .bytes = rdispls, .types = rdtypes};
  return neighbor_sched("Neighbor_alltoallw", &snd, &rcv, comm, req, persistent);
}
MCA_COLL_HCCL_THREE_FORMS(neighbor_alltoallw,
                          (const void* sbuf, const int* scounts, const MPI_Aint* sdispls,
                           ompi_datatype_t* const* sdtypes, void* rbuf, const int* rcounts,
                           const MPI_Aint* rdispls, ompi_datatype_t* const* rdtypes),
                          (sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes))

void mca_coll_hccl_neighbor_install(mca_coll_base_module_t* m) {
  MCA_COLL_HCCL_INSTALL_THREE(m, neighbor_allgather);
  MCA_COLL_HCCL_INSTALL_THREE(m, neighbor_allgatherv);
  MCA_COLL_HCCL_INSTALL_THREE(m, neighbor_alltoall);
  MCA_COLL_HCCL_INSTALL_THREE(m, neighbor_alltoallv);
  MCA_COLL_HCCL_INSTALL_THREE(m, neighbor_alltoallw);
}
