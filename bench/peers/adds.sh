#!/usr/bin/env bash
# A GPU single-source peer of bench/road_bench.py: ADDS, the asynchronous dynamic
# delta-stepping SSSP of K. Wang, D. Fussell and C. Lin, "A fast work-efficient SSSP
# algorithm for GPUs" (PPoPP 2021), from its artifact as imported from Zenodo into
# github.com/UCLA-VAST/adds (integer-weight variant ads_int/; a plain nvcc Makefile).
# The repository states no license of its own (csr_graph.* carry UT Austin's GGC /
# LonestarGPU header; its bundled cub-1.8.0 is BSD and is not used here).  Nothing of
# it is kept in this repository: `prepare` (the default, run in the checkout, no
# network) takes ads_int/ at a pinned commit out of the `fetch` snapshot into
# .peers/adds/src (git-ignored through .git/info/exclude) and makes these edits so it
# builds with CUDA 13 for a 132-SM Hopper, the algorithm untouched:
#   - CUB: the toolkit's <cub/cub.cuh> instead of the bundled cub-1.8.0 (whose texture
#     references CUDA 12 removed), and cub::LaneId() (gone from CCCL 3) -> the
#     artifact's own get_lane_id();
#   - csr_graph.cu: drop an unused #include <boost/mpl/if.hpp>;
#   - wl.h: MAX_TB (128, the most persistent blocks its scheduler tracks; the
#     artifact asserts num_tb < MAX_TB) may be set with -DMAX_TB, and kernel.cu caps
#     its block count at MAX_TB - 1.  On the H200 its occupancy rule gives 2 blocks of
#     768 threads on each of 131 SMs = 262 blocks: the artifact as published stops on
#     that assert.  `build` makes adds_sssp with -DMAX_TB=512 (all 262 blocks) and
#     adds_sssp_tb127 with the artifact's 128 (127 blocks, the cap).  On an H200
#     (2026-11-24) adds_sssp ran past 150 s on NY and rome99 (its two concurrent
#     kernels are not guaranteed to run at once); adds_sssp_tb127 matched SciPy.
# `build` (on the device) compiles our own driver bench/peers/adds_sssp.cu, which
# includes the artifact's kernel.cu and calls its gg_main once per source (gg_main
# times 8 runs and reports their mean, as in the paper's artifact).
#
#   bench/peers/adds.sh [prepare]   # here: .peers/adds/src from the mirror
#   bench/peers/adds.sh build       # device: .peers/adds/bin/adds_sssp{,_tb127}
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)   # no git needed on the device
cd "$root"
commit=9ef8166e87d3f13cb458ce2f128bc862e841200b   # master, 2021-12-03
mirror=${ADDS_MIRROR:-/work/.mirror/UCLA-VAST+adds/repo}
dest=.peers/adds
arch=${CUDA_ARCH:-90}

# replace one literal string in a file, exactly `count` times, or fail
edit() {
  python3 - "$@" <<'EOF'
import sys
path, old, new, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
text = open(path).read()
if text.count(old) != count:
    sys.exit(f"adds.sh: expected {count} of {old!r} in {path}, found {text.count(old)}")
open(path, "w").write(text.replace(old, new))
EOF
}

case "${1:-prepare}" in
prepare)
  git --git-dir="$mirror" cat-file -e "$commit^{commit}" \
    || { echo "adds.sh: commit $commit not in $mirror (fetch github:UCLA-VAST/adds)" >&2; exit 1; }
  rm -rf "$dest/src"
  mkdir -p "$dest/src"
  git --git-dir="$mirror" archive "$commit" ads_int | tar -x -C "$dest/src"
  echo "$commit" > "$dest/src/COMMIT"
  s="$dest/src/ads_int"
  edit "$s/kernel.cu" '#include "../cub-1.8.0/cub/cub.cuh"' '#include <cub/cub.cuh>' 1
  edit "$s/kernel.cu" 'cub::LaneId()' 'get_lane_id()' 1
  edit "$s/csr_graph.cu" '#include <boost/mpl/if.hpp>' '' 1
  edit "$s/wl.h" '#define MAX_TB 128' $'#ifndef MAX_TB\n#define MAX_TB 128\n#endif' 1
  edit "$s/kernel.cu" '	int num_tb = num_tb_per_sm * (num_sm - 1);' \
    $'	int num_tb = num_tb_per_sm * (num_sm - 1);\n\tif (num_tb > MAX_TB - 1) num_tb = MAX_TB - 1;' 1
  du -sh "$dest/src"
  ;;
build)
  test -f "$dest/src/COMMIT" || { echo "adds.sh: run '$0 prepare' first (no $dest/src)" >&2; exit 1; }
  mkdir -p "$dest/bin"
  s="$dest/src/ads_int"
  # the artifact's Makefile flags, for sm_$arch
  flags=(-O3 -arch=sm_$arch -rdc=true -Xptxas -O3 -I"$s" -Ibench/peers)
  pids=()
  for v in adds_sssp:512 adds_sssp_tb127:128; do
    nvcc "${flags[@]}" -DMAX_TB="${v#*:}" bench/peers/adds_sssp.cu "$s/support.cu" \
      "$s/csr_graph.cu" -lcudadevrt -o "$dest/bin/${v%%:*}" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  ls -la "$dest/bin"
  ;;
*)
  echo "usage: $0 [prepare|build]" >&2; exit 2 ;;
esac
