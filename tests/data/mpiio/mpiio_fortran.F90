! mpiio_fortran DIR: MPI-IO from Fortran, through mpif.h (Open MPI's mpi_file_*_ entry points, which call
! PMPI_File_* directly) or, built with -DF08, through `use mpi_f08` (mpi_file_*_f08, which call
! ompi_file_*_f). Each rank: a collective open with a hint, 3 collective writes of 1 KiB, 2 independent
! writes of 256 B, 1 non-blocking write of 64 B, a sync, 1 collective read of 1 KiB, a view, a close
! (tests/test_profile_mpiio.py holds the same numbers).
program mpiio_fortran
#ifdef F08
  use mpi_f08
  implicit none
  type(MPI_File) :: fh
  type(MPI_Info) :: info
  type(MPI_Status) :: status
  type(MPI_Request) :: request
#else
  implicit none
  include 'mpif.h'
  integer :: fh, info, request
  integer :: status(MPI_STATUS_SIZE)
#endif
  integer :: ierr, rank, i
  integer(kind=MPI_OFFSET_KIND) :: base, off
  integer :: buf(256)
  character(len=4000) :: dir

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call get_command_argument(1, dir)
  call MPI_Info_create(info, ierr)
  call MPI_Info_set(info, 'cb_nodes', '1', ierr)
  call MPI_File_open(MPI_COMM_WORLD, trim(dir) // '/fortran.dat', ior(MPI_MODE_RDWR, MPI_MODE_CREATE), &
                     info, fh, ierr)
  call MPI_Info_free(info, ierr)
  buf = rank
  base = int(rank, MPI_OFFSET_KIND) * 8192
  do i = 0, 2
     off = base + i * 1024
     call MPI_File_write_at_all(fh, off, buf, 256, MPI_INTEGER, status, ierr)
  end do
  do i = 0, 1
     off = base + 3072 + i * 256
     call MPI_File_write_at(fh, off, buf, 64, MPI_INTEGER, status, ierr)
  end do
  off = base + 3584
  call MPI_File_iwrite_at(fh, off, buf, 16, MPI_INTEGER, request, ierr)
  call MPI_Wait(request, status, ierr)
  call MPI_File_sync(fh, ierr)
  call MPI_File_read_at_all(fh, base, buf, 256, MPI_INTEGER, status, ierr)
  call MPI_File_set_view(fh, base, MPI_BYTE, MPI_BYTE, 'native', MPI_INFO_NULL, ierr)
  call MPI_File_close(fh, ierr)
  print '(A,I0,A,I0)', 'rank ', rank, ' done ', ierr
  call MPI_Finalize(ierr)
end program mpiio_fortran
