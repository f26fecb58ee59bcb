"""LitGPT: ``litgpt/config.py`` entries (``dict(name=…, n_embd=…)``), its ``Config`` dataclass,
``model_config.yaml`` checkpoints, and YAML training configs (``model_config:`` + ``train:``).

Keys (LitGPT's ``Config``): ``n_embd`` hidden, ``n_head`` heads, ``n_query_groups`` KV heads,
``head_size`` head dim, ``n_layer`` layers, ``intermediate_size`` FFN, ``vocab_size``,
``padded_vocab_size`` (what the embedding and logit GEMMs see), ``padding_multiple`` (the
vocab-padding knob, `Dim.VOCAB_MULTIPLE`), ``block_size`` context length,
``mlp_class_name``, ``n_expert``, ``n_expert_per_token``, ``moe_intermediate_size``,
``latent_attention`` (MLA head dims). YAML training configs add ``train.micro_batch_size``,
``train.global_batch_size``, ``train.max_seq_length`` and ``precision``.

A key left out takes LitGPT's ``Config`` default (litgpt 0.5.x), and LitGPT's
``__post_init__`` formulas fill the rest::

    n_embd = 4096, n_head = 32, n_layer = 16, block_size = 4096, vocab_size = 50254,
    padding_multiple = 512, mlp_class_name = "GptNeoxMLP"
    head_size        = n_embd // n_head
    n_query_groups   = n_head
    padded_vocab_size = find_multiple(vocab_size, padding_multiple)   # round up
    vocab_size       = min(vocab_size, padded_vocab_size)              # when padded is given
    intermediate_size = 4 * n_embd          # GptNeoxMLP only; LLaMAMLP must state it
    expert FFN       = moe_intermediate_size or intermediate_size       # LLaMAMoE

``mlp_class_name`` "LLaMAMLP", "GemmaMLP" and "LLaMAMoE" are gated (SwiGLU/GeGLU: three
matrices), "GptNeoxMLP" is not. The training sequence length is ``train.max_seq_length`` when
set, else ``block_size``. A YAML config that names a registry model (``model_name:``) without a
``model_config`` takes its shape from elsewhere: only the batch and sequence dims are read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shapelint.core.model import Derivation, Dim, ModelConfig, Traits, Value
from shapelint.core.source import Candidate, Document, Mapping, Scalar
from shapelint.dialects.common import Builder, KeyAliases, mla_head_dim, round_up
from shapelint.dialects.defaults import anchor, take_or_default
from shapelint.dialects.lookup import derived, find
from shapelint.readers.hooks import ModuleHook, PythonHost, ReaderHooks

if TYPE_CHECKING:
    import libcst as cst

NAME = "litgpt"
# ``block_size`` is the model's maximum context: LitGPT trains at ``train.max_seq_length``.
TRAITS = Traits(context_keys=frozenset({"block_size"}))
FRAMEWORK = "LitGPT Config"

DEFAULTS: dict[str, object] = {
    "n_embd": 4096,
    "n_head": 32,
    "n_layer": 16,
    "block_size": 4096,
    "vocab_size": 50254,
    "padding_multiple": 512,
}
GATED_MLPS = frozenset({"LLaMAMLP", "GemmaMLP", "LLaMAMoE"})
# Keys only LitGPT's Config has (HF configs use other names for the same things).
LITGPT_KEYS = frozenset(
    {
        "hf_config",
        "padding_multiple",
        "n_query_groups",
        "mlp_class_name",
        "norm_class_name",
        "rotary_percentage",
        "parallel_residual",
        "shared_attention_norm",
        "n_expert_per_token",
        "rope_condense_ratio",
        "lm_head_bias",
    }
)
SHAPE_KEYS = frozenset({"n_embd", "n_head", "n_layer", "hf_config"})
PYTHON_KINDS = frozenset({"call", "dict", "class", "init", "module"})


def detect(candidate: Candidate) -> bool:
    """A LitGPT ``Config`` mapping, or a LitGPT YAML training config."""
    keys = set(candidate.root.keys())
    if not isinstance(candidate.root.get("hf_config"), Mapping):
        keys.discard("hf_config")  # LitGPT writes dict(org=…, name=…); a None is not evidence
    if "model_type" in keys or "architectures" in keys:
        return False
    if keys & SHAPE_KEYS and keys & LITGPT_KEYS:
        return True
    if candidate.kind in PYTHON_KINDS:
        return False
    model_config = candidate.root.get("model_config")
    if isinstance(model_config, Mapping) and set(model_config.keys()) & (SHAPE_KEYS | LITGPT_KEYS):
        return True
    train = candidate.root.get("train")
    return isinstance(train, Mapping) and (
        "model_config" in keys
        or ("model_name" in keys and train.get("micro_batch_size") is not None)
    )


def uses_keys(candidate: Candidate) -> bool:
    """A mapping in LitGPT's key names (``n_embd``, ``n_head``, ``n_layer``) and no HF markers:
    an entry of a list whose other entries are LitGPT's."""
    keys = set(candidate.root.keys())
    return bool(keys & SHAPE_KEYS) and not keys & {"model_type", "architectures"}


