"""tensor2tensor: hparams sets built by chained builders and ``hparams.add_hparam``.

An hparams set is a function that starts from another set (``hparams = transformer_base()``)
and changes it by attribute assignment and by ``HParams.add_hparam(name, value)`` /
``set_hparam(name, value)``, which set the attribute ``name`` (tensor2tensor/utils/hparam.py:
418-441 and 443-468 at bafdc1b6). The Python reader follows such builders
(`shapelint.readers.python.flow`); this module teaches it those two methods. Key names are
read by the key lexicon.
"""

from __future__ import annotations

from shapelint.readers.hooks import PythonIdioms, ReaderHooks

NAME = "tensor2tensor"

READER_HOOKS = ReaderHooks(
    python_idioms=PythonIdioms(setters=frozenset({"add_hparam", "set_hparam"}))
)
