"""Demo inputs shared by pages and their tests (so a test recomputes exactly what the page shows)."""

from lab.sft import Segment

SFT_EXAMPLE_1 = [Segment("user", ["USER", "ping", "ASSISTANT"]), Segment("assistant", ["OK", "END"])]
SFT_EXAMPLE_2 = [Segment("system", ["SYS"]), Segment("user", ["USER", "add", "2", "3", "ASSISTANT"]), Segment("assistant", ["5", "END"]),
                 Segment("user", ["USER", "times", "4", "ASSISTANT"]), Segment("assistant", ["2", "0", "END"])]
SFT_P1 = "0.9, 0.8, 1.0, 0.95, 0.9"  # a short answer the model already gets right
SFT_P2 = "0.9, 0.9, 0.7, 0.6, 0.8, 1.0, 0.4, 0.9, 0.9, 0.5, 0.8, 1.0, 0.2, 0.1, 0.5"  # a longer answer it gets wrong


def gradient_energy_series(seed: int, n: int = 41):
    """Demo input for the gradient-gate figure: a noisy level of gradient energy (5 ± 0.3) with three jumps
    where a reused batch has gone stale. Synthetic data, not a formula of the lab."""
    import torch

    g = torch.Generator().manual_seed(int(seed))
    energies = 5.0 + 0.3 * torch.randn(n, generator=g, dtype=torch.float64)
    energies[[12, 25, 33]] += torch.tensor([3.0, 1.5, 4.0], dtype=torch.float64)
    return energies.tolist()
