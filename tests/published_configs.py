"""Published model configs that several test modules check against, written once by hand.

Each is the shape part of the model's released ``config.json`` (the source is named); a test
that needs a variant copies and edits it, so these stay as published.
"""

from __future__ import annotations

# meta-llama/Meta-Llama-3-8B config.json: head dim 4096 / 32 = 128, 8 KV heads (GQA groups
# of 4); 14336 = 112 · 128; 128256 = 1002 · 128.
LLAMA_3_8B: dict[str, object] = {
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "vocab_size": 128256,
}
