"""nanoGPT forks that keep the ``GPTConfig`` name but not nanoGPT's fields, and models built by
a call that is then moved or cast (``GPT(…).cuda()``).

Fixtures are hand-written with the structure and values of karpathy/nanochat at 92d63d4
(``nanochat/gpt.py``) and KellerJordan/modded-nanogpt at f411b3d (``records/…/train_gpt*.py``);
the expected numbers are those files' literals, read by eye, not shapelint's output.
"""

from __future__ import annotations

import textwrap

from conftest import parse_text

from shapelint.core.model import Derivation, Dim, ModelConfig
from shapelint.dialects import extract
from shapelint.engine.options import LintOptions
from shapelint.engine.pipeline import lint_document
from shapelint.hardware.gpus import lookup
from shapelint.readers.python import parse_python


def configs(source: str) -> list[ModelConfig]:
    doc = parse_python("train_gpt.py", textwrap.dedent(source).lstrip("\n"))
    assert doc.ok, doc.problems
    return [c for c in extract(doc) if Dim.HIDDEN in c.dims]


# nanochat/gpt.py:28-39: GPTConfig with sequence_len, n_kv_head and window_pattern.
NANOCHAT = """
@dataclass
class GPTConfig:
    sequence_len: int = 2048
    vocab_size: int = 32768
    n_layer: int = 12
    n_head: int = 6 # number of query heads
    n_kv_head: int = 6 # number of key/value heads (GQA)
    n_embd: int = 768
    window_pattern: str = "SSSL"
"""


def test_nanochat_context_is_its_sequence_len() -> None:
    (config,) = configs(NANOCHAT)
    assert config.dialect == "nanogpt"
    # sequence_len = 2048 (gpt.py:30), not nanoGPT's block_size default 1024.
    assert config.int(Dim.SEQ_LEN) == 2048
    assert (config.int(Dim.VOCAB), config.int(Dim.KV_HEADS), config.int(Dim.HEAD_DIM)) == (
        32768,
        6,
        768 // 6,
    )
    # Rotary positions (apply_rotary_emb), no wpe table: not nanoGPT's learned one.
    assert config.position_embedding is None


# records/track_1_short/2024-12-04_ValueEmbed/train_gpt2.py:369 and 437 (class at ~335).
MODDED = """
@dataclass
class GPTConfig:
    vocab_size : int = 50304
    n_layer : int = 12
    n_head : int = 6 # head dim 128 suggested by @Grad62304977
    n_embd : int = 768

@dataclass
class Hyperparameters:
    sequence_length : int = 64*1024 # sequence length, in tokens

num_vocab = 50304
model = GPT(GPTConfig(vocab_size=num_vocab, n_layer=12, n_head=6, n_embd=768))
tiny = GPTConfig(n_layer=2, n_head=2, n_embd=128)
"""


def test_a_fork_without_block_size_has_no_nanogpt_context() -> None:
    found = {c.name: c for c in configs(MODDED)}
    cls, call = found["GPTConfig"], found["GPTConfig #2"]  # the class, then GPT(GPTConfig(…))
    for config in (cls, call):
        # The training length (64 * 1024, Hyperparameters) is not the model's field; nanoGPT's
        # block_size default 1024 is no field of this class: unknown, not 1024.
        assert Dim.SEQ_LEN not in config.dims
        assert (config.int(Dim.HIDDEN), config.int(Dim.HEADS), config.int(Dim.LAYERS)) == (
            768,
            6,
            12,
        )
        assert config.position_embedding is None
    assert call.int(Dim.VOCAB) == 50304


def test_a_forks_call_takes_the_files_class_defaults() -> None:
    tiny = {c.name: c for c in configs(MODDED)}["tiny"]
    assert tiny.int(Dim.LAYERS) == 2
    # vocab_size left out: this file's class says 50304 (as nanoGPT's would, but from here).
    vocab = tiny.dims[Dim.VOCAB]
    assert vocab.value == 50304 and vocab.kind is Derivation.DEFAULT
    assert "this file's class" in (vocab.formula or "")


def test_nanogpts_own_class_keeps_its_defaults() -> None:
    # karpathy/nanoGPT model.py: GPTConfig declares block_size; a call leaving it out is 1024.
    source = """
    @dataclass
    class GPTConfig:
        block_size: int = 1024
        vocab_size: int = 50304
        n_layer: int = 12
        n_head: int = 12
        n_embd: int = 768
        dropout: float = 0.0
        bias: bool = True

    small = GPTConfig(n_layer=6, n_head=6, n_embd=384)
    """
    (small,) = [c for c in configs(source) if c.int(Dim.LAYERS) == 6]
    assert small.int(Dim.SEQ_LEN) == 1024 and small.position_embedding == "learned"


def test_a_model_call_moved_to_the_gpu_is_read() -> None:
    # records/track_3_optimization/train_gpt_simple.py:253 (modded-nanogpt): the GPT class
    # takes model_dim, which no built-in dialect reads: the key lexicon reads it (the width;
    # the vocabulary is larger), with the layers.
    text = "model = GPT(vocab_size=50304, num_layers=12, model_dim=768).cuda()\n"
    options = LintOptions(gpus=(lookup("h100"),), min_slowdown=0.0)
    (config,), _ = lint_document(parse_text(text, "python", "train_gpt_simple.py"), options)
    assert (config.int(Dim.HIDDEN), config.int(Dim.LAYERS)) == (768, 12)
    assert config.sources[Dim.HIDDEN] == "lexicon" and config.get(Dim.HIDDEN).key == "model_dim"
    # A known config inside the chain is read as it would be without it.
    hf = configs(
        "model = LlamaForCausalLM(LlamaConfig(hidden_size=2048, num_attention_heads=16,"
        " num_hidden_layers=24, intermediate_size=5632)).to('cuda')\n"
    )
    assert [(c.int(Dim.HIDDEN), c.int(Dim.FFN)) for c in hf] == [(2048, 5632)]
