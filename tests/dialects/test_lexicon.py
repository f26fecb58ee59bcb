"""The key lexicon: key meaning from words, value checks, SL009 and batches not understood.

Each fixture is hand-written in the structure of a real file (named in its comment), not a
copy of it.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
from conftest import configs_of, parse_text

from shapelint.core.model import Dim, ModelConfig
from shapelint.dialects import hf, lexicon, lexicon_words
from shapelint.engine.options import LintOptions, TargetOptions
from shapelint.engine.pipeline import lint_document
from shapelint.hardware.gpus import lookup
from shapelint.report.json import config_json

H100 = lookup("h100")


def lint(text: str, fmt: str = "json", path: str = "config.json", **flags: object) -> tuple:
    options = LintOptions(
        gpus=(H100,),
        min_slowdown=float("-inf"),
        flags=TargetOptions(**flags),  # type: ignore[arg-type]
    )
    return lint_document(parse_text(text, fmt, path), options)


def dims(config: ModelConfig) -> dict[str, object]:
    return {d.value: config.int(d) for d in config.dims if config.int(d) is not None}


# --- Words -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "words"),
    [
        ("dims_per_head", ("dims", "per", "head")),
        ("numHeads", ("num", "heads")),
        ("NUM_Q_HEADS", ("num", "q", "heads")),
        ("hidden-size", ("hidden", "size")),
        ("--num-attention-heads", ("num", "attention", "heads")),
        ("model.n_local_heads", ("n", "local", "heads")),
        ("dModel", ("d", "model")),
        ("MICROBATCH_SIZE", ("micro", "batch", "size")),
    ],
)
def test_words_of_a_key(key: str, words: tuple[str, ...]) -> None:
    assert lexicon_words.words(key) == words


@pytest.mark.parametrize(
    ("key", "dim"),
    [
        ("dims_per_head", Dim.HEAD_DIM),
        ("DIMS_PER_HEAD", Dim.HEAD_DIM),
        ("numHeads", Dim.HEADS),
        ("NUM_Q_HEADS", Dim.HEADS),
        ("num_q_heads", Dim.HEADS),
        ("num_attn_heads", Dim.HEADS),
        ("hidden-size", Dim.HIDDEN),
        ("model_dims", Dim.HIDDEN),
        ("MODEL_DIMS", Dim.HIDDEN),
        ("emb_size", Dim.HIDDEN),
        ("embedDim", Dim.HIDDEN),
        ("decoder_embed_dim", Dim.HIDDEN),
        ("ffn_inner_dim", Dim.FFN),
        ("decoder_ffn_embed_dim", Dim.FFN),
        ("mlp_dim", Dim.FFN),
        ("num_key_value_heads", Dim.KV_HEADS),
        ("NUM_KV_HEADS", Dim.KV_HEADS),
        ("n_local_heads", Dim.KV_HEADS),
        ("num_transformer_layers", Dim.LAYERS),
        ("NUM_LAYERS", Dim.LAYERS),
        ("depth", Dim.LAYERS),
        ("max_context_length", Dim.SEQ_LEN),
        ("seq", Dim.SEQ_LEN),
        ("n_vocab", Dim.VOCAB),
    ],
)
def test_sure_meanings(key: str, dim: Dim) -> None:
    found = lexicon_words.meaning(key)
    assert found is not None and found.sure and found.roles == (dim,)


@pytest.mark.parametrize(
    ("key", "roles"),
    [
        ("hidden_dim", (Dim.FFN, Dim.HIDDEN)),
        ("HIDDEN_DIMS", (Dim.FFN, Dim.HIDDEN)),
        ("num_embed", (Dim.VOCAB, Dim.HIDDEN)),
        ("dim", (Dim.HIDDEN,)),
        ("key_size", (Dim.HEAD_DIM,)),
        ("num_blocks", (Dim.LAYERS,)),
    ],
)
def test_ambiguous_meanings(key: str, roles: tuple[Dim, ...]) -> None:
    found = lexicon_words.meaning(key)
    assert found is not None and not found.sure and found.roles == roles


@pytest.mark.parametrize(
    "key",
    [
        "encoder_layers",  # another stack
        "vision_hidden_size",
        "num_gqa_groups",  # corenet: queries per KV group, not the KV heads
        "_NUM_LAYERS_GEMMA_2B",  # a constant per model, not one model's key
        "hidden_dropout",
        "max_length",
        "lora_rank",
    ],
)
def test_keys_that_mean_nothing_here(key: str) -> None:
    assert lexicon_words.meaning(key) is None


def test_flax_qkv_dim_is_the_total_attention_width() -> None:
    found = lexicon_words.meaning("qkv_dim")
    assert found is not None and found.roles == (lexicon_words.ATTENTION_WIDTH,)


def _dialect_keys() -> list[tuple[str, Dim, str]]:
    """(module, dim, key) for every key name a dialect module maps to a dim with a literal:
    ``b.take(Dim.X, "name", lm + "name", flag("name"), *hf.TABLE)`` and
    ``take_or_default(b, Dim.X, ("name",), …)``."""
    root = Path(lexicon.__file__).parent
    tables = {
        name: getattr(hf, name)
        for name in ("HIDDEN", "HEADS", "KV_HEADS", "HEAD_DIM", "FFN", "LAYERS", "SEQ")
    }
    tables.update(EXPERTS=hf.EXPERTS, TOP_K=hf.TOP_K, MOE_FFN=hf.MOE_FFN)
    out: list[tuple[str, Dim, str]] = []
    for path in sorted(root.glob("*.py")):
        if path.stem in ("lexicon", "lexicon_reading", "lexicon_words", "shape_keys"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            args = list(node.args)
            if name == "take_or_default":
                args = args[1:]
            elif name != "take":
                continue
            if not args or not isinstance(args[0], ast.Attribute):
                continue
            if not (isinstance(args[0].value, ast.Name) and args[0].value.id == "Dim"):
                continue
            dim = Dim[args[0].attr]
            for arg in args[1:]:
                for key in _strings(arg, tables):
                    out.append((path.stem, dim, key))
    return out


def _strings(node: ast.expr, tables: dict[str, tuple[str, ...]]) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple):
        return [s for e in node.elts for s in _strings(e, tables)]
    if isinstance(node, ast.BinOp):
        return _strings(node.right, tables)
    if isinstance(node, ast.Call) and node.args:
        return _strings(node.args[0], tables)
    if isinstance(node, ast.Starred) and isinstance(node.value, ast.Name):
        return list(tables.get(node.value.id, ()))
    return []


DIALECT_KEYS = _dialect_keys()


def test_the_dialect_key_scan_finds_the_known_tables() -> None:
    found = {(dim, key) for _, dim, key in DIALECT_KEYS}
    assert (Dim.KV_HEADS, "num_query_groups") in found  # hf's table
    assert (Dim.HEAD_DIM, "kv-channels") in found  # megatron's flag("kv-channels")
    assert len(found) > 100


@pytest.mark.parametrize(("module", "dim", "key"), DIALECT_KEYS)
def test_the_lexicon_agrees_with_every_key_a_dialect_maps(module: str, dim: Dim, key: str) -> None:
    # Read by its words alone (no exact names): unplaced, or a meaning that includes the
    # dialect's dim. The one exception is a dialect's own knowledge of a shared name.
    found = lexicon_words.meaning(key, exact=False)
    if found is None:
        return
    roles = set(found.roles)
    if lexicon_words.ATTENTION_WIDTH in roles:
        roles.add(Dim.HEAD_DIM)
    # A padded vocabulary is a vocabulary; Megatron-core's moe FFN is an FFN width.
    related = {Dim.PADDED_VOCAB: Dim.VOCAB, Dim.MOE_FFN: Dim.FFN}
    assert dim in roles or related.get(dim) in roles, (module, key, found)


# The shape keys SL009 counted before it was built on the lexicon: each still counts, as the
# same dim (or, where its words are ambiguous, among the dims it may mean).
OLD_SHAPE_KEYS = {
    Dim.HIDDEN: "hidden_size n_embd d_model dim base_emb_dim emb_dim embed_dim model_dim "
    "dim_model n_embed embedding_dim",
    Dim.HEADS: "num_attention_heads n_head n_heads num_heads base_num_query_heads num_query_heads",
    Dim.KV_HEADS: "num_key_value_heads num_kv_heads n_kv_heads n_head_kv num_query_groups "
    "n_query_groups base_num_kv_heads multi_query_group_num",
    Dim.FFN: "intermediate_size ffn_hidden_size n_inner ffn_dim d_ff base_mlp_dim mlp_dim "
    "intermediate_dim hidden_dim mlp_hidden_size",
    Dim.LAYERS: "num_hidden_layers num_layers n_layer n_layers base_num_decoder_layers "
    "num_decoder_layers",
    Dim.HEAD_DIM: "head_dim kv_channels head_size d_kv",
    Dim.VOCAB: "vocab_size n_vocab",
}


@pytest.mark.parametrize(
    ("dim", "key"), [(d, k) for d, keys in OLD_SHAPE_KEYS.items() for k in keys.split()]
)
def test_every_old_shape_key_still_counts(dim: Dim, key: str) -> None:
    found = lexicon_words.meaning(key)
    assert found is not None and dim in found.roles, key


# --- Fills and readings of their own ----------------------------------------------------

# pytorch/torchchat torchchat/model_params/*.json: Llama params with torchchat's own name for
# the KV heads, n_local_heads (its TransformerArgs), which the Llama dialect does not read.
TORCHCHAT = (
    '{"block_size": 8192, "dim": 4096, "ffn_dim_multiplier": 1.3, "multiple_of": 1024, '
    '"n_heads": 32, "n_local_heads": 8, "n_layers": 32, "rope_base": 500000.0, '
    '"vocab_size": 128256, "use_tiktoken": true}\n'
)


def test_torchchat_n_local_heads_are_the_kv_heads() -> None:
    (config,) = configs_of(TORCHCHAT)
    kv = config.get(Dim.KV_HEADS)
    assert kv is not None and kv.value == 8 and kv.key == "n_local_heads" and not kv.derived
    assert config.sources[Dim.KV_HEADS] == "lexicon"
    # What the Llama dialect read stays as it read it.
    assert config.sources[Dim.HIDDEN] == "llama-params" and config.int(Dim.FFN) == 14336
    assert config.int(Dim.HEAD_DIM) == 128


def test_kv_heads_that_do_not_divide_the_heads_stay_unknown() -> None:
    (config,) = configs_of(TORCHCHAT.replace('"n_local_heads": 8', '"n_local_heads": 12'))
    kv = config.get(Dim.KV_HEADS)
    # Unknown, and not the heads either (KV = heads is only a fallback for no key at all).
    assert kv is not None and not kv.known and kv.key == "n_local_heads"


# kingoflolz/mesh-transformer-jax configs/*.json: an HF-like width and heads, with the layer
# count, sequence and batch under names of its own; the batch is per model replica (a replica
# spans cores_per_replica TPU cores).
MESH_JAX = """\
{
  "layers": 28,
  "d_model": 4096,
  "n_heads": 16,
  "n_vocab": 50400,
  "norm": "layernorm",
  "pe": "rotary",
  "pe_rotary_dims": 64,

  "seq": 2048,
  "cores_per_replica": 8,
  "per_replica_batch": 1,
  "gradient_accumulation_steps": 16,

  "lr": 1.2e-4,
  "tpu_size": 256,
  "name": "GPT3_6B_pile_rotary"
}
"""


def test_mesh_transformer_jax_layers_and_sequence_from_the_lexicon() -> None:
    (config,) = configs_of(MESH_JAX)
    assert config.int(Dim.LAYERS) == 28 and config.sources[Dim.LAYERS] == "lexicon"
    assert config.int(Dim.SEQ_LEN) == 2048 and config.get(Dim.SEQ_LEN).key == "seq"
    assert config.sources[Dim.HIDDEN] == "hf"  # the neutral reading keeps what it read
    assert [v.key for v in config.unread_batch] == ["per_replica_batch"]


# google/paxml paxml/tasks/lm/params/*.py experiments, as a YAML of the same upper-case names.
PAX_LIKE = """\
MODEL_DIMS: 2048
HIDDEN_DIMS: 8192
NUM_HEADS: 16
DIMS_PER_HEAD: 128
NUM_LAYERS: 24
VOCAB_SIZE: 32000
MAX_SEQ_LEN: 1024
PERCORE_BATCH_SIZE: 4
"""

# A lab's YAML with the same meaning in lower case.
MODEL_DIMS_YAML = """\
model:
  model_dims: 2048
  dims_per_head: 128
  num_heads: 16
  num_layers: 24
  hidden_dims: 8192
