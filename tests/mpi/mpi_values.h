/*
 * mpi_values.h - the predefined MPI types the tests cover, and input values whose reductions are
 * exact in every type (small integers), so that expectations computed with plain C arithmetic in
 * rank order are exact too.
 */
#ifndef TESTS_MPI_MPI_VALUES_H
#define TESTS_MPI_MPI_VALUES_H

#include <complex.h>
#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { G_CINT, G_FINT, G_FLOAT, G_COMPLEX, G_BOOL, G_BYTE } type_group_t;

typedef struct test_type {
  const char* name;
  MPI_Datatype type;
  size_t size;
  type_group_t group;
  bool is_signed;
  void (*set)(void* buf, size_t i, long double re, long double im);
  void (*get)(const void* buf, size_t i, long double* re, long double* im);
} test_type_t;

#define REAL_ACCESS(NAME, T)                                                          \
  static void NAME##_set(void* b, size_t i, long double re, long double im) {         \
    (void)im;                                                                         \
    ((T*)b)[i] = (T)re;                                                               \
  }                                                                                   \
  static void NAME##_get(const void* b, size_t i, long double* re, long double* im) { \
    *re = (long double)((const T*)b)[i];                                              \
    *im = 0;                                                                          \
  }
#define COMPLEX_ACCESS(NAME, T, BASE)                                                 \
  static void NAME##_set(void* b, size_t i, long double re, long double im) {         \
    ((T*)b)[i] = (BASE)re + (BASE)im * (T)I;                                          \
  }                                                                                   \
  static void NAME##_get(const void* b, size_t i, long double* re, long double* im) { \
    long double _Complex v = ((const T*)b)[i];                                        \
    *re = creall(v);                                                                  \
    *im = cimagl(v);                                                                  \
  }

REAL_ACCESS(schar, signed char)
REAL_ACCESS(uchar, unsigned char)
REAL_ACCESS(short, short)
REAL_ACCESS(ushort, unsigned short)
REAL_ACCESS(int, int)
REAL_ACCESS(uint, unsigned)
REAL_ACCESS(long, long)
REAL_ACCESS(ulong, unsigned long)
REAL_ACCESS(llong, long long)
REAL_ACCESS(ullong, unsigned long long)
REAL_ACCESS(i8, int8_t)
REAL_ACCESS(i16, int16_t)
REAL_ACCESS(i32, int32_t)
REAL_ACCESS(i64, int64_t)
REAL_ACCESS(u8, uint8_t)
REAL_ACCESS(u16, uint16_t)
REAL_ACCESS(u32, uint32_t)
REAL_ACCESS(u64, uint64_t)
REAL_ACCESS(aint, MPI_Aint)
REAL_ACCESS(offset, MPI_Offset)
REAL_ACCESS(mcount, MPI_Count)
REAL_ACCESS(flt, float)
REAL_ACCESS(dbl, double)
REAL_ACCESS(ldbl, long double)
COMPLEX_ACCESS(cflt, float _Complex, float)
COMPLEX_ACCESS(cdbl, double _Complex, double)
COMPLEX_ACCESS(cldbl, long double _Complex, long double)

static void cbool_set(void* b, size_t i, long double re, long double im) {
  (void)im;
  ((_Bool*)b)[i] = re != 0;
}
static void cbool_get(const void* b, size_t i, long double* re, long double* im) {
  *re = ((const _Bool*)b)[i] ? 1 : 0;
  *im = 0;
}

