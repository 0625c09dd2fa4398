/*
 * coll_hccl_types.c - MPI datatypes and ops as the engine sees them.
 *
 * Predefined op on predefined type: the engine's own enums (its kernels). User op: the engine calls
 * back into Open MPI's reduction (ompi_op_reduce), which handles any datatype, as long as the
 * elements are contiguous in memory. The collectives reduce everything else on staged whole
 * extents (mca_coll_hccl_map_any_reduction, coll_hccl_rooted.c).
 * Open MPI 4.1 has no MPI_FLOAT16/bfloat16 type, so HCCL_DT_FLOAT16/BFLOAT16 are never produced.
 */
#include "coll_hccl.h"

#include <limits.h> /* CHAR_MIN */
#include <stdatomic.h>

/* What a predefined type holds; the width comes from the type's size, so that C types whose size
 * depends on the ABI (long, wchar_t ...) and Fortran kinds map without assumptions. */
typedef enum { K_SINT, K_UINT, K_FLOAT, K_LDOUBLE, K_COMPLEX, K_BOOL, K_BYTE } kind_t;

typedef struct {
  MPI_Datatype type;
  kind_t kind;
} type_kind_t;

static const type_kind_t kinds[] = {
    {MPI_CHAR, CHAR_MIN < 0 ? K_SINT : K_UINT},
    {MPI_SIGNED_CHAR, K_SINT},
    {MPI_UNSIGNED_CHAR, K_UINT},
    {MPI_SHORT, K_SINT},
    {MPI_UNSIGNED_SHORT, K_UINT},
    {MPI_INT, K_SINT},
    {MPI_UNSIGNED, K_UINT},
    {MPI_LONG, K_SINT},
    {MPI_UNSIGNED_LONG, K_UINT},
    {MPI_LONG_LONG_INT, K_SINT},
    {MPI_UNSIGNED_LONG_LONG, K_UINT},
    {MPI_INT8_T, K_SINT},
    {MPI_INT16_T, K_SINT},
    {MPI_INT32_T, K_SINT},
    {MPI_INT64_T, K_SINT},
    {MPI_UINT8_T, K_UINT},
    {MPI_UINT16_T, K_UINT},
    {MPI_UINT32_T, K_UINT},
    {MPI_UINT64_T, K_UINT},
    {MPI_AINT, K_SINT},
    {MPI_OFFSET, K_SINT},
    {MPI_COUNT, K_SINT},
    {MPI_FLOAT, K_FLOAT},
    {MPI_DOUBLE, K_FLOAT},
    {MPI_LONG_DOUBLE, K_LDOUBLE},
    {MPI_C_FLOAT_COMPLEX, K_COMPLEX},
    {MPI_C_DOUBLE_COMPLEX, K_COMPLEX},
    {MPI_CXX_FLOAT_COMPLEX, K_COMPLEX},
    {MPI_CXX_DOUBLE_COMPLEX, K_COMPLEX},
    {MPI_C_BOOL, K_BOOL},
    {MPI_CXX_BOOL, K_BOOL},
    {MPI_BYTE, K_BYTE},
    /* Fortran types usable from C; absent Fortran support gives size 0, which maps to nothing. */
    {MPI_INTEGER, K_SINT},
    {MPI_INTEGER1, K_SINT},
    {MPI_INTEGER2, K_SINT},
    {MPI_INTEGER4, K_SINT},
    {MPI_INTEGER8, K_SINT},
    {MPI_REAL, K_FLOAT},
    {MPI_REAL4, K_FLOAT},
    {MPI_REAL8, K_FLOAT},
    {MPI_DOUBLE_PRECISION, K_FLOAT},
    {MPI_COMPLEX, K_COMPLEX},
    {MPI_DOUBLE_COMPLEX, K_COMPLEX},
    {MPI_COMPLEX8, K_COMPLEX},
    {MPI_COMPLEX16, K_COMPLEX},
};

