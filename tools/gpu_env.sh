# Sourced by the GPU scripts (gpu_check.sh, gpu_sanitizer.sh), from the repository
# root: cffi and pycparser from the wheels in .wheels/ where python3 lacks them,
# and the package and library of the build tree ./build.
if ! python3 -c 'import cffi' 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/aiter-site .wheels/*.whl || exit 1
  export PYTHONPATH=/tmp/aiter-site
fi
export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH} AITER_LIBRARY=$PWD/build/libaiter.so.0 PYTHONUNBUFFERED=1
