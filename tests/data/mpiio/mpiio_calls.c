/* mpiio_calls DIR — the MPI-IO calls of tests/test_profile_mpiio.py: every rank makes independent,
 * collective, split-collective and non-blocking reads and writes of a shared file opened with hints, sets a
 * view, syncs and sets its size; writes, preallocates and reads a file of its own (opened on MPI_COMM_SELF);
 * writes a file through the shared file pointer; writes a file by collective calls alone; and makes the
 * MPI-IO calls not made yet, once each, on a fifth file.
 *
 * It prints, per rank, each call's return code and the bytes its status says it moved ("R name rc=… n=…"),
 * and at the end what it did ("TALLY rank {json}"): per file, the counts and bytes of the calls that
 * succeeded, under the names of the MPIIO counters they should land in. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

enum { OPENS_C, OPENS_I, IW, IR, CW, CR, SW, SR, NW, NR, SYNCS, VIEWS, SIZES, PREALLOC, BW, BR, HINTS, SPLIT_ENDS,
       MODE, COMM, SET_INFOS, GET_INFOS, DELETES, NT };
static const char *const NAMES[NT] = {
    "MPIIO_COLL_OPENS", "MPIIO_INDEP_OPENS", "MPIIO_INDEP_WRITES", "MPIIO_INDEP_READS", "MPIIO_COLL_WRITES",
    "MPIIO_COLL_READS", "MPIIO_SPLIT_WRITES", "MPIIO_SPLIT_READS", "MPIIO_NB_WRITES", "MPIIO_NB_READS",
    "MPIIO_SYNCS", "MPIIO_VIEWS", "MPIIO_SET_SIZES", "MPIIO_PREALLOCATES", "MPIIO_BYTES_WRITTEN",
    "MPIIO_BYTES_READ", "MPIIO_HINTS", "MPIIO_SPLIT_ENDS", "MPIIO_MODE", "MPIIO_OPEN_COMM_SIZE",
    "MPIIO_SET_INFOS", "MPIIO_GET_INFOS", "MPIIO_DELETES" };

#define NFILES 6
static const char *const FILES[NFILES] = { "shared.dat", "own", "ordered.dat", "coll.dat", "every.dat",
                                           "gone.dat" };
static long tally[NFILES][NT];
static int rank, size, failures;
static int ibuf[1000];
static char cbuf[65536];

static void said(const char *what, int rc, MPI_Status *st)
{
    int n = -1;
    if (st != NULL && rc == MPI_SUCCESS)
        MPI_Get_count(st, MPI_BYTE, &n);
    printf("R %d %s rc=%d n=%d\n", rank, what, rc, n);
    failures += rc != MPI_SUCCESS;
}

/* A call's result, and its counts when it succeeded. */
static void did(int file, int rc, int counter, long bytes_counter, long bytes)
{
    if (rc != MPI_SUCCESS)
        return;
    if (counter >= 0)
        tally[file][counter]++;
    if (bytes_counter >= 0)
        tally[file][bytes_counter] += bytes;
}

/* One call: its result printed, its counts tallied (in counter, and bytes in bytes_counter) when it succeeded. */
#define CALL(file, what, counter, bytes_counter, bytes, status, call) \
    do { \
        rc = (call); \
        said(what, rc, status); \
        did(file, rc, counter, bytes_counter, bytes); \
    } while (0)
#define WAIT() \
    do { \
        rc = MPI_Wait(&req, &st); \
        said("wait", rc, &st); \
    } while (0)

static MPI_File open_file(int file, MPI_Comm comm, int amode, MPI_Info info)
{
    char path[4096];
    MPI_File fh = MPI_FILE_NULL;
    extern const char *dir;
    snprintf(path, sizeof path, "%s/%s", dir, FILES[file]);
    if (file == 1)
        snprintf(path, sizeof path, "%s/own.%d", dir, rank);
    int rc = MPI_File_open(comm, path, amode, info, &fh);
    said("open", rc, NULL);
    int n = 1;
    MPI_Comm_size(comm, &n);
    did(file, rc, n == 1 ? OPENS_I : OPENS_C, -1, 0);
    if (rc == MPI_SUCCESS) {
        tally[file][MODE] = amode;
        tally[file][COMM] = n;
        tally[file][HINTS] += info != MPI_INFO_NULL;
    }
    return fh;
}

