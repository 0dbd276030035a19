"""The design engine: a notion + a linear loss + master rows, solved and certified.

A design problem over K inputs and n outputs is

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
  (:mod:`lpmech.design.decomposition`), for large K;
* ``"outputs"`` — output generation (:mod:`lpmech.design.outputs`): the full LP over a growing set
  of outputs with lazy rows, priced output by output; fast when the optimum uses few outputs;
* ``"pyomo"`` — the declarative model (:mod:`lpmech.design.pyomo`; build it yourself with
  :func:`lpmech.design.pyomo.build_pyomo` to add constraints, then :func:`~lpmech.design.pyomo.
  solve_model`);
* ``"auto"`` — ``"full"`` up to K·n ≤ ``AUTO_FULL_MAX`` variables, else ``"decomposition"``.

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

import dataclasses
import logging
import math
import time

import numpy as np
import scipy.sparse as sp

from ..certificate import OptimalityCertificate
from ..errors import CertificationError, InputError
from ..mechanism import Mechanism, PrivacyCertificate
from ..models.common import gap_status, raise_for_status
from ..solvers.highs import solve_lp
from ..solvers.result import Result, check_time_limit
from .notion import SEPARATION_TOL, Intersection, Notion, NotionCertificate

log = logging.getLogger(__name__)

METHODS = ("auto", "full", "decomposition", "outputs", "pyomo")
#: ``method="auto"`` writes the full LP up to this many variables K·n, else decomposes
AUTO_FULL_MAX = 2500
#: an extra row may be missed by this much (relative to max(1, |bound|)) after cleaning
EXTRA_ROW_TOL = 1e-7
#: entries below −NEG_TOL in a solver's matrix are an error, not noise
NEG_TOL = 1e-6
#: the repair of a solver's matrix may move an entry by at most this (else: not solver noise)
REPAIR_TOL = 1e-6

__all__ = ["AUTO_FULL_MAX", "METHODS", "Problem", "certified_result", "certify_matrix", "loss_cap",
           "merge_outputs", "solve", "starting_columns", "truth_floor"]


# ------------------------------------------------------------------------------------ problem


def loss_cap(prior, loss, cap: float):
    """The extra row Σ_i p_i Σ_k L_ik z_ik ≤ cap (an expected-loss cap): ``(A, -inf, cap)``."""
    p, L = np.asarray(prior, float), np.asarray(loss, float)
    if not (isinstance(cap, int | float) and math.isfinite(cap)):
        raise InputError(f"the loss cap must be a finite number, got {cap!r}")
    return p[:, None] * L, -math.inf, float(cap)


def truth_floor(prior, floor: float, n: int | None = None):
    """The extra row Σ_i p_i z_ii ≥ floor (a floor on Pr[report = truth]): ``(A, floor, inf)``."""
    p = np.asarray(prior, float)
    if not (isinstance(floor, int | float) and 0 <= floor <= 1):
        raise InputError(f"the floor on Pr[report = truth] must be in [0, 1], got {floor!r}")
    A = np.zeros((p.size, p.size if n is None else n))
    A[np.arange(p.size), np.arange(p.size)] = p
    return A, float(floor), math.inf


@dataclasses.dataclass
class Problem:
    """A validated design problem (see the module docstring). Build it with :meth:`make`."""

    notion: Notion
    C: np.ndarray
    extra_rows: list
    name: str = "design"

    @classmethod
    def make(cls, notion: Notion, costs=None, *, prior=None, loss=None, extra_rows=(),
             name: str = "design") -> Problem:
        if not isinstance(notion, Notion):
            raise InputError(f"expected an lpmech.design Notion, got {type(notion).__name__}")
        K = notion.K
        if costs is not None:
            if prior is not None or loss is not None:
                raise InputError("give either costs or (prior, loss), not both")
            C = np.array(costs, float)
        else:
            if prior is None or loss is None:
                raise InputError("give a K×n cost matrix, or a prior and a loss")
            p, L = np.asarray(prior, float).ravel(), np.asarray(loss, float)
            if p.shape != (K,) or (p < 0).any() or abs(p.sum() - 1) > 1e-6:
                raise InputError(f"prior must be {K} non-negative numbers summing to 1")
            C = p[:, None] * L
        if C.ndim != 2 or C.shape[0] != K or C.shape[1] == 0 or not np.isfinite(C).all():
            raise InputError(f"costs must be a finite {K}×n matrix (n ≥ 1), got shape {C.shape}")
        rows = []
        for r, row in enumerate(extra_rows):
            try:
                A, lo, hi = row
            except (TypeError, ValueError):
                raise InputError(f"extra row {r} must be a triple (A, lo, hi)") from None
            A = np.asarray(A, float)
            lo, hi = float(lo), float(hi)
            if A.shape != C.shape or not np.isfinite(A).all():
                raise InputError(f"extra row {r}: A must be a finite {C.shape[0]}×{C.shape[1]} matrix")
            if math.isnan(lo) or math.isnan(hi) or lo > hi:
                raise InputError(f"extra row {r}: need lo <= hi, got [{lo}, {hi}]")
            rows.append((A, lo, hi))
        return cls(notion, C, rows, name)

    @property
    def K(self) -> int:
        return self.C.shape[0]

    @property
    def n(self) -> int:
        return self.C.shape[1]

    def allowed(self) -> np.ndarray:
        """K×n mask of the entries not forced to zero by the notion."""
        ok = np.ones((self.K, self.n), dtype=bool)
        for k in range(self.n):
            z = self.notion.zeros(k)
            if z is not None:
                ok[np.asarray(z, int), k] = False
        return ok

    def full_lp(self):
        """The whole LP as bulk arrays ``(c, A, row_lo, row_hi, col_lo, col_hi)``; variable z_ik is
        column i·n + k; rows: privacy (row r of the notion on output k is r·n + k), unit, extra."""
        K, n = self.K, self.n
        R = self.notion.rows()
        priv = sp.kron(sp.csr_matrix(R), sp.identity(n, format="csr"), format="csr")
        unit = sp.kron(sp.identity(K, format="csr"), np.ones((1, n)), format="csr")
        extra = [sp.csr_matrix(A.reshape(1, -1)) for A, _, _ in self.extra_rows]
        A = sp.vstack([priv, unit, *extra], format="csc")
        lo = np.concatenate([np.full(priv.shape[0], -np.inf), np.ones(K),
                             [lo for _, lo, _ in self.extra_rows]])
        hi = np.concatenate([np.zeros(priv.shape[0]), np.ones(K), [hi for _, _, hi in self.extra_rows]])
        col_hi = self.allowed().astype(float).ravel()
        return self.C.ravel(), A, lo, hi, np.zeros(K * n), col_hi


# ------------------------------------------------------------------------------ certification


def _parts(notion: Notion) -> list[Notion]:
    return list(notion.parts) if isinstance(notion, Intersection) else [notion]


def _tight(c: NotionCertificate) -> bool:
    """The certificate holds exactly (no tolerance): the matrix needs no repair."""
    t = c.target if c.target is not None else 0.0
    return c.realized <= (t * (1 + 1e-12) if t > 0 else 0.0)


def _normalise(Z: np.ndarray) -> np.ndarray:
    s = Z.sum(axis=1, keepdims=True)
    if (s <= 0).any():
        i = int(np.nonzero(s.ravel() <= 0)[0][0])
        raise CertificationError(f"the solver's matrix has an all-zero row ({i})")
    return Z / s


def _shift(notion: Notion, Z: np.ndarray, allowed: np.ndarray, rounds: int = 3) -> np.ndarray:
    """Move each column whose rows are violated towards its allowed-entries indicator u_k:
    z_k + α u_k with α = max over violated rows a of (a·z_k)/(−a·u_k) (rows with a·u_k < 0).
    Exact for homogeneous rows that hold strictly at u_k (every ratio notion here)."""
    for _ in range(rounds):
        violated = notion.separate(Z, tol=0.0)
        moved = False
        for k, R in enumerate(violated):
            if R.shape[0] == 0:
                continue
            R = sp.csr_matrix(R)
            u = allowed[:, k].astype(float)
            v, s = R @ Z[:, k], R @ u
            ok = (v > 0) & (s < 0)
            if ok.any():
                Z[:, k] += float((v[ok] / -s[ok]).max()) * (1 + 1e-12) * u
                moved = True
        if not moved:
            break
    return Z


def certify_matrix(problem: Problem, raw) -> tuple[np.ndarray, list[NotionCertificate], float]:
    """Clean ``raw`` (K×n) and certify it: ``(Z, one certificate per notion, extra-row violation)``.

    Raises :class:`CertificationError` when a notion's certificate fails after the repair, when
    an extra row is missed by more than ``EXTRA_ROW_TOL``, or when the matrix is not a mechanism.
    """
    Z = np.array(raw, float).reshape(problem.K, problem.n)
    if not np.isfinite(Z).all():
        raise CertificationError("the solver returned a non-finite matrix entry")
    if Z.min(initial=0.0) < -NEG_TOL:
        raise CertificationError(f"the solver returned a negative entry {Z.min():g} beyond noise")
    allowed = problem.allowed()
    Z = _normalise(np.where(allowed, np.clip(Z, 0.0, None), 0.0))
    parts = _parts(problem.notion)
    certs = [p.certify(Z) for p in parts]
    repaired = False
    if not all(_tight(c) for c in certs):
        before = Z
        for p in parts:
            fix = getattr(p, "repair", None)
            if fix is not None:
                Z = np.where(allowed, fix(Z), 0.0)
        Z = _normalise(_shift(problem.notion, Z, allowed))
        change = float(np.abs(Z - before).max())
        if change > REPAIR_TOL:
            c = next(c for c in certs if not _tight(c))
            raise CertificationError(
                f"{problem.name}: the solver's matrix violates its {c.notion} rows beyond solver noise "
                f"(realised {c.realized:.9g}, target {c.target}; the repair would move an entry by "
                f"{change:.2g} > {REPAIR_TOL:g}); the solve is not trustworthy")
        certs = [p.certify(Z) for p in parts]
        repaired = True
    bad = [c for c in certs if not c.satisfied]
    viol = _extra_violation(problem, Z)
    if bad:
        c = bad[0]
        raise CertificationError(
            f"{problem.name}: the mechanism fails its {c.notion} certificate (realised {c.realized:.9g}"
            f" > target {c.target}{' after repair' if repaired else ''}); the solve is not trustworthy")
    if viol > EXTRA_ROW_TOL:
        raise CertificationError(f"{problem.name}: an extra row is missed by {viol:.3g} after "
                                 "cleaning the solver's matrix")
    return Z, certs, viol


def _extra_violation(problem: Problem, Z: np.ndarray) -> float:
    worst = 0.0
    for A, lo, hi in problem.extra_rows:
        v = math.fsum((A * Z).ravel())
        scale = max(1.0, abs(lo) if math.isfinite(lo) else 0.0, abs(hi) if math.isfinite(hi) else 0.0)
        worst = max(worst, (lo - v) / scale, (v - hi) / scale)
    return worst


def _privacy_certificate(c: NotionCertificate) -> PrivacyCertificate:
    gamma = c.details.get("gamma", math.inf)
    return PrivacyCertificate(
        notion=c.notion, realized_epsilon=c.realized, target_epsilon=c.target,
        gamma=math.inf if gamma == "inf" else float(gamma), worst_violation=c.worst_violation,
        violation_ratio=float(c.details.get("violation_ratio", 0.0)), violation_magnitude=0.0,
        n_constraints=int(c.details.get("n_constraints", 0)), satisfied=c.satisfied)


def certified_result(res: Result, problem: Problem, raw, *, gap_tol: float = 1e-6) -> Result:
    """Fill a solver's ``res`` in with the certified mechanism, its objective, bound and gap.

    Raises the package's error for a stop without optimum (with ``result=``), and
    :class:`CertificationError` for a matrix that fails a certificate.
    """
    if res.status != "optimal" or raw is None:
        if res.status in ("time_limit", "iteration_limit") and raw is not None:
            try:  # a stop at a limit still hands over its best mechanism, certified
                _attach(res, problem, raw)
            except CertificationError:
                res.mechanism = res.certificate = None
        raise_for_status(res, problem.name)
    _attach(res, problem, raw)
    res.status = gap_status(res.optimality, gap_tol)
    return res


def _attach(res: Result, problem: Problem, raw) -> None:
    bound = None if res.optimality is None else res.optimality.bound
    Z, certs, viol = certify_matrix(problem, raw)
    primary = next((c for c in certs if not c.satisfied), certs[0])
    cert = _privacy_certificate(primary)
    res.mechanism = Mechanism(Z, name=problem.name, certificate=cert)
    res.certificate = cert
    objective = math.fsum((problem.C * Z).ravel())
    res.optimality = OptimalityCertificate.from_values(objective, bound)
    res.stats["certificates"] = [dataclasses.asdict(c) for c in certs]
    for c in certs:
        res.stats[f"realized[{c.notion}]"] = c.realized
    res.stats.update(notion=problem.notion.name, K=problem.K, n=problem.n,
                     extra_rows=len(problem.extra_rows), extra_row_violation=viol)


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

    @property
    def parts(self):  # an intersection stays one for the starting columns and certificates
        return getattr(self.inner, "parts", [self.inner])

    def rows(self):
        return self.inner.rows()

    def zeros(self, k: int):
        return self.inner.zeros(self.rep[k])

    def initial_rows(self, k: int | None = None):
        from .notion import start_rows

        return start_rows(self.inner, None if k is None else self.rep[k])

    def separate(self, V, tol: float = SEPARATION_TOL):
        return self.inner.separate(V, tol)

    def separator(self, k: int, start):
        return self.inner.separator(self.rep[k], start)

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
    return "full" if problem.K * problem.n <= AUTO_FULL_MAX else "decomposition"


def solve(notion, costs=None, *, prior=None, loss=None, extra_rows=(), method: str = "auto",
          tol: float = 1e-7, gap_tol: float = 1e-6, time_limit: float | None = None,
          columns=(), workers: int | None = None, executor=None, max_rounds: int | None = None,
          algorithm: str = "simplex", name: str | None = None, merge: bool = True,
          verbose: bool = False, **decompose_options) -> Result:
    """The optimal mechanism under ``notion`` for a linear loss, certified for every notion.

    Args:
        notion: a :class:`~lpmech.design.notion.Notion` (``a & b`` for an intersection).
        costs: the K×n cost matrix C (objective Σ C_ik z_ik), or ``prior`` and ``loss``
            (C_ik = p_i L_ik, the expected loss).
        extra_rows: triples ``(A, lo, hi)`` meaning lo ≤ Σ_ik A_ik z_ik ≤ hi (see
            :func:`loss_cap`, :func:`truth_floor`).
        method: ``"auto"``, ``"full"``, ``"decomposition"`` or ``"pyomo"`` (module docstring).
        tol: the decomposition's stopping gap; ``gap_tol``: the certified gap that counts as
            optimal (relative, or 1e-9 absolute).
        time_limit: seconds; a stop there raises :class:`~lpmech.errors.TimeLimitError`.
        columns: starting columns ``(k, v)`` for the decomposition (e.g. a closed form's).
        workers, executor, max_rounds, **decompose_options: passed to the decomposition.
        algorithm: HiGHS algorithm of the full LP (``"simplex"``, ``"ipm"``, ``"choose"``).
        merge: solve with interchangeable outputs merged (:func:`merge_outputs`; same optimum,
            the mechanism puts each merged class's mass on its first output).

    Returns a :class:`Result` with ``mechanism``, ``certificate`` (the first notion's, or the
    first failing one's), ``stats["certificates"]`` (one per notion), objective, bound and gap.
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
        raw = res.x
    elif chosen == "decomposition":
        try:
            from .decomposition import decompose
        except ImportError as exc:  # pragma: no cover - the module ships with the package
            raise InputError(f"the decomposition is not available ({exc}); use method='full'") from None
        opts = dict(decompose_options)
        if max_rounds is not None:
            opts["max_rounds"] = max_rounds
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
