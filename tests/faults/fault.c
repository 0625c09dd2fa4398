/*
 * fault.c - one rank fails mid-collective; every other rank reports what MPI told it.
 *
 *   fault --op allreduce|allgather|allgatherv|reduce_scatter_block|reduce_scatter|bcast|reduce|
 *              gather|scatter|alltoall|barrier|scan|exscan [--nonblocking]
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
          "usage: fault --op allreduce|allgather|allgatherv|reduce_scatter_block|"
          "reduce_scatter|bcast|reduce|gather|scatter|alltoall|barrier|scan|exscan "
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

/* The job's shape, shared by every operation: `count` ints in all, `each` = count / size per
 * rank, per-rank `counts` and their `displs` (the V forms and reduce_scatter), the root (the
 * last rank: a root other than 0). Every rank contributes value(rank, i) = rank + i. */
typedef struct {
  MPI_Comm comm;
  int rank, size, count, each, root;
  int *counts, *displs;
} shape_t;

static int value(int rank, int i) {
  return rank + i;
}

/* Sum over ranks lo..hi-1 of value(r, i). */
static int sum_of(int lo, int hi, int i) {
  long n = hi - lo;
  return (int)(n * i + (long)(lo + hi - 1) * n / 2);
}

typedef struct {
  const char* name;
  /* fills the send buffer (`send` holds count ints) */
  void (*fill)(const shape_t* s, int* send);
  /* one call, blocking or (req != NULL) nonblocking */
  int (*run)(const shape_t* s, int* send, int* recv, MPI_Request* req);
  /* whether this rank's recv holds the result */
  int (*check)(const shape_t* s, const int* recv);
} op_t;

static void fill_all(const shape_t* s, int* send) {
  for (int i = 0; i < s->count; ++i) send[i] = value(s->rank, i);
}
static void fill_none(const shape_t* s, int* send) {
  (void)s, (void)send;
}

static int check_sum(const shape_t* s, const int* recv, int first, int n) {
  for (int i = 0; i < n; ++i)
    if (recv[i] != sum_of(0, s->size, first + i)) return 0;
  return 1;
}
static int check_gathered(const shape_t* s, const int* recv) {
  for (int r = 0; r < s->size; ++r)
    for (int i = 0; i < s->each; ++i)
      if (recv[r * s->each + i] != value(r, i)) return 0;
  return 1;
}
static int check_true(const shape_t* s, const int* recv) {
  return (void)s, (void)recv, 1;
}

#define NB(req, blocking, nonblocking) (NULL == (req) ? (blocking) : (nonblocking))

