"""Keep private names out of the API reference's signatures.

Type variables are private by convention (``_T`` in ``mypgdriver.types``),
and autodoc writes them as they are: ``Range(lower: _T | None = None)``
sends a reader looking for a ``_T`` that is not documented anywhere.  This
extension

* renames private type variables in signatures to their public spelling
  (``_T`` becomes ``T``, ``_RecordT`` becomes ``RecordT``), and drops
  ``Generic[...]`` from a class's listed bases, which would show them again;
* checks, once the HTML is written, that no signature on the API pages still
  shows a private name (a default such as ``_UNSET``, a private class in an
  annotation), and warns for each one, which fails a ``-W`` build.  The fix
  is then in the code (a public name, a documented alias) or here.
"""
from __future__ import annotations

import html
import os
import re
import sys
import typing
from typing import Any, Optional

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

# A name in a signature as autodoc renders annotations: optionally dotted,
# optionally with the '~' of the short form, ending in a private part.
_PRIVATE_NAME = re.compile(r'~?(?<![\w.])((?:[A-Za-z_]\w*\.)*)(_[A-Za-z]\w*)\b')

# In the rendered HTML: a private identifier that is not a dunder name.
_PRIVATE_IN_HTML = re.compile(r'(?<![\w])_[A-Za-z]\w*')
_SIGNATURE_HTML = re.compile(r'<dt class="sig sig-object py"[^>]*>(.*?)</dt>', re.S)
_TAG = re.compile(r'<[^>]+>')
_HEADERLINK = re.compile(r'<a class="headerlink".*?</a>', re.S)


def _is_typevar(module_name: str, name: str) -> bool:
    module = sys.modules.get(module_name)
    return module is not None and isinstance(getattr(module, name, None), typing.TypeVar)


def _rename_typevars(text: str, home_module: str) -> str:
    def public(match: re.Match[str]) -> str:
        module_name = match.group(1).rstrip('.') or home_module
        name = match.group(2)
        if _is_typevar(module_name, name):
            return name.lstrip('_')
        return match.group(0)
    return _PRIVATE_NAME.sub(public, text)


def _process_signature(app: Sphinx, what: str, name: str, obj: Any, options: Any,
                       signature: Optional[str],
                       return_annotation: Optional[str]) -> Optional[tuple[str, str]]:
    # The first handler that returns something wins: return None when
    # nothing changed, so that other handlers (conf.py's) still run.
    home = getattr(obj, '__module__', None) or name.rpartition('.')[0]
    new_signature = _rename_typevars(signature, home) if signature else signature
    new_return = (_rename_typevars(return_annotation, home) if return_annotation
                  else return_annotation)
    if new_signature == signature and new_return == return_annotation:
        return None
    return new_signature, new_return


def _rename_typevar_references(app: Sphinx, doctree: nodes.document) -> None:
    """The same renaming where no signature event runs: the type of a property
    or an attribute, which autodoc passes on as a ``:type:`` option and the
    Python domain turns into cross-references."""
    for signature in doctree.findall(addnodes.desc_signature):
        for ref in list(signature.findall(addnodes.pending_xref)):
            if ref.get('refdomain') != 'py':
                continue
            target = ref.get('reftarget', '')
            module_name, _, name = target.rpartition('.')
            if not name.startswith('_'):
                continue
            if _is_typevar(module_name or ref.get('py:module') or '', name):
                ref.replace_self(nodes.Text(name.lstrip('_')))


def _process_bases(app: Sphinx, name: str, obj: Any, options: Any, bases: list) -> None:
    bases[:] = [base for base in bases
                if base is not typing.Generic and typing.get_origin(base) is not typing.Generic]


def _check_rendered_signatures(app: Sphinx, exception: Optional[BaseException]) -> None:
    if exception is not None or app.builder.format != 'html':
        return
    api_dir = os.path.join(app.outdir, 'api')
    if not os.path.isdir(api_dir):
        return
    for filename in sorted(os.listdir(api_dir)):
        if not filename.endswith('.html'):
            continue
        with open(os.path.join(api_dir, filename), encoding='utf-8') as f:
            page = f.read()
        for block in _SIGNATURE_HTML.findall(page):
            text = html.unescape(_TAG.sub('', _HEADERLINK.sub('', block)))
            for private in sorted(set(_PRIVATE_IN_HTML.findall(text))):
                logger.warning('private name %r in the rendered signature %r (api/%s)',
                               private, ' '.join(text.split()), filename)


def setup(app: Sphinx) -> dict[str, Any]:
    # After conf.py's handler, which hides some constructors altogether.
    app.connect('autodoc-process-signature', _process_signature, priority=600)
    app.connect('doctree-read', _rename_typevar_references)
    app.connect('autodoc-process-bases', _process_bases)
    app.connect('build-finished', _check_rendered_signatures)
    return {'version': '1', 'parallel_read_safe': True, 'parallel_write_safe': True}
