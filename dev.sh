#!/usr/bin/env bash
# Development entry point for mypgdriver.
#
#   ./dev.sh test [pytest args...]   set up, build, run the tests (default: tests bench/tests -q)
#   ./dev.sh bench [args...]         set up (with the bench extra), build, run python -m bench
#   ./dev.sh build                   set up and build only
#   ./dev.sh shell                   set up, build, and print how to enter the virtualenv
#   ./dev.sh wheels [python...]      the sdist and manylinux wheels (every CPython found) in dist/
#   ./dev.sh check-wheel             install dist/'s wheel without a compiler and query with it
#   ./dev.sh docs [sphinx args...]   set up (with the docs extra), build, the site in docs/_build/html
#   ./dev.sh generate [--check]      write mypgdriver/sync's generated methods (tools/gen_sync.py)
#
# Works on a fresh Debian 12 (as root or as a user with sudo): installs what is
# missing (PostgreSQL, pgbouncer for the tests and the benchmark, a C compiler,
# Python headers, python3-venv), creates .venv,
# installs each extra's requirements when they are missing and the package
# itself once (editable), and rebuilds the Cython extensions in place
# (incrementally) on every run.  Reinstalls happen only when pyproject.toml,
# setup.py or MANIFEST.in change.
#
# Environment: PYTHON (interpreter for the venv, Python 3.9 or newer, default
# python3; used only when .venv is created),
# MYPGDRIVER_TEST_DSN / MYPGDRIVER_BENCH_DSN (use that server instead of starting
# one; no server binaries are installed then), MYPGDRIVER_PG_BINDIR (server
# binaries to use), MYPGDRIVER_PGBOUNCER (the pgbouncer binary the tests and
# the benchmark run, e.g. one newer than Debian's for the tests of 1.21+
# behaviour; Debian's package is installed only when neither it nor a
# pgbouncer on PATH is there), MYPGDRIVER_DEBUG=1 (debug build, see setup.py).
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
    sed -n '4,11s/^# \{0,1\}//p' "$0" >&2
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
    if [ "$APT_UPDATED" = 0 ]; then
        say "updating apt's package lists"
        quietly as_root env DEBIAN_FRONTEND=noninteractive apt-get -q update
        APT_UPDATED=1
    fi
    say "installing system packages with apt-get: $*"
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

# The pgbouncer that tools/pgbouncer.py would find (the same order: the
# variable, PATH, then where Debian's package puts it).
have_pgbouncer() {
    [ -n "${MYPGDRIVER_PGBOUNCER:-}" ] && return 0
    command -v pgbouncer >/dev/null 2>&1 && return 0
    [ -x /usr/sbin/pgbouncer ]
}

have_python_headers() {
    "$PYTHON" - <<'PYEOF'
import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_path("include"), "Python.h")))
PYEOF
}

# $1: the DSN variable that, when set, means "use that server, start none";
# empty when no server is needed (building wheels).  $2: the extra being set
# up (test and bench run pgbouncer in front of their server).
ensure_system_packages() {
    local dsn_var="$1" extra="${2:-}" missing=()
    if [ -z "$dsn_var" ]; then
        :
    elif [ -n "${!dsn_var:-}" ]; then
        have_psql || missing+=(postgresql-client)  # tests still use psql against it
    elif [ -z "${MYPGDRIVER_PG_BINDIR:-}" ] && ! have_server_binaries; then
        missing+=(postgresql)
    fi
    # The pooler tests and the benchmark's pooler scenario run the pgbouncer
    # installed on the machine (the project never builds one).
    if [ "$extra" = test ] || [ "$extra" = bench ]; then
        have_pgbouncer || missing+=(pgbouncer)
    fi
    if ! command -v cc >/dev/null 2>&1 && ! command -v gcc >/dev/null 2>&1; then
        missing+=(gcc libc6-dev)
    fi
    have_python_headers || missing+=(python3-dev)
    if [ ${#missing[@]} -gt 0 ]; then
        apt_install "${missing[@]}"
    fi
}

# The package claims Python 3.9+: refuse anything older before pip does so
# with a message about requires-python.
check_python() {
    if ! command -v "$PYTHON" >/dev/null 2>&1; then
        say "no $PYTHON found: set PYTHON to a Python 3.9 (or newer) interpreter"
        exit 1
    fi
    if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 9))' >/dev/null 2>&1; then
        say "mypgdriver needs Python 3.9 or newer, and $PYTHON is $("$PYTHON" -V 2>&1);"
        say "set PYTHON to a newer interpreter, e.g. PYTHON=python3.11 ./dev.sh test"
        exit 1
    fi
}

venv_works() {
    [ -x "$PY" ] && "$PY" -c '' >/dev/null 2>&1
}

ensure_venv() {
    venv_works && return
    rm -rf "$VENV"
    say "creating .venv with $PYTHON ($("$PYTHON" -V 2>&1))"
    if ! "$PYTHON" -m venv "$VENV" >/dev/null 2>&1; then
        # Debian ships venv's ensurepip separately.
        rm -rf "$VENV"
        apt_install python3-venv
        quietly "$PYTHON" -m venv "$VENV"
    fi
}

# What .venv needs before anything else: a pip and setuptools that read
# pyproject.toml's license and extras, Cython to build with, and a TOML reader
# for requirements_of (tomllib is in the standard library from 3.11 on).
BOOTSTRAP=(pip 'setuptools>=77' 'cython>=3.0.10,<4' 'tomli>=1.1; python_version < "3.11"')