static int run_allreduce(const shape_t* s, int* send, int* recv, MPI_Request* req) {
  return NB(req, MPI_Allreduce(send, recv, s->count, MPI_INT, MPI_SUM, s->comm),
            MPI_Iallreduce(send, recv, s->count, MPI_INT, MPI_SUM, s->comm, req));
}
static int check_allreduce(const shape_t* s, const int* recv) {
  return check_sum(s, recv, 0, s->count);
}
static int run_allgather(const shape_t* s, int* send, int* recv, MPI_Request* req) {
  return NB(req, MPI_Allgather(send, s->each, MPI_INT, recv, s->each, MPI_INT, s->comm),
            MPI_Iallgather(send, s->each, MPI_INT, recv, s->each, MPI_INT, s->comm, req));
}
static int run_allgatherv(const shape_t* s, int* send, int* recv, MPI_Request* req) {
  int n = s->counts[s->rank];
  return NB(req, MPI_Allgatherv(send, n, MPI_INT, recv, s->counts, s->displs, MPI_INT, s->comm),
            MPI_Iallgatherv(send, n, MPI_INT, recv, s->counts, s->displs, MPI_INT, s->comm, req));
}
static int check_allgatherv(const shape_t* s, const int* recv) {
  for (int r = 0; r < s->size; ++r)
    for (int i = 0; i < s->counts[r]; ++i)
      if (recv[s->displs[r] + i] != value(r, i)) return 0;
  return 1;
}
static int run_rsb(const shape_t* s, int* send, int* recv, MPI_Request* req) {
  return NB(req, MPI_Reduce_scatter_block(send, recv, s->each, MPI_INT, MPI_SUM, s->comm),
            MPI_Ireduce_scatter_block(send, recv, s->each, MPI_INT, MPI_SUM, s->comm, req));
}
static int check_rsb(const shape_t* s, const int* recv) {
  return check_sum(s, recv, s->rank * s->each, s->each);
}
static int run_rs(const shape_t* s, int* send, int* recv, MPI_Request* req) {
  return NB(req, MPI_Reduce_scatter(send, recv, s->counts, MPI_INT, MPI_SUM, s->comm),
            MPI_Ireduce_scatter(send, recv, s->counts, MPI_INT, MPI_SUM, s->comm, req));
}
static int check_rs(const shape_t* s, const int* recv) {
  return check_sum(s, recv, s->displs[s->rank], s->counts[s->rank]);
}
/* The root broadcasts value(root, i); the others receive into recv. */
static int run_bcast(const shape_t* s, int* send, int* recv, MPI_Request* req) {
  int* buf = s->rank == s->root ? send : recv;
  return NB(req, MPI_Bcast(buf, s->count, MPI_INT, s->root, s->comm),
            MPI_Ibcast(buf, s->count, MPI_INT, s->root, s->comm, req));
}
static int check_bcast(const shape_t* s, const int* recv) {
  if (s->rank == s->root) return 1;
  for (int i = 0; i < s->count; ++i)
    if (recv[i] != value(s->root, i)) return 0;
  return 1;
}
static int run_reduce(const shape_t* s, int* send, int* recv, MPI_Request* req) {
  return NB(req, MPI_Reduce(send, recv, s->count, MPI_INT, MPI_SUM, s->root, s->comm),
            MPI_Ireduce(send, recv, s->count, MPI_INT, MPI_SUM, s->root, s->comm, req));
}
static int check_reduce(const shape_t* s, const int* recv) {
  return s->rank != s->root || check_sum(s, recv, 0, s->count);
}
static int run_gather(const shape_t* s, int* send, int* recv, MPI_Request* req) {
  return NB(req, MPI_Gather(send, s->each, MPI_INT, recv, s->each, MPI_INT, s->root, s->comm),
            MPI_Igather(send, s->each, MPI_INT, recv, s->each, MPI_INT, s->root, s->comm, req));
}
static int check_gather(const shape_t* s, const int* recv) {
  return s->rank != s->root || check_gathered(s, recv);
}
/* The root's block r is value(r, i): what rank r would have contributed. */
static void fill_scatter(const shape_t* s, int* send) {
  for (int r = 0; r < s->size; ++r)
    for (int i = 0; i < s->each; ++i) send[r * s->each + i] = value(r, i);
}
static int run_scatter(const shape_t* s, int* send, int* recv, MPI_Request* req) {
  return NB(req, MPI_Scatter(send, s->each, MPI_INT, recv, s->each, MPI_INT, s->root, s->comm),
            MPI_Iscatter(send, s->each, MPI_INT, recv, s->each, MPI_INT, s->root, s->comm, req));
}
static int check_scatter(const shape_t* s, const int* recv) {
  for (int i = 0; i < s->each; ++i)
    if (recv[i] != value(s->rank, i)) return 0;
  return 1;
}
/* Block d goes to rank d: rank r sends value(r, d * each + i) there. */
static int run_alltoall(const shape_t* s, int* send, int* recv, MPI_Request* req) {
  return NB(req, MPI_Alltoall(send, s->each, MPI_INT, recv, s->each, MPI_INT, s->comm),
            MPI_Ialltoall(send, s->each, MPI_INT, recv, s->each, MPI_INT, s->comm, req));
}
static int check_alltoall(const shape_t* s, const int* recv) {
  for (int r = 0; r < s->size; ++r)
    for (int i = 0; i < s->each; ++i)
      if (recv[r * s->each + i] != value(r, s->rank * s->each + i)) return 0;
  return 1;
}
static int run_barrier(const shape_t* s, int* send, int* recv, MPI_Request* req) {
  (void)send, (void)recv;
  return NB(req, MPI_Barrier(s->comm), MPI_Ibarrier(s->comm, req));
}
static int run_scan(const shape_t* s, int* send, int* recv, MPI_Request* req) {
  return NB(req, MPI_Scan(send, recv, s->count, MPI_INT, MPI_SUM, s->comm),
            MPI_Iscan(send, recv, s->count, MPI_INT, MPI_SUM, s->comm, req));
}
/* The prefix over ranks [0, upto): Scan's result takes upto = rank + 1, Exscan's upto = rank. */
static int check_prefix(const shape_t* s, const int* recv, int upto) {
  for (int i = 0; i < s->count; ++i)
    if (recv[i] != sum_of(0, upto, i)) return 0;
  return 1;
}
static int check_scan(const shape_t* s, const int* recv) {
  return check_prefix(s, recv, s->rank + 1);
}
static int run_exscan(const shape_t* s, int* send, int* recv, MPI_Request* req) {
  return NB(req, MPI_Exscan(send, recv, s->count, MPI_INT, MPI_SUM, s->comm),
            MPI_Iexscan(send, recv, s->count, MPI_INT, MPI_SUM, s->comm, req));
}
static int check_exscan(const shape_t* s, const int* recv) {
  return 0 == s->rank || check_prefix(s, recv, s->rank); /* undefined on rank 0 */
}

