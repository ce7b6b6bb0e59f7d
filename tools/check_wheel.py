"""Install the built wheel where no compiler can help, and run queries with it.

Run by ``./dev.sh check-wheel`` (and CI) after ``./dev.sh wheels``, from the repository
root as ``python -m tools.check_wheel``:

1. a fresh virtual environment of this interpreter's base Python, outside the checkout;
2. ``pip install --no-index --only-binary :all:`` of dist/'s manylinux wheel for this
   interpreter, with a PATH that holds only that environment's bin/ (no cc, no gcc: if
   pip tried to build anything, it would fail);
3. that environment's Python, isolated (``-I``) and started outside the checkout so that
   the checkout's in-place modules cannot be imported by mistake, connects to a
   throwaway server (or to ``MYPGDRIVER_TEST_DSN``) and runs queries.

Exits non-zero, with what went wrong, if any step fails.
"""
from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
from typing import Iterator

from tools.pgcluster import PgCluster

ROOT = pathlib.Path(__file__).resolve().parent.parent
DIST = ROOT / "dist"
COMPILERS = ("cc", "gcc", "clang", "c99", "x86_64-linux-gnu-gcc")

# Run by the installed package's interpreter.  It checks that mypgdriver comes from
# the fresh environment with compiled modules, round-trips a few types, gets the
# driver's own error for an argument it cannot encode, and uses a pool.
QUERY_SCRIPT = r'''
import asyncio, datetime, decimal, os, pathlib, sys
import mypgdriver
from mypgdriver.protocol import protocol

here = pathlib.Path(mypgdriver.__file__).resolve()
assert pathlib.Path(sys.prefix).resolve() in here.parents, f"imported from {here}"
assert protocol.__file__.endswith(".so"), protocol.__file__

async def main():
    dsn = os.environ["CHECK_WHEEL_DSN"]
    conn = await mypgdriver.connect(dsn)
    try:
        row = await conn.fetchrow(
            "SELECT $1::int8 + 1 AS n, $2::text AS s, $3::numeric AS d, $4::date AS day,"
            " version() AS server",
            41, "wheel", decimal.Decimal("1.25"), datetime.date(2024, 2, 29))
        assert (row["n"], row["s"], row["d"], row["day"]) == (
            42, "wheel", decimal.Decimal("1.25"), datetime.date(2024, 2, 29)), dict(row)
        try:
            await conn.fetchval("SELECT $1::int4", "not a number")
        except mypgdriver.DataError as e:
            assert "$1" in str(e), e
        else:
            raise AssertionError("a text argument for an int4 parameter was accepted")
        assert await conn.fetchval("SELECT 1") == 1
        server = row["server"]
    finally:
        await conn.close()
    async with mypgdriver.create_pool(dsn, min_size=1, max_size=2) as pool:
        total = await pool.fetchval("SELECT sum(x) FROM generate_series(1, $1::int) AS x", 100)
        assert total == 5050, total
    print(f"mypgdriver {mypgdriver.__version__} from {here.parent}, "
          f"Python {sys.version.split()[0]}: queries ok against {server.split(',')[0]}")

asyncio.run(main())
'''


def say(message: str) -> None:
    """One progress line on stderr, in dev.sh's style."""
    print(f"check_wheel: {message}", file=sys.stderr, flush=True)


def run(cmd: list[str], *, env: dict[str, str], cwd: str) -> None:
    """Run a command and raise SystemExit with its output if it fails."""
    proc = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout)
        raise SystemExit(f"check_wheel: failed ({proc.returncode}): {' '.join(cmd)}")
    if proc.stdout.strip():
        print(proc.stdout.strip())


def find_wheel() -> pathlib.Path:
    """dist/'s manylinux wheel for the running interpreter's version."""
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    wheels = sorted(DIST.glob(f"mypgdriver-*-{tag}-{tag}-manylinux*.whl"))
    if len(wheels) != 1:
        raise SystemExit(
            f"check_wheel: expected one manylinux {tag} wheel in {DIST}, found "
            f"{[w.name for w in wheels]}: run ./dev.sh wheels first")
    return wheels[0]


@contextlib.contextmanager
def server_dsn() -> Iterator[str]:
    """MYPGDRIVER_TEST_DSN if set, else a throwaway server's DSN for the duration."""
    dsn = os.environ.get("MYPGDRIVER_TEST_DSN")
    if dsn:
        yield dsn
        return
    with PgCluster() as cluster:
        yield cluster.dsn()


def main() -> int:
    """Install the wheel into a fresh environment without a compiler and query with it."""
    wheel = find_wheel()
    with tempfile.TemporaryDirectory(prefix="mypgdriver-wheel-check-") as tmp:
        venv = pathlib.Path(tmp) / "venv"
        say(f"creating a fresh virtual environment in {venv}")
        # A venv made from inside .venv is based on the same base interpreter.
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        bindir = str(venv / "bin")
        # Only the new environment's bin/ on PATH: no compiler, and nothing
        # from the checkout's .venv.  HOME in the scratch directory keeps pip
        # from reading the user's configuration or cache.
        env = {"PATH": bindir, "HOME": tmp, "LANG": "C.UTF-8", "PIP_NO_INPUT": "1"}
        present = [c for c in COMPILERS if shutil.which(c, path=bindir)]
        if present:
            raise SystemExit(f"check_wheel: a compiler is on the restricted PATH: {present}")
        say(f"installing {wheel.name} with no compiler on PATH")
        run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index",
             "--only-binary", ":all:", "--no-build-isolation", str(wheel)], env=env, cwd=tmp)
        with server_dsn() as dsn:
            say("running queries with the installed wheel")
            run([str(venv / "bin" / "python"), "-I", "-c", QUERY_SCRIPT],
                env={**env, "CHECK_WHEEL_DSN": dsn}, cwd=tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