#define TT(NAME, MPI_T, C_T, GROUP, SIGNED) \
  { #MPI_T, MPI_T, sizeof(C_T), GROUP, SIGNED, NAME##_set, NAME##_get }

/* Filled at run time: MPI handles are not constant expressions in every MPI. */
static inline int test_types(test_type_t* out) {
  const test_type_t all[] = {
      TT(schar, MPI_SIGNED_CHAR, signed char, G_CINT, true),
      TT(uchar, MPI_UNSIGNED_CHAR, unsigned char, G_CINT, false),
      TT(short, MPI_SHORT, short, G_CINT, true),
      TT(ushort, MPI_UNSIGNED_SHORT, unsigned short, G_CINT, false),
      TT(int, MPI_INT, int, G_CINT, true),
      TT(uint, MPI_UNSIGNED, unsigned, G_CINT, false),
      TT(long, MPI_LONG, long, G_CINT, true),
      TT(ulong, MPI_UNSIGNED_LONG, unsigned long, G_CINT, false),
      TT(llong, MPI_LONG_LONG, long long, G_CINT, true),
      TT(ullong, MPI_UNSIGNED_LONG_LONG, unsigned long long, G_CINT, false),
      TT(i8, MPI_INT8_T, int8_t, G_CINT, true),
      TT(i16, MPI_INT16_T, int16_t, G_CINT, true),
      TT(i32, MPI_INT32_T, int32_t, G_CINT, true),
      TT(i64, MPI_INT64_T, int64_t, G_CINT, true),
      TT(u8, MPI_UINT8_T, uint8_t, G_CINT, false),
      TT(u16, MPI_UINT16_T, uint16_t, G_CINT, false),
      TT(u32, MPI_UINT32_T, uint32_t, G_CINT, false),
      TT(u64, MPI_UINT64_T, uint64_t, G_CINT, false),
      TT(aint, MPI_AINT, MPI_Aint, G_FINT, true),
      /* Open MPI 4.1.4 reduces MPI_OFFSET as uint64_t (ompi/op/op.c): MAX/MIN of negative
       * offsets come out wrong, so the inputs stay non-negative where both readings agree. */
      TT(offset, MPI_OFFSET, MPI_Offset, G_FINT, false),
      TT(mcount, MPI_COUNT, MPI_Count, G_FINT, true),
      TT(int, MPI_INTEGER, int, G_FINT, true),
      TT(flt, MPI_FLOAT, float, G_FLOAT, true),
      TT(dbl, MPI_DOUBLE, double, G_FLOAT, true),
      TT(ldbl, MPI_LONG_DOUBLE, long double, G_FLOAT, true),
      TT(flt, MPI_REAL, float, G_FLOAT, true),
      TT(dbl, MPI_DOUBLE_PRECISION, double, G_FLOAT, true),
      TT(cflt, MPI_C_FLOAT_COMPLEX, float _Complex, G_COMPLEX, true),
      TT(cdbl, MPI_C_DOUBLE_COMPLEX, double _Complex, G_COMPLEX, true),
      TT(cldbl, MPI_C_LONG_DOUBLE_COMPLEX, long double _Complex, G_COMPLEX, true),
      TT(cflt, MPI_COMPLEX, float _Complex, G_COMPLEX, true),
      TT(cdbl, MPI_DOUBLE_COMPLEX, double _Complex, G_COMPLEX, true),
      TT(cbool, MPI_C_BOOL, _Bool, G_BOOL, false),
      TT(uchar, MPI_BYTE, unsigned char, G_BYTE, false),
  };
  int n = 0;
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) {
    int size = 0;
    MPI_Type_size(all[i].type, &size);
    if ((size_t)size == all[i].size) out[n++] = all[i]; /* e.g. a Fortran kind that differs */
  }
  return n;
}
#define MAX_TEST_TYPES 64

/* The ten predefined reduction ops, and which type groups MPI-3.1 section 5.9.2 defines them on. */
typedef struct test_op {
  const char* name;
  MPI_Op op;
  unsigned groups; /* bit per type_group_t */
} test_op_t;

