"""The sdist and the wheels hold what users and packagers need, and no build outputs.

The sdist must build the package and run this test suite (tests/, tools/, bench/), with
no .so, generated .c or annotation .html; the wheel ships the compiled modules, the
.pyi stubs, py.typed and the LICENSE, and no .c or Cython sources (see pyproject.toml).

With ``MYPGDRIVER_DIST_DIR`` set (CI sets it after ``./dev.sh wheels``), the sdist and
every wheel found there are checked.  Without it, an sdist of the checkout is built
(seconds: nothing is compiled) and the wheel checks skip: a wheel compiles every
module, which takes minutes.
"""
from __future__ import annotations

import contextlib
import email.message
import email.parser
import fcntl
import os
import pathlib
import subprocess
import sys
import tarfile
import zipfile
from typing import Iterator

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DIST_DIR = os.environ.get("MYPGDRIVER_DIST_DIR")

# Sources the package is built from, which both the sdist and the checkout have.
SOURCE_SUFFIXES = {".py", ".pyx", ".pxd", ".pyi", ".h"}


def checkout_files(top: str, suffixes: set[str]) -> set[str]:
    """Files under ``top`` (relative to the root) with one of ``suffixes``."""
    return {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / top).rglob("*")
        if p.suffix in suffixes and p.is_file() and "__pycache__" not in p.parts
    }


def parse_metadata(text: str) -> email.message.Message:
    """PKG-INFO / METADATA headers."""
    return email.parser.Parser().parsestr(text, headersonly=True)


# pyproject.toml's [project.urls], as pip and PyPI show them.
PROJECT_URLS = {
    "Documentation": "https://mypgdriver.readthedocs.io/",
    "Source": "https://github.com/mypgdriver/mypgdriver",
    "Issues": "https://github.com/mypgdriver/mypgdriver/issues",
    "Changelog": "https://mypgdriver.readthedocs.io/en/latest/changelog.html",
}


def project_urls(metadata: email.message.Message) -> dict[str, str]:
    """The ``Project-URL: label, url`` headers as {label: url}."""
    return dict(value.split(", ", 1) for value in metadata.get_all("Project-URL", []))


@contextlib.contextmanager
def checkout_lock() -> Iterator[None]:
    """The checkout to ourselves: dev.sh's lock (an flock on the root directory).

    setuptools builds the sdist's tree in the current directory, as
    mypgdriver-<version>/, and removes it afterwards: two test runs of one
    checkout building at the same time remove each other's tree mid-build
    ("No such file or directory: 'mypgdriver-0.1.0.dev0/tests/...'").  The
    lock also keeps the build from reading a checkout that ./dev.sh is
    rebuilding.
    """
    fd = os.open(ROOT, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


@pytest.fixture(scope="module")
def sdist(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The sdist from MYPGDRIVER_DIST_DIR, or one built from the checkout now."""
    if DIST_DIR:
        found = sorted(pathlib.Path(DIST_DIR).glob("mypgdriver-*.tar.gz"))
        assert len(found) == 1, f"expected one sdist in {DIST_DIR}, found {found}"
        return found[0]
    outdir = tmp_path_factory.mktemp("sdist")
    # The build backend itself, as a frontend without isolation would call
    # it: the test extra's setuptools and Cython are enough.
    build = "import setuptools.build_meta as backend, sys; print(backend.build_sdist(sys.argv[1]))"
    with checkout_lock():
        proc = subprocess.run([sys.executable, "-c", build, str(outdir)], cwd=ROOT,
                              capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return outdir / proc.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def sdist_names(sdist: pathlib.Path) -> set[str]:
    """The sdist's file names, relative to its top directory."""
    with tarfile.open(sdist) as tar:
        return {
            member.name.split("/", 1)[1]
            for member in tar.getmembers()
            if member.isfile() and "/" in member.name
        }


def wheels() -> Iterator[pathlib.Path]:
    """The wheels in MYPGDRIVER_DIST_DIR (none when it is not set)."""
    if DIST_DIR:
        yield from sorted(pathlib.Path(DIST_DIR).glob("mypgdriver-*.whl"))


def test_sdist_has_no_build_outputs(sdist_names: set[str]) -> None:
    outputs = sorted(
        name for name in sdist_names
        if name.endswith((".so", ".pyc", ".html"))
        or (name.endswith(".c") and not name.startswith("csrc/"))
        or name.split("/", 1)[0] in {".venv", "build", "dist"}
    )
    assert outputs == []


def test_sdist_has_the_sources_and_the_test_suite(sdist_names: set[str]) -> None:
    expected = (
        checkout_files("mypgdriver", SOURCE_SUFFIXES)
        | checkout_files("tests", {".py"})
        | checkout_files("tools", {".py"})
        | checkout_files("bench", {".py"})
        | checkout_files("csrc", {".c"})
        | {"LICENSE", "README.md", "pyproject.toml", "setup.py", "MANIFEST.in", "dev.sh",
           "mypgdriver/py.typed", "tests/support/__init__.py", "tools/pgcluster.py"}
    )
    assert sorted(expected - sdist_names) == []


def test_sdist_declares_the_license(sdist: pathlib.Path) -> None:
    with tarfile.open(sdist) as tar:
        member = next(m for m in tar.getmembers() if m.name.count("/") == 1
                      and m.name.endswith("/PKG-INFO"))
        extracted = tar.extractfile(member)
        assert extracted is not None
        metadata = parse_metadata(extracted.read().decode())
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata.get_all("License-File") == ["LICENSE"]
    # A license classifier next to an SPDX expression is refused by PyPI.
    assert not [c for c in metadata.get_all("Classifier", []) if c.startswith("License ::")]
    assert project_urls(metadata) == PROJECT_URLS


@pytest.mark.skipif(not DIST_DIR, reason="set MYPGDRIVER_DIST_DIR to ./dev.sh wheels' dist/")
def test_dist_has_a_manylinux_wheel() -> None:
    names = [w.name for w in wheels()]
    assert names and all("manylinux" in name for name in names), names


@pytest.mark.skipif(not DIST_DIR, reason="set MYPGDRIVER_DIST_DIR to ./dev.sh wheels' dist/")
@pytest.mark.parametrize("wheel", list(wheels()), ids=lambda w: w.name)
def test_wheel_contents(wheel: pathlib.Path, sdist_names: set[str]) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        (metadata_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = parse_metadata(archive.read(metadata_name).decode())
    package = {n for n in names if n.startswith("mypgdriver/")}

    # Build intermediates and the sources they come from stay out.
    assert sorted(n for n in package if n.endswith((".c", ".html", ".pyx", ".pxd", ".h"))) == []
    # Every .pyx compiled.
    pyx = {n for n in sdist_names if n.startswith("mypgdriver/") and n.endswith(".pyx")}
    compiled = {n.split(".", 1)[0] + ".pyx" for n in package if n.endswith(".so")}
    assert pyx and compiled == pyx
    # Typing: the marker and every stub of the source tree.
    stubs = {n for n in sdist_names if n.startswith("mypgdriver/") and n.endswith(".pyi")}
    assert "mypgdriver/py.typed" in package
    assert stubs <= package
    # Nothing but the package and its metadata.
    assert {n.split("/", 1)[0] for n in names} == {"mypgdriver", metadata_name.split("/")[0]}

    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert metadata["License-Expression"] == "Apache-2.0"
    assert project_urls(metadata) == PROJECT_URLS
