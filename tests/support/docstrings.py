"""What a public function's docstring leaves out: the check behind the docstring tests."""
from __future__ import annotations

import inspect
from typing import Any, Callable


def undocumented_parameters(function: Callable[..., Any]) -> list[str]:
    """The parameters of `function` that its docstring does not name.

    A parameter counts as documented when the docstring names it as the
    package's docstrings do, in single backquotes (```timeout```), which is
    what help() and an IDE show next to the signature.
    """
    doc = inspect.getdoc(function) or ''
    return [name for name in inspect.signature(function).parameters
            if f'`{name}`' not in doc]