def extract(doc: Document, candidate: Candidate, extra_keys: KeyAliases) -> list[ModelConfig]:
    """One config: the mapping itself, or a YAML file's ``model_config`` plus ``train``."""
    root = candidate.root
    model = root
    prefix = candidate.key_prefix
    is_training_yaml = "train" in set(root.keys()) and (
        "model_config" in set(root.keys()) or "model_name" in set(root.keys())
    )
    model_config = root.get("model_config")
    if is_training_yaml:
        if isinstance(model_config, Mapping) and model_config.entries:
            model = model_config
            prefix = f"{prefix}.model_config" if prefix else "model_config"
        else:
            return _registry_model(doc, candidate, extra_keys)
    b = Builder(
        Candidate(candidate.name, model, prefix, candidate.kind), doc.path, NAME, extra_keys
    )
    _model_dims(b)
    # rope_n_elem = int(rotary_percentage * head_size) (litgpt/config.py).
    b.rotary_fraction = b.lookup("rotary_percentage")
    if is_training_yaml:
        _training_dims(b, root, candidate.key_prefix)
    return [b.build()]


def _model_dims(b: Builder) -> None:
    source = anchor(b, "name")
    hidden = take_or_default(b, Dim.HIDDEN, ("n_embd",), DEFAULTS["n_embd"], source, FRAMEWORK)
    heads = take_or_default(b, Dim.HEADS, ("n_head",), DEFAULTS["n_head"], source, FRAMEWORK)
    take_or_default(b, Dim.LAYERS, ("n_layer",), DEFAULTS["n_layer"], source, FRAMEWORK)
    take_or_default(b, Dim.SEQ_LEN, ("block_size",), DEFAULTS["block_size"], source, FRAMEWORK)
    h, a = b.int(Dim.HIDDEN), b.int(Dim.HEADS)

    kv = b.take(Dim.KV_HEADS, "n_query_groups")
    if kv is None and heads is not None and a:
        b.derive(
            Dim.KV_HEADS,
            derived(
                a,
                (heads,),
                "n_query_groups = n_head (LitGPT default)",
                kind=Derivation.KV_FROM_HEADS,
            ),
            lambda get: get(Dim.HEADS),
        )

    latent = (
        b.lookup("latent_attention.qk_nope_head_dim"),
        b.lookup("latent_attention.qk_rope_head_dim"),
    )
    nope, rope = latent
    if mla_head_dim(b, nope, rope):
        b.take(Dim.V_HEAD_DIM, "latent_attention.v_head_dim")
    if b.take(Dim.HEAD_DIM, "head_size") is None and hidden and heads and h and a:
        stated = b.lookup("head_size")
        if stated is None or (stated.known and stated.value is None):
            b.derive(
                Dim.HEAD_DIM,
                derived(
                    h // a,
                    (hidden, heads),
                    "head_size = n_embd // n_head",
                    kind=Derivation.HEAD_DIM_SPLIT,
                ),
                lambda get: x // y if (x := get(Dim.HIDDEN)) and (y := get(Dim.HEADS)) else None,
            )

    _vocab(b, source)

    mlp = b.lookup("mlp_class_name")
    mlp_name = mlp.value if mlp is not None and isinstance(mlp.value, str) else None
    if mlp is None:
        mlp_name = "GptNeoxMLP"
    b.gated_mlp = None if mlp_name is None else mlp_name in GATED_MLPS
    ffn = b.take(Dim.FFN, "intermediate_size")
    stated_ffn = b.lookup("intermediate_size")
    ffn_absent = stated_ffn is None or (stated_ffn.known and stated_ffn.value is None)
    if ffn is None and ffn_absent and mlp_name == "GptNeoxMLP" and hidden is not None and h:
        b.derive(
            Dim.FFN,
            derived(4 * h, (hidden,), "intermediate_size = 4 * n_embd (GptNeoxMLP)"),
            lambda get: 4 * x if (x := get(Dim.HIDDEN)) else None,
        )

    experts = b.lookup("n_expert")
    if experts is not None and experts.as_int:
        b.set(Dim.EXPERTS, experts)
        b.take(Dim.EXPERTS_PER_TOKEN, "n_expert_per_token")
        moe = b.take(Dim.MOE_FFN, "moe_intermediate_size")
        ffn_value = b.dims.get(Dim.FFN)
        if moe is None and ffn_value is not None:
            formula = "expert FFN = intermediate_size (no moe_intermediate_size)"
            b.set(Dim.MOE_FFN, derived(ffn_value.value, (ffn_value,), formula))
    else:
        # A dense model (``n_expert: int = 0``, the Config class's default): its
        # ``n_expert_per_token = 0`` means nothing, not zero experts per token.
        b.consult("n_expert_per_token", "moe_intermediate_size")


