"""Statistics of the study (docs/method.md §11; Kuehlkamp et al., appendix D).

:mod:`.paired` (paired deltas, win/tie/loss counts, Cohen's dz, Holm), :mod:`.bootstrap` (the vectorized
document-clustered bootstrap and its reproducible draws), :mod:`.mixedlm` (the secondary
statsmodels MixedLM fits), :mod:`.contrasts` (one cell's contrasts table, the single entry the
workflow calls). statsmodels is imported only when a MixedLM is fitted.
"""

from structbench.stats.bootstrap import (
    DRAW_BLOCK,
    BootstrapResult,
    bootstrap_draws,
    bootstrap_p,
    bootstrap_p_mcse,
    bootstrap_replicates,
    cluster_bootstrap,
    cluster_sums,
    iter_bootstrap_draws,
    percentile_ci,
)
from structbench.stats.contrasts import CONTRAST_COLUMNS, contrast_table, depth_slopes
from structbench.stats.mixedlm import MixedLMFit, mixedlm_treatment_p
from structbench.stats.paired import (
    PairedDeltas,
    cohens_dz,
    fragile_decision,
    holm,
    holm_decisions,
    holm_mcse,
    paired_deltas,
    win_tie_loss,
)

__all__ = [
    "CONTRAST_COLUMNS",
    "DRAW_BLOCK",
    "BootstrapResult",
    "MixedLMFit",
    "PairedDeltas",
    "bootstrap_draws",
    "bootstrap_p",
    "bootstrap_p_mcse",
    "bootstrap_replicates",
    "cluster_bootstrap",
    "cluster_sums",
    "cohens_dz",
    "contrast_table",
    "depth_slopes",
    "fragile_decision",
    "holm",
    "holm_decisions",
    "holm_mcse",
    "iter_bootstrap_draws",
    "mixedlm_treatment_p",
    "paired_deltas",
    "percentile_ci",
    "win_tie_loss",
]
