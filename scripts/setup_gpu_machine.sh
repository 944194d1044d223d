#!/usr/bin/env bash
# On a GPU machine without registries, after scripts/fetch_gpu_deps.sh filled .gpu-deps/ here and
# it was carried there: unpacks the Debian packages that machine lacks (never overwriting one of
# its files), points the build at the CUDA toolkit's or pip's cuDNN and NCCL, and builds for this
# GPU's architecture only, on every core. Then: scripts/run_gpu_checks.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== machine"; nvidia-smi -L; nvcc --version | tail -1; g++ --version | head -1
python3 -c "import sys, sysconfig; print(sys.version.split()[0], sysconfig.get_paths()['include'])"
echo "== packages from .gpu-deps"
tmp=$(mktemp -d)
for deb in .gpu-deps/*.deb; do
  pkg=$(dpkg-deb -f "$deb" Package)
  if dpkg -s "$pkg" >/dev/null 2>&1; then continue; fi  # the machine's own version stays
  dpkg -x "$deb" "$tmp"
  echo -n "$pkg "
done
echo
# Debian's packages may still ship files under /lib; merged-/usr systems link /lib to usr/lib.
for d in lib lib64 bin sbin; do
  if [ -d "$tmp/$d" ] && [ ! -L "$tmp/$d" ]; then
    mkdir -p "$tmp/usr/$d" && cp -a "$tmp/$d/." "$tmp/usr/$d/" && rm -rf "${tmp:?}/$d"
  fi
done
cp -an "$tmp/." / && rm -rf "$tmp" && ldconfig

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
time scripts/build.sh "${defines[@]}"
