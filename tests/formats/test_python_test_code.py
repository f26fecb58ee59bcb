"""Test code is not config: the toy models a pytest test class builds in its fixtures are not
read as model configs (torchtune's ``tests/torchtune/models/t5/test_t5_encoder.py`` builds a
2-wide T5 in ``TestT5Encoder.model``; read as a config it drew SL102/SL103/SL321 warnings)."""

from __future__ import annotations

import textwrap

import shapelint.dialects  # noqa: F401 - registers the idioms the dialects teach the reader
from shapelint.readers.python import parse_python

# The structure of torchtune's test_t5_encoder.py (pytorch/torchtune, tests/torchtune/models/t5).
TEST_FILE = """
import pytest

from torchtune.models.t5._component_builders import t5_encoder

VOCAB_SIZE = 512
EMBED_DIM = 2


class TestT5Encoder:
    @pytest.fixture
    def model(self):
        model = t5_encoder(
            embed_dim=EMBED_DIM,
            mlp_dim=4,
            num_heads=2,
            head_dim=EMBED_DIM // 2,
            num_layers=2,
            vocab_size=VOCAB_SIZE,
            max_seq_len=8,
        )
        return model

    def test_forward(self, model):
        model(None)
"""

# The same builder call in a plain class's method is still read.
PLAIN = TEST_FILE.replace("class TestT5Encoder:", "class EncoderRecipes:")


def names(text: str) -> list[str]:
    return [c.name for c in parse_python("t.py", textwrap.dedent(text).lstrip("\n")).candidates]


def test_a_test_class_fixture_is_not_a_config() -> None:
    assert not any(n.startswith("TestT5Encoder") for n in names(TEST_FILE))


def test_the_same_method_outside_a_test_class_is_read() -> None:
    assert "EncoderRecipes.model" in names(PLAIN), names(PLAIN)
