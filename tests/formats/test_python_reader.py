"""The Python config reader: candidates, exact positions, constant folding, errors, comments."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shapelint.core.source import Candidate, Document, Mapping, Node, Scalar, Sequence
from shapelint.readers import parse
from shapelint.readers.python import parse_python


def py(source: str, path: str = "config.py") -> Document:
    return parse_python(path, textwrap.dedent(source).lstrip("\n"))


def cand(doc: Document, name: str) -> Candidate:
    found = [c for c in doc.candidates if c.name == name]
    assert found, f"no candidate {name!r} in {[c.name for c in doc.candidates]}"
    return found[0]


def scalar(node: Node | None) -> Scalar:
    assert isinstance(node, Scalar), node
    return node


def at(doc: Document, node: Node | None) -> tuple[int, int, str]:
    """(line, column, text as written) of a scalar."""
    s = scalar(node)
    return s.span.line, s.span.column, doc.text[s.span.start : s.span.end]


def pos(doc: Document, line: int, context: str, literal: str) -> tuple[int, int, str]:
    """Where ``literal`` sits on ``line``, found right after ``context`` (independently of the
    parser): the expected `at` of a value."""
    text = doc.text.splitlines()[line - 1]
    column = text.index(context + literal) + len(context) + 1
    return line, column, literal


HF5_LLAMA = '''
from huggingface_hub.dataclasses import strict

from ...configuration_utils import PreTrainedConfig
from ...utils.type_validators import interval, positive_int_field


@strict
class LlamaConfig(PreTrainedConfig):
    r"""Llama-2-7B defaults."""

    model_type = "llama"
    sub_configs = {"text_config": AutoConfig}
    vocab_size: int = 32000
    hidden_size: int = positive_int_field(default=4096)
    intermediate_size: int = 11008
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    num_key_value_heads: int | None = None
    hidden_act: str = "silu"
    initializer_range: float = interval(min=0.0, max=1.0)(default=0.02)
    rope_parameters: dict | None = None

    def __post_init__(self, **kwargs):
        if self.head_dim is None:
            self.head_dim = self.hidden_size // self.num_attention_heads
'''


def test_hf5_class_body_fields_with_positions() -> None:
    doc = py(HF5_LLAMA)
    c = cand(doc, "LlamaConfig")
    assert c.kind == "class"
    root = c.root
    assert list(root.keys())[:4] == ["model_type", "sub_configs", "vocab_size", "hidden_size"]
    assert at(doc, root.get("vocab_size")) == pos(doc, 13, "int = ", "32000")
    # positive_int_field(default=4096): the value is the default, positioned on the 4096
    assert at(doc, root.get("hidden_size")) == pos(doc, 14, "default=", "4096")
    assert scalar(root.get("hidden_size")).value == 4096
    assert at(doc, root.get("initializer_range")) == pos(doc, 20, "(default=", "0.02")
    assert scalar(root.get("num_key_value_heads")).value is None
    assert scalar(root.get("num_key_value_heads")).known
    sub = root.get("sub_configs")
    assert isinstance(sub, Mapping)
    assert not scalar(sub.get("text_config")).known
    key = next(e for e in root.entries if e.key == "intermediate_size")
    assert (key.key_span.line, key.key_span.column) == (15, 5)


HF4_GPT2 = """
class GPT2Config(PretrainedConfig):
    model_type = "gpt2"
    keys_to_ignore_at_inference = ["past_key_values"]

    def __init__(
        self,
        vocab_size=50257,
        n_positions=1024,
        n_embd=768,
        n_layer=12,
        n_head=12,
        n_inner=None,
        activation_function="gelu_new",
        *,
        layer_norm_epsilon: float = 1e-5,
        **kwargs,
    ):
        self.vocab_size = vocab_size
        super().__init__(bos_token_id=50256, **kwargs)
