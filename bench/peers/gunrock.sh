#!/usr/bin/env bash
# A GPU single-source peer of bench/road_bench.py: Gunrock "essentials" (github.com/
# gunrock/gunrock, header-only C++/CUDA, Apache-2.0), whose SSSP is a frontier
# Bellman-Ford (advance with atomicMin, then a bypass filter).  Nothing of it is kept
# in this repository: `prepare` (the default, run in the checkout, no network) takes
# its include/ tree and LICENSE at a pinned commit out of the `fetch` snapshot into
# .peers/gunrock/src (git-ignored through .git/info/exclude); `build` (on the device)
# compiles our own driver bench/peers/gunrock_sssp.cu against those headers with one
# nvcc line per weight type, no CMake: the driver reads no Matrix Market and writes no
# JSON, so cxxopts, nlohmann_json and cmake_modules (Gunrock's FetchContent
# dependencies) are not needed, and CCCL (thrust/cub) is the CUDA toolkit's own.
#
#   bench/peers/gunrock.sh [prepare]   # here: .peers/gunrock/src from the mirror
#   bench/peers/gunrock.sh build       # device: .peers/gunrock/bin/gunrock_sssp_{f32,i32}
#
# Then carry [".peers"] to the device; bench/peers/gpu_peers.py runs the binaries.
#
# Measured on an H200 (2026-11-24): at this commit (after Gunrock's CUDA/ROCm
# consolidation) sssp::run reaches only the source, on rome99 and NY alike, with every
# load balance and weight type, so its rows fail the SciPy check; an earlier release
# (v2.2.0) is the next to try.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)   # no git needed on the device
cd "$root"
commit=01f125c85498c52ab0a1b8d33c2716d0b0dc3a57   # main, 2026-01-22 (#1100)
mirror=${GUNROCK_MIRROR:-/work/.mirror/gunrock+gunrock/repo}
dest=.peers/gunrock
arch=${CUDA_ARCH:-90}

case "${1:-prepare}" in
prepare)
  git --git-dir="$mirror" cat-file -e "$commit^{commit}" \
    || { echo "gunrock.sh: commit $commit not in $mirror (fetch github:gunrock/gunrock)" >&2; exit 1; }
  rm -rf "$dest/src"
  mkdir -p "$dest/src"
  git --git-dir="$mirror" archive "$commit" include LICENSE | tar -x -C "$dest/src"
  echo "$commit" > "$dest/src/COMMIT"
  du -sh "$dest/src"
  ;;
build)
  test -f "$dest/src/COMMIT" || { echo "gunrock.sh: run '$0 prepare' first (no $dest/src)" >&2; exit 1; }
  mkdir -p "$dest/bin"
  inc="$dest/src/include"
  # the definitions Gunrock's CMakeLists puts on its `essentials` target
  flags=(-std=c++17 -O3 -arch=sm_$arch -DNDEBUG
         --expt-extended-lambda --expt-relaxed-constexpr --use_fast_math
         --diag-suppress=177,550,20014
         -DSM_TARGET=$arch -DESSENTIALS_BACKEND='"NVIDIA"' -D__HIP_PLATFORM_NVIDIA__
         -DHIP_BACKEND=1 -DGIT_SHA1="\"$(cat "$dest/src/COMMIT")\""
         -I"$inc" -I"$inc/gunrock/compat" -Xcompiler=-Wno-unused-function)
  pids=()
  for w in f32:float i32:int; do
    nvcc "${flags[@]}" -DPEER_WEIGHT_T="${w#*:}" bench/peers/gunrock_sssp.cu \
      -o "$dest/bin/gunrock_sssp_${w%%:*}" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  ls -la "$dest/bin"
  ;;
*)
  echo "usage: $0 [prepare|build]" >&2; exit 2 ;;
esac
