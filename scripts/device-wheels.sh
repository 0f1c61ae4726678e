#!/usr/bin/env bash
# For a GPU machine without network access: the wheels its Python 3.12 lacks (it has CuPy, NumPy, Numba,
# Click and Rich, but no Biopython, parasail, pytest or Dask) downloaded here into .whl/ (git-excluded),
# copied there with the checkout, and installed by scripts/device-site.sh with --no-index.
#   bash scripts/device-wheels.sh [SHARED_WHEELS_DIR]
set -euo pipefail
mkdir -p .whl
grep -qx ".whl/" "$(git rev-parse --git-dir)/info/exclude" 2>/dev/null || \
    { mkdir -p "$(git rev-parse --git-dir)/info"; echo ".whl/" >> "$(git rev-parse --git-dir)/info/exclude"; }
SHARED=${1:-../shared/wheels-py312}
[ -d "$SHARED" ] && cp "$SHARED"/*.whl .whl/
# Dask (distributed) and its dependencies for CPython 3.12 on x86-64 Linux; the device's own Click stays.
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
    "distributed==$(python3 -c 'import distributed; print(distributed.__version__)')" pytest hypothesis pyopal pysam isal -d .whl
rm -f .whl/click-*.whl
ls .whl