"""


def test_hf4_init_defaults() -> None:
    doc = py(HF4_GPT2)
    c = cand(doc, "GPT2Config")
    assert c.kind == "init"
    keys = list(c.root.keys())
    assert keys[:2] == ["model_type", "keys_to_ignore_at_inference"]
    assert "self" not in keys and "kwargs" not in keys
    assert at(doc, c.root.get("n_embd")) == pos(doc, 9, "n_embd=", "768")
    assert scalar(c.root.get("layer_norm_epsilon")).value == 1e-5
    assert isinstance(c.root.get("keys_to_ignore_at_inference"), Sequence)


def test_call_with_keywords_and_underscored_literal() -> None:
    doc = py(
        """
        config = GPTConfig(
            block_size=1024,
            vocab_size=50_304,
            n_layer=12, n_head=12, n_embd=768,
            bias=False,
        )
        """
    )
    c = cand(doc, "config")
    assert c.kind == "call"
    vocab = scalar(c.root.get("vocab_size"))
    assert (vocab.value, vocab.expression) == (50304, None)
    assert at(doc, vocab) == pos(doc, 3, "vocab_size=", "50_304")
    assert at(doc, c.root.get("n_head")) == pos(doc, 4, "n_head=", "12")
    assert scalar(c.root.get("bias")).value is False
    entry = next(e for e in c.root.entries if e.key == "n_embd")
    line, column, _ = pos(doc, 4, "", "n_embd")
    key = entry.key_span
    assert (key.line, key.column, key.end_column) == (line, column, column + len("n_embd"))


def test_constant_expressions_are_folded_with_their_source() -> None:
    doc = py(
        """
        DIM = 4096
        MULT = 2 ** 8
        args = dict(
            tokens=4096 * 32,
            ffn=8 * 1024 // 3,
            neg=-1,
            width=DIM,
            ffn2=(MULT * 43),
            later=LATER,
            call=compute(3),
            attr=torch.bfloat16,
            text="a" "b",
            ratio=1.3,
            nothing=None,
        )
        LATER = 5
        """
    )
    root = cand(doc, "args").root
    tokens = scalar(root.get("tokens"))
    assert (tokens.value, tokens.expression, tokens.known) == (131072, "4096 * 32", True)
    assert at(doc, tokens) == pos(doc, 4, "tokens=", "4096 * 32")
    assert scalar(root.get("ffn")).value == 2730
    neg = scalar(root.get("neg"))
    assert (neg.value, neg.expression) == (-1, None)
    width = scalar(root.get("width"))
    assert (width.value, width.expression) == (4096, "DIM")
    ffn2 = scalar(root.get("ffn2"))
    assert (ffn2.value, ffn2.expression) == (11008, "MULT * 43")
    assert at(doc, ffn2) == pos(doc, 8, "ffn2=(", "MULT * 43")  # inside the parentheses
    for key in ("later", "call", "attr"):
        unknown = scalar(root.get(key))
        assert (unknown.known, unknown.value) == (False, None), key
    assert scalar(root.get("call")).expression == "compute(3)"
    assert scalar(root.get("text")).value == "ab"
    assert scalar(root.get("ratio")).value == 1.3
    assert scalar(root.get("nothing")).known


def test_runaway_arithmetic_is_unknown_not_computed() -> None:
    doc = py("x = dict(a=10 ** 10 ** 10, b=1 << 100000, c=1 / 0, d=2 ** -1)\n")
    root = cand(doc, "x").root
    for key in ("a", "b", "c"):
        assert not scalar(root.get(key)).known, key
    assert scalar(root.get("d")).value == 0.5


def test_conditional_bindings_are_not_constants() -> None:
    doc = py(
        """
        A = 1
        if cond:
            A = 2
        B = 3
        for B in range(4):
            pass
        cfg = dict(a=A, b=B)
        """
    )
    root = cand(doc, "cfg").root
    assert not scalar(root.get("a")).known
    assert not scalar(root.get("b")).known


TORCHTITAN = """
llama3_configs = {
    "8B": TransformerModelArgs(
        dim=4096,
        n_layers=32,
        n_heads=32,
        n_kv_heads=8,
        ffn_dim_multiplier=1.3,
        multiple_of=1024,
        rope_theta=500000,
    ),
    "70B": TransformerModelArgs(dim=8192, n_layers=80, n_heads=64, n_kv_heads=8),
}
"""


def test_dict_of_calls_is_a_collection() -> None:
    doc = py(TORCHTITAN)
    assert [c.name for c in doc.candidates] == ['llama3_configs["8B"]', 'llama3_configs["70B"]']
    eight = cand(doc, 'llama3_configs["8B"]')
    assert eight.kind == "call"
    assert at(doc, eight.root.get("ffn_dim_multiplier")) == pos(doc, 7, "=", "1.3")
    seventy = cand(doc, 'llama3_configs["70B"]').root
    assert at(doc, seventy.get("n_heads")) == pos(doc, 11, "n_heads=", "64")


LITGPT = """
from copy import deepcopy

configs = [
    dict(name="pythia-14m", hf_config=dict(org="EleutherAI", name="pythia-14m"), n_embd=128),
]
llama_2 = [
    # https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json
    dict(
        name="Llama-2-7b{}-hf",
        hf_config=dict(org="meta-llama", name="Llama-2-7b{}-hf"),
        vocab_size=32000,
        padding_multiple=64,
        intermediate_size=11008,
    ),
]
for c in llama_2:
    for kind in ("", "-chat"):
        copy = deepcopy(c)
        copy["name"] = c["name"].format(kind)
        configs.append(copy)
configs.append(
    dict(name="Llama-3.1-Nemotron-70B-Instruct-HF", n_embd=8192, n_head=64),
)
configs.extend([dict(name="extra-a", n_embd=256), dict(name="extra-b", n_embd=512)])
variants = [dict(name=f"v{i}", n_embd=64 * i) for i in range(3)]
"""


def test_litgpt_lists_appends_and_extends() -> None:
    doc = py(LITGPT)
    names = [c.name for c in doc.candidates]
    # The loop replaces the Llama-2-7b{}-hf template by its two variants; the comprehension
    # is not expanded.
    assert names == [
        "configs[0] pythia-14m",
        "llama_2[0] Llama-2-7b-hf",
        "llama_2[0] Llama-2-7b-chat-hf",
        "configs.append[0] Llama-3.1-Nemotron-70B-Instruct-HF",
        "configs.extend[0][0] extra-a",
        "configs.extend[0][1] extra-b",
    ]
    llama = cand(doc, "llama_2[0] Llama-2-7b-chat-hf")
    hf_config = llama.root.get("hf_config")
    assert isinstance(hf_config, Mapping)
    assert scalar(hf_config.get("org")).value == "meta-llama"
    # The loop sets only the top-level name: the nested one stays the template's.
    assert scalar(hf_config.get("name")).value == "Llama-2-7b{}-hf"
    assert at(doc, llama.root.get("vocab_size")) == pos(doc, 11, "vocab_size=", "32000")


# ---- LitGPT name-variant loops -------------------------------------------------------------

LLAMA_2_LOOP = """
from copy import deepcopy

configs = []
llama_2 = [
    dict(
        name="Llama-2-7b{}-hf",
        hf_config=dict(org="meta-llama", name="Llama-2-7b{}-hf"),
        vocab_size=32000,
        intermediate_size=11008,
    ),
    dict(name="Llama-2-13b{}-hf", hf_config=dict(org="meta-llama", name="Llama-2-13b{}-hf"), n_embd=5120),
]
for c in llama_2:
    for kind in ("", "-chat"):
        copy = deepcopy(c)
        copy["name"] = c["name"].format(kind)
        copy["hf_config"]["name"] = c["hf_config"]["name"].format(kind)
        configs.append(copy)
