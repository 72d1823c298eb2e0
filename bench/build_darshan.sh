#!/bin/sh
# build_darshan.sh — builds Darshan (darshan-runtime and darshan-util) from its public source into a scratch
# folder, for side-by-side benchmarks against iolens and for making large Darshan logs. Never inside this
# repository.
#
#   DARSHAN_SRC=SRC bench/build_darshan.sh [DEST]     DEST defaults to $IOLENS_PEERS/darshan or
#                                                     /var/tmp/iolens-peers/darshan
#
# SRC is Darshan's public source: a git directory or checkout (the tag $DARSHAN_TAG, default darshan-3.4.7,
# is archived from it), a source tree, or a release tarball. The runtime is built with MPI (mpicc, Open MPI),
# the MPI-IO, HDF5 (Debian's libhdf5-openmpi-dev, through a prefix of links made in DEST, as Darshan's
# configure wants DIR/include, DIR/lib and DIR/bin/h5dump) and PnetCDF (libpnetcdf-dev) modules, and logs go
# where $DARSHAN_LOGPATH says (or $DARSHAN_LOGFILE, a whole path). The same libdarshan.so serves programs
# without MPI with DARSHAN_ENABLE_NONMPI=1. Needs autoconf, automake, libtool, mpicc, zlib and bzip2
# headers. Prints the install prefix on its last line.
set -eu

dest=${1:-${IOLENS_PEERS:-/var/tmp/iolens-peers}/darshan}
tag=${DARSHAN_TAG:-darshan-3.4.7}
case $dest in
    "$(cd "$(dirname "$0")/.." && pwd)"*) echo "build_darshan.sh: $dest is inside the repository" >&2; exit 2 ;;
esac
prefix=$dest/install
if [ -e "$prefix/lib/libdarshan.so" ] && [ -x "$prefix/bin/darshan-parser" ]; then
    echo "$prefix"
    exit 0
fi
src=${DARSHAN_SRC:-}
if [ -z "$src" ]; then
    echo "build_darshan.sh: set DARSHAN_SRC to Darshan's source (a git directory, a source tree or a tarball)" >&2
    exit 2
fi
mkdir -p "$dest"
tree=$dest/src
rm -rf "$tree"
mkdir -p "$tree"
if [ -f "$src" ]; then
    tar -xf "$src" -C "$tree" --strip-components=1
elif [ -d "$src/.git" ] || [ -f "$src/HEAD" ]; then
    gitdir=$( [ -d "$src/.git" ] && echo "$src/.git" || echo "$src")
    git --git-dir="$gitdir" archive "$tag" | tar -x -C "$tree"
else
    cp -a "$src/." "$tree/"
fi

# Debian keeps parallel HDF5 apart (include/hdf5/openmpi, lib/.../hdf5/openmpi): a prefix of links.
h5=$dest/hdf5-openmpi
mkdir -p "$h5/bin"
h5inc=$(pkg-config --cflags-only-I hdf5-openmpi | tr ' ' '\n' | sed -n 's/^-I//p' | head -1)
h5lib=$(pkg-config --libs-only-L hdf5-openmpi | tr ' ' '\n' | sed -n 's/^-L//p' | head -1)
ln -sfn "$h5inc" "$h5/include"
ln -sfn "$h5lib" "$h5/lib"
ln -sf "$(command -v h5dump)" "$h5/bin/h5dump"
pnc=$dest/pnetcdf
mkdir -p "$pnc"
ln -sfn /usr/include "$pnc/include"
ln -sfn "$(dirname "$(find /usr/lib -name 'libpnetcdf.so' | head -1)")" "$pnc/lib"

cd "$tree"
./prepare.sh >/dev/null 2>&1
mkdir -p build
cd build
../configure -q --prefix="$prefix" CC=mpicc \
    --with-log-path-by-env=DARSHAN_LOGPATH --with-jobid-env=NONE \
    --enable-hdf5-mod --with-hdf5="$h5" --enable-pnetcdf-mod --with-pnetcdf="$pnc" >/dev/null
make -s -j"$(nproc)" >/dev/null 2>&1 || make -j1
make -s install >/dev/null
echo "$prefix"