#define GBIT(g) (1u << (g))
static inline int test_ops(test_op_t* out) {
  const unsigned arith = GBIT(G_CINT) | GBIT(G_FINT) | GBIT(G_FLOAT);
  const test_op_t all[] = {
      {"MPI_SUM", MPI_SUM, arith | GBIT(G_COMPLEX)},
      {"MPI_PROD", MPI_PROD, arith | GBIT(G_COMPLEX)},
      {"MPI_MAX", MPI_MAX, arith},
      {"MPI_MIN", MPI_MIN, arith},
      {"MPI_LAND", MPI_LAND, GBIT(G_CINT) | GBIT(G_BOOL)},
      {"MPI_LOR", MPI_LOR, GBIT(G_CINT) | GBIT(G_BOOL)},
      {"MPI_LXOR", MPI_LXOR, GBIT(G_CINT) | GBIT(G_BOOL)},
      {"MPI_BAND", MPI_BAND, GBIT(G_CINT) | GBIT(G_FINT) | GBIT(G_BYTE)},
      {"MPI_BOR", MPI_BOR, GBIT(G_CINT) | GBIT(G_FINT) | GBIT(G_BYTE)},
      {"MPI_BXOR", MPI_BXOR, GBIT(G_CINT) | GBIT(G_FINT) | GBIT(G_BYTE)},
  };
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) out[i] = all[i];
  return (int)(sizeof all / sizeof all[0]);
}

/* Input of rank r at element i for op index `op` (order of test_ops). Every value and every
 * partial result stays within int8/uint8 and is exact in float. */
static inline void test_value(int op, const test_type_t* t, int r, size_t i, long double* re,
                              long double* im) {
  long ii = (long)(i % 1000003);
  *re = 0;
  *im = 0;
  switch (op) {
    case 0: /* SUM */
      *re = (long double)((r + ii) % 3 - (t->is_signed ? 1 : 0));
      if (G_COMPLEX == t->group) *im = (long double)((ii + 2 * r) % 3);
      break;
    case 1: /* PROD: at most three factors of 2 (or 1+i) */
      if (G_COMPLEX == t->group) {
        *re = 1;
        *im = (r < 3 && (ii + r) % 2) ? 1 : 0;
      } else {
        *re = (r < 3 && (ii + r) % 4 == 0) ? 2 : 1;
        if (t->is_signed && (ii + 2 * r) % 5 == 0) *re = -*re;
      }
      break;
    case 2: /* MAX */
    case 3: /* MIN */
      *re = (long double)((ii * 7 + r * 13) % 23 - (t->is_signed ? 11 : 0));
      break;
    case 4: /* LAND */
    case 5: /* LOR */
    case 6: /* LXOR */
      if (ii % 4 == 0) {
        *re = (long double)(1 + r % 3);
      } else {
        *re = (ii + r) % 3 == 0 ? 0 : (long double)(1 + ii % 5);
      }
      if (G_BOOL == t->group) *re = *re != 0;
      break;
    default: /* BAND, BOR, BXOR */
      *re = (long double)((ii * 37 + r * 101 + 11) & 0x7f);
      break;
  }
}

/* acc = acc op v, with MPI's meaning of each op. */
static inline void test_combine(int op, long double* acc_re, long double* acc_im, long double re,
                                long double im) {
  long long a = (long long)*acc_re, b = (long long)re;
  switch (op) {
    case 0:
      *acc_re += re;
      *acc_im += im;
      break;
    case 1: {
      long double r = *acc_re * re - *acc_im * im;
      long double i = *acc_re * im + *acc_im * re;
      *acc_re = r;
      *acc_im = i;
      break;
    }
    case 2:
      if (re > *acc_re) *acc_re = re;
      break;
    case 3:
      if (re < *acc_re) *acc_re = re;
      break;
    case 4:
      *acc_re = (a != 0 && b != 0) ? 1 : 0;
      break;
    case 5:
      *acc_re = (a != 0 || b != 0) ? 1 : 0;
      break;
    case 6:
      *acc_re = ((a != 0) != (b != 0)) ? 1 : 0;
      break;
    case 7:
      *acc_re = (long double)(a & b);
      break;
    case 8:
      *acc_re = (long double)(a | b);
      break;
    default:
      *acc_re = (long double)(a ^ b);
      break;
  }
}

/* The reduction over ranks 0..p-1 in rank order of element i. */
static inline void test_expected(int op, const test_type_t* t, int p, size_t i, long double* re,
                                 long double* im) {
  test_value(op, t, 0, i, re, im);
  for (int r = 1; r < p; ++r) {
    long double vre, vim;
    test_value(op, t, r, i, &vre, &vim);
    test_combine(op, re, im, vre, vim);
  }
}

#endif /* TESTS_MPI_MPI_VALUES_H */
