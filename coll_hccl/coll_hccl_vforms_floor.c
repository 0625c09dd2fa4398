/*
 * coll_hccl_vforms_floor.c - the MPI_Gatherv, MPI_Scatterv, MPI_Alltoallv and MPI_Alltoallw
 * entries (blocking, MPI_I*, persistent) while they have no engine path: each goes to the
 * previous component when there is one, else to coll_hccl's point-to-point floor, so that these
 * entries exist when coll_hccl is the only coll component (Open MPI requires all of them).
 */
#include "coll_hccl.h"
#include "coll_hccl_floor.h"

static const char* const kNoEngine = "no engine path for this collective";

#define M(module) ((mca_coll_hccl_module_t*)(module))
#define PREV_TAKES(module, mpi_name, dtype, root, in_place) \
  mca_coll_hccl_decide_no_engine(M(module), mpi_name, dtype, root, in_place, kNoEngine)

int mca_coll_hccl_gatherv(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                          const int* rcounts, const int* displs, ompi_datatype_t* rdtype, int root,
                          ompi_communicator_t* comm, mca_coll_base_module_t* module) {
  if (PREV_TAKES(module, "MPI_Gatherv", rdtype, root, MPI_IN_PLACE == sbuf)) {
    return M(module)->prev_gatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root, comm,
                                   M(module)->prev_gatherv_module);
  }
  return mca_coll_hccl_floor_gatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root,
                                     comm, NULL, false);
}

int mca_coll_hccl_igatherv(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                           const int* rcounts, const int* displs, ompi_datatype_t* rdtype, int root,
                           ompi_communicator_t* comm, ompi_request_t** request,
                           mca_coll_base_module_t* module) {
  if (PREV_TAKES(module, "MPI_Igatherv", rdtype, root, MPI_IN_PLACE == sbuf)) {
    return M(module)->prev_igatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root, comm,
                                    request, M(module)->prev_igatherv_module);
  }
  return mca_coll_hccl_floor_gatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root,
                                     comm, request, false);
}

int mca_coll_hccl_gatherv_init(const void* sbuf, int scount, ompi_datatype_t* sdtype, void* rbuf,
                               const int* rcounts, const int* displs, ompi_datatype_t* rdtype,
                               int root, ompi_communicator_t* comm, struct ompi_info_t* info,
                               ompi_request_t** request, mca_coll_base_module_t* module) {
  if (PREV_TAKES(module, "MPIX_Gatherv_init", rdtype, root, MPI_IN_PLACE == sbuf)) {
    return M(module)->prev_gatherv_init(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root,
                                        comm, info, request, M(module)->prev_gatherv_init_module);
  }
  return mca_coll_hccl_floor_gatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root,
                                     comm, request, true);
}

int mca_coll_hccl_scatterv(const void* sbuf, const int* scounts, const int* displs,
                           ompi_datatype_t* sdtype, void* rbuf, int rcount, ompi_datatype_t* rdtype,
                           int root, ompi_communicator_t* comm, mca_coll_base_module_t* module) {
  if (PREV_TAKES(module, "MPI_Scatterv", sdtype, root, MPI_IN_PLACE == rbuf)) {
    return M(module)->prev_scatterv(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root, comm,
                                    M(module)->prev_scatterv_module);
  }
  return mca_coll_hccl_floor_scatterv(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root,
                                      comm, NULL, false);
}

int mca_coll_hccl_iscatterv(const void* sbuf, const int* scounts, const int* displs,
                            ompi_datatype_t* sdtype, void* rbuf, int rcount,
                            ompi_datatype_t* rdtype, int root, ompi_communicator_t* comm,
                            ompi_request_t** request, mca_coll_base_module_t* module) {
  if (PREV_TAKES(module, "MPI_Iscatterv", sdtype, root, MPI_IN_PLACE == rbuf)) {
    return M(module)->prev_iscatterv(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root,
                                     comm, request, M(module)->prev_iscatterv_module);
  }
  return mca_coll_hccl_floor_scatterv(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root,
                                      comm, request, false);
}

int mca_coll_hccl_scatterv_init(const void* sbuf, const int* scounts, const int* displs,
                                ompi_datatype_t* sdtype, void* rbuf, int rcount,
                                ompi_datatype_t* rdtype, int root, ompi_communicator_t* comm,
                                struct ompi_info_t* info, ompi_request_t** request,
                                mca_coll_base_module_t* module) {
  if (PREV_TAKES(module, "MPIX_Scatterv_init", sdtype, root, MPI_IN_PLACE == rbuf)) {
    return M(module)->prev_scatterv_init(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root,
                                         comm, info, request, M(module)->prev_scatterv_init_module);
  }
  return mca_coll_hccl_floor_scatterv(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root,
                                      comm, request, true);
}