"""


def hf_name(candidate: Candidate) -> Scalar:
    hf_config = candidate.root.get("hf_config")
    assert isinstance(hf_config, Mapping)
    return scalar(hf_config.get("name"))


def test_variant_loop_replaces_a_template_by_its_variants() -> None:
    doc = py(LLAMA_2_LOOP)
    assert [c.name for c in doc.candidates] == [
        "llama_2[0] Llama-2-7b-hf",
        "llama_2[0] Llama-2-7b-chat-hf",
        "llama_2[1] Llama-2-13b-hf",
        "llama_2[1] Llama-2-13b-chat-hf",
    ]
    base, chat = cand(doc, "llama_2[0] Llama-2-7b-hf"), cand(doc, "llama_2[0] Llama-2-7b-chat-hf")
    assert (base.kind, chat.kind) == ("call", "call")
    assert [scalar(c.root.get("name")).value for c in (base, chat)] == [
        "Llama-2-7b-hf",
        "Llama-2-7b-chat-hf",
    ]
    assert [hf_name(c).value for c in (base, chat)] == ["Llama-2-7b-hf", "Llama-2-7b-chat-hf"]
    # Every value sits where the template writes it: a fix edits the template once.
    template = '"Llama-2-7b{}-hf"'
    for variant in (base, chat):
        assert list(variant.root.keys()) == ["name", "hf_config", "vocab_size", "intermediate_size"]
        assert at(doc, variant.root.get("name")) == pos(doc, 6, "name=", template)
        assert at(doc, hf_name(variant)) == pos(doc, 7, '"meta-llama", name=', template)
        assert at(doc, variant.root.get("vocab_size")) == pos(doc, 8, "vocab_size=", "32000")
        assert at(doc, variant.root.get("intermediate_size")) == pos(doc, 9, "=", "11008")
        # The name is computed: its expression is the template's text at that span.
        assert scalar(variant.root.get("name")).expression == template
        assert not scalar(variant.root.get("vocab_size")).shared
    assert base.root.span == chat.root.span
    thirteen = cand(doc, "llama_2[1] Llama-2-13b-chat-hf")
    assert at(doc, thirteen.root.get("n_embd")) == pos(doc, 11, "n_embd=", "5120")
    # The loop body's own statements add no candidates.
    assert not any("copy" in c.name for c in doc.candidates)


FALCON_180B_LOOP = """
from copy import deepcopy

falcon180b = dict(
    name="falcon-180B{}",
    hf_config=dict(org="tiiuae", name="falcon-180B{}"),
    n_embd=14848,
)

for kind in ("", "-chat"):
    copy = deepcopy(falcon180b)
    copy["name"] = falcon180b["name"].format(kind)
    copy["hf_config"]["name"] = falcon180b["hf_config"]["name"].format(kind)
    configs.append(copy)
"""


def test_variant_loop_over_a_named_dict() -> None:
    doc = py(FALCON_180B_LOOP)
    assert [c.name for c in doc.candidates] == [
        "falcon180b falcon-180B",
        "falcon180b falcon-180B-chat",
    ]
    chat = cand(doc, "falcon180b falcon-180B-chat")
    assert hf_name(chat).value == "falcon-180B-chat"
    assert at(doc, hf_name(chat)) == pos(doc, 5, '"tiiuae", name=', '"falcon-180B{}"')
    assert at(doc, chat.root.get("n_embd")) == pos(doc, 6, "n_embd=", "14848")


GEMMA_LOOP = """
from copy import deepcopy

gemma = [
    dict(name="Gemma-2b", hf_config=dict(org="google", name="gemma-2b"), n_embd=2048),
    dict(name="Gemma-7b", hf_config=dict(org="google", name="gemma-7b"), n_embd=3072),
]
configs.extend(gemma)
for c in gemma:
    copy = deepcopy(c)
    copy["name"] = f"{c['name']}-it"
    copy["hf_config"]["name"] = f"{c['hf_config']['name']}-it"
    configs.append(copy)
"""


def test_variant_loop_keeps_a_template_without_placeholder() -> None:
    doc = py(GEMMA_LOOP)
    # Gemma-2b is a config of its own (extended into configs) and the template of Gemma-2b-it.
    assert [c.name for c in doc.candidates] == [
        "gemma[0] Gemma-2b",
        "gemma[0] Gemma-2b-it",
        "gemma[1] Gemma-7b",
        "gemma[1] Gemma-7b-it",
    ]
    it = cand(doc, "gemma[1] Gemma-7b-it")
    assert hf_name(it).value == "gemma-7b-it"
    assert at(doc, it.root.get("n_embd")) == pos(doc, 5, "n_embd=", "3072")
    assert at(doc, it.root.get("name")) == pos(doc, 5, "name=", '"Gemma-7b"')
    assert scalar(cand(doc, "gemma[1] Gemma-7b").root.get("name")).value == "Gemma-7b"


TUPLE_ROWS_LOOP = """
from copy import deepcopy

tiny_llama = [
    dict(name="tiny-llama-1.1b{}", hf_config=dict(org="TinyLlama", name="TinyLlama-1.1B{}")),
]
for c in tiny_llama:
    for kind, hf_postfix in (("", "-intermediate-step-1431k-3T"), ("-chat", "-Chat-v1.0")):
        copy = deepcopy(c)
        copy["name"] = c["name"].format(kind)
        copy["hf_config"]["name"] = c["hf_config"]["name"].format(hf_postfix)
        configs.append(copy)
code_llama = [dict(name="CodeLlama-7b", n_embd=4096)]
for suffix in ("-Python", "-Instruct"):
    for c in code_llama:
        copy = c.copy()
        copy["name"] = c["name"] + suffix + "-hf"
        configs.append(copy)
