#!/usr/bin/env bash
# Installs what `make test` / `make bench` need when it is missing and we can
# (apt-get as root or through password-less sudo); otherwise says what to install.
# Needed: Open MPI (mpicc, mpirun), the Fashion-MNIST dataset, gnuplot, gzip;
# pkg-config and cmake for tests/install.sh. NO_DEPS=1: install nothing.
set -u
missing=()
command -v mpicc  >/dev/null 2>&1 || missing+=(libopenmpi-dev)
command -v mpirun >/dev/null 2>&1 || missing+=(openmpi-bin)
[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || [ -n "${MNIST_DIR:-}" ] \
    || missing+=(dataset-fashion-mnist)
command -v gnuplot >/dev/null 2>&1 || missing+=(gnuplot-nox)
command -v gzip    >/dev/null 2>&1 || missing+=(gzip)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
command -v cmake   >/dev/null 2>&1 || missing+=(cmake)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ -n "${NO_DEPS:-}" ]; then
    echo "deps: NO_DEPS is set: not installing ${missing[*]}; the parts that need them are skipped"
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then sudo=""; elif sudo -n true 2>/dev/null; then sudo="sudo -n"; else sudo=none; fi
if command -v apt-get >/dev/null 2>&1 && [ "$sudo" != none ]; then
    echo "deps: installing ${missing[*]} with apt-get (NO_DEPS=1 skips this)"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq >/dev/null 2>&1 || true
    if $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then exit 0; fi
    echo "deps: apt-get install failed" >&2
fi
echo "deps: please install: ${missing[*]} (Debian/Ubuntu package names)" >&2
echo "deps: continuing; the parts that need them are skipped" >&2
exit 0