int mca_coll_hccl_alltoallv(const void* sbuf, const int* scounts, const int* sdispls,
                            ompi_datatype_t* sdtype, void* rbuf, const int* rcounts,
                            const int* rdispls, ompi_datatype_t* rdtype, ompi_communicator_t* comm,
                            mca_coll_base_module_t* module) {
  if (PREV_TAKES(module, "MPI_Alltoallv", rdtype, -1, MPI_IN_PLACE == sbuf)) {
    return M(module)->prev_alltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype,
                                     comm, M(module)->prev_alltoallv_module);
  }
  return mca_coll_hccl_floor_alltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls,
                                       rdtype, comm, NULL, false);
}

int mca_coll_hccl_ialltoallv(const void* sbuf, const int* scounts, const int* sdispls,
                             ompi_datatype_t* sdtype, void* rbuf, const int* rcounts,
                             const int* rdispls, ompi_datatype_t* rdtype, ompi_communicator_t* comm,
                             ompi_request_t** request, mca_coll_base_module_t* module) {
  if (PREV_TAKES(module, "MPI_Ialltoallv", rdtype, -1, MPI_IN_PLACE == sbuf)) {
    return M(module)->prev_ialltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls,
                                      rdtype, comm, request, M(module)->prev_ialltoallv_module);
  }
  return mca_coll_hccl_floor_alltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls,
                                       rdtype, comm, request, false);
}

int mca_coll_hccl_alltoallv_init(const void* sbuf, const int* scounts, const int* sdispls,
                                 ompi_datatype_t* sdtype, void* rbuf, const int* rcounts,
                                 const int* rdispls, ompi_datatype_t* rdtype,
                                 ompi_communicator_t* comm, struct ompi_info_t* info,
                                 ompi_request_t** request, mca_coll_base_module_t* module) {
  if (PREV_TAKES(module, "MPIX_Alltoallv_init", rdtype, -1, MPI_IN_PLACE == sbuf)) {
    return M(module)->prev_alltoallv_init(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls,
                                          rdtype, comm, info, request,
                                          M(module)->prev_alltoallv_init_module);
  }
  return mca_coll_hccl_floor_alltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls,
                                       rdtype, comm, request, true);
}

int mca_coll_hccl_alltoallw(const void* sbuf, const int* scounts, const int* sdispls,
                            struct ompi_datatype_t* const* sdtypes, void* rbuf, const int* rcounts,
                            const int* rdispls, struct ompi_datatype_t* const* rdtypes,
                            ompi_communicator_t* comm, mca_coll_base_module_t* module) {
  if (PREV_TAKES(module, "MPI_Alltoallw", NULL, -1, MPI_IN_PLACE == sbuf)) {
    return M(module)->prev_alltoallw(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls,
                                     rdtypes, comm, M(module)->prev_alltoallw_module);
  }
  return mca_coll_hccl_floor_alltoallw(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls,
                                       rdtypes, comm, NULL, false);
}

int mca_coll_hccl_ialltoallw(const void* sbuf, const int* scounts, const int* sdispls,
                             struct ompi_datatype_t* const* sdtypes, void* rbuf, const int* rcounts,
                             const int* rdispls, struct ompi_datatype_t* const* rdtypes,
                             ompi_communicator_t* comm, ompi_request_t** request,
                             mca_coll_base_module_t* module) {
  if (PREV_TAKES(module, "MPI_Ialltoallw", NULL, -1, MPI_IN_PLACE == sbuf)) {
    return M(module)->prev_ialltoallw(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls,
                                      rdtypes, comm, request, M(module)->prev_ialltoallw_module);
  }
  return mca_coll_hccl_floor_alltoallw(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls,
                                       rdtypes, comm, request, false);
}

int mca_coll_hccl_alltoallw_init(const void* sbuf, const int* scounts, const int* sdispls,
                                 struct ompi_datatype_t* const* sdtypes, void* rbuf,
                                 const int* rcounts, const int* rdispls,
                                 struct ompi_datatype_t* const* rdtypes, ompi_communicator_t* comm,
                                 struct ompi_info_t* info, ompi_request_t** request,
                                 mca_coll_base_module_t* module) {
  if (PREV_TAKES(module, "MPIX_Alltoallw_init", NULL, -1, MPI_IN_PLACE == sbuf)) {
    return M(module)->prev_alltoallw_init(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls,
                                          rdtypes, comm, info, request,
                                          M(module)->prev_alltoallw_init_module);
  }
  return mca_coll_hccl_floor_alltoallw(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls,
                                       rdtypes, comm, request, true);
}
