# Sourced by scripts/gpu-*.sh on a GPU machine: the wheels of .whl/ (made by scripts/device-wheels.sh)
# installed apart in /tmp/nwalign-site, then the tree itself on PYTHONPATH.
if ls .whl/*.whl >/dev/null 2>&1; then
    rm -rf /tmp/nwalign-site  # a warm machine may hold an older install
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/nwalign-site .whl/*.whl
    # Byte-compiled once here: a fresh interpreter otherwise compiles Dask's modules at each import
    # (~1 s of the client's and each worker's start; an installed package ships them compiled).
    python3 -m compileall -q -j 0 /tmp/nwalign-site > /dev/null 2>&1
    export PYTHONPATH=/tmp/nwalign-site:${PYTHONPATH:-}
fi
python3 -m compileall -q -j 0 nwalign > /dev/null 2>&1
export PYTHONPATH=$PWD:${PYTHONPATH:-} PYTHONUNBUFFERED=1
