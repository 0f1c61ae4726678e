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
# Every GPU this machine has must be seen by the tests: a GPU test that cannot reach one fails, not skips.
NWALIGN_REQUIRE_GPU=$(nvidia-smi -L 2>/dev/null | grep -c "^GPU ")
export NWALIGN_REQUIRE_GPU

# gpu_pytest LOG ARGS...: pytest ARGS with its output in LOG, then how many GPU tests ran; pytest's status.
gpu_pytest() {
    local log=$1
    shift
    python3 -m pytest -q -p no:cacheprovider -rfE "$@" 2>&1 | tee "$log"
    local status=${PIPESTATUS[0]}
    echo "GPU tests ($NWALIGN_REQUIRE_GPU GPU(s) required): $(tail -n 1 "$log")"
    return "$status"
}