"""


def test_variant_loop_with_two_loop_variables_and_concatenation() -> None:
    doc = py(TUPLE_ROWS_LOOP)
    assert [c.name for c in doc.candidates] == [
        "tiny_llama[0] tiny-llama-1.1b",
        "tiny_llama[0] tiny-llama-1.1b-chat",
        "code_llama[0] CodeLlama-7b",
        "code_llama[0] CodeLlama-7b-Python-hf",
        "code_llama[0] CodeLlama-7b-Instruct-hf",
    ]
    assert [hf_name(c).value for c in doc.candidates[:2]] == [
        "TinyLlama-1.1B-intermediate-step-1431k-3T",
        "TinyLlama-1.1B-Chat-v1.0",
    ]
    python = cand(doc, "code_llama[0] CodeLlama-7b-Python-hf")
    assert at(doc, python.root.get("n_embd")) == pos(doc, 12, "n_embd=", "4096")


@pytest.mark.parametrize(
    ("imports", "copy", "name"),
    [
        ("from copy import deepcopy", "deepcopy(c)", 'c["name"].format(kind)'),
        ("from copy import deepcopy as dc", "dc(c)", '"{}{}".format(c["name"], kind)'),
        ("import copy as cp", "cp.deepcopy(c)", "f\"{c['name']}{kind}\""),
        ("", "c.copy()", 'c["name"] + kind'),
        ("", "dict(c)", '"{n}{k}".format(n=c["name"], k=kind)'),
        ("", "dict(c)", '"{0}{1}{0}".format(c["name"], kind)'),
        ("", "dict(c)", 'new["name"] + kind'),
        ("", "dict(c)", "f\"{c['name']}\" f'{kind}'"),
        ("", "dict(c)", 'c["name"] + "" + kind'),
        ("", "dict(c)", "f\"{c['name']}{{{kind}}}\\t\""),
        ("", "dict(c)", "rf'{c[\"name\"]}\\{kind}'"),
    ],
)
def test_variant_loop_copy_and_name_forms(imports: str, copy: str, name: str) -> None:
    template = "x{}" if ".format(kind)" in name else "x"
    text = (
        f"{imports}\n"
        f'xs = [{{"name": "{template}", "n_embd": 64}}]\n'
        "for c in xs:\n"
        '    for kind in ["-a", "-b"]:\n'
        f"        new = {copy}\n"
        f'        new["name"] = {name}\n'
        "        out.append(new)\n"
    )
    doc = parse_python("config.py", text)
    # Python itself is the oracle for the names (the test's own expression, not the file).
    expected = [
        eval(name, {"c": {"name": template}, "new": {"name": template}, "kind": k})
        for k in ("-a", "-b")
    ]
    # A name with a placeholder is a template: only its variants remain.
    kept = [] if template == "x{}" else ["xs[0] x"]
    assert [c.name for c in doc.candidates] == [*kept, *(f"xs[0] {n}" for n in expected)]
    b = cand(doc, f"xs[0] {expected[1]}")
    assert scalar(b.root.get("name")).value == expected[1]
    assert at(doc, b.root.get("n_embd")) == pos(doc, 2, '"n_embd": ', "64")
    assert b.kind == "dict"


OVERRIDE_LOOP = """
from copy import deepcopy

mistral = [
    dict(name="Mistral-7B-{}v0.1", hf_config=dict(org="mistralai", name="Mistral-7B-{}v0.1"), block_size=4096, n_embd=4096),
]
for c in mistral:
    for kind in ("", "Instruct-"):
        copy = deepcopy(c)
        copy["name"] = c["name"].format(kind)
        copy["block_size"] = 32768
        copy["rope_base"] = 1_000_000
        configs.append(copy)
"""


def test_variant_loop_literal_assignments_override_the_template() -> None:
    doc = py(OVERRIDE_LOOP)
    assert [c.name for c in doc.candidates] == [
        "mistral[0] Mistral-7B-v0.1",
        "mistral[0] Mistral-7B-Instruct-v0.1",
    ]
    instruct = cand(doc, "mistral[0] Mistral-7B-Instruct-v0.1").root
    assert list(instruct.keys()) == ["name", "hf_config", "block_size", "n_embd", "rope_base"]
    # The literal in the loop, with its own span; editing it changes both variants: shared.
    block = scalar(instruct.get("block_size"))
    assert at(doc, block) == pos(doc, 10, "= ", "32768")
    assert block.value == 32768 and block.shared
    rope = scalar(instruct.get("rope_base"))
    assert (at(doc, rope), rope.value, rope.shared) == (
        pos(doc, 11, "= ", "1_000_000"),
        10**6,
        True,
    )
    added = next(e for e in instruct.entries if e.key == "rope_base")
    assert (added.key_span.line, added.key_span.column) == pos(doc, 11, "copy[", '"rope_base"')[:2]
    # What the loop does not assign stays the template's.
    n_embd = scalar(instruct.get("n_embd"))
    assert at(doc, n_embd) == pos(doc, 4, "n_embd=", "4096") and not n_embd.shared


FOLLOWED_LISTS = """
from copy import deepcopy

qwen = [dict(name="Qwen2.5-0.5B{}", n_embd=896)]
coder = [dict(name="Qwen2.5-Coder-1.5B{}", n_embd=1536)]
maths = [dict(name="Qwen2.5-Math-1.5B{}", n_embd=1536)]
qwen.extend(coder)
configs.extend(maths)
qwen.extend([*maths, dict(name="Qwen2.5-3B{}", n_embd=2048)])
qwen.append(dict(name="Qwen2.5-7B{}", n_embd=3584))
for c in qwen:
    for kind in ("", "-Instruct"):
        copy = deepcopy(c)
        copy["name"] = c["name"].format(kind)
        configs.append(copy)
"""


def test_variant_loop_follows_appends_and_extends() -> None:
    doc = py(FOLLOWED_LISTS)
    assert [c.name for c in doc.candidates] == [
        f"{label} {model}{kind}"
        for label, model in [
            ("qwen[0]", "Qwen2.5-0.5B"),
            ("coder[0]", "Qwen2.5-Coder-1.5B"),
            ("maths[0]", "Qwen2.5-Math-1.5B"),
            ("qwen.extend[0][1]", "Qwen2.5-3B"),
            ("qwen.append[0]", "Qwen2.5-7B"),
        ]
        for kind in ("", "-Instruct")
    ]
    seven = cand(doc, "qwen.append[0] Qwen2.5-7B-Instruct")
    assert at(doc, seven.root.get("n_embd")) == pos(doc, 9, "n_embd=", "3584")


SKIPPED_TEMPLATES = """
from copy import deepcopy

llama_3 = [
    dict(name="Llama-3-8B{}", hf_config=dict(org="meta-llama", name="Meta-Llama-3-8B{}"), n_embd=4096),
    dict(name="Llama-3.3-70B-Instruct", hf_config=dict(org="meta-llama", name="x"), n_embd=8192),
]
"""

LOOP = """
for c in llama_3:
    for kind in ("", "-Instruct"):
        copy = deepcopy(c)
        copy["name"] = c["name"].format(kind)
        configs.append(copy)
