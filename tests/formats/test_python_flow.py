"""The Python reader follows data flow (issue 23): one test per pattern, each on a small
hand-written fixture with the structure of a real file (cited), never imported or run."""

from __future__ import annotations

import textwrap
from pathlib import Path

import shapelint.dialects  # noqa: F401 - registers the idioms the dialects teach the reader
from shapelint.core.source import Candidate, Document, Mapping, Node, Scalar, Sequence
from shapelint.readers import parse
from shapelint.readers.python import parse_python


def py(source: str, path: str = "config.py") -> Document:
    return parse_python(path, textwrap.dedent(source).lstrip("\n"))


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))


def read(path: Path) -> Document:
    return parse(str(path), path.read_bytes(), "python")


def cand(doc: Document, name: str) -> Candidate:
    found = [c for c in doc.candidates if c.name == name]
    assert found, f"no candidate {name!r} in {[c.name for c in doc.candidates]}"
    return found[0]


def values(node: Node | None) -> dict[str, object]:
    """Known scalar values of a mapping by key (unknown ones as ``"?"``)."""
    assert isinstance(node, Mapping), node
    out: dict[str, object] = {}
    for entry in node.entries:
        if isinstance(entry.value, Scalar):
            out[entry.key] = entry.value.value if entry.value.known else "?"
    return out


def where(doc_or_root: Document | Path, node: Node | None) -> tuple[str, int, str]:
    """(file name, line, text as written) of a scalar's span."""
    assert isinstance(node, Scalar), node
    span = node.span
    text = doc_or_root.text if isinstance(doc_or_root, Document) else Path(span.path).read_text()
    return Path(span.path).name, span.line, text[span.start : span.end]


