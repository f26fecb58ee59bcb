"""A Llama-style model definition as training code writes it (read statically by shapelint)."""

from dataclasses import dataclass


@dataclass
class ModelArgs:
    dim: int = 2560
    n_layers: int = 32
    n_heads: int = 32  # head dim 2560 / 32 = 80
    n_kv_heads: int = 8
    vocab_size: int = 50_257
    multiple_of: int = 256
    max_seq_len: int = 2048