"""


@pytest.mark.parametrize(
    "loop",
    [
        # LitGPT's own llama_3 loop: a condition decides which entries are expanded
        """
        for c in llama_3:
            if c["name"] == "Llama-3.3-70B-Instruct":
                configs.append(c)
                continue
            for kind in ("", "-Instruct"):
                copy = deepcopy(c)
                copy["name"] = c["name"].format(kind)
                configs.append(copy)
        """,
        # LitGPT's pythia loop: some entries are skipped
        """
        for c in llama_3:
            if c["name"] in ("Llama-3-8B{}",):
                continue
            copy = deepcopy(c)
            copy["name"] = f"{c['name']}-deduped"
            configs.append(copy)
        """,
        LOOP.replace('c["name"].format(kind)', 'c["name"].format(kind).lower()'),
        LOOP.replace('c["name"].format(kind)', "make_name(c, kind)"),
        LOOP.replace('c["name"].format(kind)', 'c["name"].format(SUFFIX)'),
        LOOP.replace('c["name"].format(kind)', 'c["name"].format(kind=kind)'),
        LOOP.replace('c["name"].format(kind)', '"{:>40}".format(c["name"])'),
        LOOP.replace('c["name"].format(kind)', 'c["n_embd"]'),
        LOOP.replace('c["name"].format(kind)', "f\"{c['name']!r}\""),
        LOOP.replace("configs.append(copy)", "print(kind)\n        configs.append(copy)"),
        LOOP.replace(
            "configs.append(copy)", 'copy["block_size"] = compute()\n        configs.append(copy)'
        ),
        LOOP.replace(
            "configs.append(copy)", 'copy["missing"]["name"] = "x"\n        configs.append(copy)'
        ),
        LOOP.replace("configs.append(copy)", "configs.append(c)"),
        LOOP.replace("configs.append(copy)", "llama_3.append(copy)"),
        LOOP.replace("configs.append(copy)", "configs.extend([copy])"),
        LOOP.replace("        configs.append(copy)\n", ""),
        LOOP.replace('("", "-Instruct")', "KINDS"),
        LOOP.replace('("", "-Instruct")', '{"", "-Instruct"}'),
        LOOP.replace('("", "-Instruct")', '("", 1)'),
        LOOP.replace('("", "-Instruct")', '(("", "-x"), ("-y", "-z"))'),
        LOOP.replace("deepcopy(c)", "deepcopy(llama_3[0])"),
        LOOP.replace("deepcopy(c)", "make_copy(c)"),
        LOOP.replace("copy = deepcopy(c)", "deepcopy = deepcopy(c)").replace("copy[", "deepcopy["),
        # a shallow copy shares hf_config with the template: setting its name changes both
        LOOP.replace("deepcopy(c)", "c.copy()").replace(
            "configs.append", 'copy["hf_config"]["name"] = kind\n        configs.append'
        ),
        LOOP + "else:\n    pass\n",
        # three loops deep
        "for x in ('a', 'b'):\n" + textwrap.indent(LOOP, "    "),
        "llama_3.append(make_config())\n" + LOOP,
        'llama_3[0]["n_embd"] = 8192\n' + LOOP,
        "llama_3 = list(llama_3)\n" + LOOP,
        "def build():\n" + textwrap.indent(LOOP, "    "),
        "if READY:\n" + textwrap.indent(LOOP, "    "),
    ],
)
def test_variant_loop_not_understood_adds_nothing(loop: str) -> None:
    doc = py(SKIPPED_TEMPLATES + textwrap.dedent(loop))
    assert [c.name for c in doc.candidates] == [
        "llama_3[0] Llama-3-8B{}",
        "llama_3[1] Llama-3.3-70B-Instruct",
    ]
    eight = cand(doc, "llama_3[0] Llama-3-8B{}").root
    assert at(doc, eight.get("n_embd")) == pos(doc, 4, "n_embd=", "4096")
    assert scalar(eight.get("name")).value == "Llama-3-8B{}"


def test_variant_loop_needs_deepcopy_from_the_copy_module() -> None:
    for imports in ("\n", "from mylib import deepcopy\n", "import copy\n"):
        doc = py(SKIPPED_TEMPLATES.replace("from copy import deepcopy\n", imports) + LOOP)
        assert [c.name for c in doc.candidates] == [
            "llama_3[0] Llama-3-8B{}",
            "llama_3[1] Llama-3.3-70B-Instruct",
        ], imports
    doc = py(SKIPPED_TEMPLATES + LOOP)
    assert [c.name for c in doc.candidates][:2] == [
        "llama_3[0] Llama-3-8B",
        "llama_3[0] Llama-3-8B-Instruct",
    ]


def test_variant_loop_twice_over_one_dict() -> None:
    again = """
for kind in ("-x",):
    copy = deepcopy(falcon180b)
    copy["name"] = falcon180b["name"].format(kind)
    configs.append(copy)
