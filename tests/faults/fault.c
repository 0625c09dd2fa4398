/*
 * fault.c - one rank fails mid-collective; every other rank reports what MPI told it.
 *
 *   fault --op allreduce|allgather|reduce_scatter|reduce_scatter_block [--nonblocking]
 *         --victim R --fault stop|kill [--bytes B] [--after-ms M] [--comm world|split]
 *
 * Every rank prints "READY rank <r> world <w> pid <p> host <h>" and then runs the collective in a
 * loop on a communicator with MPI_ERRORS_RETURN. The victim's helper thread stops (SIGSTOP) or
 * kills (SIGKILL) the victim's own process `after-ms` after the loop began, so the signal lands
 * in whatever call is running. Each survivor, at its first failing call, prints
 *   RESULT rank <r> call <i> after_ms <t> class <c> code <k> class_string <s> error_string <e>
 * (t: time since its last successful call; strings between '|' characters), then calls once more
 * and prints the same for that call as AGAIN, then "DONE rank <r>", and waits: run_fault.py
 * kills the victim and terminates the survivors, after which mpirun must end (or, with
 * FAULT_FINALIZE=1, calls MPI_Finalize and prints "FINALIZED rank <r>").
 * Results are checked against the same computation done locally, so a call that "succeeds" with
 * wrong data counts as a failure (WRONG line).
 */
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  const char* op;
  int nonblocking;
  int victim;
  int sig;
  size_t bytes;
  int after_ms;
  int split;
} options_t;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void usage(void) {
  fprintf(stderr,
          "usage: fault --op allreduce|allgather|reduce_scatter|reduce_scatter_block "
          "[--nonblocking] --victim R --fault stop|kill [--bytes B] [--after-ms M] "
          "[--comm world|split]\n");
  exit(2);
}

static options_t parse(int argc, char** argv) {
  options_t o = {"allreduce", 0, 1, SIGSTOP, 1 << 20, 300, 0};
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (0 == strcmp(a, "--nonblocking")) {
      o.nonblocking = 1;
    } else if (NULL == v) {
      usage();
    } else if (0 == strcmp(a, "--op")) {
      o.op = v, ++i;
    } else if (0 == strcmp(a, "--victim")) {
      o.victim = atoi(v), ++i;
    } else if (0 == strcmp(a, "--fault")) {
      if (0 == strcmp(v, "stop"))
        o.sig = SIGSTOP;
      else if (0 == strcmp(v, "kill"))
        o.sig = SIGKILL;
      else
        usage();
      ++i;
    } else if (0 == strcmp(a, "--bytes")) {
      o.bytes = (size_t)atol(v), ++i;
    } else if (0 == strcmp(a, "--after-ms")) {
      o.after_ms = atoi(v), ++i;
    } else if (0 == strcmp(a, "--comm")) {
      o.split = 0 == strcmp(v, "split"), ++i;
    } else {
      usage();
    }
  }
  return o;
}

static options_t opts;

static void* strike(void* arg) {
  (void)arg;
  usleep((useconds_t)opts.after_ms * 1000u);
  kill(getpid(), opts.sig);
  return NULL;
}

/* One call of the chosen collective on ints; returns the MPI error code. */
static int call(MPI_Comm comm, int* send, int* recv, int count, int size, int* counts) {
  MPI_Request req = MPI_REQUEST_NULL;
  int nb = opts.nonblocking, rc;
  if (0 == strcmp(opts.op, "allreduce")) {
    rc = nb ? MPI_Iallreduce(send, recv, count, MPI_INT, MPI_SUM, comm, &req)
            : MPI_Allreduce(send, recv, count, MPI_INT, MPI_SUM, comm);
  } else if (0 == strcmp(opts.op, "allgather")) {
    int each = count / size;
    rc = nb ? MPI_Iallgather(send, each, MPI_INT, recv, each, MPI_INT, comm, &req)
            : MPI_Allgather(send, each, MPI_INT, recv, each, MPI_INT, comm);
  } else if (0 == strcmp(opts.op, "reduce_scatter_block")) {
    int each = count / size;
    rc = nb ? MPI_Ireduce_scatter_block(send, recv, each, MPI_INT, MPI_SUM, comm, &req)
            : MPI_Reduce_scatter_block(send, recv, each, MPI_INT, MPI_SUM, comm);
  } else if (0 == strcmp(opts.op, "reduce_scatter")) {
    rc = nb ? MPI_Ireduce_scatter(send, recv, counts, MPI_INT, MPI_SUM, comm, &req)
            : MPI_Reduce_scatter(send, recv, counts, MPI_INT, MPI_SUM, comm);
  } else {
    usage();
    return MPI_ERR_ARG;
  }
  if (MPI_SUCCESS == rc && nb) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
  return rc;
}

