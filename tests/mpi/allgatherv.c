/*
 * allgatherv.c - MPI_Allgatherv and MPI_Iallgatherv: per-rank counts with zeros, uneven and
 * equal blocks; displacements packed, reversed with gaps between blocks; every layout of
 * mpi_layouts.h (send and receive layouts mixed within the int family); in place; nonblocking
 * calls overlapped with point-to-point. Guard zones around the receive buffer: the space between
 * blocks and the gaps of derived types stay untouched.
 *
 * Options: --quick (fewer layout pairs).
 */
#include <stdlib.h>

#include "mpi_check.h"
#include "mpi_layouts.h"

static int rank, nranks;
static bool quick;

/* MPI_INT elements of rank r's block, by pattern: zeros among others, uneven, all equal. */
static size_t block_ints(int pattern, int r) {
  switch (pattern) {
    case 0:
      return (size_t)(r % 3) * 4;
    case 1:
      return (size_t)(r * 7 % 5 + 1) * 12;
    default:
      return 8;
  }
}

static void allgatherv_case(const layout_t* sl, const layout_t* rl, int pattern, bool reversed,
                            bool in_place, bool nb) {
  if (0 == sl->ints || 0 == rl->ints) {
    if (sl != rl) return;
  }
  if (in_place && sl != rl) return;
  int per_s = 0 == sl->ints ? 1 : sl->ints, per_r = 0 == rl->ints ? 1 : rl->ints;
  int counts[64], displs[64];
  size_t span_elems = 0;
  /* reversed: block r after block r+1, one element of space between blocks */
  size_t at = 0;
  for (int k = 0; k < nranks; ++k) {
    int r = reversed ? nranks - 1 - k : k;
    size_t ints = block_ints(pattern, r);
    if (ints % (size_t)per_s || ints % (size_t)per_r) return;
    counts[r] = (int)(ints / (size_t)per_r);
    displs[r] = (int)at;
    at += (size_t)counts[r] + (reversed ? 1 : 0);
  }
  span_elems = at;
  char what[200];
  snprintf(what, sizeof what, "allgatherv %s -> %s pattern %d%s%s %s", sl->name, rl->name, pattern,
           reversed ? " reversed with gaps" : "", in_place ? " in place" : "",
           nb ? "nonblocking" : "blocking");
  size_t scount = block_ints(pattern, rank) / (size_t)per_s;
  guarded_t g;
  unsigned char* send = malloc(layout_span(sl, scount) + 1);
  unsigned char* recv = guarded_alloc(&g, layout_span(rl, span_elems));
  const size_t ext = (size_t)rl->extent;
  if (in_place) {
    layout_fill(rl, recv + (size_t)displs[rank] * ext, (size_t)counts[rank], rank, 0);
  } else {
    layout_fill(sl, send, scount, rank, 0);
  }
  guarded_snapshot(&g);
  const void* sbuf = in_place ? MPI_IN_PLACE : send;
  MPI_Request req;
  int rc = nb ? MPI_Iallgatherv(sbuf, (int)scount, sl->type, recv, counts, displs, rl->type,
                                MPI_COMM_WORLD, &req)
              : MPI_Allgatherv(sbuf, (int)scount, sl->type, recv, counts, displs, rl->type,
                               MPI_COMM_WORLD);
  if (nb && MPI_SUCCESS == rc) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
  if (check(MPI_SUCCESS == rc, "%s: rc %d", what, rc)) {
    for (int r = 0; r < nranks; ++r) {
      if (!layout_check(rl, recv + (size_t)displs[r] * ext, (size_t)counts[r], r, 0, what)) break;
    }
    /* the guard zones, the space between blocks and the gaps of the layout */
    guarded_untouched(&g, 0, layout_span(rl, span_elems), what);
    unsigned char* mask = calloc(g.body + 1, 1);
    for (int r = 0; r < nranks; ++r)
      layout_mark(mask, (size_t)displs[r] * ext, rl, (size_t)counts[r]);
    masked_untouched(&g, mask, what);
    free(mask);
  }
  free(send);
  guarded_free(&g);
}

/* An Iallgatherv in flight with an Iallgather and a point-to-point exchange. */
static void overlap(void) {
  int counts[64], displs[64], total = 0;
  for (int r = 0; r < nranks; ++r) {
    counts[r] = r + 1;
    displs[r] = total;
    total += counts[r];
  }
  int* mine = malloc((size_t)(rank + 1) * sizeof(int));
  int* all = malloc((size_t)total * sizeof(int));
  int* ag = malloc((size_t)nranks * 3 * sizeof(int));
  int three[3] = {rank, rank * 2, rank * 3};
  for (int i = 0; i <= rank; ++i) mine[i] = rank * 100 + i;
  int out = rank, in = -1;
  MPI_Request req[4];
  MPI_Iallgatherv(mine, rank + 1, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD, &req[0]);
  MPI_Irecv(&in, 1, MPI_INT, (rank + 1) % nranks, 5, MPI_COMM_WORLD, &req[1]);
  MPI_Iallgather(three, 3, MPI_INT, ag, 3, MPI_INT, MPI_COMM_WORLD, &req[2]);
  MPI_Isend(&out, 1, MPI_INT, (rank + nranks - 1) % nranks, 5, MPI_COMM_WORLD, &req[3]);
  MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
  for (int r = 0; r < nranks; ++r) {
    for (int i = 0; i <= r; ++i)
      if (!check(all[displs[r] + i] == r * 100 + i, "overlap: allgatherv block %d", r)) break;
    check(ag[3 * r + 2] == 3 * r, "overlap: allgather block %d", r);
  }
  check(in == (rank + 1) % nranks, "overlap: point-to-point got %d", in);
  free(mine);
  free(all);
  free(ag);
}

int main(int argc, char** argv) {
  check_init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  quick = has_flag(argc, argv, "--quick");
  layouts_init();
  for (int si = 0; si < num_layouts; ++si)
    for (int ri = 0; ri < num_layouts; ++ri)
      for (int pattern = 0; pattern < 3; ++pattern)
        for (int rev = 0; rev < 2; ++rev)
          for (int ip = 0; ip < 2; ++ip)
            for (int nb = 0; nb < 2; ++nb) {
              if (quick && si != ri && !(si == 0 && ri == 2)) continue;
              allgatherv_case(&layouts[si], &layouts[ri], pattern, 1 == rev, 1 == ip, 1 == nb);
            }
  overlap();
  layouts_free();
  return check_finish("allgatherv");
}
