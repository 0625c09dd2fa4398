/*
 * coll_hccl_bootstrap.c - the all-gather MPI_COMM_WORLD's engine set-up exchanges its records
 * through, over Open MPI's point-to-point layer.
 *
 * Bruck's algorithm: ceil(log2 p) rounds; in the round of distance d a rank sends the blocks it
 * holds (at most d of them) to rank - d and receives as many from rank + d, so every rank holds
 * all p blocks, rotated by its rank, after the last round.
 *
 * It needs no other coll component (so it works when coll_hccl is the only one listed), and it
 * waits by polling opal_progress on its requests rather than through ompi_request_wait: under
 * MPI_THREAD_MULTIPLE that wait would nest Open MPI's per-thread synchronisation inside another
 * one and never return.
 */
#include "coll_hccl.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/mca/pml/pml.h"
#include "opal/runtime/opal_progress.h"

/* Negative tags are invisible to applications; -7 is unused by Open MPI 4.1.4 (reference
 * openmpi-component.md section 4) and within pml/ucx's 24 tag bits. */
#define MCA_COLL_HCCL_TAG_BOOTSTRAP (-7)

static int wait_both(ompi_request_t** reqs) {
  while (!REQUEST_COMPLETE(reqs[0]) || !REQUEST_COMPLETE(reqs[1])) opal_progress();
  int rc = OMPI_SUCCESS;
  for (int i = 0; i < 2; ++i) {
    if (MPI_SUCCESS != reqs[i]->req_status.MPI_ERROR) rc = reqs[i]->req_status.MPI_ERROR;
    ompi_request_free(&reqs[i]);
  }
  return rc;
}

int mca_coll_hccl_bootstrap_allgather(ompi_communicator_t* comm, const void* sbuf, void* rbuf,
                                      size_t bytes) {
  int p = ompi_comm_size(comm);
  int rank = ompi_comm_rank(comm);
  if ((size_t)p > (size_t)INT_MAX / (bytes > 0 ? bytes : 1)) return OMPI_ERR_BAD_PARAM;
  char* tmp = malloc((size_t)p * bytes + 1);
  if (NULL == tmp) return OMPI_ERR_OUT_OF_RESOURCE;
  memcpy(tmp, sbuf, bytes);
  int rc = OMPI_SUCCESS;
  for (int d = 1; d < p && OMPI_SUCCESS == rc; d *= 2) {
    size_t count = (size_t)(d < p - d ? d : p - d) * bytes;
    ompi_request_t* reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    rc = MCA_PML_CALL(irecv(tmp + (size_t)d * bytes, count, MPI_BYTE, (rank + d) % p,
                            MCA_COLL_HCCL_TAG_BOOTSTRAP, comm, &reqs[0]));
    if (OMPI_SUCCESS != rc) break;
    rc = MCA_PML_CALL(isend(tmp, count, MPI_BYTE, (rank - d + p) % p, MCA_COLL_HCCL_TAG_BOOTSTRAP,
                            MCA_PML_BASE_SEND_STANDARD, comm, &reqs[1]));
    if (OMPI_SUCCESS != rc) {
      ompi_request_cancel(reqs[0]);
      reqs[1] = &ompi_request_empty;
    }
    int wait_rc = wait_both(reqs);
    if (OMPI_SUCCESS == rc) rc = wait_rc;
  }
  /* tmp block i came from rank + i */
  for (int i = 0; OMPI_SUCCESS == rc && i < p; ++i)
    memcpy((char*)rbuf + (size_t)((rank + i) % p) * bytes, tmp + (size_t)i * bytes, bytes);
  free(tmp);
  return rc;
}
