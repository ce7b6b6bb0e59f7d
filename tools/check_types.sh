#!/usr/bin/env bash
# Static checks, run by .ci/run after the tests:
#
#   1. mypy --strict on the typed example applications (tests/typing/: app.py
#      for the asyncio API, sync_app.py for mypgdriver.sync, pooled.py),
#   2. pyright in strict mode on the same files,
#      (tests/typing/pooled.py also lists mistakes both must report, each
#      marked with an ignore comment that is an error if unused: see there),
#   3. mypy on the package itself (mypgdriver/, with the project's settings,
#      not --strict), so that its internals stay consistent with its types,
#   4. stubtest: every .pyi stub of a compiled module against the built module,
#   5. ruff on the whole repository.
#
# Each check runs even when an earlier one fails; the exit status is non-zero
# if any failed.  Needs the `test` extra installed and the extensions built
# in place (./dev.sh build does both).  Configuration: [tool.mypy],
# [tool.pyright] and [tool.ruff] in pyproject.toml; stubtest's allowlist is
# tools/stubtest_allowlist.txt.
#
# Environment: PYTHON (default: .venv/bin/python, else python3).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [ -z "${PYTHON:-}" ]; then
    if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi

failed=()
check() {
    local name="$1"
    shift
    echo "check_types: $name" >&2
    if ! "$@" >&2; then
        failed+=("$name")
    fi
}

# The stubs are found next to the compiled modules; stubtest imports those,
# so it checks what is built in place, not an installed copy.
stubbed_modules() {
    find mypgdriver -name '*.pyi' | sort | sed -e 's/\.pyi$//' -e 's#/#.#g'
}

check 'mypy --strict tests/typing' "$PYTHON" -m mypy --strict tests/typing
check 'pyright (strict) tests/typing' "$PYTHON" -m pyright tests/typing
# --check-untyped-defs: the bodies of internal functions without annotations
# are checked too.
check 'mypy mypgdriver' "$PYTHON" -m mypy --check-untyped-defs mypgdriver
mapfile -t modules < <(stubbed_modules)
check 'stubtest' "$PYTHON" -m mypy.stubtest --mypy-config-file pyproject.toml \
    --allowlist tools/stubtest_allowlist.txt "${modules[@]}"
check 'ruff check' "$PYTHON" -m ruff check .

if [ ${#failed[@]} -gt 0 ]; then
    echo "check_types: FAILED: ${failed[*]}" >&2
    exit 1
fi
echo "check_types: all checks passed" >&2
