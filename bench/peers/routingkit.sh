#!/usr/bin/env bash
# The CPU contraction-hierarchy peer of bench/road_bench.py: RoutingKit's customizable
# contraction hierarchies through their Python bindings (routingkit_cch on PyPI, a
# compiled wheel, MIT), fetched into .whl/ beside the other device wheels; nothing of
# it is kept in this repository.  Run once in the checkout, then pass carry [".whl"]
# to the device and install .whl/*.whl there as the device prefix does.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_34_x86_64 -d .whl 'routingkit_cch==0.1.4'
ls .whl/routingkit_cch-*.whl
