# Sourced by scripts/gpu-*.sh on the device machine: the carried wheels (.whl/, made by
# scripts/device-wheels.sh) installed apart in /tmp/nwalign-site, then the tree itself on PYTHONPATH.
if ls .whl/*.whl >/dev/null 2>&1; then
    rm -rf /tmp/nwalign-site  # a warm machine may hold an older install
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/nwalign-site .whl/*.whl
    export PYTHONPATH=/tmp/nwalign-site:${PYTHONPATH:-}
fi
export PYTHONPATH=$PWD:${PYTHONPATH:-} PYTHONUNBUFFERED=1
