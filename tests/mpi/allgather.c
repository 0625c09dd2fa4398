/*
 * allgather.c - MPI_Allgather and MPI_Iallgather for every predefined type, the pair types, and
 * derived types (contiguous, vector, indexed with a lower bound, resized), with send and receive
 * types that differ but have the same type signature, MPI_IN_PLACE, and counts 1, fewer than p,
 * not divisible by p, and larger.
 *
 * Each test type carries its memory layout (data segments inside one extent), written out by hand,
 * so the expected receive buffer is computed without Open MPI's datatype engine: rank r's data
 * bytes form a stream, and every rank must find that stream in block r of its receive buffer.
 * Gap bytes are never compared (Open MPI may or may not copy them).
 *
 * Options: --quick, --blocking-only.
 */
#include <stdint.h>
#include <stdlib.h>

#include "mpi_check.h"
#include "mpi_values.h"

typedef struct layout {
  const char* name;
  MPI_Datatype type;
  ptrdiff_t extent;
  int nseg;
  struct {
    ptrdiff_t offset; /* from the element's start, i.e. buffer + k * extent */
    size_t len;
  } seg[3];
} layout_t;

static int rank, nranks;

static size_t data_size(const layout_t* l) {
  size_t n = 0;
  for (int s = 0; s < l->nseg; ++s) n += l->seg[s].len;
  return n;
}

static unsigned char stream_byte(int r, size_t pos) {
  return (unsigned char)((r * 131 + pos * 7 + pos / 251 + 1) & 0xff);
}

/* Writes `count` elements of rank r's stream (starting at stream position pos0) into buf. */
static void scatter_stream(const layout_t* l, unsigned char* buf, int count, int r, size_t pos0) {
  size_t pos = pos0;
  for (int k = 0; k < count; ++k) {
    for (int s = 0; s < l->nseg; ++s) {
      for (size_t b = 0; b < l->seg[s].len; ++b) {
        buf[k * l->extent + l->seg[s].offset + (ptrdiff_t)b] = stream_byte(r, pos++);
      }
    }
  }
}

/* Compares the data bytes of block r (count elements) with rank r's stream. */
static bool block_ok(const layout_t* l, const unsigned char* buf, int count, int r, size_t* where) {
  size_t pos = 0;
  for (int k = 0; k < count; ++k) {
    for (int s = 0; s < l->nseg; ++s) {
      for (size_t b = 0; b < l->seg[s].len; ++b, ++pos) {
        if (buf[k * l->extent + l->seg[s].offset + (ptrdiff_t)b] != stream_byte(r, pos)) {
          *where = pos;
          return false;
        }
      }
    }
  }
  return true;
}

static size_t buffer_bytes(const layout_t* l, int count) {
  return (size_t)count * (size_t)l->extent + 64; /* room for a lower bound past the pointer */
}

static void run(const layout_t* sl, int scount, const layout_t* rl, int rcount, bool in_place,
                bool nonblocking) {
  guarded_t g;
  const size_t recv_bytes = buffer_bytes(rl, rcount * nranks);
  unsigned char* send = malloc(buffer_bytes(sl, scount));
  unsigned char* recv = guarded_alloc(&g, recv_bytes);
  memset(send, 0xC3, buffer_bytes(sl, scount));
  memset(recv, 0x3C, recv_bytes);
  if (in_place) {
    scatter_stream(rl, recv + (ptrdiff_t)rank * rcount * rl->extent, rcount, rank, 0);
  } else {
    scatter_stream(sl, send, scount, rank, 0);
  }
  guarded_snapshot(&g);
  const void* sbuf = in_place ? MPI_IN_PLACE : send;
  MPI_Request req;
  int rc =
      nonblocking
          ? MPI_Iallgather(sbuf, scount, sl->type, recv, rcount, rl->type, MPI_COMM_WORLD, &req)
          : MPI_Allgather(sbuf, scount, sl->type, recv, rcount, rl->type, MPI_COMM_WORLD);
  if (nonblocking && MPI_SUCCESS == rc) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
  const char* how = nonblocking ? "nonblocking" : "blocking";
  if (check(MPI_SUCCESS == rc, "%d x %s -> %d x %s %s %s: rc %d", scount, sl->name, rcount,
            rl->name, in_place ? "in place" : "", how, rc)) {
    for (int r = 0; r < nranks; ++r) {
      size_t where = 0;
      if (!check(block_ok(rl, recv + (ptrdiff_t)r * rcount * rl->extent, rcount, r, &where),
                 "%d x %s -> %d x %s%s %s: block of rank %d wrong at data byte %zu", scount,
                 sl->name, rcount, rl->name, in_place ? " in place" : "", how, r, where)) {
        break;
      }
    }
    /* The whole extent is output (gaps inside it are the datatype's business), nothing around. */
    char what[256];
    snprintf(what, sizeof what, "%d x %s -> %d x %s%s %s", scount, sl->name, rcount, rl->name,
             in_place ? " in place" : "", how);
    guarded_untouched(&g, 0, recv_bytes, what);
  }
  free(send);
  guarded_free(&g);
}

#define SEG1(len) \
  1, {            \
    { 0, (len) }  \
  }

