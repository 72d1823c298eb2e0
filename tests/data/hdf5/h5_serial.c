/* h5_serial.c: HDF5 calls of known counts and sizes, one process (tests/test_profile_hdf5.py holds what the
 * profiler must record of them). Writes DIR/s.h5; prints what it read, so that a run with the profiler can be
 * compared with one without. */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>

#define NX 100
#define NY 200
#define NV 1000

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "h5_serial: %s failed\n", what);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/s.h5", argc > 1 ? argv[1] : ".");
    static double grid[NX][NY], back[NX][NY];
    static int vec[NV], vback[NV];
    for (int i = 0; i < NX; i++)
        for (int j = 0; j < NY; j++)
            grid[i][j] = i * NY + j;
    for (int i = 0; i < NV; i++)
        vec[i] = i;

    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    check(f >= 0, "H5Fcreate");
    hsize_t dims[2] = { NX, NY }, chunk[2] = { 10, 50 };
    hid_t space = H5Screate_simple(2, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, chunk);
    hid_t d = H5Dcreate2(f, "grid", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    check(d >= 0, "H5Dcreate2 grid");
    /* 1: everything (H5S_ALL), 160000 B */
    check(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, grid) >= 0, "write all");
    /* 2: a regular hyperslab, rows 0-9: 16000 B */
    hid_t fs = H5Scopy(space);
    hsize_t start[2] = { 0, 0 }, count[2] = { 10, NY };
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t ms = H5Screate_simple(2, count, NULL);
    check(H5Dwrite(d, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, grid) >= 0, "write regular");
    H5Sclose(ms);
    /* 3: an irregular hyperslab, two 5x5 blocks: 50 points, 400 B */
    hsize_t b1[2] = { 20, 20 }, b2[2] = { 40, 100 }, five[2] = { 5, 5 };
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, b1, NULL, five, NULL);
    H5Sselect_hyperslab(fs, H5S_SELECT_OR, b2, NULL, five, NULL);
    hsize_t fifty = 50;
    ms = H5Screate_simple(1, &fifty, NULL);
    check(H5Dwrite(d, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, grid) >= 0, "write irregular");
    H5Sclose(ms);
    /* 4: 7 points: 56 B */
    hsize_t pts[7][2] = { { 0, 1 }, { 2, 3 }, { 4, 5 }, { 6, 7 }, { 8, 9 }, { 10, 11 }, { 99, 199 } };
    H5Sselect_elements(fs, H5S_SELECT_SET, 7, &pts[0][0]);
    hsize_t seven = 7;
    ms = H5Screate_simple(1, &seven, NULL);
    check(H5Dwrite(d, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, grid) >= 0, "write points");
    H5Sclose(ms);
    /* read everything back: 160000 B */
    check(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, back) >= 0, "read all");
    check(H5Dflush(d) >= 0, "H5Dflush");
    H5Dclose(d);

    hid_t g = H5Gcreate2(f, "g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t nv = NV;
    hid_t vs = H5Screate_simple(1, &nv, NULL);
    hid_t v = H5Dcreate2(g, "vec", H5T_NATIVE_INT, vs, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    check(v >= 0, "H5Dcreate2 vec");
    check(H5Dwrite(v, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, vec) >= 0, "write vec"); /* 4000 B */
    check(H5Fflush(f, H5F_SCOPE_GLOBAL) >= 0, "H5Fflush");
    H5Dclose(v);
    H5Gclose(g);
    /* the deprecated create: shorts, no I/O */
    hid_t od = H5Dcreate1(f, "old", H5T_NATIVE_SHORT, vs, H5P_DEFAULT);
    check(od >= 0, "H5Dcreate1");
    H5Dclose(od);
    /* A failed open and a failed read: the program prints the error stack they left (the profiler's own
     * queries, had it made any after them, would have emptied it). */
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    check(H5Dopen2(f, "nope", H5P_DEFAULT) < 0, "H5Dopen2 nope");
    H5Eprint2(H5E_DEFAULT, stdout);
    check(H5Dread(-1, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, vback) < 0, "H5Dread -1");
    H5Eprint2(H5E_DEFAULT, stdout);
    H5Pclose(dcpl);
    H5Sclose(fs);
    H5Sclose(space);
    H5Sclose(vs);
    check(H5Fclose(f) >= 0, "H5Fclose");

    f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    check(f >= 0, "H5Fopen");
    v = H5Dopen2(f, "/g/vec", H5P_DEFAULT);
    check(H5Dread(v, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, vback) >= 0, "read vec"); /* 4000 B */
    check(H5Idec_ref(v) == 0, "H5Idec_ref"); /* the last reference: a close, as h5py closes */
    /* the deprecated open, and one regular row: 1600 B */
    d = H5Dopen1(f, "grid");
    check(d >= 0, "H5Dopen1");
    fs = H5Dget_space(d);
    hsize_t row[2] = { 3, 0 }, one[2] = { 1, NY };
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, row, NULL, one, NULL);
    ms = H5Screate_simple(2, one, NULL);
    check(H5Dread(d, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, back) >= 0, "read row");
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(d);
    check(H5Fclose(f) >= 0, "H5Fclose 2");
    long sum = 0;
    for (int i = 0; i < NV; i++)
        sum += vback[i];
    printf("vec sum %ld row3 first %g last %g\n", sum, back[0][0], back[0][NY - 1]);
    return 0;
}
