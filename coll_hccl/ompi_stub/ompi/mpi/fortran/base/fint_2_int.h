/*
 * Stand-in for Open MPI's ompi/mpi/fortran/base/fint_2_int.h, which ompi/op/op.h includes but no
 * Open MPI package installs (upstream lists it only among the Fortran library's sources). op.h
 * uses just OMPI_INT_2_FINT, to pass a count to Fortran user ops; coll_hccl needs op.h because the
 * request type the MPI layer requires (ompi_coll_base_nbc_request_t) is declared next to it.
 * Written for coll_hccl, not copied: the conversion below is exact whatever the Fortran INTEGER
 * size.
 */
#ifndef COLL_HCCL_STUB_FINT_2_INT_H
#define COLL_HCCL_STUB_FINT_2_INT_H

#define OMPI_INT_2_FINT(a) ((MPI_Fint)(a))

#endif
