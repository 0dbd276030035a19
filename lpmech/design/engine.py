"""The design engine: a notion + a linear loss + master rows, solved and certified.

A design problem over K inputs and n outputs is::

    min_Z  Σ_ik C_ik z_ik                       (C = costs, or C_ik = p_i L_ik from a prior and a loss)
    s.t.   A z_k ≤ 0  and  z_ik = 0 (i ∈ zeros(k))     for every output column z_k  (the notion)
           Σ_k z_ik = 1                               for every input i
           lo_r ≤ Σ_ik (A_r)_ik z_ik ≤ hi_r           extra rows across columns (a loss cap, a floor
                                                      on Pr[report = truth], user rows)
           0 ≤ z ≤ 1.

:func:`solve` runs one of three paths and returns the package's :class:`~lpmech.solvers.result.
Result`, certified the same way whatever the path:

* ``"full"`` — every row of the notion written out, one sparse LP to HiGHS (small K·n);
* ``"decomposition"`` — Dantzig–Wolfe by output column over the notion's separation oracle
  (:mod:`lpmech.design.decomposition`), for large K; its master's unit rows start as Σ ≥ 1
  where :func:`covering_rows` (Geo-Ind ∧ LIP; ``cover=`` overrides);
* ``"outputs"`` — output generation (:mod:`lpmech.design.outputs`): the full LP over a growing set
  of outputs with lazy rows, priced output by output; fast when the optimum uses few outputs;
* ``"pyomo"`` — the declarative model (:mod:`lpmech.design.pyomo`; build it yourself with
  :func:`lpmech.design.pyomo.build_pyomo` to add constraints, then :func:`~lpmech.design.pyomo.
  solve_model`);
* ``"auto"`` — ``"full"`` up to K·n ≤ ``AUTO_FULL_MAX`` variables, else ``"outputs"`` when the
  notion holds an ε-LIP whose prior's participation ratio 1/Σp² is at most K/ε² or 0.08K
  (:func:`lip_uses_few_outputs`: LIP's ratio rows tie every entry to P·v, so optimal mechanisms
  use few outputs, the fewer the more skewed the prior), else ``"decomposition"``. Measured on
  Geo-Ind (ε = 1) ∧ ε_LIP-LIP, 10×10 grid, both paths in one process (``python
  benchmarks/design_auto.py``): the decomposition (with :func:`covering_rows`) takes 16–50 s
  whatever the prior, output generation 3–233 s, growing with ε_LIP and 1/Σp²; at ε_LIP = 2 the
  time ratio decomposition ÷ outputs is 9.8, 2.8, 0.91, 0.61 and 0.32 for participation ratios
  0.08K (Gowalla), 0.13K, 0.27K, 0.36K and 0.52K (Dirichlet(α), α = 0.1, 0.3, 0.5, 1); with the
  Gowalla prior still 2.8 at ε_LIP = 6. At K = 400: ε_LIP = 0.5 in 54 s and 1 in 330 s by
  output generation (Dirichlet(1)); Dirichlet(0.1), ε_LIP = 1.5, in 342 s and Gowalla, ε_LIP = 2,
  in 453 s.

Before any path but ``"pyomo"``, interchangeable outputs (same cost column, forced zeros and
extra-row columns) are merged into one (:func:`merge_outputs`; exact: a cone is closed under
addition); the mechanism puts each merged class's mass on its first output. For LE's LP (8) on
check-in data every empty cell (w_k = 0, cost column w) merges: 645 of 1,024 outputs on Gowalla NYC.

Certification (:func:`certify_matrix`): the solver's matrix is clipped, its forced zeros set,
its rows renormalised; if a notion's rows are violated (solver tolerance) each notion's exact
``repair`` (the max-product closure of ratio notions) and then a shift of the violating columns
towards the all-allowed vector are applied; then **every notion certifies the cleaned matrix**
(one :class:`~lpmech.design.notion.NotionCertificate` each, in ``stats["certificates"]``) and the
extra rows are re-checked. A failed certificate raises :class:`~lpmech.errors.CertificationError`.
The objective is that of the cleaned matrix, the bound the solver's Lagrangian bound, so the gap is
honest; status ``optimal`` needs the gap within ``gap_tol``.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from .. import stop
from ..errors import InputError
from ..solvers.highs import solve_lp
from ..solvers.result import Result, check_time_limit, raise_for_status
from .notion import SEPARATION_TOL, Notion
from .problem import Problem, _parts, certified_result, certify_matrix, loss_cap, truth_floor

log = logging.getLogger(__name__)

METHODS = ("auto", "full", "decomposition", "outputs", "pyomo")
#: ``method="auto"`` writes the full LP up to this many variables K·n, else decomposes
AUTO_FULL_MAX = 2500
#: ``auto`` solves a notion holding an ε-LIP by output generation when its prior's participation
#: ratio 1/Σp² is at most ``LIP_OUTPUTS_SPREAD``·K/ε², or at most ``LIP_OUTPUTS_SKEWED``·K at any ε
#: (module docstring)
LIP_OUTPUTS_SPREAD = 1.0
LIP_OUTPUTS_SKEWED = 0.08

__all__ = ["AUTO_FULL_MAX", "METHODS", "Problem", "certified_result", "certify_matrix",
           "covering_rows", "lip_uses_few_outputs", "loss_cap", "merge_outputs", "solve",
           "starting_columns", "truth_floor"]


# ------------------------------------------------------------------------------ merged outputs


class _OutputMap(Notion):
    """The notion seen by a problem whose output r stands for the original output ``rep[r]``:
    the same rows; forced zeros, starting rows and separators of output ``rep[r]``."""

    def __init__(self, notion: Notion, rep):
        super().__init__(notion.K)
        self.inner = notion
        self.rep = [int(k) for k in rep]
        self.name = notion.name
        if hasattr(notion, "repair"):
            self.repair = notion.repair
        if hasattr(notion, "clean"):
            self.clean = notion.clean

    @property
    def parts(self):  # an intersection stays one for the starting columns and certificates
        return getattr(self.inner, "parts", [self.inner])

    def aux_map(self):
        return self.inner.aux_map()

    def rows(self):
        return self.inner.rows()

    def zeros(self, k: int):
        return self.inner.zeros(self.rep[k])

    def initial_rows(self, k: int | None = None):
        from .notion import start_rows

        return start_rows(self.inner, None if k is None else self.rep[k])

    def separate(self, V, tol: float = SEPARATION_TOL):
        return self.inner.separate(V, tol)

    def separator(self, k: int, start, tol: float = SEPARATION_TOL):
        return self.inner.separator(self.rep[k], start, tol)

    def certify(self, Z):
        return self.inner.certify(Z)


def merge_outputs(problem: Problem):
    """Outputs with the same cost column, the same forced zeros and the same extra-row columns are
    interchangeable: a mechanism may move the mass of one onto the other (the sum of two columns
    of a cone is in the cone, with the same cost and the same extra-row values), so the problem
    with each class of such outputs merged into one has the same optimum. Returns
    ``(reduced problem, group)`` with ``group[k]`` the reduced output of original output k, or
    ``(problem, None)`` when no two outputs merge. (With the co-location loss of LE's LP (8),
    C_ik = w_i·1[i ≠ k], every empty cell w_k = 0 has the cost column w: they merge into one.)"""
    n = problem.n
    if n < 2:
        return problem, None
    zeros = [problem.notion.zeros(k) for k in range(n)]
    keys = np.vstack([problem.C] + [A for A, _, _ in problem.extra_rows]).T  # one row per output
    keys = np.ascontiguousarray(keys)
    seen: dict = {}
    group = np.empty(n, dtype=np.int64)
    rep = []
    for k in range(n):
        z = zeros[k]
        key = (keys[k].tobytes(), None if z is None else np.unique(np.asarray(z, np.int64)).tobytes())
        g = seen.get(key)
        if g is None:
            g = seen[key] = len(rep)
            rep.append(k)
        group[k] = g
    if len(rep) == n:
        return problem, None
    notion = _OutputMap(problem.notion, rep)
    extra = [(A[:, rep], lo, hi) for A, lo, hi in problem.extra_rows]
    return Problem(notion, problem.C[:, rep], extra, problem.name), group


def _expand(raw, group, K: int, n: int) -> np.ndarray | None:
    """A reduced problem's matrix on the original outputs: merged mass on each class's first output."""
    if raw is None:
        return None
    X = np.asarray(raw, float).reshape(K, -1)
    first = np.unique(group, return_index=True)[1]
    Z = np.zeros((K, n))
    Z[:, first] = X
    return Z.ravel()


# --------------------------------------------------------------------------------------- solve


def starting_columns(problem: Problem, columns=()) -> list:
    """The decomposition's starting columns: the user's ``columns``, every output's all-allowed
    vector (in every ratio cone) and, for factor notions (d-privacy, LDP, factors) on a square
    problem, their "tents" v = e^{−P(k, ·)} (P: shortest −log F paths; in the factor's cone; the
    LE mechanism's columns for d-privacy). The decomposition drops any column outside the cone of
    the whole notion."""
    from .geoind import GeoInd

    allowed = problem.allowed().astype(float)
    cols = [(int(k), np.asarray(v, float)) for k, v in columns]
    cols += [(k, allowed[:, k].copy()) for k in range(problem.n)]
    if problem.n == problem.K:
        for part in _parts(problem.notion):
            if isinstance(part, GeoInd) and part.F.any():
                T = part.closure.T  # the tents, computed once (repair uses the same closure)
                cols += [(k, T[:, k] * allowed[:, k]) for k in range(problem.n)]
    return cols



def choose_method(problem: Problem, method: str = "auto") -> str:
    if method not in METHODS:
        raise InputError(f"unknown design method {method!r}: use one of {', '.join(METHODS)}")
    if method != "auto":
        return method
    if problem.K * problem.n <= AUTO_FULL_MAX:
        return "full"
    from .notions import LIP

    parts = getattr(problem.notion, "parts", [problem.notion])  # merged outputs keep the parts
    few = any(isinstance(p, LIP) and lip_uses_few_outputs(p) for p in parts)
    return "outputs" if few else "decomposition"


def lip_uses_few_outputs(lip) -> bool:
    """Whether ``auto`` expects an optimum under this ε-LIP to use few outputs: the prior's
    participation ratio 1/Σp² (the number of equally likely inputs it is worth) at most
    ``LIP_OUTPUTS_SPREAD``·K/ε² (always at ε ≤ 1), or at most ``LIP_OUTPUTS_SKEWED``·K (a prior so
    skewed that even Geo-Ind alone uses few outputs); ``benchmarks/design_auto.py``."""
    spread = 1.0 / float(np.sum(lip.prior ** 2))
    return spread <= lip.K * max(LIP_OUTPUTS_SPREAD / lip.epsilon ** 2, LIP_OUTPUTS_SKEWED)


def covering_rows(problem: Problem) -> bool:
    """Whether the decomposition starts with the master's unit rows as Σ ≥ 1 (``cover`` of
    :func:`~lpmech.design.decomposition.decompose`): never with extra rows, a negative cost or two
    locations that nearly coincide (:func:`~lpmech.design.geoind.nearly_coincide`); always for
    Geo-Ind ∧ ε-LIP; for Geo-Ind alone where its tents overlap (the OMG rule,
    :func:`~lpmech.design.geoind.tents_overlap`). Measured (``benchmarks/design_cover.py``):
    Geo-Ind ∧ LIP on the 10×10 grid at ε = 0.5–2, ε_LIP = 1.5–3, a quarter to a half fewer
    rounds, 1.4–3.8× faster."""
    from .geoind import GeoInd, nearly_coincide, tents_overlap
    from .notions import LIP

    if problem.extra_rows or (problem.C < 0).any():
        return False
    parts = getattr(problem.notion, "parts", [problem.notion])
    geo = [p for p in parts if isinstance(p, GeoInd) and p.metric is not None and p.epsilon]
    if not geo or any(nearly_coincide(p.metric, p.epsilon) for p in geo):
        return False
    if any(isinstance(p, LIP) for p in parts):
        return True
    return all(tents_overlap(p.metric, p.epsilon) for p in geo)


@stop.scoped
def solve(notion, costs=None, *, prior=None, loss=None, extra_rows=(), method: str = "auto",
          tol: float = 1e-7, gap_tol: float = 1e-6, time_limit: float | None = None,
          columns=(), workers: int | None = None, executor=None, max_rounds: int | None = None,
          algorithm: str = "simplex", name: str | None = None, merge: bool = True,
          verbose: bool = False, **decompose_options) -> Result:
    """The optimal mechanism under ``notion`` for a linear loss, certified for every notion.

    Solves the design problem of this module's docstring: min Σ_ik C_ik z_ik over row-stochastic
    Z whose every output column satisfies the notion's rows (A z_k ≤ 0, forced zeros), with the
    extra rows lo_r ≤ Σ_ik (A_r)_ik z_ik ≤ hi_r.

    Parameters
    ----------
    notion : Notion
        A :class:`~lpmech.design.notion.Notion` (``a & b`` for an intersection).
    costs : array_like, optional
        The K×n cost matrix C (objective Σ C_ik z_ik), or give ``prior`` and ``loss``.
    prior, loss : array_like, optional
        C_ik = p_i L_ik, the expected loss.
    extra_rows : sequence of (A, lo, hi)
        Triples meaning lo ≤ Σ_ik A_ik z_ik ≤ hi (see :func:`loss_cap`, :func:`truth_floor`).
    method : {"auto", "full", "decomposition", "outputs", "pyomo"}
        The path (module docstring); ``stats["method"]`` says what ran.
    tol : float
        The decomposition's stopping gap.
    gap_tol : float
        The certified gap that counts as optimal (relative, or 1e-9 absolute).
    time_limit : float, optional
        Seconds; a stop there raises :class:`~lpmech.errors.TimeLimitError`.
    columns : sequence of (k, v)
        Starting columns for the decomposition (e.g. a closed form's).
    workers, executor, max_rounds, **decompose_options
        Passed to the decomposition; its ``cover`` defaults to :func:`covering_rows` (``"auto"``).
    algorithm : {"simplex", "ipm", "choose"}
        HiGHS algorithm of the full LP.
    name : str, optional
        The mechanism's name (default ``design[<notion>]``).
    merge : bool
        Solve with interchangeable outputs merged (:func:`merge_outputs`; same optimum, the
        mechanism puts each merged class's mass on its first output).
    verbose : bool
        Show the solver's log and the rounds.

    Returns
    -------
    Result
        ``mechanism``, ``certificate`` (the first notion's, or the first failing one's),
        ``stats["certificates"]`` (one per notion), objective, bound and gap.

    Raises
    ------
    InputError
        Bad costs, prior, loss, extra rows or method.
    InfeasibleError
        No mechanism satisfies the notion and the extra rows.
    CertificationError
        A notion's certificate of the cleaned matrix fails.
    TimeLimitError, IterationLimitError
        Stopped before a certified optimum (``exc.result`` holds the incumbent, if any).

    Examples
    --------
    Geo-Ind (d-privacy at ε = 1) on a 3×3 grid gives the OMG optimum; adding ε-LIP for the prior
    costs more and both notions certify:

    >>> import numpy as np
    >>> from lpmech import instance as li
    >>> from lpmech.design import LIP, DPrivacy, solve
    >>> inst = li.grid(3, 3, 1.0, unit="cell").with_prior(
    ...     np.random.default_rng(0).dirichlet(np.ones(9)))
    >>> res = solve(DPrivacy(inst, 1.0), prior=inst.prior, loss=inst.loss)
    >>> print(res.status, res.stats["method"], f"{res.objective:.4f}", res.gap < 1e-6)
    optimal full 0.7234 True
    >>> both = solve(DPrivacy(inst, 1.0) & LIP(inst.prior, 1.0), prior=inst.prior, loss=inst.loss)
    >>> print(f"{both.objective:.4f}",
    ...       [(c["notion"], round(c["realized"], 4)) for c in both.stats["certificates"]])
    0.7671 [('d-privacy', 1.0), ('lip', 1.0)]
    """
    t0 = time.perf_counter()
    time_limit = check_time_limit(time_limit)
    problem = Problem.make(notion, costs, prior=prior, loss=loss, extra_rows=extra_rows,
                           name=name or f"design[{notion.name}]")
    original, group = problem, None
    if merge and method != "pyomo":
        problem, group = merge_outputs(problem)
    chosen = choose_method(problem, method)
    if chosen != "pyomo" and group is not None:
        columns = [(int(group[k]), v) for k, v in starting_columns(original, columns)]
    elif chosen == "decomposition":
        columns = starting_columns(problem, columns)
    if chosen == "full":
        res = solve_lp(*problem.full_lp(), method=algorithm, time_limit=time_limit, verbose=verbose)
        res.stats["algorithm"] = algorithm
        raw = None if res.x is None else res.x[:problem.K * problem.n]
    elif chosen == "decomposition":
        try:
            from .decomposition import decompose
        except ImportError as exc:  # pragma: no cover - the module ships with the package
            raise InputError(f"the decomposition is not available ({exc}); use method='full'") from None
        opts = dict(decompose_options)
        if max_rounds is not None:
            opts["max_rounds"] = max_rounds
        if opts.get("cover", "auto") == "auto":
            opts["cover"] = covering_rows(problem)
        res = decompose(problem.notion, problem.C, extra_rows=problem.extra_rows,
                        columns=columns,
                        tol=tol, executor=executor, workers=workers, time_limit=time_limit,
                        verbose=verbose, **opts)
        raw = res.x
    elif chosen == "outputs":
        from .outputs import solve_outputs

        opts = dict(decompose_options)
        if max_rounds is not None:
            opts["max_rounds"] = max_rounds
        if group is not None and opts.get("start") is not None:  # original outputs -> merged ones
            opts["start"] = np.unique(group[np.asarray(opts["start"], dtype=np.int64)])
        res = solve_outputs(problem, tol=tol, time_limit=time_limit, executor=executor,
                            workers=workers, verbose=verbose, **opts)
        raw = res.x
    else:
        from .pyomo import build_pyomo, solve_model

        model = build_pyomo(problem)
        return _finish(solve_model(model, time_limit=time_limit, tee=verbose, gap_tol=gap_tol),
                       chosen, method, t0)
    if group is not None:
        raw = _expand(raw, group, original.K, original.n)
        res.stats["merged_outputs"] = original.n - problem.n
    res = certified_result(res, original, raw, gap_tol=gap_tol)
    return _finish(res, chosen, method, t0)


def _finish(res: Result, chosen: str, method: str, t0: float) -> Result:
    res.stats.update(method=chosen, requested_method=method, time_s=time.perf_counter() - t0)
    log.info("design %s (%s): objective %.10g, bound %s, gap %s", res.stats.get("notion"), chosen,
             res.objective, res.bound, res.gap)
    raise_for_status(res, res.stats.get("model", f"design[{res.stats.get('notion')}]"))
    return res