"""


@pytest.mark.parametrize("text", [PAX_LIKE, MODEL_DIMS_YAML])
def test_a_model_no_dialect_reads(text: str) -> None:
    (config,) = configs_of(text, "yaml", "exp.yaml")
    assert config.dialect == "lexicon" and set(config.sources.values()) == {"lexicon"}
    got = dims(config)
    assert {k: got[k] for k in ("hidden", "heads", "head_dim", "ffn", "layers")} == {
        "hidden": 2048,
        "heads": 16,
        "head_dim": 128,
        "ffn": 8192,  # hidden_dims: the width is taken, and the FFN is wider
        "layers": 24,
    }
    assert config.get(Dim.HEAD_DIM).key.endswith(("DIMS_PER_HEAD", "dims_per_head"))


def test_heads_times_head_dim_must_make_the_width() -> None:
    # paxml's TransformerLmSpmdAdafactor asserts MODEL_DIMS == NUM_HEADS * DIMS_PER_HEAD
    # (model_params.py:619-625 at b397693f): 16 × 128 ≠ 1024 leaves the head dim unknown.
    (config,) = configs_of(PAX_LIKE.replace("MODEL_DIMS: 2048", "MODEL_DIMS: 1024"), "yaml")
    head_dim = config.get(Dim.HEAD_DIM)
    assert head_dim is not None and not head_dim.known
    assert config.int(Dim.HIDDEN) == 1024 and config.int(Dim.HEADS) == 16


def test_an_ffn_narrower_than_the_width_stays_unknown() -> None:
    (config,) = configs_of(MODEL_DIMS_YAML.replace("8192", "512"), "yaml")
    # hidden_dims may be the FFN (narrower than the width: no) or the width (taken): unplaced.
    assert config.int(Dim.FFN) is None
    assert [v.key for v in config.unplaced] == ["model.hidden_dims"]


# Ambiguous ``hidden_dim``: the FFN in Llama's ModelArgs and torchchat's TransformerArgs
# (beside ``dim``), the width in a model whose only width-like key it is.
LLAMA_LIKE = '{"dim": 512, "hidden_dim": 1376, "num_layers": 8, "num_heads": 8, "vocab": 32000}\n'
WIDTH_LIKE = '{"hidden_dim": 768, "num_heads": 12, "num_layers": 12, "ffn_size": 3072}\n'


def test_hidden_dim_is_the_ffn_beside_a_width() -> None:
    (config,) = configs_of(LLAMA_LIKE)
    assert (config.int(Dim.HIDDEN), config.int(Dim.FFN)) == (512, 1376)
    assert config.get(Dim.FFN).key == "hidden_dim" and config.get(Dim.HIDDEN).key == "dim"


def test_hidden_dim_is_the_width_when_the_heads_split_it() -> None:
    (config,) = configs_of(WIDTH_LIKE)
    assert (config.int(Dim.HIDDEN), config.int(Dim.FFN), config.int(Dim.HEADS)) == (768, 3072, 12)
    assert config.get(Dim.HIDDEN).key == "hidden_dim"


def test_hidden_dim_that_would_give_an_odd_head_dim_is_not_the_width() -> None:
    # 11008 / 32 = 344: no head dim looks like that; Llama's FFN width without its ``dim``.
    found = configs_of('{"hidden_dim": 11008, "n_heads": 32, "n_layers": 32}\n')
    assert all(c.int(Dim.HIDDEN) != 11008 for c in found)


# google-deepmind/gemma gemma/gm/nn/_gemma.py: a class whose config is a call with Gemma's
# names (num_embed the vocabulary, hidden_dim the FFN, head_dim beside a wider width).
GEMMA_CLASS = """\
class Gemma2_2B(Transformer):
    config: TransformerConfig = TransformerConfig(
        num_embed=256128,
        embed_dim=2304,
        hidden_dim=9216,
        num_heads=8,
        head_dim=256,
        num_kv_heads=4,
        final_logit_softcap=30.0,
    )
