/*
 * comm_cycles.c - heap growth per MPI_Comm_dup / collective / MPI_Comm_free cycle.
 *
 *   comm_cycles [--cycles N] [--warmup W] [--windows K]
 *
 * Each cycle duplicates MPI_COMM_WORLD (coll_hccl builds an engine communicator for it), runs one
 * MPI_Allreduce on the duplicate (checked against the sum computed locally) and frees it. The
 * bytes in use on the heap (mallinfo2's uordblks, exact, unlike RSS) are read after W warm-up
 * cycles and after each of K windows of N cycles; every rank prints per window
 *   CYCLES rank <r> window <k> cycles <N> growth_bytes <delta> per_cycle <delta / N> wrong <w>
 *          rss_kb <VmRSS> arena_bytes <sbrk'd heap> mmap_bytes <malloc's own mmaps>
 * (the resident set also counts pages that are not malloc's: UCX's and Open MPI's mmap'd pools).
 * A leak grows the heap in every window; a pool or table that grows once (Open MPI's free lists
 * grow in chunks) shows in one window only, so the runner takes each rank's smallest window and
 * compares the numbers with and without coll_hccl in the same run.
 */
#include <malloc.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Resident set size in KiB (VmRSS of /proc/self/status), or -1 when it cannot be read. */
static long rssKb(void) {
  FILE* f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kb = -1;
  while (fgets(line, sizeof line, f))
    if (1 == sscanf(line, "VmRSS: %ld kB", &kb)) break;
  fclose(f);
  return kb;
}

static int cycle(int rank, int size) {
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  int in[4] = {rank, rank + 1, rank + 2, rank + 3}, out[4] = {0};
  MPI_Allreduce(in, out, 4, MPI_INT, MPI_SUM, dup);
  MPI_Comm_free(&dup);
  int ok = 1;
  for (int i = 0; i < 4; ++i) ok = ok && out[i] == size * i + size * (size - 1) / 2;
  return ok;
}

int main(int argc, char** argv) {
  long cycles = 700, warmup = 200, windows = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (0 == strcmp(argv[i], "--cycles")) cycles = atol(argv[i + 1]);
    if (0 == strcmp(argv[i], "--warmup")) warmup = atol(argv[i + 1]);
    if (0 == strcmp(argv[i], "--windows")) windows = atol(argv[i + 1]);
  }
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0, bad = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (long i = 0; i < warmup; ++i) bad += !cycle(rank, size);
  MPI_Barrier(MPI_COMM_WORLD);
  for (long w = 0; w < windows; ++w) {
    size_t before = mallinfo2().uordblks;
    for (long i = 0; i < cycles; ++i) bad += !cycle(rank, size);
    struct mallinfo2 mi = mallinfo2();
    long delta = (long)mi.uordblks - (long)before;
    printf(
        "CYCLES rank %d window %ld cycles %ld growth_bytes %ld per_cycle %.2f wrong %d rss_kb %ld "
        "arena_bytes %zu mmap_bytes %zu\n",
        rank, w, cycles, delta, (double)delta / (double)cycles, bad, rssKb(), mi.arena, mi.hblkhd);
  }
  fflush(stdout);
  MPI_Finalize();
  return 0;
}
