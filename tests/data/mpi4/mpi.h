/* tests/test_profile_mpiio.py: Open MPI 4.1's mpi.h made to declare MPI 4 and its large-count MPI_File_*_c
 * prototypes, to compile the runtime's guarded MPI-4 wrappers (never to run them). */
#include_next <mpi.h>
#undef MPI_VERSION
#define MPI_VERSION 4
#define P(name, ...) int MPI_File_##name##_c(__VA_ARGS__);
P(read, MPI_File, void *, MPI_Count, MPI_Datatype, MPI_Status *)
P(write, MPI_File, const void *, MPI_Count, MPI_Datatype, MPI_Status *)
P(read_at, MPI_File, MPI_Offset, void *, MPI_Count, MPI_Datatype, MPI_Status *)
P(write_at, MPI_File, MPI_Offset, const void *, MPI_Count, MPI_Datatype, MPI_Status *)
P(read_all, MPI_File, void *, MPI_Count, MPI_Datatype, MPI_Status *)
P(write_all, MPI_File, const void *, MPI_Count, MPI_Datatype, MPI_Status *)
P(read_at_all, MPI_File, MPI_Offset, void *, MPI_Count, MPI_Datatype, MPI_Status *)
P(write_at_all, MPI_File, MPI_Offset, const void *, MPI_Count, MPI_Datatype, MPI_Status *)
P(read_shared, MPI_File, void *, MPI_Count, MPI_Datatype, MPI_Status *)
P(write_shared, MPI_File, const void *, MPI_Count, MPI_Datatype, MPI_Status *)
P(read_ordered, MPI_File, void *, MPI_Count, MPI_Datatype, MPI_Status *)
P(write_ordered, MPI_File, const void *, MPI_Count, MPI_Datatype, MPI_Status *)
P(read_all_begin, MPI_File, void *, MPI_Count, MPI_Datatype)
P(write_all_begin, MPI_File, const void *, MPI_Count, MPI_Datatype)
P(read_at_all_begin, MPI_File, MPI_Offset, void *, MPI_Count, MPI_Datatype)
P(write_at_all_begin, MPI_File, MPI_Offset, const void *, MPI_Count, MPI_Datatype)
P(read_ordered_begin, MPI_File, void *, MPI_Count, MPI_Datatype)
P(write_ordered_begin, MPI_File, const void *, MPI_Count, MPI_Datatype)
P(iread, MPI_File, void *, MPI_Count, MPI_Datatype, MPI_Request *)
P(iwrite, MPI_File, const void *, MPI_Count, MPI_Datatype, MPI_Request *)
P(iread_at, MPI_File, MPI_Offset, void *, MPI_Count, MPI_Datatype, MPI_Request *)
P(iwrite_at, MPI_File, MPI_Offset, const void *, MPI_Count, MPI_Datatype, MPI_Request *)
P(iread_all, MPI_File, void *, MPI_Count, MPI_Datatype, MPI_Request *)
P(iwrite_all, MPI_File, const void *, MPI_Count, MPI_Datatype, MPI_Request *)
P(iread_at_all, MPI_File, MPI_Offset, void *, MPI_Count, MPI_Datatype, MPI_Request *)
P(iwrite_at_all, MPI_File, MPI_Offset, const void *, MPI_Count, MPI_Datatype, MPI_Request *)
P(iread_shared, MPI_File, void *, MPI_Count, MPI_Datatype, MPI_Request *)
P(iwrite_shared, MPI_File, const void *, MPI_Count, MPI_Datatype, MPI_Request *)
#undef P