"""


def test_gemma_class_num_embed_is_the_vocabulary() -> None:
    (config,) = configs_of(GEMMA_CLASS, "python", "gemma.py")
    assert config.name == "Gemma2_2B"
    assert {k: v for k, v in dims(config).items() if k != "head_dim"} == {
        "hidden": 2304,
        "vocab": 256128,
        "ffn": 9216,
        "heads": 8,
        "kv_heads": 4,
    }
    # 8 × 256 ≠ 2304: the check a person makes leaves the head dim unknown (not derived).
    assert config.int(Dim.HEAD_DIM) is None and Dim.HEAD_DIM in config.dims


# google/flax examples/lm1b: flax's qkv_dim is the total attention width.
FLAX_LIKE = '{"emb_dim": 512, "num_heads": 8, "num_layers": 6, "qkv_dim": 512, "mlp_dim": 2048}\n'


def test_flax_head_dim_from_the_total_attention_width() -> None:
    (config,) = configs_of(FLAX_LIKE)
    head_dim = config.get(Dim.HEAD_DIM)
    assert head_dim is not None and head_dim.value == 64
    assert head_dim.derived_from[0].key == "qkv_dim"


def test_a_layer_selection_leaves_the_layer_count_unknown() -> None:
    # apple/corenet kv_prediction.py layer-pruned configs: select_layers keeps 7 of 28.
    text = (
        "cfg = dict(num_transformer_layers=28, model_dim=2048, num_heads=32,"
        " select_layers=[0, 4, 8, 12, 16, 20, 24])\n"
    )
    (config,) = configs_of(text, "python", "cfg.py")
    assert config.int(Dim.LAYERS) is None and config.int(Dim.HIDDEN) == 2048


@pytest.mark.parametrize(
    "text",
    [
        # an image's size and a data pipeline's counts
        '{"image": {"width": 224, "height": 224}, "num_layers": 3, "num_workers": 8}\n',
        # DeepSpeed settings only
        '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2}}\n',
        # a generation config
        '{"max_length": 128, "num_beams": 4, "top_k": 50}\n',
        # a plot: width and depth, no heads to confirm a width
        '{"width": 640, "height": 480, "dim": 3}\n',
    ],
)
def test_no_model_from_mappings_that_are_not_models(text: str) -> None:
    assert all(c.dialect != "lexicon" and Dim.HIDDEN not in c.dims for c in configs_of(text))


def test_the_lexicon_never_changes_what_a_dialect_read() -> None:
    # An HF config with a stray key the lexicon would read as the layers: the dialect's wins.
    text = (
        '{"hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32, '
        '"n_layers": 16, "vocab_size": 32000}\n'
    )
    (config,) = configs_of(text)
    assert config.int(Dim.LAYERS) == 32 and config.sources[Dim.LAYERS] == "hf"


def test_module_constants_that_feed_a_model_are_not_a_second_model() -> None:
    # InternLM-style configs: upper-case constants passed into ``model = dict(...)``.
    text = textwrap.dedent(
        """\
        HIDDEN = 2048
        NUM_LAYERS = 24
        NUM_HEADS = 16
        model = dict(d_model=HIDDEN, n_layer=NUM_LAYERS, n_head=NUM_HEADS)
        """
    )
    found = configs_of(text, "python", "cfg.py")
    assert [c.int(Dim.HIDDEN) for c in found] == [2048]


# --- SL009 ---------------------------------------------------------------------------------


def test_sl009_names_keys_the_lexicon_cannot_place() -> None:
    # A model with a key that is the layers in some codebases and KV-cache blocks in others.
    text = '{"model": {"embed_dim": 4096, "num_heads": 32, "n_blocks": 24}}\n'
    (config,), found = lint(text)
    assert config.int(Dim.LAYERS) is None
    (notice,) = [f for f in found if f.code == "SL009"]
    assert "model.n_blocks (layers?)" in notice.message
    assert '[tool.shapelint.keys] layers = ["model.n_blocks"]' in notice.message


def test_sl009_on_a_file_of_shape_keys_with_no_model() -> None:
    text = "model:\n  hidden_dim: 4096\n  num_layers: 32\n  vocab_size: 32000\n"
    configs, found = lint(text, "yaml", "m.yaml")
    assert configs == []
    (notice,) = [f for f in found if f.code == "SL009"]
    assert "model.hidden_dim (ffn or hidden?)" in notice.message
    assert 'hidden = ["model.hidden_dim"]' in notice.message  # no other key states a width


# --- Batches stated but not understood --------------------------------------------------------


def test_a_batch_per_replica_is_not_checked_at_the_default_micro_batch() -> None:
    # 16 heads at b = 1 and s = 2048: 16·16 = 256 flash blocks; at s = 512, 64 blocks leave
    # SMs idle (SL203) — but only at the built-in micro-batch, which this file does not state.
    text = MESH_JAX.replace('"seq": 2048', '"seq": 512')
    _, found = lint(text)
    codes = [f.code for f in found]
    assert "SL203" not in codes
    (notice,) = [f for f in found if f.code == "SL009"]
    assert notice.key == "per_replica_batch" and "attention" in notice.message
    assert 'micro_batch = ["per_replica_batch"]' in notice.message
    # A micro-batch the user chooses is checked as always, and no notice is needed.
    _, chosen = lint(text, micro_batch=1)
    assert "SL203" in [f.code for f in chosen] and "SL009" not in [f.code for f in chosen]
    # Without the per-replica batch the file states no batch: the default is used as before.
    _, plain = lint(text.replace('"per_replica_batch": 1,', ""))
    assert "SL203" in [f.code for f in plain]


# NVIDIA Megatron-LM tests/functional_tests/.../pretrain_gpt3_distributed_test.sh (in the
# bigcode-project fork): the micro-batch is a positional parameter of the script.
MEGATRON_TEST = """\
#! /bin/bash
MBS=${10}
GBS=${11}
torchrun pretrain_gpt.py \\
       --num-layers 12 \\
       --hidden-size 512 \\
       --num-attention-heads 8 \\
       --micro-batch-size ${MBS:-4} \\
       --global-batch-size ${GBS:-32} \\
       --seq-length 1024 \\
       --max-position-embeddings 1024
