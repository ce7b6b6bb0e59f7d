#!/usr/bin/env bash
# Development entry point for mypgdriver.
#
#   ./dev.sh test [pytest args...]   set up, build, run the tests (default: tests bench/tests -q)
#   ./dev.sh bench [args...]         set up (with the bench extra), build, run python -m bench
#   ./dev.sh build                   set up and build only
#   ./dev.sh shell                   set up, build, and print how to enter the virtualenv
#
# Works on a fresh Debian 12 (as root or as a user with sudo): installs what is
# missing (PostgreSQL, a C compiler, Python headers, python3-venv), creates .venv,
# installs the package into it in editable mode, and rebuilds the Cython
# extensions in place (incrementally) on every run.
#
# Environment: PYTHON (interpreter for the venv, default python3),
# MYPGDRIVER_TEST_DSN / MYPGDRIVER_BENCH_DSN (use that server instead of starting
# one; no server binaries are installed then), MYPGDRIVER_PG_BINDIR (server
# binaries to use), MYPGDRIVER_DEBUG=1 (debug build, see setup.py).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$ROOT"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"
PYTHON="${PYTHON:-python3}"

LOG_DIR="$(mktemp -d)"
trap 'rm -rf "$LOG_DIR"' EXIT

say() { echo "dev.sh: $*" >&2; }

usage() {
    sed -n '4,7s/^# \{0,1\}//p' "$0" >&2
    exit 2
}

# Run a command with its output set aside; show the output only if it fails.
quietly() {
    local log="$LOG_DIR/output.log"
    if ! "$@" >"$log" 2>&1; then
        say "failed: $*"
        cat "$log" >&2
        return 1
    fi
}

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        say "root is needed to run: $*"
        exit 1
    fi
}

APT_UPDATED=0
apt_install() {
    if ! command -v apt-get >/dev/null 2>&1; then
        say "please install these packages with your system's package manager: $*"
        exit 1
    fi
    say "installing with apt-get: $*"
    if [ "$APT_UPDATED" = 0 ]; then
        quietly as_root env DEBIAN_FRONTEND=noninteractive apt-get -q update
        APT_UPDATED=1
    fi
    quietly as_root env DEBIAN_FRONTEND=noninteractive \
        apt-get -q install -y --no-install-recommends "$@"
}

have_server_binaries() {
    command -v initdb >/dev/null 2>&1 && return 0
    compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null
}

have_psql() {
    command -v psql >/dev/null 2>&1 && return 0
    compgen -G '/usr/lib/postgresql/*/bin/psql' >/dev/null
}

have_python_headers() {
    "$PYTHON" - <<'PYEOF'
import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_path("include"), "Python.h")))
PYEOF
}

# $1: the DSN variable that, when set, means "use that server, start none".
ensure_system_packages() {
    local dsn_var="$1" missing=()
    if [ -n "${!dsn_var:-}" ]; then
        have_psql || missing+=(postgresql-client)  # tests still use psql against it
    elif [ -z "${MYPGDRIVER_PG_BINDIR:-}" ] && ! have_server_binaries; then
        missing+=(postgresql)
    fi
    if ! command -v cc >/dev/null 2>&1 && ! command -v gcc >/dev/null 2>&1; then
        missing+=(gcc libc6-dev)
    fi
    have_python_headers || missing+=(python3-dev)
    if [ ${#missing[@]} -gt 0 ]; then
        apt_install "${missing[@]}"
    fi
}

ensure_venv() {
    if [ -x "$PY" ] && "$PY" -c '' >/dev/null 2>&1; then
        return
    fi
    rm -rf "$VENV"
    say "creating .venv with $PYTHON"
    if ! "$PYTHON" -m venv "$VENV" >/dev/null 2>&1; then
        # Debian ships venv's ensurepip separately.
        rm -rf "$VENV"
        apt_install python3-venv
        quietly "$PYTHON" -m venv "$VENV"
    fi
}

# The requirements of the given extra (and the base dependencies), one a line.
requirements_of() {
    "$PY" - "$1" <<'PYEOF'
import sys, tomllib
with open("pyproject.toml", "rb") as f:
    project = tomllib.load(f)["project"]
print("\n".join(project.get("dependencies", []) + project["optional-dependencies"][sys.argv[1]]))
PYEOF
}

# $1: the extra to install (test or bench).  Reinstalls only when the packaging
# files changed since the last install with that extra.
ensure_installed() {
    local extra="$1" stamp="$VENV/.mypgdriver-installed-$1" key requirements
    key="$(cat pyproject.toml setup.py | sha256sum | cut -d' ' -f1)"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$key" ]; then
        return
    fi
    say "installing mypgdriver[$extra] into .venv (editable)"
    quietly "$PY" -m pip install -q --upgrade pip setuptools wheel 'cython>=3.0.10,<4'
    # The dependencies go in first and on their own: the editable install runs
    # setup.py, which compiles every .pyx, and a module that does not compile
    # yet should not also leave pytest uninstalled.
    mapfile -t requirements < <(requirements_of "$extra")
    quietly "$PY" -m pip install -q "${requirements[@]}"
    # The build requirements are in the venv now: building there spares pip a
    # second download of Cython and setuptools into an isolated environment.
    quietly "$PY" -m pip install -q --no-deps --no-build-isolation -e .
    echo "$key" >"$stamp"
}

build() {
    # Incremental: cythonize and build_ext skip modules whose sources are older
    # than their outputs.
    quietly "$PY" setup.py -q build_ext --inplace -j 2
}

# $1: extra, $2: DSN variable.
setup() {
    # One set-up at a time per checkout (several people share it); the lock is
    # on the checkout directory itself and released before tests/benchmarks run.
    exec 9<"$ROOT"
    flock 9
    ensure_system_packages "$2"
    ensure_venv
    ensure_installed "$1"
    build
    exec 9<&-
}

run() {
    rm -rf "$LOG_DIR"
    trap - EXIT
    exec "$PY" "$@"
}

[ $# -ge 1 ] || usage
command="$1"
shift
case "$command" in
    test)
        setup test MYPGDRIVER_TEST_DSN
        [ $# -gt 0 ] || set -- tests bench/tests -q
        run -m pytest "$@"
        ;;
    bench)
        setup bench MYPGDRIVER_BENCH_DSN
        run -m bench "$@"
        ;;
    build)
        setup test MYPGDRIVER_TEST_DSN
        say "built in place: $(find mypgdriver -name '*.so' | wc -l) extension modules"
        ;;
    shell)
        setup test MYPGDRIVER_TEST_DSN
        echo "Enter the virtualenv with:  source $VENV/bin/activate"
        ;;
    -h|--help|help)
        usage
        ;;
    *)
        say "unknown command: $command"
        usage
        ;;
esac