static bool by_width(kind_t kind, size_t size, hccl_dtype_t* out) {
  static const hccl_dtype_t sints[] = {HCCL_DT_INT8, HCCL_DT_INT16, HCCL_DT_INT32, HCCL_DT_INT64};
  static const hccl_dtype_t uints[] = {HCCL_DT_UINT8, HCCL_DT_UINT16, HCCL_DT_UINT32,
                                       HCCL_DT_UINT64};
  int log2 = 1 == size ? 0 : 2 == size ? 1 : 4 == size ? 2 : 8 == size ? 3 : -1;
  switch (kind) {
    case K_SINT:
    case K_UINT:
      if (log2 < 0) return false;
      *out = K_SINT == kind ? sints[log2] : uints[log2];
      return true;
    case K_FLOAT:
      if (4 != size && 8 != size) return false;
      *out = 4 == size ? HCCL_DT_FLOAT32 : HCCL_DT_FLOAT64;
      return true;
    case K_LDOUBLE:
      *out = HCCL_DT_LONG_DOUBLE;
      return sizeof(long double) == size;
    case K_COMPLEX:
      if (8 != size && 16 != size) return false;
      *out = 8 == size ? HCCL_DT_COMPLEX_FLOAT : HCCL_DT_COMPLEX_DOUBLE;
      return true;
    case K_BOOL:
      *out = HCCL_DT_BOOL;
      return sizeof(_Bool) == size;
    case K_BYTE:
      *out = HCCL_DT_BYTE;
      return 1 == size;
  }
  return false;
}

/* The entry the last lookup found, tried first: a loop passes the same type call after call,
 * and a search walks up to the whole table (MPI_FLOAT is its 23rd entry). The entries never
 * change, so whatever index a thread reads is a valid hint; relaxed is enough. */
static _Atomic size_t last_kind = 0;

static bool map_type(ompi_datatype_t* dtype, hccl_dtype_t* out) {
  enum { kKinds = sizeof kinds / sizeof kinds[0] };
  size_t i = atomic_load_explicit(&last_kind, memory_order_relaxed);
  if (kinds[i].type != dtype) {
    for (i = 0; i < kKinds && kinds[i].type != dtype; ++i) {
    }
    if (kKinds == i) return false;
    atomic_store_explicit(&last_kind, i, memory_order_relaxed);
  }
  size_t size = 0;
  ompi_datatype_type_size(dtype, &size);
  return by_width(kinds[i].kind, size, out);
}

static bool map_op(ompi_op_t* op, hccl_op_t* out) {
  static const struct {
    MPI_Op op;
    hccl_op_t hop;
  } ops[] = {
      {MPI_SUM, HCCL_OP_SUM},   {MPI_PROD, HCCL_OP_PROD}, {MPI_MAX, HCCL_OP_MAX},
      {MPI_MIN, HCCL_OP_MIN},   {MPI_LAND, HCCL_OP_LAND}, {MPI_LOR, HCCL_OP_LOR},
      {MPI_LXOR, HCCL_OP_LXOR}, {MPI_BAND, HCCL_OP_BAND}, {MPI_BOR, HCCL_OP_BOR},
      {MPI_BXOR, HCCL_OP_BXOR},
  };
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; ++i) {
    if (ops[i].op == op) {
      *out = ops[i].hop;
      return true;
    }
  }
  return false;
}

bool mca_coll_hccl_map_reduction(ompi_datatype_t* dtype, ompi_op_t* op, mca_coll_hccl_elem_t* out,
                                 const char** why) {
  ptrdiff_t true_lb = 0, true_extent = 0;
  ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
  ompi_datatype_type_size(dtype, &out->elem_size);
  out->true_lb = true_lb;
  out->user_commutative = 1;

  if (ompi_op_is_intrinsic(op)) {
    if (MPI_MAXLOC == op || MPI_MINLOC == op) {
      *why = "MAXLOC/MINLOC have no engine kernel";
      return false;
    }
    if (!map_op(op, &out->op)) {
      *why = "this predefined op has no engine kernel";
      return false;
    }
    if (!map_type(dtype, &out->dtype)) {
      *why = "this datatype has no engine kernel";
      return false;
    }
    return true;
  }

  /* User op: Open MPI reduces elements in place, so they must lie back to back. */
  if (0 == out->elem_size || !ompi_datatype_is_contiguous_memory_layout(dtype, 2)) {
    *why = "user op on a non-contiguous datatype";
    return false;
  }
  out->op = HCCL_OP_USER;
  out->user_commutative = ompi_op_is_commute(op) ? 1 : 0;
  if (!ompi_datatype_is_predefined(dtype) || !map_type(dtype, &out->dtype)) {
    out->dtype = HCCL_DT_BYTE;
  }
  return true;
}

const char* mca_coll_hccl_dtype_name(hccl_dtype_t t) {
  static const char* const names[HCCL_DT_COUNT] = {
      "int8",        "int16",         "int32",          "int64",    "uint8",   "uint16",
      "uint32",      "uint64",        "float16",        "bfloat16", "float32", "float64",
      "long double", "complex float", "complex double", "bool",     "byte"};
  return (t >= 0 && t < HCCL_DT_COUNT) ? names[t] : "?";
}
