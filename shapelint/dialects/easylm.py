"""EasyLM: presets built with mlxu's config helpers.

``mlxu.config_dict(**kwargs)`` makes an ``ml_collections.ConfigDict`` of its keywords and
``mlxu.update_config_dict(config, updates)`` returns a copy of ``config`` with ``updates``
written over it (mlxu 0.2.0, mlxu/config.py:16-17 and 83-87), which EasyLM's
``get_standard_llama_config`` uses to lay a preset over its 3B defaults
(EasyLM/models/llama/llama_model.py:69-214 at fe5b2c35). The Python reader follows such
builders (`shapelint.readers.python.flow`); this module teaches it those helpers. Key names are
read by the key lexicon.
"""

from __future__ import annotations

from shapelint.readers.hooks import PythonIdioms, ReaderHooks

NAME = "easylm"

READER_HOOKS = ReaderHooks(
    python_idioms=PythonIdioms(
        merges=frozenset({"update_config_dict"}), containers=frozenset({"config_dict"})
    )
)