# Does stamp file $1 hold key $2?  Stamps live in .venv, so a new .venv
# starts without any.
stamp_matches() {
    [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]
}

ensure_bootstrap() {
    local stamp="$VENV/.mypgdriver-bootstrap" key="${BOOTSTRAP[*]}"
    stamp_matches "$stamp" "$key" && return
    say "installing pip, setuptools and Cython into .venv"
    quietly "$PY" -m pip install -q --upgrade "${BOOTSTRAP[@]}"
    echo "$key" >"$stamp"
}

# The requirements of the given extra (and the base dependencies), one a line.
requirements_of() {
    "$PY" - "$1" <<'PYEOF'
import sys
try:
    import tomllib
except ImportError:  # Python < 3.11: the backport that ensure_bootstrap installs
    import tomli as tomllib
with open("pyproject.toml", "rb") as f:
    project = tomllib.load(f)["project"]
extras = project.get("optional-dependencies", {})
if sys.argv[1] not in extras:
    sys.exit(f"pyproject.toml has no [project.optional-dependencies] {sys.argv[1]}")
print("\n".join(project.get("dependencies", []) + extras[sys.argv[1]]))
PYEOF
}

# A hash of the files that decide what gets installed and how it is built.
packaging_key() {
    cat pyproject.toml setup.py MANIFEST.in | sha256sum | cut -d' ' -f1
}

# $1: an extra (test, bench, wheels).  Installs its requirements when they are
# missing: once per extra, again only when pyproject.toml changes.
ensure_requirements() {
    local extra="$1" stamp="$VENV/.mypgdriver-requirements-$1" key listed requirements
    key="$(sha256sum <pyproject.toml | cut -d' ' -f1)"
    stamp_matches "$stamp" "$key" && return
    # A separate step whose failure stops here (not an empty list handed to
    # pip, which then complains about something else).
    listed="$(requirements_of "$extra")"
    mapfile -t requirements <<<"$listed"
    say "installing the $extra dependencies into .venv: ${requirements[*]}"
    quietly "$PY" -m pip install -q "${requirements[@]}"
    echo "$key" >"$stamp"
}

# The package itself, editable, whatever extras are installed: once, and
# again only when the packaging files change (its metadata and entry points
# come from them).
ensure_package() {
    local stamp="$VENV/.mypgdriver-editable" key
    key="$(packaging_key)"
    stamp_matches "$stamp" "$key" && return
    say "installing mypgdriver into .venv, editable (compiles the Cython extensions: a few minutes the first time)"
    # The build requirements are in the venv already: building there spares
    # pip a second download of Cython and setuptools into an isolated
    # environment.
    quietly "$PY" -m pip install -q --no-deps --no-build-isolation -e .
    echo "$key" >"$stamp"
}

# Says what build() is about to do: nothing is printed when nothing changed.
announce_build() {
    local oldest
    oldest="$(find mypgdriver -name '*.so' -printf '%T@ %p\n' | sort -n | head -n 1 | cut -d' ' -f2-)"
    if [ -z "$oldest" ]; then
        say "building the Cython extensions (the first build takes a few minutes)"
    elif [ -n "$(find mypgdriver csrc -newer "$oldest" \
            \( -name '*.pyx' -o -name '*.pxd' -o -name '*.h' -o -path 'csrc/*.c' \) -print -quit)" ]; then
        say "rebuilding the changed Cython extensions"
    fi
}

build() {
    # Incremental: cythonize and build_ext skip modules whose sources are older
    # than their outputs.
    announce_build
    quietly "$PY" setup.py -q build_ext --inplace -j 2
}

# $1: extra (empty: none), $2: DSN variable (empty: no server needed).  The
# venv and the extra's requirements, without the package: enough to run tools/.
setup_venv() {
    # One set-up at a time per checkout (several people share it); the lock is
    # on the checkout directory itself and released before tests/benchmarks run.
    exec 9<"$ROOT"
    flock 9
    # PYTHON matters only when .venv is (re)created.
    venv_works || check_python
    ensure_system_packages "$2" "$1"
    ensure_venv
    ensure_bootstrap
    [ -z "$1" ] || ensure_requirements "$1"
    exec 9<&-
}

# $1: extra, $2: DSN variable.  setup_venv, then the package, built in place.
setup() {
    setup_venv "$1" "$2"
    exec 9<"$ROOT"
    flock 9
    ensure_package
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
    wheels)
        setup_venv wheels ""
        run tools/build_wheels.py "$@"
        ;;
    check-wheel)
        # The wheel's own environment is made by the script; .venv only runs it
        # (and tools/pgcluster.py, which starts the server).
        setup_venv "" MYPGDRIVER_TEST_DSN
        run -m tools.check_wheel "$@"
        ;;
    docs)
        # -W: a warning (a broken reference, a docstring Sphinx cannot read)
        # fails the build, as in CI.
        setup docs ""
        if [ $# -gt 0 ]; then
            run -m sphinx "$@"
        fi
        # The default build: say where the site is (sphinx -q prints nothing
        # when it succeeds).
        "$PY" -m sphinx -W -q -b html docs docs/_build/html
        say "the site is in $ROOT/docs/_build/html/index.html"
        ;;
    generate)
        # The sync API's delegating methods, from the asyncio classes' source
        # (the standard library's ast reads them: nothing to set up or build).
        if [ -x "$PY" ]; then "$PY" -m tools.gen_sync "$@"; else "$PYTHON" -m tools.gen_sync "$@"; fi
        ;;
    -h|--help|help)
        usage
        ;;
    *)
        say "unknown command: $command"
        usage
        ;;
esac