const char *dir;

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2) {
        MPI_Finalize();
        return 2;
    }
    dir = argv[1];
    for (int i = 0; i < 1000; i++)
        ibuf[i] = rank * 1000 + i;
    memset(cbuf, 'a' + rank, sizeof cbuf);
    MPI_Status st;
    MPI_Request req;
    int rc;

    /* the shared file, opened with hints; each rank has its 64 KiB region */
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "cb_nodes", "1");
    MPI_Info_set(info, "cb_buffer_size", "65536");
    MPI_Info_set(info, "romio_cb_write", "enable");
    int amode = MPI_MODE_RDWR | MPI_MODE_CREATE;
    MPI_File fh = open_file(0, MPI_COMM_WORLD, amode, info);
    MPI_Info_free(&info);
    MPI_Offset base = (MPI_Offset)rank * 65536;
    for (int i = 0; i < 4; i++) {
        CALL(0, "write_at_all", CW, BW, 4000, &st,
             MPI_File_write_at_all(fh, base + i * 4000, ibuf, 1000, MPI_INT, &st));
    }
    for (int i = 0; i < 3; i++) {
        CALL(0, "write_at", IW, BW, 100, &st,
             MPI_File_write_at(fh, base + 16000 + i * 100, cbuf, 100, MPI_BYTE, &st));
    }
    for (int i = 0; i < 2; i++) {
        CALL(0, "write_at_all_begin", SW, BW, 1024, NULL,
             MPI_File_write_at_all_begin(fh, base + 16300 + i * 1024, cbuf, 1024, MPI_BYTE));
        CALL(0, "write_at_all_end", SPLIT_ENDS, -1, 0, &st, MPI_File_write_at_all_end(fh, cbuf, &st));
    }
    for (int i = 0; i < 2; i++) {
        CALL(0, "iwrite_at", NW, BW, 200, NULL,
             MPI_File_iwrite_at(fh, base + 18348 + i * 200, cbuf, 200, MPI_BYTE, &req));
        WAIT();
    }
    CALL(0, "iwrite_at_all", NW, BW, 300, NULL,
         MPI_File_iwrite_at_all(fh, base + 18748, cbuf, 300, MPI_BYTE, &req));
    WAIT();
    CALL(0, "sync", SYNCS, -1, 0, NULL, MPI_File_sync(fh));
    for (int i = 0; i < 2; i++) {
        CALL(0, "read_at_all", CR, BR, 4000, &st,
             MPI_File_read_at_all(fh, base + i * 4000, ibuf, 1000, MPI_INT, &st));
    }
    CALL(0, "read_at", IR, BR, 100, &st, MPI_File_read_at(fh, base + 16000, cbuf, 100, MPI_BYTE, &st));
    CALL(0, "iread_at", NR, BR, 100, NULL, MPI_File_iread_at(fh, base + 16100, cbuf, 100, MPI_BYTE, &req));
    WAIT();
    CALL(0, "read_at_all_begin", SR, BR, 1024, NULL,
         MPI_File_read_at_all_begin(fh, base + 16300, cbuf, 1024, MPI_BYTE));
    CALL(0, "read_at_all_end", SPLIT_ENDS, -1, 0, &st, MPI_File_read_at_all_end(fh, cbuf, &st));
    memset(cbuf, 'a' + rank, sizeof cbuf);
    CALL(0, "set_view", VIEWS, -1, 0, NULL,
         MPI_File_set_view(fh, base + 32768, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    CALL(0, "write_all", CW, BW, 512, &st, MPI_File_write_all(fh, cbuf, 512, MPI_BYTE, &st));
    rc = MPI_File_seek(fh, 0, MPI_SEEK_SET);
    said("seek", rc, NULL);
    CALL(0, "read_all", CR, BR, 512, &st, MPI_File_read_all(fh, cbuf, 512, MPI_BYTE, &st));
    CALL(0, "write", IW, BW, 64, &st, MPI_File_write(fh, cbuf, 64, MPI_BYTE, &st));
    CALL(0, "set_size", SIZES, -1, 0, NULL, MPI_File_set_size(fh, (MPI_Offset)size * 65536));
    rc = MPI_File_close(&fh);
    said("close", rc, NULL);

    /* a file of the rank's own, opened on MPI_COMM_SELF (independent opens); preallocated here, as Open MPI
     * 4.1's OMPIO can hang in a preallocate of a file shared by several ranks */
    fh = open_file(1, MPI_COMM_SELF, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL);
    for (int i = 0; i < 10; i++) {
        CALL(1, "write", IW, BW, 65536, &st, MPI_File_write(fh, cbuf, 65536, MPI_BYTE, &st));
    }
    CALL(1, "preallocate", PREALLOC, -1, 0, NULL, MPI_File_preallocate(fh, 11 * 65536));
    rc = MPI_File_close(&fh);
    said("close", rc, NULL);
    fh = open_file(1, MPI_COMM_SELF, MPI_MODE_RDONLY, MPI_INFO_NULL);
    for (int i = 0; i < 10; i++) {
        CALL(1, "read", IR, BR, 65536, &st, MPI_File_read(fh, cbuf, 65536, MPI_BYTE, &st));
    }
    rc = MPI_File_close(&fh);
    said("close", rc, NULL);

    /* the shared file pointer: ordered (collective) and shared (independent) writes */
    fh = open_file(2, MPI_COMM_WORLD, MPI_MODE_WRONLY | MPI_MODE_CREATE, MPI_INFO_NULL);
    CALL(2, "write_ordered", CW, BW, 100, &st, MPI_File_write_ordered(fh, cbuf, 100, MPI_BYTE, &st));
    memset(cbuf, 's', 50); /* the same bytes from every rank: the order of shared writes is the MPI's choice */
    CALL(2, "write_shared", IW, BW, 50, &st, MPI_File_write_shared(fh, cbuf, 50, MPI_BYTE, &st));
    rc = MPI_File_close(&fh);
    said("close", rc, NULL);

    /* a file written by collective calls only, the ranks' pieces interleaved: where the MPI library
     * aggregates (collective buffering), fewer ranks than these write it to the file system */
    fh = open_file(3, MPI_COMM_WORLD, MPI_MODE_WRONLY | MPI_MODE_CREATE, MPI_INFO_NULL);
    for (int i = 0; i < 4; i++) {
        CALL(3, "write_at_all", CW, BW, 1000, &st,
             MPI_File_write_at_all(fh, ((MPI_Offset)i * size + rank) * 1000, cbuf, 1000, MPI_BYTE, &st));
    }
    rc = MPI_File_close(&fh);
    said("close", rc, NULL);

    /* the calls not made above, once each: through the shared file pointer (the same view on every rank;
     * the shared writes hold the same bytes on every rank, as their order is the MPI's choice), then
     * through the individual pointer of a view of the rank's own */
    fh = open_file(4, MPI_COMM_WORLD, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL);
    memset(cbuf, 's', 40);
    CALL(4, "write_ordered_begin", SW, BW, 40, NULL, MPI_File_write_ordered_begin(fh, cbuf, 40, MPI_BYTE));
    CALL(4, "write_ordered_end", SPLIT_ENDS, -1, 0, &st, MPI_File_write_ordered_end(fh, cbuf, &st));
    CALL(4, "iwrite_shared", NW, BW, 10, NULL, MPI_File_iwrite_shared(fh, cbuf, 10, MPI_BYTE, &req));
    WAIT();
    CALL(4, "sync", SYNCS, -1, 0, NULL, MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    rc = MPI_File_seek_shared(fh, 0, MPI_SEEK_SET);
    said("seek_shared", rc, NULL);
    CALL(4, "read_ordered", CR, BR, 10, &st, MPI_File_read_ordered(fh, cbuf, 10, MPI_BYTE, &st));
    CALL(4, "read_ordered_begin", SR, BR, 10, NULL, MPI_File_read_ordered_begin(fh, cbuf, 10, MPI_BYTE));
    CALL(4, "read_ordered_end", SPLIT_ENDS, -1, 0, &st, MPI_File_read_ordered_end(fh, cbuf, &st));
    CALL(4, "read_shared", IR, BR, 10, &st, MPI_File_read_shared(fh, cbuf, 10, MPI_BYTE, &st));
    CALL(4, "iread_shared", NR, BR, 10, NULL, MPI_File_iread_shared(fh, cbuf, 10, MPI_BYTE, &req));
    WAIT();
    MPI_Barrier(MPI_COMM_WORLD);
    memset(cbuf, 'a' + rank, sizeof cbuf);
    CALL(4, "set_view", VIEWS, -1, 0, NULL,
         MPI_File_set_view(fh, 4096 + (MPI_Offset)rank * 4096, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    CALL(4, "write_all_begin", SW, BW, 100, NULL, MPI_File_write_all_begin(fh, cbuf, 100, MPI_BYTE));
    CALL(4, "write_all_end", SPLIT_ENDS, -1, 0, &st, MPI_File_write_all_end(fh, cbuf, &st));
    CALL(4, "iwrite", NW, BW, 100, NULL, MPI_File_iwrite(fh, cbuf, 100, MPI_BYTE, &req));
    WAIT();
    CALL(4, "iwrite_all", NW, BW, 100, NULL, MPI_File_iwrite_all(fh, cbuf, 100, MPI_BYTE, &req));
    WAIT();
    rc = MPI_File_seek(fh, 0, MPI_SEEK_SET);
    said("seek", rc, NULL);
    CALL(4, "read_all_begin", SR, BR, 100, NULL, MPI_File_read_all_begin(fh, cbuf, 100, MPI_BYTE));
    CALL(4, "read_all_end", SPLIT_ENDS, -1, 0, &st, MPI_File_read_all_end(fh, cbuf, &st));
    CALL(4, "iread", NR, BR, 100, NULL, MPI_File_iread(fh, cbuf, 100, MPI_BYTE, &req));
    WAIT();
    CALL(4, "iread_all", NR, BR, 100, NULL, MPI_File_iread_all(fh, cbuf, 100, MPI_BYTE, &req));
    WAIT();
    CALL(4, "iread_at_all", NR, BR, 100, NULL, MPI_File_iread_at_all(fh, 0, cbuf, 100, MPI_BYTE, &req));
    WAIT();
    MPI_Info used;
    MPI_Info_create(&info);
    MPI_Info_set(info, "cb_nodes", "1");
    CALL(4, "set_info", SET_INFOS, HINTS, 1, NULL, MPI_File_set_info(fh, info));
    CALL(4, "get_info", GET_INFOS, -1, 0, NULL, MPI_File_get_info(fh, &used));
    if (rc == MPI_SUCCESS)
        MPI_Info_free(&used);
    MPI_Info_free(&info);
    rc = MPI_File_close(&fh);
    said("close", rc, NULL);

    /* a file made, written and closed, then deleted by rank 0 */
    fh = open_file(5, MPI_COMM_WORLD, MPI_MODE_WRONLY | MPI_MODE_CREATE, MPI_INFO_NULL);
    CALL(5, "write_at_all", CW, BW, 10, &st,
         MPI_File_write_at_all(fh, (MPI_Offset)rank * 10, cbuf, 10, MPI_BYTE, &st));
    rc = MPI_File_close(&fh);
    said("close", rc, NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        char gone[4096];
        snprintf(gone, sizeof gone, "%s/%s", dir, FILES[5]);
        CALL(5, "delete", DELETES, -1, 0, NULL, MPI_File_delete(gone, MPI_INFO_NULL));
    }

    printf("TALLY %d {", rank);
    for (int f = 0; f < NFILES; f++) {
        printf("%s\"%s\": {", f ? ", " : "", FILES[f]);
        for (int k = 0; k < NT; k++)
            printf("%s\"%s\": %ld", k ? ", " : "", NAMES[k], tally[f][k]);
        printf("}");
    }
    printf("}\n");
    fflush(stdout);
    MPI_Finalize();
    return failures != 0;
}