"""
    doc = py(FALCON_180B_LOOP + again)
    assert [c.name for c in doc.candidates] == [
        "falcon180b falcon-180B",
        "falcon180b falcon-180B-chat",
        "falcon180b falcon-180B-x",
    ]


def test_variant_loop_that_rebinds_its_list_ends_following_it() -> None:
    # ``for llama_3 in llama_3`` leaves the name bound to the last entry: the next loop over
    # it is not expanded.
    rebinding = (
        LOOP.replace("for c in", "for llama_3 in")
        .replace("(c)", "(llama_3)")
        .replace('c["name"]', 'llama_3["name"]')
    )
    doc = py(SKIPPED_TEMPLATES + rebinding + LOOP.replace('"-Instruct"', '"-Chat"'))
    assert [c.name for c in doc.candidates] == [
        "llama_3[0] Llama-3-8B",
        "llama_3[0] Llama-3-8B-Instruct",
        "llama_3[1] Llama-3.3-70B-Instruct",
        "llama_3[1] Llama-3.3-70B-Instruct #2",
        "llama_3[1] Llama-3.3-70B-Instruct #3",
    ]


def test_variant_loop_names_stay_unique() -> None:
    doc = py(SKIPPED_TEMPLATES + LOOP.replace('("", "-Instruct")', '("-a", "-a")'))
    assert [c.name for c in doc.candidates] == [
        "llama_3[0] Llama-3-8B-a",
        "llama_3[0] Llama-3-8B-a #2",
        # no placeholder: the template stays, and both variants repeat its name
        "llama_3[1] Llama-3.3-70B-Instruct",
        "llama_3[1] Llama-3.3-70B-Instruct #2",
        "llama_3[1] Llama-3.3-70B-Instruct #3",
    ]


def test_variant_loop_too_large_is_not_expanded() -> None:
    kinds = ", ".join(f'"-{i}"' for i in range(513))
    doc = py(SKIPPED_TEMPLATES + LOOP.replace('"", "-Instruct"', kinds))
    assert len(doc.candidates) == 2
    doc = py(SKIPPED_TEMPLATES + LOOP.replace('"", "-Instruct"', kinds[: kinds.rindex(",")]))
    assert len(doc.candidates) == 2 + 2 * 512 - 1  # the 70B template without placeholder stays


def test_nested_dicts_become_mappings_with_positions() -> None:
    doc = py(
        """
        config = {
            "model_type": "llava",
            "text_config": {"hidden_size": 4096, "num_attention_heads": 32},
            "vision_config": dict(hidden_size=1024, num_attention_heads=16),
        }
        """
    )
    c = cand(doc, "config")
    assert c.kind == "dict"
    text = c.root.get("text_config")
    assert isinstance(text, Mapping)
    assert at(doc, text.get("hidden_size")) == pos(doc, 3, '"hidden_size": ', "4096")
    key = text.entries[0].key_span
    assert doc.text[key.start : key.end] == '"hidden_size"'
    vision = c.root.get("vision_config")
    assert isinstance(vision, Mapping)
    assert scalar(vision.get("num_attention_heads")).value == 16


NANOGPT = """
# config for training GPT-2 (124M) down to very nice loss of ~2.85 on 1 node of 8X A100 40GB
wandb_log = True
wandb_project = 'owt'