static const op_t kOps[] = {
    {"allreduce", fill_all, run_allreduce, check_allreduce},
    {"allgather", fill_all, run_allgather, check_gathered},
    {"allgatherv", fill_all, run_allgatherv, check_allgatherv},
    {"reduce_scatter_block", fill_all, run_rsb, check_rsb},
    {"reduce_scatter", fill_all, run_rs, check_rs},
    {"bcast", fill_all, run_bcast, check_bcast},
    {"reduce", fill_all, run_reduce, check_reduce},
    {"gather", fill_all, run_gather, check_gather},
    {"scatter", fill_scatter, run_scatter, check_scatter},
    {"alltoall", fill_all, run_alltoall, check_alltoall},
    {"barrier", fill_none, run_barrier, check_true},
    {"scan", fill_all, run_scan, check_scan},
    {"exscan", fill_all, run_exscan, check_exscan},
};

static const op_t* find_op(const char* name) {
  for (size_t k = 0; k < sizeof kOps / sizeof kOps[0]; ++k)
    if (0 == strcmp(kOps[k].name, name)) return &kOps[k];
  return NULL;
}

/* One call of the chosen collective; returns the MPI error code. The receive buffer is
 * poisoned first, so a call that "succeeds" without delivering shows as WRONG. */
static int call(const op_t* op, const shape_t* s, int* send, int* recv) {
  memset(recv, 0xA5, (size_t)s->count * sizeof(int));
  MPI_Request req = MPI_REQUEST_NULL;
  int rc = op->run(s, send, recv, opts.nonblocking ? &req : NULL);
  if (MPI_SUCCESS == rc && opts.nonblocking) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
  return rc;
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

  const op_t* op = find_op(opts.op);
  if (NULL == op) usage();
  int count = (int)(opts.bytes / sizeof(int));
  count -= count % size;
  if (count < size) count = size;
  shape_t sh = {comm, rank, size, count, count / size, size - 1, NULL, NULL};
  int* send = malloc((size_t)count * sizeof(int));
  int* recv = malloc((size_t)count * sizeof(int));
  sh.counts = malloc((size_t)size * sizeof(int));
  sh.displs = malloc((size_t)size * sizeof(int));
  /* Uneven per-rank counts: rank 0 takes one element from the last rank. */
  for (int r = 0, at = 0; r < size; at += sh.counts[r], ++r) {
    sh.counts[r] = count / size + (0 == r && size > 1) - (size - 1 == r && size > 1);
    sh.displs[r] = at;
  }
  op->fill(&sh, send);
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
    int rc = call(op, &sh, send, recv);
    double t = now_ms();
    if (MPI_SUCCESS != rc) {
      report("RESULT", wrank, i, t - last, rc);
      double again0 = now_ms();
      rc = call(op, &sh, send, recv);
      report("AGAIN", wrank, i + 1, now_ms() - again0, rc);
      break;
    }
    if (!op->check(&sh, recv)) {
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