int main(int argc, char** argv) {
  check_init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const bool quick = has_flag(argc, argv, "--quick");
  const bool blocking_only = has_flag(argc, argv, "--blocking-only");

  layout_t layouts[MAX_TEST_TYPES + 16];
  int n = 0;
  test_type_t types[MAX_TEST_TYPES];
  int ntypes = test_types(types);
  for (int i = 0; i < ntypes; ++i) {
    if (quick && MPI_INT != types[i].type && MPI_DOUBLE != types[i].type) continue;
    layouts[n++] =
        (layout_t){types[i].name, types[i].type, (ptrdiff_t)types[i].size, SEG1(types[i].size)};
  }
  layouts[n++] = (layout_t){"MPI_CHAR", MPI_CHAR, 1, SEG1(1)};
  layouts[n++] = (layout_t){"MPI_WCHAR", MPI_WCHAR, sizeof(wchar_t), SEG1(sizeof(wchar_t))};
  /* Pair types: struct layouts with padding (gaps) for some. */
  layouts[n++] = (layout_t){"MPI_FLOAT_INT", MPI_FLOAT_INT, 8, 2, {{0, 4}, {4, 4}}};
  layouts[n++] = (layout_t){"MPI_DOUBLE_INT", MPI_DOUBLE_INT, 16, 2, {{0, 8}, {8, 4}}};
  layouts[n++] = (layout_t){"MPI_LONG_INT", MPI_LONG_INT, 16, 2, {{0, 8}, {8, 4}}};
  layouts[n++] = (layout_t){"MPI_SHORT_INT", MPI_SHORT_INT, 8, 2, {{0, 2}, {4, 4}}};
  layouts[n++] = (layout_t){"MPI_2INT", MPI_2INT, 8, SEG1(8)};
  layouts[n++] = (layout_t){"MPI_LONG_DOUBLE_INT", MPI_LONG_DOUBLE_INT, 32, 2, {{0, 16}, {16, 4}}};
  const int first_derived = n;
  MPI_Datatype contig3, vec, indexed, resized;
  MPI_Type_contiguous(3, MPI_INT, &contig3);
  MPI_Type_vector(2, 1, 2, MPI_DOUBLE, &vec); /* two doubles 16 bytes apart: a gap */
  int disp = 2;
  MPI_Type_create_indexed_block(1, 3, &disp, MPI_INT, &indexed); /* lb 8: data past the pointer */
  MPI_Type_create_resized(MPI_INT, 0, 8, &resized);
  MPI_Datatype derived[] = {contig3, vec, indexed, resized};
  for (int i = 0; i < 4; ++i) MPI_Type_commit(&derived[i]);
  layouts[n++] = (layout_t){"contiguous(3,int)", derived[0], 12, SEG1(12)};
  layouts[n++] = (layout_t){"vector(2,1,2,double)", derived[1], 24, 2, {{0, 8}, {16, 8}}};
  layouts[n++] = (layout_t){"indexed_block(int x3 at 8)", derived[2], 12, 1, {{8, 12}}};
  layouts[n++] = (layout_t){"resized(int,extent 8)", derived[3], 8, SEG1(4)};

  /* The hand-written layouts must agree with MPI's idea of the type (size and extent). */
  for (int i = 0; i < n; ++i) {
    int size = 0;
    MPI_Aint lb = 0, extent = 0;
    MPI_Type_size(layouts[i].type, &size);
    MPI_Type_get_extent(layouts[i].type, &lb, &extent);
    check((size_t)size == data_size(&layouts[i]) && extent == layouts[i].extent,
          "layout of %s: size %d extent %ld, table says %zu and %ld", layouts[i].name, size,
          (long)extent, data_size(&layouts[i]), (long)layouts[i].extent);
  }

  const int p = nranks;
  const int counts[] = {1, p > 1 ? p - 1 : 1, 2 * p + 1, 300};
  for (int i = 0; i < n; ++i) {
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; ++c) {
      if (quick && 2 != c) continue;
      if (i >= first_derived && 3 == c) continue;
      for (int in_place = 0; in_place < 2; ++in_place) {
        for (int nb = 0; nb < (blocking_only ? 1 : 2); ++nb) {
          run(&layouts[i], counts[c], &layouts[i], counts[c], 1 == in_place, 1 == nb);
        }
      }
    }
  }
  /* Same signature, different types on the two sides (and, for the last two, per rank). */
  const layout_t* ints = NULL;
  const layout_t* dbls = NULL;
  for (int i = 0; i < n; ++i) {
    if (MPI_INT == layouts[i].type) ints = &layouts[i];
    if (MPI_DOUBLE == layouts[i].type) dbls = &layouts[i];
  }
  const layout_t* d = &layouts[first_derived];
  for (int nb = 0; nb < (blocking_only ? 1 : 2); ++nb) {
    for (int k = 1; k <= 5; k += 4) {
      run(ints, 3 * k, &d[0], k, false, 1 == nb); /* int x3k -> contiguous(3) x k */
      run(&d[0], k, ints, 3 * k, false, 1 == nb);
      run(&d[1], k, dbls, 2 * k, false, 1 == nb); /* vector -> doubles */
      run(dbls, 2 * k, &d[1], k, false, 1 == nb);
      run(ints, 3 * k, &d[2], k, false, 1 == nb); /* ints -> indexed with lower bound */
      run(&d[2], k, ints, 3 * k, false, 1 == nb);
      /* Send layout differs between ranks: even ranks send ints, odd ranks contiguous(3). */
      if (0 == rank % 2) {
        run(ints, 3 * k, &d[0], k, false, 1 == nb);
      } else {
        run(&d[0], k, &d[0], k, false, 1 == nb);
      }
    }
  }
  for (int i = 0; i < 4; ++i) MPI_Type_free(&derived[i]);
  return check_finish("allgather");
}