def _vocab(b: Builder, source: Value) -> None:
    """vocab_size, padding_multiple and padded_vocab_size, as LitGPT's __post_init__ sets them."""
    vocab = take_or_default(
        b, Dim.VOCAB, ("vocab_size",), DEFAULTS["vocab_size"], source, FRAMEWORK
    )
    multiple = take_or_default(
        b,
        Dim.VOCAB_MULTIPLE,
        ("padding_multiple",),
        DEFAULTS["padding_multiple"],
        source,
        FRAMEWORK,
    )
    padded = b.take(Dim.PADDED_VOCAB, "padded_vocab_size")
    v, m = b.int(Dim.VOCAB), b.int(Dim.VOCAB_MULTIPLE)
    if padded is None and vocab is not None and multiple is not None and v and m:
        stated = b.lookup("padded_vocab_size")
        if stated is None or (stated.known and stated.value is None):
            formula = "padded_vocab_size = find_multiple(vocab_size, padding_multiple)"
            b.derive(
                Dim.PADDED_VOCAB,
                derived(round_up(v, m), (vocab, multiple), formula),
                lambda get: (
                    round_up(x, get(Dim.VOCAB_MULTIPLE) or 1) if (x := get(Dim.VOCAB)) else None
                ),
            )
    p = b.int(Dim.PADDED_VOCAB)
    if padded is not None and vocab is not None and v and p and p < v:
        # LitGPT clamps: vocab_size = min(vocab_size, padded_vocab_size).
        b.dims[Dim.VOCAB] = derived(p, (vocab, padded), "vocab_size = min(vocab_size, padded)")


def _training_dims(b: Builder, root: Mapping, prefix: str) -> None:
    """``train.*`` batch and sequence dims of a LitGPT YAML training config."""
    micro = find(root, ("train.micro_batch_size",), prefix)
    if micro is not None and micro.value is not None:
        b.dims[Dim.MICRO_BATCH] = micro
    global_batch = find(root, ("train.global_batch_size",), prefix)
    if global_batch is not None and global_batch.value is not None:
        b.dims[Dim.GLOBAL_BATCH] = global_batch
    seq = find(root, ("train.max_seq_length",), prefix)
    if seq is not None and seq.value is not None:
        b.dims[Dim.SEQ_LEN] = seq
    precision = root.get("precision")
    if isinstance(precision, Scalar) and isinstance(precision.value, str):
        b.set(Dim.DTYPE, find(root, ("precision",), prefix))


def _registry_model(
    doc: Document, candidate: Candidate, extra_keys: KeyAliases
) -> list[ModelConfig]:
    """``model_name:`` without ``model_config``: the shape comes from LitGPT's registry."""
    b = Builder(candidate, doc.path, NAME, extra_keys)
    b.shape_from_elsewhere = True
    _training_dims(b, candidate.root, candidate.key_prefix)
    if not b.dims:
        return []
    return [b.build()]


def _variant_loops(host: PythonHost, module: cst.Module) -> ModuleHook:
    """The name-variant loops of ``litgpt/config.py`` (`litgpt_loops`, imported only when a
    Python file is read)."""
    from shapelint.dialects.litgpt_loops import VariantLoops

    return VariantLoops(host, module)


READER_HOOKS = ReaderHooks(python_modules=(_variant_loops,))
