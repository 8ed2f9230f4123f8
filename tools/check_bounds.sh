#!/usr/bin/env bash
# Run the kernel tests once against kernels built with Cython's bounds checking switched on.
#
#     tools/check_bounds.sh [extra pytest arguments]
#
# Copies the checkout (tracked and untracked files, without build outputs) into a temporary
# folder, builds every kernel there with FASTSPECTRAL_BOUNDSCHECK=1 (boundscheck, wraparound and
# initializedcheck on: an out-of-range index of a memoryview raises IndexError instead of
# reading or writing past the buffer) and runs the kernel tests against that copy
# (PYTHONPATH puts it before an installed or editable fastspectral).  Independent of .ci/run;
# the checkout itself is not touched.  Exit status: pytest's.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/fastspectral-bounds.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
cd "$repo"
# every file git knows or would add, minus compiled outputs (the copy rebuilds them all)
git ls-files -z --cached --others --exclude-standard \
    | grep -zv -E '\.(so|c|o|pyd)$' \
    | while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done \
    | tar --null -T - -cf - | tar -xf - -C "$tmp"
cd "$tmp"
echo "building the kernels with bounds checking in $tmp ..." >&2
FASTSPECTRAL_BOUNDSCHECK=1 python setup.py -q build_ext --inplace >"$tmp/build.log" 2>&1 || {
    tail -40 "$tmp/build.log" >&2; exit 1; }
grep -q "__Pyx_RaiseBufferIndexError" fastspectral/_ext/cky.c >/dev/null || {
    echo "the kernels were not built with bounds checking" >&2; exit 1; }
export PYTHONPATH="$tmp${PYTHONPATH:+:$PYTHONPATH}"
export FASTSPECTRAL_DATA="${FASTSPECTRAL_DATA:-$repo/../shared/data}"
python - <<'PY'
import fastspectral, os, sys
here = os.path.dirname(os.path.dirname(os.path.abspath(fastspectral.__file__)))
if here != os.getcwd():
    sys.exit(f"fastspectral imported from {here}, not from the bounds-checked copy")
PY
python -m pytest -q -p no:cacheprovider tests/test_cky.py tests/test_lpcfg_kernel.py \
    tests/test_dependency_kernels.py tests/test_kernel_safety.py "$@"
