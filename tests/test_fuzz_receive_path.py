"""Fuzzing the receive path: no input crashes, hangs or exhausts memory.

Each run is a child process (tests/support/fuzz_receive.py) with its
address space limited to 1 GiB and a wall-clock timeout, so a segfault,
a huge allocation or a hang fails this test instead of the CI machine.
Hypothesis is derandomized in the child: the same inputs on every run.
"""
from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = 500
WALL_CLOCK_LIMIT = 120


@pytest.mark.parametrize("mode", [
    "bytes_at_startup", "bytes_in_query", "messages_in_query", "datarows", "huge_claims"])
def test_receive_path_survives_hostile_input(mode):
    try:
        result = subprocess.run(
            [sys.executable, "-m", "tests.support.fuzz_receive", mode, str(EXAMPLES)],
            cwd=ROOT, capture_output=True, text=True, timeout=WALL_CLOCK_LIMIT)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"fuzz run {mode!r} hung (over {WALL_CLOCK_LIMIT} s):\n{exc.stderr}")
    assert result.returncode == 0, (
        f"fuzz run {mode!r} failed (exit code {result.returncode}; a negative "
        f"code is the signal that killed it):\n{result.stdout}\n{result.stderr[-6000:]}")
    assert "all handled" in result.stdout
