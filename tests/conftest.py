import os

import torch

# Tiny tensors and models: one thread is much faster than two on this machine.
torch.set_num_threads(1)
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
