# nanoGPT-style training script (config/train_gpt2.py): module-level settings
batch_size = 12
block_size = 1024
gradient_accumulation_steps = 5 * 8

n_layer = 12
n_head = 12
n_embd = 64 * 12
vocab_size = 50_000 + 257  # BPE merges + bytes + <|endoftext|>