# these make the total batch size be ~0.5M
# 12 batch size * 1024 block size * 5 gradaccum * 8 GPUs = 491,520
batch_size = 12
block_size = 1024
gradient_accumulation_steps = 5 * 8
dtype = 'bfloat16' if torch.cuda.is_bf16_supported() else 'float16'
__version__ = "1"
"""


def test_module_assignments_form_one_module_candidate() -> None:
    doc = py(NANOGPT)
    assert len(doc.candidates) == 1
    module = doc.candidates[0]
    assert (module.name, module.kind) == ("", "module")
    assert list(module.root.keys()) == [
        "wandb_log",
        "wandb_project",
        "batch_size",
        "block_size",
        "gradient_accumulation_steps",
        "dtype",
    ]
    assert at(doc, module.root.get("batch_size")) == pos(doc, 7, "= ", "12")
    accum = scalar(module.root.get("gradient_accumulation_steps"))
    assert (accum.value, accum.expression) == (40, "5 * 8")
    assert not scalar(module.root.get("dtype")).known


def test_function_bodies_hold_configs_only_in_what_they_return() -> None:
    doc = py(
        """
        def _1b():
            dim = 2048
            return ModelConfig(dim=dim, n_heads=32)

        def test_dump(tmp_path):
            cfg = GPTConfig(n_embd=768)
            (tmp_path / "config.json").write_text(json.dumps({"vocab_size": 51866}))
            configs.append(dict(n_embd=1))
            return cfg

        def llama3(vocab_size, num_layers):
            return TransformerDecoder(vocab_size=vocab_size, num_layers=num_layers)

        def flavours():
            return {"tiny": ModelArgs(dim=64), "small": ModelArgs(dim=128)}

        class Presets:
            @classmethod
            def tiny(cls):
                if True:
                    return cls(n_embd=64, n_head=4)
        """
    )
    # Code in a function is not a config; what a builder returns is, named by the function.
    # A call made only of the function's parameters (llama3) is a factory, not a config.
    assert [c.name for c in doc.candidates] == [
        "_1b",
        'flavours["tiny"]',
        'flavours["small"]',
        "Presets.tiny",
    ]
    first = cand(doc, "_1b")
    assert scalar(first.root.get("dim")).value == 2048  # the function's own constants
    # Every model the function builds has these values: a fix there is unsafe.
    assert scalar(first.root.get("n_heads")).shared


def test_non_ascii_and_crlf_positions() -> None:
    text = 'title = "Llama ü 🦙"; hidden = 4096\r\ncfg = dict(note="naïve", n_embd=768)\r\n'
    doc = parse_python("x.py", text)
    module = cand(doc, "")
    hidden = scalar(module.root.get("hidden"))
    assert text[hidden.span.start : hidden.span.end] == "4096"
    # column counts characters: 🦙 is one column although it is 4 bytes in UTF-8
    assert (hidden.span.line, hidden.span.column) == (1, text.index("4096") + 1)
    n_embd = scalar(cand(doc, "cfg").root.get("n_embd"))
    assert text[n_embd.span.start : n_embd.span.end] == "768"
    second_line = text.split("\r\n")[1]
    assert (n_embd.span.line, n_embd.span.column) == (2, second_line.index("768") + 1)


def test_form_feed_positions_still_point_at_the_value() -> None:
    text = "a = 1\n\x0cb = dict(n_embd=22)\n"
    doc = parse_python("x.py", text)
    value = scalar(cand(doc, "b").root.get("n_embd"))
    assert text[value.span.start : value.span.end] == "22"


def test_syntax_error_is_sl000_with_position() -> None:
    doc = py("a = dict(n_embd=1)\nb = (1,\nc = 2\n")
    assert not doc.ok and not doc.candidates
    problem = doc.problems[0]
    assert problem.code == "SL000"
    assert (problem.span.line, problem.span.column) == (2, 5)
    doc = parse_python("x.py", "x = 1\nname é = $\n")
    assert (doc.problems[0].span.line, doc.problems[0].span.column) == (2, 6)


def test_duplicate_keys_and_keywords_are_sl001() -> None:
    doc = py('a = {"dim": 1, "dim": 2}\nb = dict(n=1, n=2)\n')
    codes = [(p.code, p.key, p.span.line, p.span.column) for p in doc.problems]
    assert codes == [("SL001", "dim", 1, 16), ("SL001", "n", 2, 15)]
    assert scalar(cand(doc, "a").root.get("dim")).value == 2


def test_suppression_comments() -> None:
    doc = py(
        """
        cfg = dict(
            vocab_size=50257,  # shapelint: ignore[SL101, sl102]
            n_embd=768,  # shapelint: ignore
            note="# shapelint: ignore[SL999]",
            n_head=12,  # unrelated comment
        )
        """
    )
    assert doc.suppressions == {2: frozenset({"SL101", "SL102"}), 3: frozenset()}


def test_libcst_is_not_imported_for_json() -> None:
    code = (
        "import sys\n"
        "from shapelint.readers import parse\n"
        "import shapelint.readers.python\n"
        "parse('c.json', b'{\"hidden_size\": 64}', 'json')\n"
        "print('libcst' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_dispatch_through_formats_parse() -> None:
    doc = parse("m.py", b"n_embd = 768\nbatch_size = 8\n", "python")
    assert doc.format == "python" and doc.candidates[0].kind == "module"


SAMPLE = HF5_LLAMA + LITGPT + TORCHTITAN + NANOGPT


def _check_spans(doc: Document) -> None:
    def walk(node: Node) -> None:
        assert 0 <= node.span.start <= node.span.end <= len(doc.text)
        if isinstance(node, Mapping):
            for entry in node.entries:
                walk(entry.value)
        elif isinstance(node, Sequence):
            for item in node.items:
                walk(item)
        elif node.expression is not None:
            assert doc.text[node.span.start : node.span.end] == node.expression

    for candidate in doc.candidates:
        walk(candidate.root)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200))
def test_random_text_never_raises(text: str) -> None:
    doc = parse_python("fuzz.py", text)
    _check_spans(doc)


@settings(max_examples=150, deadline=None)
@given(
    st.integers(min_value=0, max_value=len(SAMPLE)),
    st.integers(min_value=0, max_value=20),
    st.text(alphabet="()[]{}=,:#'\"\\\n\r\t 0123456789_*+-/.éx", max_size=6),
)
def test_mutated_real_file_never_raises(position: int, cut: int, insert: str) -> None:
    text = SAMPLE[:position] + insert + SAMPLE[position + cut :]
    doc = parse_python("fuzz.py", text)
    _check_spans(doc)


# ---- class inheritance ------------------------------------------------------------------


def _entries(candidate: Candidate) -> dict[str, tuple[object, str, int]]:
    """key → (value, file name, line) of every scalar entry."""
    out: dict[str, tuple[object, str, int]] = {}
    for entry in candidate.root.entries:
        value = scalar(entry.value)
        out[entry.key] = (
            value.value,
            value.span.path.replace("\\", "/").rsplit("/", 1)[-1],
            value.span.line,
        )
    return out


def test_class_inherits_from_a_base_in_the_same_file() -> None:
    doc = py(
        """
        from dataclasses import dataclass

        @dataclass
        class Base:
            hidden_size: int = 1024
            kv_channels = 128
            vocab_size: int = 32000

        @dataclass
        class Child(Base):
            hidden_size: int = 4096
            num_layers: int = 32
        """
    )
    child = cand(doc, "Child")
    assert child.open_bases == ()
    assert _entries(child) == {
        "kv_channels": (128, "config.py", 6),
        "vocab_size": (32000, "config.py", 7),
        "hidden_size": (4096, "config.py", 11),  # the child's override wins
        "num_layers": (32, "config.py", 12),
    }
    assert len(list(child.root.keys())) == len(set(child.root.keys()))


def test_first_base_wins_and_init_defaults_are_inherited() -> None:
    doc = py(
        """
        class A:
            n_head = 8
        class B:
            n_head = 16
            n_embd = 512
        class C(A, B):
            pass
        class WithInit:
            def __init__(self, vocab_size=50257, n_layer=12):
                pass
        class Sub(WithInit):
            model_type = "sub"
        class Own(WithInit):
            def __init__(self, n_layer=24):
                pass
        """
    )
    assert {k: v[0] for k, v in _entries(cand(doc, "C")).items()} == {"n_head": 8, "n_embd": 512}
    sub = cand(doc, "Sub")
    assert sub.kind == "init"
    assert {k: v[0] for k, v in _entries(sub).items()} == {
        "model_type": "sub",
        "vocab_size": 50257,
        "n_layer": 12,
    }
    # A class's own __init__ replaces its base's: the base's defaults are not its defaults.
    assert {k: v[0] for k, v in _entries(cand(doc, "Own")).items()} == {"n_layer": 24}


def test_base_that_cannot_be_read_is_open() -> None:
    doc = py(
        """
        from .qwen import Qwen3Config
        from somewhere_else import Mixin

        class Qwen3Config8B(Qwen3Config):
            hidden_size = 4096
            num_attention_heads = 32

        class Built(make_base()):
            hidden_size = 1024

        class Fine(object):
            hidden_size = 2048

        class HF(PretrainedConfig):
            hidden_size = 2048
        """
    )
    assert cand(doc, "Qwen3Config8B").open_bases == ("Qwen3Config",)
    assert set(cand(doc, "Qwen3Config8B").root.keys()) == {"hidden_size", "num_attention_heads"}
    assert cand(doc, "Built").open_bases == ("make_base()",)
    assert cand(doc, "Fine").open_bases == ()
    # An unbound name is open, except the framework roots known to hold no shape values.
    assert cand(doc, "HF").open_bases == ()


def test_an_open_base_is_inherited_by_subclasses() -> None:
    doc = py(
        """
        from .missing import Base
        class Mid(Base):
            n_embd = 512
        class Leaf(Mid):
            n_head = 8
        """
    )
    assert cand(doc, "Leaf").open_bases == ("Base",)


def _package(root: Path) -> Path:
    """A package tree: pkg/models/{base.py, qwen/{__init__.py, qwen_provider.py, child.py}}."""
    models = root / "pkg" / "models"
    (models / "qwen").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (models / "__init__.py").write_text("")
    (models / "base.py").write_text(
        "SEQ = 4096\n"
        "class GPTProvider:\n"
        "    make_vocab_size_divisible_by: int = 128\n"
        "    seq_length: int = SEQ\n"
        "    vocab_size = None\n"
    )
    (models / "qwen" / "__init__.py").write_text(
        "from pkg.models.qwen.qwen_provider import Qwen3Provider\n"
    )
    (models / "qwen" / "qwen_provider.py").write_text(
        "from ..base import GPTProvider\n"
        "\n"
        "class Qwen3Provider(GPTProvider):\n"
        "    kv_channels: int = 128\n"
        "    vocab_size: int = 151936\n"
    )
    return models


def test_base_imported_from_a_sibling_module_is_read(tmp_path: Path) -> None:
    models = _package(tmp_path)
    child = models / "qwen" / "child.py"
    child.write_text(
        "from dataclasses import dataclass\n"
        "from .qwen_provider import Qwen3Provider\n"
        "from pkg.models.qwen.qwen_provider import Qwen3Provider as Absolute\n"
        "from . import Qwen3Provider as ReExported\n"
        "import pkg.models.base as base\n"
        "\n"
        "class Relative(Qwen3Provider):\n"
        "    hidden_size: int = 4096\n"
        "class ByAbsolute(Absolute):\n"
        "    hidden_size: int = 4096\n"
        "class ByPackage(ReExported):\n"
        "    hidden_size: int = 4096\n"
        "class ByModule(base.GPTProvider):\n"
        "    hidden_size: int = 4096\n"
    )
    doc = parse(str(child), child.read_bytes(), "python")
    expected = {
        "make_vocab_size_divisible_by": (128, "base.py", 3),
        "seq_length": (4096, "base.py", 4),  # folded in the base's own module
        "kv_channels": (128, "qwen_provider.py", 4),
        "vocab_size": (151936, "qwen_provider.py", 5),
        "hidden_size": (4096, "child.py", 8),
    }
    assert _entries(cand(doc, "Relative")) == expected
    for name in ("ByAbsolute", "ByPackage"):
        found = _entries(cand(doc, name))
        assert found == {**expected, "hidden_size": (4096, "child.py", found["hidden_size"][2])}
        assert cand(doc, name).open_bases == ()
    by_module = _entries(cand(doc, "ByModule"))
    assert by_module["vocab_size"] == (None, "base.py", 5)
    assert "kv_channels" not in by_module
    # The span of an inherited value is exact in its own file.
    span = scalar(cand(doc, "Relative").root.get("kv_channels")).span
    assert (models / "qwen" / "qwen_provider.py").read_text()[span.start : span.end] == "128"


def test_a_base_module_over_the_budget_is_open_and_never_parsed(tmp_path: Path) -> None:
    # A base module gets the same size/nesting check as a linted file before libcst sees it
    # (libcst crashes on ~2,000 nested brackets); over the budget, the base is open.
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    deep = "(" * 300 + "1" + ")" * 300
    (pkg / "base.py").write_text(f"X = {deep}\nclass Base:\n    n_head = 8\n")
    (pkg / "fine.py").write_text("class Fine:\n    n_head = 8\n")
    child = pkg / "child.py"
    child.write_text(
        "from .base import Base\nfrom .fine import Fine\n"
        "class Child(Base):\n    n_embd = 512\n"
        "class Other(Fine):\n    n_embd = 512\n"
    )
    doc = parse(str(child), child.read_bytes(), "python")
    assert cand(doc, "Child").open_bases == ("Base",)
    assert cand(doc, "Other").open_bases == ()


def test_import_outside_the_package_tree_or_a_cycle_is_open(tmp_path: Path) -> None:
    models = _package(tmp_path)
    (models / "a.py").write_text("from .b import B\nclass A(B):\n    n_embd = 1\n")
    (models / "b.py").write_text("from .a import A\nclass B(A):\n    n_head = 2\n")
    (models / "broken.py").write_text("class X(:\n")
    child = models / "child.py"
    child.write_text(
        "from other_package.models import GPTProvider\n"
        "from .a import A\n"
        "from .broken import X\n"
        "class Outside(GPTProvider):\n    hidden_size = 1\n"
        "class Cycle(A):\n    hidden_size = 1\n"
        "class Broken(X):\n    hidden_size = 1\n"
    )
    doc = parse(str(child), child.read_bytes(), "python")
    assert cand(doc, "Outside").open_bases == ("GPTProvider",)
    # a.A(b.B), b.B(a.A): reading A reaches B, whose base A is the module being read.
    cycle = cand(doc, "Cycle")
    assert cycle.open_bases == ("A",)
    assert {k: v[0] for k, v in _entries(cycle).items()} == {
        "n_head": 2,
        "n_embd": 1,
        "hidden_size": 1,
    }
    assert cand(doc, "Broken").open_bases == ("X",)


def test_a_local_bound_to_a_keyword_call_reads_in_the_returned_call() -> None:
    # torchtitan's DeepSeek-V3 and Kimi flavours (deepseek_v3/__init__.py at b5bcd76c):
    # ``layers = _build_dsv3_layers(n_layers=…)`` then ``return Model.Config(layers=layers)``.
    doc = py(
        """
        def _16b(attn_backend: str) -> Model.Config:
            n_layers = 27
            layers = build_layers(n_layers=n_layers, n_heads=16)
            n_layers = 1
            return Model.Config(dim=2048, layers=layers)

        def _tiny() -> Model.Config:
            config = Model.Config(dim=64, layers=build_layers(n_layers=2, n_heads=4))
            return config

        def helper():
            cfg = GPTConfig(n_embd=768)
            return cfg

        def rebound() -> Model.Config:
            layers = build_layers(n_layers=2, n_heads=4)
            layers = layers[:1]
            return Model.Config(dim=64, layers=layers)
        """
    )
    layers = cand(doc, "_16b").root.get("layers")
    assert isinstance(layers, Mapping)
    # The constants the local saw when it was bound (n_layers was 27 then).
    assert scalar(layers.get("n_layers")).value == 27 and scalar(layers.get("n_heads")).shared
    # ``return config``: the call bound to the local is what the function builds, with or
    # without a return annotation (data flow, issue 23).
    assert scalar(cand(doc, "_tiny").root.get("dim")).value == 64
    helper = cand(doc, "helper")
    assert (helper.kind, helper.callee) == ("call", "GPTConfig")
    assert scalar(helper.root.get("n_embd")).value == 768
    assert not scalar(cand(doc, "rebound").root.get("layers")).known
