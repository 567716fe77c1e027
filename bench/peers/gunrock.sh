#!/usr/bin/env bash
# A GPU single-source peer of bench/road_bench.py: Gunrock "essentials" (github.com/
# gunrock/gunrock, header-only C++/CUDA, Apache-2.0), whose SSSP is a frontier
# Bellman-Ford (advance with atomicMin, then a bypass filter).  Nothing of it is kept
# in this repository: `prepare` (the default, run in the checkout, no network) takes
# its include/ tree and LICENSE at release 2.1.0, and the src/ tree and LICENSE of
# ModernGPU (its one header dependency, which its CMake fetches at master), out of the
# `fetch` snapshots into .peers/gunrock/ (git-ignored through .git/info/exclude);
# `build` (on the device) compiles our own driver bench/peers/gunrock_sssp.cu against
# those headers with one nvcc line per weight type, no CMake: the driver reads no
# Matrix Market and parses no options, so cxxopts, nlohmann_json and cmake_modules
# (Gunrock's other FetchContent dependencies) are not needed, and CCCL (thrust/cub) is
# the CUDA toolkit's own.  One edit so it builds with CUDA 13, which dropped
# cudaDeviceProp::clockRate and ::memoryClockRate: device_properties.hxx reads them
# only to print the device (and in clock_rate(), which nothing here calls); they read
# as 0.
#
#   bench/peers/gunrock.sh [prepare]   # here: .peers/gunrock/{src,moderngpu}
#   bench/peers/gunrock.sh build       # device: .peers/gunrock/bin/gunrock_sssp_{f32,i32}
#
# Then carry [".peers"] to the device; bench/peers/gpu_peers.py runs the binaries.
#
# Why 2.1.0 (July 2024) and not main: at main (01f125c, after the CUDA/ROCm
# consolidation of January 2026) sssp::run reached only the source on an H200, on
# rome99 and NY alike, with every load balance and weight type (2026-11-24).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)   # no git needed on the device
cd "$root"
commit=530f25443864d04c25286c053d6812a888b4d779        # tag v2.1.0, 2024-07-30
mirror=${GUNROCK_MIRROR:-/work/.mirror/gunrock+gunrock/repo}
mgpu_commit=267cc8d02c03f00f1656f1205c61c946a1e530b0   # master, 2026-01-16 (CUDA 13 fixes)
mgpu_mirror=${MODERNGPU_MIRROR:-/work/.mirror/moderngpu+moderngpu/repo}
dest=.peers/gunrock
arch=${CUDA_ARCH:-90}

case "${1:-prepare}" in
prepare)
  git --git-dir="$mirror" cat-file -e "$commit^{commit}" \
    || { echo "gunrock.sh: commit $commit not in $mirror (fetch github:gunrock/gunrock)" >&2; exit 1; }
  git --git-dir="$mgpu_mirror" cat-file -e "$mgpu_commit^{commit}" \
    || { echo "gunrock.sh: commit $mgpu_commit not in $mgpu_mirror (fetch github:moderngpu/moderngpu)" >&2; exit 1; }
  rm -rf "$dest/src" "$dest/moderngpu"
  mkdir -p "$dest/src" "$dest/moderngpu"
  git --git-dir="$mirror" archive "$commit" include LICENSE | tar -x -C "$dest/src"
  git --git-dir="$mgpu_mirror" archive "$mgpu_commit" src LICENSE.md | tar -x -C "$dest/moderngpu"
  sed -i -e 's/prop\.clockRate/0/g' -e 's/prop\.memoryClockRate/0/g' \
    "$dest/src/include/gunrock/cuda/device_properties.hxx"
  echo "$commit" > "$dest/src/COMMIT"
  du -sh "$dest/src" "$dest/moderngpu"
  ;;
build)
  test -f "$dest/src/COMMIT" || { echo "gunrock.sh: run '$0 prepare' first (no $dest/src)" >&2; exit 1; }
  mkdir -p "$dest/bin"
  # the definitions and release flags Gunrock's CMakeLists puts on its `essentials`
  # target, and the libraries it links
  flags=(-std=c++17 -O3 -arch=sm_$arch -DNDEBUG
         --expt-extended-lambda --expt-relaxed-constexpr --use_fast_math
         --diag-suppress=177,550,20014
         -DSM_TARGET=$arch -DESSENTIALS_VERSION=2.1.0 -DESSENTIALS_COLLECT_METRICS=0
         -DGIT_SHA1="\"$(cat "$dest/src/COMMIT")\""
         -I"$dest/src/include" -I"$dest/moderngpu/src" -Xcompiler=-Wno-unused-function)
  pids=()
  for w in f32:float i32:int; do
    nvcc "${flags[@]}" -DPEER_WEIGHT_T="${w#*:}" bench/peers/gunrock_sssp.cu \
      -o "$dest/bin/gunrock_sssp_${w%%:*}" -lcurand -lcusparse -lcuda &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  ls -la "$dest/bin"
  ;;
*)
  echo "usage: $0 [prepare|build]" >&2; exit 2 ;;
esac
