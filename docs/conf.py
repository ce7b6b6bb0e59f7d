"""Sphinx configuration for the mypgdriver documentation.

Build from the repository root, in an environment where the package is
installed in editable mode (``pip install -e '.[docs]'``, which also builds
the compiled modules in place: autodoc imports them); docs/README.md has the
steps:

    python -m sphinx -W -b html docs docs/_build/html
"""
from __future__ import annotations

import os
import sys

DOCS_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(DOCS_DIR)

# The checkout itself, not an installed copy: the API reference must describe
# the code next to it.  _ext holds this site's own small extensions.
sys.path.insert(0, REPO_ROOT)
sys.path.insert(0, os.path.join(DOCS_DIR, '_ext'))


def _package_version() -> str:
    # Read, not imported: the version must not depend on the compiled modules.
    namespace: dict = {}
    with open(os.path.join(REPO_ROOT, 'mypgdriver', '_version.py'), encoding='utf-8') as f:
        exec(f.read(), namespace)
    return namespace['__version__']


project = 'mypgdriver'
author = 'the mypgdriver authors'
copyright = 'the mypgdriver authors'
release = _package_version()
version = '.'.join(release.split('.')[:2])

extensions = [
    'sphinx.ext.autodoc',
    'sphinx.ext.viewcode',
    'benchresults',
    'sqlstates',
    'shortrefs',
    'publicsignatures',
]

exclude_patterns = ['_build', 'README.md']
templates_path: list[str] = []

# --- autodoc -------------------------------------------------------------------

autodoc_member_order = 'bysource'
autodoc_typehints = 'signature'
autodoc_default_options = {
    'members': True,
}
# The compiled modules carry their signatures in the first docstring line
# (Cython's embedsignature); autodoc reads them from there.
autodoc_docstring_signature = True
# Show defaults as written (``connection_class=Connection``), not as reprs.
autodoc_preserve_defaults = True

# Classes that the driver instantiates for you: their constructor arguments
# are internal wiring, and showing them would suggest calling the class.
_MADE_BY_THE_DRIVER = frozenset({
    'mypgdriver.Connection',
    'mypgdriver.Record',
    'mypgdriver.prepared.PreparedStatement',
    'mypgdriver.cursor.Cursor',
    'mypgdriver.cursor.CursorFactory',
    'mypgdriver.transaction.Transaction',
    'mypgdriver.Pool',
    'mypgdriver.pool.PoolAcquireContext',
    'mypgdriver.pool.PoolConnectionProxy',
    'mypgdriver.pool.PoolStats',
    'mypgdriver.server_info.ConnectionSettings',
})


def _hide_internal_constructor(app, what, name, obj, options, signature, return_annotation):
    if what in ('class', 'exception') and name in _MADE_BY_THE_DRIVER:
        return '', None
    return None


# --- HTML ----------------------------------------------------------------------

try:
    import furo  # noqa: F401
except ImportError:
    # The docs extra only promises Sphinx; its default theme is fine too.
    html_theme = 'alabaster'
else:
    html_theme = 'furo'

html_title = f'mypgdriver {release}'
html_show_sourcelink = False
html_static_path = ['_static']
html_css_files = ['mypgdriver.css']

# --- benchmark results (docs/_ext/benchresults.py) ------------------------------

# Where `python -m bench` copies its last run; the benchmarks page embeds it.
bench_results_dir = os.path.join(REPO_ROOT, 'bench', 'results', 'latest')


def setup(app):
    app.connect('autodoc-process-signature', _hide_internal_constructor)
