/* h5_sys.c: a shared library linked to the system's libhdf5, for h5py_two_libs.py: a process with h5py's own
 * HDF5 and this one's. Writes PATH with one dataset "/sys" of 10 ints; returns 0 when every call succeeded. */
#include <hdf5.h>

int h5_sys_write(const char *path)
{
    int data[10] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 };
    hsize_t n = 10;
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0)
        return 1;
    hid_t s = H5Screate_simple(1, &n, NULL);
    hid_t d = H5Dcreate2(f, "sys", H5T_NATIVE_INT, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int bad = d < 0 || H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0;
    bad |= H5Dclose(d) < 0;
    H5Sclose(s);
    bad |= H5Fclose(f) < 0;
    return bad;
}
