"""nanoGPT-style config: the GPT-2 vocab as the tokenizer reports it."""

from dataclasses import dataclass


@dataclass
class GPTConfig:
    block_size: int = 1_024
    vocab_size: int = 50_304  # GPT-2 BPE: 50,000 merges + 256 bytes + <|endoftext|>
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    dropout: float = 0.0
    bias: bool = True
