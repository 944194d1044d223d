#!/usr/bin/env bash
# On a GPU machine without registries, after scripts/fetch_gpu_deps.sh filled .gpu-deps/ here and
# it was carried there: unpacks the Debian packages (never overwriting one of the machine's
# files), points the build at the CUDA toolkit's or pip's cuDNN and NCCL, and builds for this
# GPU's architecture only, on every core. Then: scripts/run_gpu_checks.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v nvcc >/dev/null || export PATH=$PATH:/usr/local/cuda/bin
echo "== machine"; nvidia-smi -L; nvcc --version | tail -1; g++ --version | head -1
python3 -c "import sys, sysconfig; print(sys.version.split()[0], sysconfig.get_paths()['include'])"
test -f .gpu-deps/include/cudnn_frontend.h || { echo "rerun scripts/fetch_gpu_deps.sh"; exit 1; }
echo "== packages from .gpu-deps"
# Every package, not only those dpkg lacks: a -dev package needs its own run-time files (TBB's
# CMake files name libtbb.so.12.8) even where the machine has another version of them.
tmp=$(mktemp -d)
for deb in .gpu-deps/*.deb; do dpkg-deb -x "$deb" "$tmp"; done
# Debian's packages may still ship files under /lib; merged-/usr systems link /lib to usr/lib.
for d in lib lib64 bin sbin; do
  if [ -d "$tmp/$d" ] && [ ! -L "$tmp/$d" ]; then
    mkdir -p "$tmp/usr/$d" && cp -a "$tmp/$d/." "$tmp/usr/$d/" && rm -rf "${tmp:?}/$d"
  fi
done
cp -an "$tmp/." / || echo "(cp: some paths were left as the machine has them)"
rm -rf "$tmp"
# The links that OpenBLAS's postinst makes with update-alternatives (dpkg-deb -x runs no scripts):
# without them no libopenblas.so or libopenblas.so.0, and no liblapack.so.3 for CoinUtils.
a=/usr/lib/x86_64-linux-gnu
for l in libopenblas.so libopenblas.so.0 libblas.so libblas.so.3 liblapack.so liblapack.so.3; do
  [ -e "$a/$l" ] || [ ! -e "$a/openblas-pthread/$l" ] || ln -sfn "openblas-pthread/$l" "$a/$l"
done
# zlib1g-dev's libz.so names Debian's /lib/x86_64-linux-gnu/libz.so.1.2.13.
[ -e "$a/libz.so" ] || ln -sfn /lib/x86_64-linux-gnu/libz.so.1 "$a/libz.so"
ldconfig

# cuDNN and NCCL: the toolkit's when it has them, else the ones PyTorch's wheels bring.
cuda_inc=$(dirname "$(command -v nvcc)")/../include
defines=(-Ccmake.define.CMAKE_CUDA_ARCHITECTURES="$(nvidia-smi --query-gpu=compute_cap \
  --format=csv,noheader | head -1 | tr -d .)")
for lib in cudnn nccl; do
  [ -f "$cuda_inc/$lib.h" ] && continue
  dir=$(python3 -c "import nvidia.$lib as m; print(list(m.__path__)[0])")
  so=$(ls "$dir"/lib/lib$lib.so* | head -1)
  up=${lib^^}
  defines+=(-Ccmake.define.${up}_INCLUDE_DIR="$dir/include" -Ccmake.define.${up}_LIBRARY="$so")
  echo "$lib from $dir"
done
defines+=(-Ccmake.define.CUDNN_FRONTEND_INCLUDE_DIR="$PWD/.gpu-deps/include")
# The installed library finds pip's cuDNN and NCCL through its run path.
defines+=(-Ccmake.define.CMAKE_INSTALL_RPATH_USE_LINK_PATH=ON)
echo "== build"
# --no-index: nothing to fetch there, and pip would otherwise retry an unreachable index.
time scripts/build.sh --no-index "${defines[@]}"
# A copy of the C++ runtime in the library crashed every error message on such a machine
# (CMakeLists.txt): say which link input brought it, if it is back.
for name in liboneflowlike.so liboneflowlike_cuda.so; do
  lib=build/py/$name
  if nm -D --defined-only "$lib" | grep -q _ZNSt6locale7classicEv; then
    echo "!! $lib carries libstdc++'s own symbols; g++ finds: $(g++ -print-file-name=libstdc++.so)"
    cmd=$(cd build/py && ninja -t commands "$name" | tail -1)
    cmd=${cmd% && :}  # ninja's command is ": && g++ ... && :"
    relink=${cmd/-o $name/-o /tmp/relink.so}
    (cd build/py && eval "$relink -Wl,-y,_ZNSt6locale7classicEv")
  fi
done