"""


def test_a_micro_batch_from_a_positional_parameter_is_not_understood() -> None:
    (config,), found = lint(MEGATRON_TEST, "shell", "test.sh")
    assert [v.key for v in config.unread_batch] == ["--micro-batch-size"]
    assert "SL203" not in [f.code for f in found]
    (notice,) = [f for f in found if f.code == "SL009"]
    assert "--micro-batch-size = ${MBS:-4} (not known without running the file)" in (notice.message)
    assert "micro_batch = [" not in notice.message  # mapping the key would not help
    _, known = lint(MEGATRON_TEST.replace("${MBS:-4}", "1"), "shell", "test.sh")
    assert "SL203" in [f.code for f in known] and "SL009" not in [f.code for f in known]


def test_batch_like_keys() -> None:
    yes = ["per_replica_batch", "PERCORE_BATCH_SIZE", "global_batch_size", "tokens_per_batch"]
    no = ["eval_batch_size", "max_batch_size", "num_batches_to_skip", "batch_first"]
    # AI-Hypercomputer/maxtext configs/base.yml: kernel tiles and test switches, not batches.
    no += ["wi_tile_fwd_batch_seq", "reuse_example_batch", "batch_split_factor"]
    # NVIDIA/Megatron-LM: counts of micro-batches and their pipeline groups.
    no += ["num_microbatches", "microbatch_group_size_per_vp_stage"]
    assert all(lexicon_words.is_batch_key(k) for k in yes)
    assert not any(lexicon_words.is_batch_key(k) for k in no)


def test_a_second_kind_of_layer_leaves_the_layer_count_unknown() -> None:
    # pytorch/torchtitan models/flux: depth double-stream and depth_single_blocks
    # single-stream blocks; the model has both.
    text = (
        "cfg = FluxConfig(hidden_size=3072, num_heads=24, depth=19, depth_single_blocks=38,"
        " mlp_ratio=4.0)\n"
    )
    (config,) = configs_of(text, "python", "flux.py")
    assert config.int(Dim.LAYERS) is None and config.int(Dim.HEADS) == 24


def test_another_models_width_is_not_this_ones() -> None:
    # torchtitan models/kimi_k2_7/vision_encoder.py: a vision tower's config names the text
    # model's width it projects into (text_hidden_size); its own width is dim.
    text = textwrap.dedent(
        """\
        @dataclass
        class Config:
            dim: int = 1152
            num_layers: int = 27
            num_heads: int = 16
            text_hidden_size: int = 7168
        """
    )
    (config,) = configs_of(text, "python", "vision.py")
    assert config.int(Dim.HIDDEN) == 1152 and config.get(Dim.HIDDEN).key == "dim"


def test_keys_under_another_models_section_are_not_evidence() -> None:
    # NVIDIA NeMo PEFT configs: a p-tuning prompt encoder beside a restored model.
    text = (
        "model:\n  restore_from_path: /ckpt/model.nemo\n  peft:\n    p_tuning:\n"
        "      embedding_dim: 1024\n  data:\n    train_ds:\n      max_seq_length: 2048\n"
    )
    configs, found = lint(text, "yaml", "peft.yaml")
    assert configs == [] and [f for f in found if f.code == "SL009"] == []


def test_a_text_stack_section_is_the_model() -> None:
    # pytorch/torchchat model_params/*-Tune.json: torchtune's names under "text".
    text = (
        '{"model_type": "llama3_1", "text": {"vocab_size": 128256, "num_layers": 32,'
        ' "num_heads": 32, "num_kv_heads": 8, "embed_dim": 4096, "max_seq_len": 8192,'
        ' "intermediate_dim": 14336}}\n'
    )
    (config,) = configs_of(text)
    assert (config.int(Dim.HIDDEN), config.int(Dim.KV_HEADS), config.int(Dim.FFN)) == (
        4096,
        8,
        14336,
    )


def test_the_json_report_names_the_lexicon_and_the_key_of_each_dim() -> None:
    # kingoflolz/mesh-transformer-jax: layers and seq are read by the lexicon, the width by
    # the neutral families; the report says which reader gave each dim, and for the
    # lexicon's, which key.
    (config,) = configs_of(MESH_JAX)
    out = config_json(config)
    assert out["sources"]["layers"] == "lexicon" and out["sources"]["seq_len"] == "lexicon"
    assert out["sources"]["hidden"] == "hf"
    assert out["lexicon_keys"] == {"layers": "layers", "seq_len": "seq"}
    # A config no lexicon dim entered has no such field.
    (plain,) = configs_of(
        '{"hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32}\n'
    )
    assert "lexicon_keys" not in config_json(plain)


# KellerJordan/modded-nanogpt train_gpt.py: the model pads the vocabulary it is given
# (``GPT.__init__``: vocab_size = next_multiple_of_n(vocab_size, n=128)), and the call at
# the bottom of the script passes GPT-2's 50257.
MODDED_NANOGPT = """\
def next_multiple_of_n(v, *, n):
    return next(x for x in range(n, int(v) + 1 + n, n) if x >= v)

