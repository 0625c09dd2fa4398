/*
 * alltoall.c - MPI_Alltoall and MPI_Ialltoall: every layout of mpi_layouts.h (send and receive
 * layouts mixed within the int family), in place, zero and uneven block sizes, nonblocking calls
 * overlapped with each other and with point-to-point, on MPI_COMM_WORLD and a split communicator
 * in reversed rank order. Guard zones around every receive buffer, gaps of derived types untouched.
 *
 * Options: --quick (fewer layout pairs and sizes).
 */
#include <stdlib.h>

#include "mpi_check.h"
#include "mpi_layouts.h"

static bool quick;

/* ints: MPI_INT elements per pair (the struct layout: elements of its own type). */
static void alltoall_case(MPI_Comm comm, const char* cname, const layout_t* sl, const layout_t* rl,
                          size_t ints, bool in_place, bool nb) {
  if (0 == sl->ints || 0 == rl->ints) {
    if (sl != rl) return;
  } else if (ints % (size_t)sl->ints || ints % (size_t)rl->ints) {
    return;
  }
  if (in_place && sl != rl) return; /* in place: only the receive layout exists */
  int rank, nranks;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);
  const size_t p = (size_t)nranks;
  size_t scount = 0 == sl->ints ? ints : ints / (size_t)sl->ints;
  size_t rcount = 0 == rl->ints ? ints : ints / (size_t)rl->ints;
  char what[200];
  snprintf(what, sizeof what, "alltoall on %s %s -> %s, %zu per pair%s %s", cname, sl->name,
           rl->name, ints, in_place ? " in place" : "", nb ? "nonblocking" : "blocking");
  guarded_t g;
  unsigned char* send = malloc(layout_span(sl, p * scount) + 1);
  unsigned char* recv = guarded_alloc(&g, layout_span(rl, p * rcount));
  /* block r of this rank's input goes to rank r */
  for (int r = 0; r < nranks; ++r) {
    if (in_place) {
      layout_fill(rl, recv + (size_t)r * rcount * (size_t)rl->extent, rcount, rank, r);
    } else {
      layout_fill(sl, send + (size_t)r * scount * (size_t)sl->extent, scount, rank, r);
    }
  }
  guarded_snapshot(&g);
  MPI_Request req;
  const void* sbuf = in_place ? MPI_IN_PLACE : send;
  int rc = nb ? MPI_Ialltoall(sbuf, (int)scount, sl->type, recv, (int)rcount, rl->type, comm, &req)
              : MPI_Alltoall(sbuf, (int)scount, sl->type, recv, (int)rcount, rl->type, comm);
  if (nb && MPI_SUCCESS == rc) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
  if (check(MPI_SUCCESS == rc, "%s: rc %d", what, rc)) {
    for (int r = 0; r < nranks; ++r) { /* block r came from rank r, its block `rank` */
      if (!layout_check(rl, recv + (size_t)r * rcount * (size_t)rl->extent, rcount, r, rank, what))
        break;
    }
    guarded_untouched(&g, 0, layout_span(rl, p * rcount), what);
    layout_gaps_untouched(&g, 0, rl, p * rcount, what);
  }
  free(send);
  guarded_free(&g);
}

/* Two nonblocking all-to-alls of different sizes and a point-to-point exchange in flight at
 * once, completed in reverse order. */
static void overlap(MPI_Comm comm) {
  int rank, nranks;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);
  const int n1 = 5, n2 = 1001;
  int* s1 = malloc((size_t)nranks * n1 * sizeof(int));
  int* r1 = malloc((size_t)nranks * n1 * sizeof(int));
  int* s2 = malloc((size_t)nranks * n2 * sizeof(int));
  int* r2 = malloc((size_t)nranks * n2 * sizeof(int));
  for (int i = 0; i < nranks * n1; ++i) s1[i] = rank * 100000 + i;
  for (int i = 0; i < nranks * n2; ++i) s2[i] = -(rank * 100000 + i);
  int out = rank, in = -1;
  MPI_Request req[4];
  MPI_Ialltoall(s1, n1, MPI_INT, r1, n1, MPI_INT, comm, &req[0]);
  MPI_Irecv(&in, 1, MPI_INT, (rank + 1) % nranks, 3, comm, &req[1]);
  MPI_Ialltoall(s2, n2, MPI_INT, r2, n2, MPI_INT, comm, &req[2]);
  MPI_Isend(&out, 1, MPI_INT, (rank + nranks - 1) % nranks, 3, comm, &req[3]);
  for (int k = 3; k >= 0; --k) MPI_Wait(&req[k], MPI_STATUS_IGNORE);
  int bad = 0;
  for (int r = 0; r < nranks && bad < 3; ++r) {
    for (int i = 0; i < n1; ++i)
      if (!check(r1[r * n1 + i] == r * 100000 + rank * n1 + i, "overlap: small block %d", r)) {
        ++bad;
        break;
      }
    for (int i = 0; i < n2; ++i)
      if (!check(r2[r * n2 + i] == -(r * 100000 + rank * n2 + i), "overlap: large block %d", r)) {
        ++bad;
        break;
      }
  }
  check(in == (rank + 1) % nranks, "overlap: point-to-point got %d", in);
  free(s1);
  free(r1);
  free(s2);
  free(r2);
}

static void sweep(MPI_Comm comm, const char* cname) {
  size_t ints[] = {0, 4, 12, 4 * 37};
  for (int si = 0; si < num_layouts; ++si)
    for (int ri = 0; ri < num_layouts; ++ri)
      for (size_t ci = 0; ci < 4; ++ci)
        for (int ip = 0; ip < 2; ++ip)
          for (int nb = 0; nb < 2; ++nb) {
            if (quick && (si != ri || ci == 0) && !(si == 0 && ri == 1)) continue;
            alltoall_case(comm, cname, &layouts[si], &layouts[ri], ints[ci], 1 == ip, 1 == nb);
          }
  overlap(comm);
}

int main(int argc, char** argv) {
  check_init(&argc, &argv);
  quick = has_flag(argc, argv, "--quick");
  layouts_init();
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  sweep(MPI_COMM_WORLD, "world");
  MPI_Comm reversed;
  MPI_Comm_split(MPI_COMM_WORLD, 0, nranks - rank, &reversed);
  sweep(reversed, "reversed");
  MPI_Comm_free(&reversed);
  layouts_free();
  return check_finish("alltoall");
}
