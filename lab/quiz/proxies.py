"""Predictions for the proxies chapter [overview, "Proxy optimization and reward failures"; Gao et al. 2022]; answers from lab.proxy."""

from lab import proxy
from lab.quiz import Question

_NS = [1, 2, 4, 8, 16, 32, 64, 128, 256]


def _bon_gold_helps(bias: float = 0.5, harm: float = 0.5, n_responses: int = 2000, seed: int = 0) -> str:
    """'yes' when going from N = 16 to N = 256 candidates raises the gold score of the proxy's pick (lab world)."""
    exp = proxy.synthetic_experiment(n_responses=n_responses, bias=bias, harm=harm, seed=seed)
    bon = proxy.best_of_n_curve(exp.proxy, exp.gold, _NS)
    return "yes" if bon.gold[_NS.index(256)] > bon.gold[_NS.index(16)] else "no"


QUESTIONS = [
    Question(
        "proxies-bon-gold", "proxies",
        "In the lab's proxy world with bias 0.5, harm 0.5, 2000 responses and seed 0, will going from N = 16 to "
        "N = 256 best-of-N candidates raise the gold score of the chosen sample?",
        _bon_gold_helps, choices=("yes", "no"),
        explanation="More candidates let the proxy find rarer responses it overrates: here the proxy pays for the "
                    "nuisance feature that the gold score dislikes, so the proxy's favourite among 256 carries more "
                    "of it than among 16. Whether that hurts depends on bias and harm; set them on the page.",
    ),
    Question(
        "proxies-bon-kl", "proxies",
        "How far, in nats of KL from the starting policy, is best-of-N with N = 16? (within ±0.01)",
        lambda: float(proxy.best_of_n_kl(16)), tolerance=0.01,
        explanation="KL_BoN = log N − (N − 1)/N = log 16 − 15/16 ≈ 1.835 nats: it grows only like log N, so even "
                    "N = 256 stays under 5 nats.",
    ),
]
