#!/bin/sh
# build_ior.sh — builds the official IOR 4 (ior, mdtest, md-workbench) from its public source into a scratch
# folder, for side-by-side benchmarks and for making reference data. Never inside this repository.
#
#   bench/build_ior.sh [DEST]        DEST defaults to $IOLENS_PEERS or /var/tmp/iolens-peers
#
# The source is a git checkout of https://github.com/hpc/ior: $IOR_SRC if set (a git directory or a work
# tree), otherwise `git clone` from GitHub. The tag built is $IOR_TAG (default 4.0.0). MPI-IO, HDF5 (Debian's
# libhdf5-openmpi-dev), PnetCDF (libpnetcdf-dev), MMAP and POSIX backends are built in. Needs autoconf,
# automake, libtool and mpicc. Prints the bin directory on its last line.
set -eu

dest=${1:-${IOLENS_PEERS:-/var/tmp/iolens-peers}}
tag=${IOR_TAG:-4.0.0}
case $dest in
    "$(cd "$(dirname "$0")/.." && pwd)"*) echo "build_ior.sh: $dest is inside the repository" >&2; exit 2 ;;
esac
prefix=$dest/ior-$tag
if [ -x "$prefix/bin/ior" ] && [ -x "$prefix/bin/mdtest" ]; then
    echo "$prefix/bin"
    exit 0
fi
mkdir -p "$dest"
src=$dest/ior-$tag-src
rm -rf "$src"
if [ -n "${IOR_SRC:-}" ]; then
    git --git-dir="$( [ -d "$IOR_SRC/.git" ] && echo "$IOR_SRC/.git" || echo "$IOR_SRC")" archive --prefix=ior/ "$tag" |
        tar -x -C "$dest"
    mv "$dest/ior" "$src"
else
    git clone -q --depth 1 --branch "$tag" https://github.com/hpc/ior "$src"
fi
cd "$src"
./bootstrap >/dev/null 2>&1
hdf5_inc=$(pkg-config --cflags-only-I hdf5-openmpi 2>/dev/null || true)
hdf5_lib=$(pkg-config --libs-only-L hdf5-openmpi 2>/dev/null || true)
CPPFLAGS="$hdf5_inc" LDFLAGS="$hdf5_lib" ./configure -q --prefix="$prefix" CC=mpicc \
    --with-mpiio --with-hdf5 --with-ncmpi --with-mmap --with-posix >/dev/null
make -s -j"$(nproc)" >/dev/null 2>&1 || make -j1
make -s install >/dev/null
echo "$prefix/bin"
