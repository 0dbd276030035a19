"""A design problem (a notion + a linear cost + extra rows across columns) and the certification of
a solver's matrix for it: the part of the engine that every solve path shares
(:mod:`lpmech.design.engine` runs the paths; :mod:`lpmech.design.pyomo` is the declarative model).

See :mod:`lpmech.design.engine` for the problem's definition and the certification steps.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import scipy.sparse as sp

from ..certificate import OptimalityCertificate, trivial_bound
from ..errors import CertificationError, InputError
from ..mechanism import Mechanism, PrivacyCertificate
from ..solvers.result import STOPS, Result, gap_status, raise_for_status
from .notion import Intersection, Notion, NotionCertificate, aux_upper, check_extra_rows, extend

#: an extra row may be missed by this much (relative to max(1, |bound|)) after cleaning
EXTRA_ROW_TOL = 1e-7
#: entries below −NEG_TOL in a solver's matrix are an error, not noise
NEG_TOL = 1e-6
#: the repair of a solver's matrix may move an entry by at most this (else: not solver noise)
REPAIR_TOL = 1e-6


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
        rows = check_extra_rows(extra_rows, C.shape)
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
        column i·n + k, then the notion's auxiliary variables t_ak (if any) at (K + a)·n + k; rows:
        privacy (row r of the notion on output k is r·n + k), unit, extra. The mechanism is the
        first K·n entries of a solution."""
        K, n = self.K, self.n
        a = self.notion.n_aux
        R = self.notion.rows()
        priv = sp.kron(sp.csr_matrix(R), sp.identity(n, format="csr"), format="csr")
        pad = sp.csr_matrix((1, a * n))
        unit = sp.hstack([sp.kron(sp.identity(K, format="csr"), np.ones((1, n)), format="csr"),
                          sp.csr_matrix((K, a * n))], format="csr")
        extra = [sp.hstack([sp.csr_matrix(A.reshape(1, -1)), pad], format="csr")
                 for A, _, _ in self.extra_rows]
        A = sp.vstack([priv, unit, *extra], format="csc")
        lo = np.concatenate([np.full(priv.shape[0], -np.inf), np.ones(K),
                             [lo for _, lo, _ in self.extra_rows]])
        hi = np.concatenate([np.zeros(priv.shape[0]), np.ones(K), [hi for _, _, hi in self.extra_rows]])
        col_hi = np.concatenate([self.allowed().astype(float).ravel(),
                                 np.repeat(aux_upper(self.notion), n)])
        c = np.concatenate([self.C.ravel(), np.zeros(a * n)])
        return c, A, lo, hi, np.zeros((K + a) * n), col_hi


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
        violated = notion.separate(extend(notion, Z), tol=0.0)
        moved = False
        for k, R in enumerate(violated):
            if R.shape[0] == 0:
                continue
            R = sp.csr_matrix(R)
            u = allowed[:, k].astype(float)
            v, s = R @ extend(notion, Z[:, k]), R @ extend(notion, u)
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
    Z = raw_z = _normalise(np.where(allowed, np.clip(Z, 0.0, None), 0.0))
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
    clean = getattr(parts[0], "clean", None) if len(parts) == 1 and allowed.all() else None
    if bad and clean is not None:  # near-duplicate points: the metric's group cleaning
        cleaned = clean(raw_z)
        if cleaned is not None:
            Z = cleaned
            certs = [parts[0].certify(Z)]
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
        if res.status in STOPS and raw is not None:
            try:  # a stop at a limit still hands over its best mechanism, certified
                _attach(res, problem, raw)
            except CertificationError:
                res.mechanism = res.certificate = None
        raise_for_status(res, problem.name)
    _attach(res, problem, raw)
    scale = float(np.abs(problem.C).max(axis=1).sum())
    res.status = gap_status(res.optimality, gap_tol, scale=scale)
    return res


def _attach(res: Result, problem: Problem, raw) -> None:
    bound = None if res.optimality is None else res.optimality.bound
    Z, certs, viol = certify_matrix(problem, raw)
    primary = next((c for c in certs if not c.satisfied), certs[0])
    cert = _privacy_certificate(primary)
    res.mechanism = Mechanism(Z, name=problem.name, certificate=cert)
    res.certificate = cert
    objective = math.fsum((problem.C * Z).ravel())
    # the larger of the Lagrangian and the trivial bound (near-zero optima); the trivial bound alone
    # for a run stopped before its first bound
    if bound is not None or res.status in STOPS:
        bound = max(-math.inf if bound is None else bound, trivial_bound(problem.C))
    res.optimality = OptimalityCertificate.from_values(objective, bound)
    res.stats["certificates"] = [dataclasses.asdict(c) for c in certs]
    for c in certs:
        res.stats[f"realized[{c.notion}]"] = c.realized
    res.stats.update(notion=problem.notion.name, K=problem.K, n=problem.n,
                     extra_rows=len(problem.extra_rows), extra_row_violation=viol)


__all__ = ["EXTRA_ROW_TOL", "NEG_TOL", "REPAIR_TOL", "Problem", "certified_result", "certify_matrix",
           "loss_cap", "truth_floor"]
