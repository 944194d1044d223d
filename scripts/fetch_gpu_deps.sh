#!/usr/bin/env bash
# For a GPU machine that reaches no registry (the device tool's machines have the CUDA toolkit,
# PyTorch and a compiler, but none of our Debian libraries): downloads the Debian packages the
# build needs into .gpu-deps/ (git-ignored), to carry there for scripts/setup_gpu_machine.sh.
# The list is install_deps.sh's libraries (and cuDNN's front-end headers) with their run-time
# dependencies, leaving out what any Linux with a compiler has (libc, libstdc++, zlib's and
# OpenSSL's run-time libraries), and with the -dev packages that the .pc files name: cbc.pc links
# -lbz2 -lz, cpp-httplib.pc requires openssl and zlib (the machine's own files win).
set -euo pipefail
cd "$(dirname "$0")/.."
PKGS="pkg-config pkgconf pkgconf-bin libpkgconf3
  libtbb-dev libtbb12 libtbbmalloc2 libtbbbind-2-5 libhwloc15
  libopenblas-dev libopenblas-pthread-dev libopenblas0 libopenblas0-pthread libgfortran5
  libquadmath0 libbz2-dev zlib1g-dev libssl-dev
  libgloo-dev libgloo0 libibverbs1 libibverbs-dev libnl-3-200 libnl-route-3-200 libnl-3-dev
  libnl-route-3-dev libhiredis0.14 libhiredis-dev
  libgtest-dev googletest
  coinor-libcbc-dev coinor-libcbc3 coinor-libcgl-dev coinor-libcgl1 coinor-libclp-dev
  coinor-libclp1 coinor-libcoinutils-dev coinor-libcoinutils3v5 coinor-libosi-dev
  coinor-libosi1v5
  nlohmann-json3-dev libcpp-httplib-dev libcpp-httplib0.11 libbrotli1 libbrotli-dev libcli11-dev"
rm -rf .gpu-deps
mkdir -p .gpu-deps
ls /var/lib/apt/lists/*Packages* >/dev/null 2>&1 || apt-get update -q
# apt-get download writes into the current folder; _apt cannot write into /work, so it warns.
(cd .gpu-deps && apt-get download -q $PKGS 2>&1 | grep -v "unsandboxed" || true)
test "$(ls .gpu-deps/*.deb | wc -l)" -eq "$(echo $PKGS | wc -w)"
# cuDNN's C++ front end (header-only), as install_deps.sh put it beside the Python packages.
purelib=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
mkdir -p .gpu-deps/include
cp -r "$purelib"/include/cudnn_frontend* "$purelib"/include/cudnn_backend_base.h .gpu-deps/include/
du -sh .gpu-deps
