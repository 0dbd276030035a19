"""The models, one sub-package per mechanism family; each builds a declarative model and solves it
into a certified :class:`~lpmech.solvers.result.Result`.

* :mod:`.omg` — the optimal (ε, γ)-Geo-Ind mechanism (Qiu et al., LR-Geo §2.3), exact at large K;
* :mod:`.lrgeo` — LR-Geo and CLR-Geo by Benders (Qiu et al., LR-Geo §4);
* :mod:`.le` — the linear-equations mechanism and LP (8)+(12) (Gu et al., LE);
* :mod:`.matrix` — the matrix mechanism and range counting under metric LDP (Xiang et al., metric LDP);
* :mod:`.lip` — LIP, bounded-prior and latent LIP, LDP, Pufferfish, DI (Jiang, Li & Tandon's LIP papers);
* :mod:`.baselines` — GRR, OUE, planar Laplace, exponential, geometric (for comparison);
* :mod:`.common` — what the models share: a solver's point into a certified Result.

A family imports another family's package (its public API), never the other way round, and the
design engine (:mod:`lpmech.design`) imports no model: ``tests/test_layout.py`` checks the import
graph has no circle.
"""

from .._deprecated import install as _install_deprecated_paths

_install_deprecated_paths()  # lpmech.models.matrix_mechanism and the other 0.1 paths, with a warning
