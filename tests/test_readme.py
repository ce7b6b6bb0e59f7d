"""README.md's Python examples run, and print what their comments say.

Each ```python block is run as a script against the test server (its DSN
put in place of the example's), and every ``print(...)  # expected`` line's
comment must appear in what the block printed.
"""
from __future__ import annotations

import contextlib
import io
import pathlib
import re
from typing import Any
from urllib.parse import quote

import pytest

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"
EXAMPLE_DSN = "postgresql://app@localhost/appdb"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_the_readme_has_the_examples() -> None:
    blocks = python_blocks()
    assert len(blocks) >= 2
    assert all(EXAMPLE_DSN in block for block in blocks)
    assert any("asyncio.gather" in block for block in blocks)  # the pipelining example


@pytest.mark.parametrize("block", python_blocks(),
                         ids=[f"block{i}" for i in range(len(python_blocks()))])
def test_readme_example_runs(block: str, connect_kwargs: dict[str, Any]) -> None:
    user = quote(connect_kwargs["user"], safe="")
    password = connect_kwargs.get("password")
    auth = f"{user}:{quote(password, safe='')}" if password is not None else user
    dsn = (f"postgresql://{auth}@{connect_kwargs['host']}:{connect_kwargs['port']}/"
           f"{quote(connect_kwargs['database'], safe='')}")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(block.replace(EXAMPLE_DSN, dsn), "README.md", "exec"),
             {"__name__": "__main__"})
    expected = [line.split("# ", 1)[1].strip() for line in block.splitlines()
                if line.strip().startswith("print(") and "# " in line]
    assert expected
    output = printed.getvalue().splitlines()
    assert output == expected