class GPT(nn.Module):
    def __init__(self, vocab_size: int, num_layers: int, num_heads: int, head_dim: int,
                 model_dim: int, max_seq_len: int):
        super().__init__()
        vocab_size = next_multiple_of_n(vocab_size, n=128)
        self.embed = nn.Embedding(vocab_size, model_dim)

model: nn.Module = GPT(
    vocab_size=50257,
    num_layers=11,
    num_heads=6,
    head_dim=128,
    model_dim=768,
    max_seq_len=max(args.train_max_seq_len, args.val_batch_size),
).cuda()
"""


def test_a_vocab_the_model_code_pads_is_not_checked_as_stated() -> None:
    configs, found = lint(MODDED_NANOGPT, "python", "train_gpt.py")
    (config,) = configs
    assert (config.int(Dim.HIDDEN), config.int(Dim.HEADS), config.int(Dim.LAYERS)) == (768, 6, 11)
    assert config.int(Dim.VOCAB) == 50257
    padded = config.get(Dim.PADDED_VOCAB)
    assert padded is not None and not padded.known
    assert "SL101" not in [f.code for f in found]
    # The same call without the padding in the file: the stated vocab is what the GEMMs see.
    plain = MODDED_NANOGPT.replace("vocab_size = next_multiple_of_n(vocab_size, n=128)", "pass")
    (config,), found = lint(plain, "python", "train_gpt.py")
    assert Dim.PADDED_VOCAB not in config.dims
    assert "SL101" in [f.code for f in found]