def line_of(text: str, snippet: str) -> int:
    """The 1-based line of the first line of ``text`` holding ``snippet`` (found without the
    parser)."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if snippet in line)


def file_line(path: Path, snippet: str) -> int:
    return line_of(path.read_text(), snippet)


# ---- 1. upper-case class attributes with inheritance across modules ----------------------


def test_upper_case_class_attributes_inherit_across_modules(tmp_path: Path) -> None:
    # paxml: paxml/tasks/lm/params/lm_cloud.py's ``LmCloudSpmd2B(LmCloudSpmd)`` and
    # ``LmCloudSpmd(model_params.TransformerLmSpmdAdafactor)`` inherit DIMS_PER_HEAD and
    # VOCAB_SIZE from paxml/tasks/lm/model_params.py (b397693f).
    write(
        tmp_path,
        {
            "paxml/__init__.py": "",
            "paxml/tasks/__init__.py": "",
            "paxml/tasks/lm/__init__.py": "",
            "paxml/tasks/lm/model_params.py": """
                from paxml import base_experiment

                class TransformerLmSpmdAdafactor(base_experiment.BaseExperiment):
                  VOCAB_SIZE = 32000
                  DIMS_PER_HEAD = 128
                  NUM_HEADS = None
                  NUM_LAYERS = 10
            """,
            "paxml/tasks/lm/params/lm_cloud.py": """
                from paxml.tasks.lm import model_params

                class LmCloudSpmd(model_params.TransformerLmSpmdAdafactor):
                  NUM_LAYERS = 10
                  MODEL_DIMS = 2048
                  HIDDEN_DIMS = MODEL_DIMS * 4

                class LmCloudSpmd2B(LmCloudSpmd):
                  PERCORE_BATCH_SIZE = 8
                  NUM_LAYERS = 18
                  MODEL_DIMS = 3072
                  HIDDEN_DIMS = MODEL_DIMS * 4
            """,
        },
    )
    doc = read(tmp_path / "paxml/tasks/lm/params/lm_cloud.py")
    two_b = cand(doc, "LmCloudSpmd2B")
    assert values(two_b.root) == {
        "VOCAB_SIZE": 32000,
        "DIMS_PER_HEAD": 128,
        "NUM_HEADS": None,
        "NUM_LAYERS": 18,
        "MODEL_DIMS": 3072,
        "HIDDEN_DIMS": 12288,
        "PERCORE_BATCH_SIZE": 8,
    }
    # What the base module states points there (read, never fixed from this file).
    base = tmp_path / "paxml/tasks/lm/model_params.py"
    child = tmp_path / "paxml/tasks/lm/params/lm_cloud.py"
    assert where(tmp_path, two_b.root.get("VOCAB_SIZE")) == (
        "model_params.py",
        file_line(base, "VOCAB_SIZE = 32000"),
        "32000",
    )
    hidden = where(tmp_path, two_b.root.get("HIDDEN_DIMS"))
    assert hidden[1:] == (file_line(child, "MODEL_DIMS = 3072") + 1, "MODEL_DIMS * 4")
    # The base ``base_experiment.BaseExperiment`` is outside the tree: open.
    assert two_b.open_bases == ("base_experiment.BaseExperiment",)


# ---- 2. attribute assignment on a config object, chained builders ----------------------


T2T = {
    "tensor2tensor/__init__.py": "",
    "tensor2tensor/utils/__init__.py": "",
    "tensor2tensor/utils/hparam.py": """
        class HParams(object):
          def __init__(self, hparam_def=None, model_structure=None, **kwargs):
            self._hparam_types = {}
    """,
    "tensor2tensor/layers/__init__.py": "",
    "tensor2tensor/layers/common_hparams.py": """
        from tensor2tensor.utils import hparam

        def basic_params1():
          return hparam.HParams(
              batch_size=4096,
              hidden_size=64,
              num_hidden_layers=4,
          )
    """,
    "tensor2tensor/data_generators/__init__.py": "",
    "tensor2tensor/data_generators/librispeech.py": """
        def set_librispeech_length_hparams(hparams):
          hparams.max_length = 1650 * 80
          hparams.max_input_seq_length = 1650
    """,
    "tensor2tensor/models/__init__.py": "",
    "tensor2tensor/models/transformer.py": """
        from tensor2tensor.data_generators import librispeech
        from tensor2tensor.layers import common_hparams
        from tensor2tensor.utils import registry

        @registry.register_hparams
        def transformer_base_v1():
          \"\"\"Set of hyperparameters.\"\"\"
          hparams = common_hparams.basic_params1()
          hparams.hidden_size = 512
          hparams.num_hidden_layers = 6
          hparams.add_hparam("filter_size", 2048)
          hparams.add_hparam("num_heads", 8)
          return hparams

        @registry.register_hparams
        def transformer_big():
          hparams = transformer_base_v1()
          hparams.hidden_size = 1024
          hparams.filter_size = 4096
          hparams.num_heads = 16
          update_hparams_for_tpu(hparams)
          return hparams

        @registry.register_hparams
        def transformer_librispeech():
          hparams = transformer_big()
          librispeech.set_librispeech_length_hparams(hparams)
          return hparams

        @registry.register_hparams
        def transformer_opaque():
          hparams = transformer_base_v1()
          some_library.mutate(hparams)
          return hparams

        def update_hparams_for_tpu(hparams):
          hparams.batch_size = 2048
    """,
}


def test_chained_builders_and_attribute_assignment_across_modules(tmp_path: Path) -> None:
    # tensor2tensor/models/transformer.py (bafdc1b6): ``hparams = transformer_base()`` then
    # ``hparams.hidden_size = 1024``; the chain starts at common_hparams.basic_params1(), a
    # keyword call of HParams; ``add_hparam`` (utils/hparam.py:418-441) sets a key; helpers of
    # the package that take ``hparams`` apply in order.
    write(tmp_path, T2T)
    doc = read(tmp_path / "tensor2tensor/models/transformer.py")
    base = cand(doc, "transformer_base_v1")
    assert (base.kind, base.callee) == ("call", "hparam.HParams")
    assert values(base.root) == {
        "batch_size": 4096,
        "hidden_size": 512,
        "num_hidden_layers": 6,
        "hparam_def": None,  # the class's own __init__ defaults
        "model_structure": None,
        "filter_size": 2048,
        "num_heads": 8,
    }
    big = values(cand(doc, "transformer_big").root)
    assert (big["hidden_size"], big["filter_size"], big["num_heads"]) == (1024, 4096, 16)
    assert (big["num_hidden_layers"], big["batch_size"]) == (6, 2048)  # the base, the helper
    libri = cand(doc, "transformer_librispeech")
    assert values(libri.root)["max_input_seq_length"] == 1650  # a helper of another module
    # Each value points where it was written, in whichever file; every value is shared by
    # the sets that start from it, so a fix there is unsafe.
    models = tmp_path / "tensor2tensor/models/transformer.py"
    hidden = cand(doc, "transformer_big").root.get("hidden_size")
    assert where(tmp_path, hidden) == (
        "transformer.py",
        file_line(models, "hparams.hidden_size = 1024"),
        "1024",
    )
    layers = base.root.get("num_hidden_layers")
    assert where(tmp_path, layers)[1] == file_line(models, "hparams.num_hidden_layers = 6")
    batch = base.root.get("batch_size")
    common = tmp_path / "tensor2tensor/layers/common_hparams.py"
    assert where(tmp_path, batch) == (
        "common_hparams.py",
        file_line(common, "batch_size=4096"),
        "4096",
    )
    assert isinstance(hidden, Scalar) and hidden.shared
    # A call the reader cannot follow received the object: nothing in it is known.
    assert "transformer_opaque" not in [c.name for c in doc.candidates]
    # A helper is not a config of its own (it fills the object it is given).
    assert "update_hparams_for_tpu" not in [c.name for c in doc.candidates]


# ---- 3. ml_collections ConfigDict --------------------------------------------------------


def test_ml_collections_config_dict_filled_by_attribute_assignment() -> None:
    # google/flax examples/lm1b/configs/default.py (18f8f311).
    doc = py(
        """
        import ml_collections

        def get_config():
          \"\"\"Get the default hyperparameter configuration.\"\"\"
          config = ml_collections.ConfigDict()
          config.vocab_size = 30_000
          config.max_corpus_chars = 10**7
          config.per_device_batch_size = 32
          config.num_layers = 6
          config.qkv_dim = 512
          config.emb_dim = 512
          config.mlp_dim = 2048
          config.num_heads = 8
          config.model = ml_collections.ConfigDict()
          config.model.dropout = 0.1
          config.mesh_axes = ['data', 'fsdp', 'tensor']
          return config
        """
    )
    got = cand(doc, "get_config")
    assert (got.kind, got.callee) == ("call", "ml_collections.ConfigDict")
    assert values(got.root) == {
        "vocab_size": 30000,
        "max_corpus_chars": 10_000_000,
        "per_device_batch_size": 32,
        "num_layers": 6,
        "qkv_dim": 512,
        "emb_dim": 512,
        "mlp_dim": 2048,
        "num_heads": 8,
    }
    assert values(got.root.get("model")) == {"dropout": 0.1}
    assert isinstance(got.root.get("mesh_axes"), Sequence)
    assert where(doc, got.root.get("emb_dim")) == (
        "config.py",
        line_of(doc.text, "config.emb_dim = 512"),
        "512",
    )
    # The key's span is the attribute name as written.
    entry = next(e for e in got.root.entries if e.key == "emb_dim")
    assert doc.text[entry.key_span.start : entry.key_span.end] == "emb_dim"


def test_a_module_level_config_dict_filled_by_attribute_assignment() -> None:
    # google-research/vision_transformer vit_jax/configs/models.py ``get_b16_config`` written
    # at module level, as scripts copy it: nested ConfigDicts filled attribute by attribute.
    doc = py(
        """
        import ml_collections

        config = ml_collections.ConfigDict()
        config.patches = ml_collections.ConfigDict({'size': (16, 16)})
        config.hidden_size = 768
        config.transformer = ml_collections.ConfigDict()
        config.transformer.mlp_dim = 3072
        config.transformer.num_heads = 12
        config.transformer.num_layers = 12
        config.transformer.attention_dropout_rate = 0.0
        config.classifier = 'token'

        other = ml_collections.ConfigDict()
        other.hidden_size = 1024
        if USE_LARGE:
            other.hidden_size = 2048
        """
    )
    got = cand(doc, "config")
    assert (got.kind, got.callee) == ("call", "ml_collections.ConfigDict")
    assert values(got.root)["hidden_size"] == 768
    assert values(got.root.get("transformer")) == {
        "mlp_dim": 3072,
        "num_heads": 12,
        "num_layers": 12,
        "attention_dropout_rate": 0.0,
    }
    assert where(doc, got.root.get("hidden_size"))[1:] == (
        line_of(doc.text, "config.hidden_size = 768"),
        "768",
    )
    # A module-level ``if`` that names the object is not followed: nothing of it is known.
    assert "other" not in [c.name for c in doc.candidates]


def test_a_config_filled_in_main_is_the_one_the_trainer_receives() -> None:
    # google/flax examples/*/main.py hand ``FLAGS.config`` to ``train.train_and_evaluate``;
    # a script that builds its config in ``main()`` by attribute assignment and then hands
    # it over: the config is what the trainer receives, later changes are not followed.
    doc = py(
        """
        import ml_collections
        import train

        def main(argv):
            config = ml_collections.ConfigDict()
            config.vocab_size = 32000
            config.emb_dim = 512
            config.num_heads = 8
            config.num_layers = 6
            train.train_and_evaluate(config, workdir="/tmp")
            config.num_layers = 12

        if __name__ == "__main__":
            main(None)
        """
    )
    got = cand(doc, "config")
    assert values(got.root) == {
        "vocab_size": 32000,
        "emb_dim": 512,
        "num_heads": 8,
        "num_layers": 6,
    }


# ---- 4. dicts built inside functions, selected or iterated --------------------------------


def test_a_dict_indexed_by_a_parameter_gives_one_config_per_entry() -> None:
    # young-geng/EasyLM EasyLM/models/llama/llama_model.py:69-214 (fe5b2c35): a full 3B base by
    # attribute assignment, then ``{…}[model_name]`` laid over it with mlxu's
    # ``update_config_dict`` (mlxu 0.2.0, config.py:83-87).
    doc = py(
        """
        import mlxu

        class LLaMAConfigurator(object):
            @classmethod
            def get_standard_llama_config(cls, model_name):
                config = mlxu.config_dict()
                config.base_model = 'llama_3b'
                config.vocab_size = 32000
                config.hidden_size = 3200
                config.num_hidden_layers = 26

                updates = {
                    'debug': dict(
                        base_model='debug',
                        hidden_size=128,
                        num_hidden_layers=2,
                    ),
                    'llama3_8b': dict(
                        base_model='llama3_8b',
                        vocab_size=128256,
                        hidden_size=4096,
                        num_hidden_layers=32,
                    ),
                }[model_name]
                return mlxu.update_config_dict(config, updates)
        """
    )
    names = [c.name for c in doc.candidates]
    assert names == [
        'LLaMAConfigurator.get_standard_llama_config["debug"]',
        'LLaMAConfigurator.get_standard_llama_config["llama3_8b"]',
    ]
    debug = cand(doc, names[0])
    assert values(debug.root) == {
        "base_model": "debug",
        "vocab_size": 32000,  # the base's
        "hidden_size": 128,
        "num_hidden_layers": 2,
    }
    assert where(doc, debug.root.get("vocab_size"))[1:] == (
        line_of(doc.text, "config.vocab_size = 32000"),
        "32000",
    )
    assert where(doc, debug.root.get("hidden_size"))[1:] == (
        line_of(doc.text, "hidden_size=128"),
        "128",
    )
    assert values(cand(doc, names[1]).root)["vocab_size"] == 128256


def test_a_table_of_presets_built_in_a_function_is_selected_and_iterated() -> None:
    # Issue 23, pattern 3 (``presets = {"7b": dict(hidden_size=4096, …), …}; return
    # cls(**presets[name])``): the table bound to a local, then selected by the parameter
    # (one config per key), returned whole (one config per entry), or iterated per entry.
    doc = py(
        """
        class LlamaConfig:
            @classmethod
            def from_name(cls, name):
                presets = {
                    "7b": dict(hidden_size=4096, num_attention_heads=32, num_hidden_layers=32),
                    "13b": dict(hidden_size=5120, num_attention_heads=40, num_hidden_layers=40),
                }
                return Config(**presets[name])

        def presets():
            table = {}
            table["7b"] = dict(hidden_size=4096, num_attention_heads=32)
            table["13b"] = dict(hidden_size=5120, num_attention_heads=40)
            return table

        def registry():
            sizes = {"7b": dict(hidden_size=4096), "13b": dict(hidden_size=5120)}
            models = {}
            for name, kwargs in sizes.items():
                models[name] = Config(vocab_size=32000, **kwargs)
            return models
        """
    )
    names = [c.name for c in doc.candidates]
    assert names == [
        'LlamaConfig.from_name["7b"]',
        'LlamaConfig.from_name["13b"]',
        'presets["7b"]',
        'presets["13b"]',
        'registry["7b"]',
        'registry["13b"]',
    ]
    big = cand(doc, 'LlamaConfig.from_name["13b"]')
    assert (big.kind, big.callee) == ("call", "Config")
    assert values(big.root) == {
        "hidden_size": 5120,
        "num_attention_heads": 40,
        "num_hidden_layers": 40,
    }
    assert where(doc, big.root.get("hidden_size"))[1:] == (
        line_of(doc.text, '"13b": dict(hidden_size=5120, num_attention_heads=40, num'),
        "5120",
    )
    assert values(cand(doc, 'presets["7b"]').root) == {
        "hidden_size": 4096,
        "num_attention_heads": 32,
    }
    assert values(cand(doc, 'registry["13b"]').root) == {
        "vocab_size": 32000,
        "hidden_size": 5120,
    }


def test_a_classmethod_returning_cls_of_a_local_dict_fills_the_dataclass_defaults() -> None:
    # google/flax examples/gemma/transformer_cfg.py (18f8f311): ``num_layers`` a local, a dict
    # literal, an ``override`` loop over ``**override`` (empty as written), ``cls(**config)``.
    doc = py(
        """
        import dataclasses

        _NUM_LAYERS_GEMMA_2B = 18

        @dataclasses.dataclass(frozen=True)
        class TransformerConfig:
          num_layers: int
          num_embed: int
          embed_dim: int
          num_heads: int
          sliding_window_size: int | None = None
          local_base_frequency: int = 10_000

          @classmethod
          def gemma_2b(cls, **override) -> "TransformerConfig":
            num_layers = _NUM_LAYERS_GEMMA_2B
            config = {
                "num_layers": num_layers,
                "num_embed": 256128,
                "embed_dim": 2048,
                "num_heads": 8,
                "attention_types": (AttentionType.GLOBAL,) * num_layers,
            }
            for key, value in override.items():
              config[key] = value
            return cls(**config)

          @classmethod
          def from_name(cls, name: str, **kwargs):
            conf_dict = name_to_config[name].copy()
            conf_dict.update(kwargs)
            return cls(**conf_dict)
        """
    )
    # ``cls(**conf_dict)`` of a dict not known (litgpt/config.py:186-203 at the measured
    # commit): any field may be given, so the class defaults are no config.
    assert "TransformerConfig.from_name" not in [c.name for c in doc.candidates]
    got = cand(doc, "TransformerConfig.gemma_2b")
    assert (got.kind, got.callee) == ("call", "TransformerConfig")
    assert values(got.root) == {
        "num_layers": 18,
        "num_embed": 256128,
        "embed_dim": 2048,
        "num_heads": 8,
        "sliding_window_size": None,  # class defaults for the fields left out
        "local_base_frequency": 10_000,
    }
    layers = got.root.get("attention_types")
    assert isinstance(layers, Sequence) and len(layers.items) == 18
    assert where(doc, got.root.get("local_base_frequency"))[1:] == (
        line_of(doc.text, "local_base_frequency: int = 10_000"),
        "10_000",
    )


def test_model_calls_in_a_returned_list_spread_a_helper_dict_and_are_named_by_their_id() -> None:
    # meta-llama/llama-models models/sku_list.py (8c88b8c0): ``Model(core_model_id=
    # CoreModelId.llama3_2_1b, arch_args={**arch_args_1b(), "quantization_args": {…}})``.
    doc = py(
        """
        LLAMA3_VOCAB_SIZE = 128256

        def llama3_2_instruct_models() -> List[Model]:
            return [
                Model(
                    core_model_id=CoreModelId.llama3_2_1b_instruct,
                    description="Llama 3.2 1b instruct model",
                    arch_args={
                        **arch_args_1b(),
                        "quantization_args": {"group_size": 256},
                    },
                    pth_file_count=1,
                ),
            ]

        def arch_args_1b() -> dict:
            return {
                "dim": 2048,
                "n_layers": 16,
                "vocab_size": LLAMA3_VOCAB_SIZE,
            }
        """
    )
    got = cand(doc, "llama3_2_instruct_models[0] llama3_2_1b_instruct")
    args = got.root.get("arch_args")
    assert values(args) == {"dim": 2048, "n_layers": 16, "vocab_size": 128256}
    assert isinstance(args, Mapping)
    assert where(doc, args.get("dim"))[1:] == (line_of(doc.text, '"dim": 2048'), "2048")


# ---- 5. positional calls of a dataclass / NamedTuple, class defaults -----------------------


def test_positional_calls_map_to_the_fields_of_a_dataclass_of_the_package() -> None:
    # facebookresearch/metaseq metaseq/launcher/opt_job_constants.py:10-45 (f7ffa5fd).
    doc = py(
        """
        from dataclasses import dataclass
        from typing import NamedTuple

        @dataclass
        class Size:
            n_layers: int
            emb_size: int
            n_heads: int
            d_head: int
            batch_size: int
            lr: float
            model_parallel: int

            @property
            def ffn_size(self):
                return 4 * self.emb_size

        M = 1024 * 1024
        MODEL_SIZES = {
            "125m": Size(12, 768, 12, 64, int(0.5 * M), 6.0e-4, 2),
            "1.3b": Size(24, 2048, 32, 64, int(1.0 * M), 2.0e-4, 2),
        }

        class Shape(NamedTuple):
            dim: int
            heads: int
            vocab: int = 32000

        SMALL = Shape(512, 8)
        """
    )
    small = cand(doc, 'MODEL_SIZES["125m"]')
    assert (small.kind, small.callee) == ("call", "Size")
    assert values(small.root) == {
        "n_layers": 12,
        "emb_size": 768,
        "n_heads": 12,
        "d_head": 64,
        "batch_size": 524288,
        "lr": 6.0e-4,
        "model_parallel": 2,
        "ffn_size": 3072,  # the property, on this instance
    }
    assert where(doc, small.root.get("emb_size"))[1:] == (line_of(doc.text, '"125m"'), "768")
    ffn = small.root.get("ffn_size")
    formula = (line_of(doc.text, "return 4 * self.emb_size"), "4 * self.emb_size")
    assert where(doc, ffn)[1:] == formula and isinstance(ffn, Scalar)
    assert ffn.shared  # the class's formula: every size has it
    assert values(cand(doc, "SMALL").root) == {"dim": 512, "heads": 8, "vocab": 32000}


# ---- 6. getattr(args, "k", default) architecture functions ---------------------------------


def test_architecture_functions_fill_an_empty_namespace_through_getattr() -> None:
    # facebookresearch/fairseq fairseq/models/transformer_lm.py:325-436 (3d262bb2).
    doc = py(
        """
        from fairseq.utils import safe_getattr, safe_hasattr

        def base_lm_architecture(args):
            if safe_hasattr(args, "no_tie_adaptive_proj"):
                args.no_decoder_final_norm = True
            args.decoder_embed_dim = safe_getattr(args, "decoder_embed_dim", 512)
            args.decoder_ffn_embed_dim = safe_getattr(args, "decoder_ffn_embed_dim", 2048)
            args.decoder_layers = safe_getattr(args, "decoder_layers", 6)
            args.decoder_attention_heads = safe_getattr(args, "decoder_attention_heads", 8)
            args.decoder_output_dim = safe_getattr(
                args, "decoder_output_dim", args.decoder_embed_dim
            )
            args.offload_activations = safe_getattr(args, "offload_activations", False)
            if args.offload_activations:
                args.checkpoint_activations = True

        @register_model_architecture("transformer_lm", "transformer_lm_big")
        def transformer_lm_big(args):
            args.decoder_layers = safe_getattr(args, "decoder_layers", 12)
            args.decoder_embed_dim = safe_getattr(args, "decoder_embed_dim", 1024)
            args.decoder_ffn_embed_dim = safe_getattr(args, "decoder_ffn_embed_dim", 4096)
            args.decoder_attention_heads = safe_getattr(args, "decoder_attention_heads", 16)
            base_lm_architecture(args)

        @register_model_architecture("transformer_lm", "transformer_lm_wiki103")
        def transformer_lm_baevski_wiki103(args):
            args.decoder_layers = getattr(args, "decoder_layers", 16)
            args.decoder_attention_heads = getattr(args, "decoder_attention_heads", 8)
            transformer_lm_big(args)
        """
    )
    assert [c.name for c in doc.candidates] == [
        "transformer_lm_big",
        "transformer_lm_baevski_wiki103",
    ]
    wiki = cand(doc, "transformer_lm_baevski_wiki103")
    assert values(wiki.root) == {
        "decoder_layers": 16,  # set first, kept by every later getattr
        "decoder_attention_heads": 8,
        "decoder_embed_dim": 1024,
        "decoder_ffn_embed_dim": 4096,
        "decoder_output_dim": 1024,
        "offload_activations": False,
    }
    assert where(doc, wiki.root.get("decoder_embed_dim"))[1:] == (
        line_of(doc.text, '"decoder_embed_dim", 1024'),
        "1024",
    )
    assert where(doc, wiki.root.get("decoder_layers"))[1:] == (
        line_of(doc.text, 'getattr(args, "decoder_layers", 16)'),
        "16",
    )


# ---- 7. a config built in main(), one config per tested value ------------------------------


def test_a_config_built_in_main_is_a_config() -> None:
    # xai-org/grok-1 run.py:24-49 (7050ed20).
    doc = py(
        """
        from model import LanguageModelConfig, TransformerConfig

        def main():
            grok_1_model = LanguageModelConfig(
                vocab_size=128 * 1024,
                sequence_len=8192,
                model=TransformerConfig(
                    emb_size=48 * 128,
                    key_size=128,
                    num_q_heads=48,
                    num_layers=64,
                ),
            )
            inference_runner = InferenceRunner(
                runner=ModelRunner(model=grok_1_model, bs_per_device=0.125),
                name="local",
            )
            inference_runner.initialize()

        if __name__ == "__main__":
            main()
        """
    )
    grok = cand(doc, "grok_1_model")
    assert values(grok.root) == {"vocab_size": 131072, "sequence_len": 8192}
    assert values(grok.root.get("model")) == {
        "emb_size": 6144,
        "key_size": 128,
        "num_q_heads": 48,
        "num_layers": 64,
    }
    # The runner receives the model by name: not a second copy of it.
    runner = cand(doc, "inference_runner local").root.get("runner")
    assert isinstance(runner, Mapping)
    model = runner.get("model")
    assert isinstance(model, Scalar) and not model.known


def test_one_config_per_tested_value_of_an_if_elif_on_a_size() -> None:
    # apple/axlearn axlearn/experiments/text/gpt/fuji.py ``get_trainer_kwargs``: ``if
    # model_size == "test": trainer_kwargs = dict(model_kwargs=dict(…), …) elif model_size ==
    # "1B": …``, then the model's keywords taken out with ``pop`` (simplified: the real
    # function holds more sizes and mesh rules).
    doc = py(
        """
        def get_trainer_kwargs(model_size, *, vocab_size, version, flash_attention=False):
            num_kv_heads = None
            if version in (Version.V3, Version.V3_TIKTOKEN):
                num_kv_heads = 8
            if model_size == "test":
                trainer_kwargs = dict(
                    model_kwargs=dict(num_layers=4, hidden_dim=8, num_heads=4, num_kv_heads=2),
                    learner_kwargs=dict(peak_lr=6e-4, weight_decay=0.01),
                    max_sequence_length=64,
                )
            elif model_size == "1B":
                trainer_kwargs = dict(
                    model_kwargs=dict(
                        num_layers=16,
                        hidden_dim=2048,
                        num_heads=32,
                        num_kv_heads=num_kv_heads,
                        ffn_dim=8192,
                    ),
                    learner_kwargs=dict(peak_lr=3e-4, weight_decay=0.1),
                )
            elif model_size == "7B":
                trainer_kwargs = dict(
                    model_kwargs=dict(num_layers=32, hidden_dim=128 * 32, num_heads=32),
                    learner_kwargs=dict(peak_lr=3e-4, weight_decay=0.1),
                )
            else:
                raise NotImplementedError(f"Unknown model size {model_size}.")
            model_kwargs = trainer_kwargs.pop("model_kwargs")
            model_kwargs.setdefault("vocab_size", vocab_size)
            return model_kwargs
        """
    )
    names = [c.name for c in doc.candidates]
    assert names == [
        'get_trainer_kwargs["test"]',
        'get_trainer_kwargs["1B"]',
        'get_trainer_kwargs["7B"]',
    ]
    assert values(cand(doc, names[0]).root) == {
        "num_layers": 4,
        "hidden_dim": 8,
        "num_heads": 4,
        "num_kv_heads": 2,
        "vocab_size": "?",  # the caller's
    }
    one_b = values(cand(doc, names[1]).root)
    # Set under an ``if`` on something else: not known, never guessed.
    assert one_b["num_kv_heads"] == "?"
    assert (one_b["hidden_dim"], one_b["ffn_dim"]) == (2048, 8192)
    seven_b = cand(doc, names[2]).root
    assert values(seven_b)["hidden_dim"] == 4096
    assert where(doc, seven_b.get("hidden_dim"))[1:] == (
        line_of(doc.text, "hidden_dim=128 * 32"),
        "128 * 32",
    )


def test_one_config_per_tested_value_of_a_parameter() -> None:
    # The Python form of the size arms the shell reader splits (``if [ "$SIZE" = 7b ]``).
    doc = py(
        """
        def build(size):
            if size == "7b":
                cfg = dict(dim=4096, n_layers=32)
            elif size == "13b":
                cfg = dict(dim=5120, n_layers=40)
            else:
                raise ValueError(size)
            cfg["vocab_size"] = 32000
            return cfg

        def unknown_branch(flag):
            cfg = dict(dim=4096, n_layers=32)
            if flag:
                cfg["n_layers"] = 40
            return cfg
        """
    )
    assert values(cand(doc, 'build["7b"]').root) == {
        "dim": 4096,
        "n_layers": 32,
        "vocab_size": 32000,
    }
    assert values(cand(doc, 'build["13b"]').root)["dim"] == 5120
    # A branch that may or may not run leaves what it sets unknown, never guessed.
    assert values(cand(doc, "unknown_branch").root) == {"dim": 4096, "n_layers": "?"}


# ---- 8. a config call held in a class attribute ---------------------------------------------


def test_a_config_call_held_in_a_class_attribute() -> None:
    # google-deepmind/gemma gemma/gm/nn/_gemma.py:37-76 (7691fd4e): the layers are the
    # length of ``attention_types``, a repeated literal.
    doc = py(
        """
        from gemma.gm.nn import _config
        from gemma.gm.nn import _modules
        from gemma.gm.nn import _transformer

        _NUM_LAYERS_GEMMA2_2B = 26

        class Gemma2_2B(_transformer.Transformer):
          config: _config.TransformerConfig = _config.TransformerConfig(
              num_embed=256128,
              embed_dim=2304,
              hidden_dim=9216,
              num_heads=8,
              head_dim=256,
              num_kv_heads=4,
              attention_types=(
                  _modules.AttentionType.LOCAL_SLIDING,
                  _modules.AttentionType.GLOBAL,
              )
              * int(_NUM_LAYERS_GEMMA2_2B / 2),
          )
        """
    )
    model = cand(doc, "Gemma2_2B")
    config = model.root.get("config")
    assert values(config)["embed_dim"] == 2304
    assert isinstance(config, Mapping)
    layers = config.get("attention_types")
    assert isinstance(layers, Sequence) and len(layers.items) == 26
    first = layers.items[0]
    assert isinstance(first, Scalar)
    written = "_modules.AttentionType.LOCAL_SLIDING"
    assert where(doc, first)[1:] == (line_of(doc.text, written), written)


def test_a_sequence_built_by_a_package_function_in_a_class_attribute(tmp_path: Path) -> None:
    # gemma/gm/nn/_gemma.py:137-160 calls gemma/gm/nn/_config.py:31-42
    # ``make_attention_layers_types(pattern, *, num_layers)`` (7691fd4e): the pattern
    # repeated, then the remainder sliced from it.
    write(
        tmp_path,
        {
            "gemma/__init__.py": "",
            "gemma/gm/__init__.py": "",
            "gemma/gm/nn/__init__.py": "",
            "gemma/gm/nn/_config.py": """
                def make_attention_layers_types(
                    pattern: tuple[_modules.AttentionType, ...],
                    *,
                    num_layers: int,
                ) -> tuple[_modules.AttentionType, ...]:
                  \"\"\"Returns the list of attention types for every layers.\"\"\"
                  pattern_size = len(pattern)
                  out = pattern * (num_layers // pattern_size)
                  if num_layers % pattern_size != 0:
                    out += pattern[: num_layers % pattern_size]
                  return tuple(out)
            """,
            "gemma/gm/nn/_gemma.py": """
                from gemma.gm.nn import _config
                from gemma.gm.nn import _modules

                _NUM_LAYERS_GEMMA3_1B = 26
                GEMMA3_ATTENTION_PATTERN = (
                    _modules.AttentionType.LOCAL_SLIDING,
                    _modules.AttentionType.LOCAL_SLIDING,
                    _modules.AttentionType.GLOBAL,
                )

                class Gemma3_1B(_transformer.Transformer):
                  config: _config.TransformerConfig = _config.TransformerConfig(
                      embed_dim=1152,
                      hidden_dim=6 * 1152,
                      attention_types=_config.make_attention_layers_types(
                          GEMMA3_ATTENTION_PATTERN, num_layers=_NUM_LAYERS_GEMMA3_1B
                      ),
                  )
            """,
        },
    )
    path = tmp_path / "gemma/gm/nn/_gemma.py"
    config = cand(read(path), "Gemma3_1B").root.get("config")
    assert values(config)["hidden_dim"] == 6912
    assert isinstance(config, Mapping)
    layers = config.get("attention_types")
    assert isinstance(layers, Sequence) and len(layers.items) == 26  # 8 patterns + 2
    last = layers.items[-1]  # the 26th: the pattern's second item (25 % 3 == 1)
    written = "_modules.AttentionType.LOCAL_SLIDING"
    assert where(tmp_path, last) == ("_gemma.py", file_line(path, written) + 1, written)


# ---- bounds ---------------------------------------------------------------------------------


def test_recursion_and_long_chains_stay_within_the_budget() -> None:
    chain = "\n".join(
        f"def b{i}():\n    c = b{i - 1}()\n    c.k{i} = {i}\n    return c\n" for i in range(1, 40)
    )
    doc = py(
        "def b0():\n    c = dict(k0=0)\n    return c\n\n"
        + chain
        + "\ndef loop():\n    c = loop()\n    c.x = 1\n    return c\n"
    )
    # Calls nest at most MAX_CALL_DEPTH deep: a long chain's far end is unknown, not wrong;
    # a function never re-enters itself.
    deep = cand(doc, "b39").root
    assert values(deep)["k39"] == 39
    assert "loop" not in [c.name for c in doc.candidates] or values(cand(doc, "loop").root) == {
        "x": 1
    }


def test_an_instance_holding_only_the_class_defaults_is_the_class_config() -> None:
    # google/flax examples/gemma/configs/default.py (18f8f311): ``get_config`` returns
    # ``TrainConfig()`` unchanged, the class's own defaults: one config (the class), not two.
    doc = py(
        """
        import dataclasses

        @dataclasses.dataclass(unsafe_hash=True)
        class TrainConfig:
          num_train_steps: int = 500_000
          num_layers: int = 18

        def get_config():
          config = TrainConfig()
          return config

        def get_small_config():
          config = TrainConfig()
          config.num_layers = 4
          return config
        """
    )
    names = [c.name for c in doc.candidates]
    assert "get_config" not in names and "TrainConfig" in names
    assert values(cand(doc, "get_small_config").root) == {
        "num_train_steps": 500000,
        "num_layers": 4,
    }