/* Whether recv holds the expected result: every rank contributes send[i] = rank + i. */
static int correct(const int* recv, int count, int rank, int size, const int* counts) {
  if (0 == strcmp(opts.op, "allgather")) {
    int each = count / size;
    for (int r = 0; r < size; ++r)
      for (int i = 0; i < each; ++i)
        if (recv[r * each + i] != r + i) return 0;
    return 1;
  }
  int first = 0, n = count;
  if (0 == strcmp(opts.op, "reduce_scatter_block")) first = rank * (count / size), n = count / size;
  if (0 == strcmp(opts.op, "reduce_scatter")) {
    for (int r = 0; r < rank; ++r) first += counts[r];
    n = counts[rank];
  }
  for (int i = 0; i < n; ++i) {
    long expect = (long)size * (first + i) + (long)size * (size - 1) / 2;
    if (recv[i] != (int)expect) return 0;
  }
  return 1;
}

static void report(const char* what, int rank, int i, double ms, int rc) {
  int klass = 0, len = 0;
  char cs[MPI_MAX_ERROR_STRING] = "", es[MPI_MAX_ERROR_STRING] = "";
  MPI_Error_class(rc, &klass);
  MPI_Error_string(klass, cs, &len);
  MPI_Error_string(rc, es, &len);
  printf("%s rank %d call %d after_ms %.0f class %d code %d class_string |%s| error_string |%s|\n",
         what, rank, i, ms, klass, rc, cs, es);
  fflush(stdout);
}

int main(int argc, char** argv) {
  opts = parse(argc, argv);
  MPI_Init(&argc, &argv);
  int wrank = 0, wsize = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  MPI_Comm_size(MPI_COMM_WORLD, &wsize);
  MPI_Comm comm = MPI_COMM_WORLD;
  if (opts.split) MPI_Comm_split(MPI_COMM_WORLD, 0, wsize - wrank, &comm); /* reversed ranks */
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);

  int count = (int)(opts.bytes / sizeof(int));
  count -= count % size;
  if (count < size) count = size;
  int* send = malloc((size_t)count * sizeof(int));
  int* recv = malloc((size_t)count * sizeof(int));
  int* counts = malloc((size_t)size * sizeof(int));
  for (int r = 0; r < size; ++r) counts[r] = count / size + (r == 0 ? count % size : 0);
  if (0 == strcmp(opts.op, "allgather")) {
    for (int i = 0; i < count / size; ++i) send[i] = rank + i;
  } else {
    for (int i = 0; i < count; ++i) send[i] = rank + i;
  }
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  printf("READY rank %d world %d pid %d host %s\n", rank, wrank, (int)getpid(), host);
  fflush(stdout);
  MPI_Barrier(MPI_COMM_WORLD);

  if (wrank == opts.victim) {
    pthread_t t;
    pthread_create(&t, NULL, strike, NULL);
  }
  double last = now_ms(), start = last;
  for (int i = 1;; ++i) {
    int rc = call(comm, send, recv, count, size, counts);
    double t = now_ms();
    if (MPI_SUCCESS != rc) {
      report("RESULT", wrank, i, t - last, rc);
      double again0 = now_ms();
      rc = call(comm, send, recv, count, size, counts);
      report("AGAIN", wrank, i + 1, now_ms() - again0, rc);
      break;
    }
    if (!correct(recv, count, rank, size, counts)) {
      printf("WRONG rank %d call %d\n", wrank, i);
      fflush(stdout);
    }
    last = t;
    if (t - start > 120e3) {
      printf("NOERROR rank %d after %d calls\n", wrank, i);
      break;
    }
  }
  printf("DONE rank %d\n", wrank);
  fflush(stdout);
  /* MPI_Finalize would wait for a stopped victim forever (Open MPI's finalize fence), and
   * exiting now would make this rank look like a second casualty to survivors still diagnosing:
   * wait for the runner's SIGTERM. With FAULT_FINALIZE=1 (run_fault.py --finalize, which kills
   * the victim once every survivor is DONE) it finalizes and says so. */
  if (NULL != getenv("FAULT_FINALIZE")) {
    MPI_Finalize();
    printf("FINALIZED rank %d\n", wrank);
    fflush(stdout);
    return 0;
  }
  for (;;) pause();
}
