"""Matrix mechanism under metric-based LDP (Xiang et al., metric LDP §3).

Every user with value x ∈ [m] reports 𝒜(x) = A h_x + Lap(s) (A: p×m strategy, s: Laplace scales);
the collector answers the workload W (q×m) with q̂ = B Σ_i r_i where W = B A.

* Proposition 2: the encoder is E-LDP if Σ_k |A[k,x] − A[k,x']| / s_k ≤ E(x, x') for all x ≠ x'.
  :func:`certify_strategy` checks it on every pair; every mechanism returned here carries it.
* Proposition 3: q̂ is unbiased with total error 2n Σ_k s_k² ‖B[:,k]‖² (:meth:`MatrixMechanism.total_error`).
* Program (2) (W = A = B = I) and program (1) for a *fixed* strategy A are solved in u = 1/s:
  min Σ_k β_k u_k⁻² s.t. Σ_k u_k |ΔA_k(x,x')| ≤ E(x,x'), a separable convex objective over a
  polyhedron (spec §2.2), as a CVXPY model solved by Clarabel. The m(m−1)/2 pair constraints are
  generated lazily (cutting planes with a vectorised separation over all pairs); the reported bound
  is a Lagrangian bound recomputed from the duals, valid for the full problem.
* Program (1) with B free is not convex (spec §5.2); B is fixed to W A⁺ (forced when A is square),
  optionally improved by alternating weighted least squares for B and the convex step for s.
* Closed forms: E_S (spec §2.3) and the prefix strategy under ε|x−x'| (§2.4); used as test oracles
  and reported beside the optimum.

Values are 0-based indices 0..m−1 (the paper's x − 1).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
import warnings
from collections.abc import Sequence

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from ... import stop
from ...certificate import OptimalityCertificate
from ...errors import InfeasibleError, InputError, TimeLimitError
from ...instance import validate_metric
from ...mechanism import EPS_RTOL, PrivacyCertificate, check_epsilon
from ...solvers.cvxpy import solve_cvxpy
from ...solvers.result import Result, check_time_limit
from ..common import raise_for_status, require_certified

log = logging.getLogger("lpmech.matrix_mechanism")

WORKLOADS = ("identity", "ranges", "prefix")
STRATEGIES = ("identity", "prefix", "hierarchical", "haar")
MAX_ENTRIES = 10_000_000  # largest explicit workload matrix (q·m entries)
MAX_DOMAIN = 5_000  # largest domain for an explicit m×m metric (the pair constraints need it)
#: usable ε (and metric values E(x, x')): the scale program is homogeneous (s ∝ 1/ε, errors ∝ 1/ε²),
#: so it is exact at any ε whose errors ~ n·m/ε² stay well inside double precision
EPS_RANGE = (1e-100, 1e100)


def check_program_epsilon(epsilon) -> float:
    """ε as a float inside :data:`EPS_RANGE`, else :class:`InputError` naming the usable range."""
    eps = check_epsilon(epsilon)
    lo, hi = EPS_RANGE
    if not lo <= eps <= hi:
        raise InputError(f"epsilon {eps:g} is outside the usable range [{lo:g}, {hi:g}] of the "
                         "Laplace scale program (its errors scale as 1/epsilon^2 and must stay "
                         "finite doubles)")
    return eps


# ------------------------------------------------------------------------------------ workloads


def _check_m(m) -> int:
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
        raise InputError(f"domain size m must be a positive integer, got {m!r}")
    return int(m)


def identity(m: int) -> np.ndarray:
    """I_m: the frequency workload (program (2)) and the histogram strategy."""
    return np.eye(_check_m(m))


def all_ranges(m: int) -> np.ndarray:
    """W_m (§3.3): one row per interval [l, r], 0 ≤ l ≤ r < m, in order (l, then r): m(m+1)/2 rows."""
    m = _check_m(m)
    lo, hi = np.triu_indices(m)
    k = np.arange(m)
    return ((k >= lo[:, None]) & (k <= hi[:, None])).astype(float)


def prefix(m: int) -> np.ndarray:
    """L_m (§3.3): lower-triangular ones; row k is the prefix indicator of [0..k]."""
    return np.tril(np.ones((_check_m(m), _check_m(m))))


def hierarchical(m: int, branching: int = 2) -> np.ndarray:
    """Hierarchical-histogram strategy: the indicators of the nodes of a b-ary tree over [m]
    (leaves = singletons, root = [0, m)), root first."""
    m = _check_m(m)
    if isinstance(branching, bool) or not isinstance(branching, (int, np.integer)) or branching < 2:
        raise InputError(f"branching must be an integer >= 2, got {branching!r}")
    rows, size = [], 1
    while True:
        for start in range(0, m, size):
            row = np.zeros(m)
            row[start:start + size] = 1.0
            rows.append(row)
        if size >= m:
            break
        size *= branching
    return np.array(rows[::-1])


def haar(m: int) -> np.ndarray:
    """Haar-wavelet strategy (Privelet [45]): the Haar basis on the next power of two ≥ m,
    restricted to the first m columns (all-zero rows dropped; full column rank)."""
    m = _check_m(m)
    size = 1 << max(0, (m - 1).bit_length())
    rows = [np.ones(size)]
    block = size
    while block >= 2:
        for start in range(0, size, block):
            row = np.zeros(size)
            row[start:start + block // 2] = 1.0
            row[start + block // 2:start + block] = -1.0
            rows.append(row)
        block //= 2
    H = np.array(rows)[:, :m]
    return H[np.abs(H).sum(axis=1) > 0]


def _frozen_float(M) -> bool:
    return isinstance(M, np.ndarray) and M.dtype == np.float64 and not M.flags.writeable


def check_matrix(M, name: str, m: int | None = None, *, copy: bool = True) -> np.ndarray:
    """A finite, non-empty 2-D float array (with m columns when given); ``copy=False`` keeps a
    float64 array as it is."""
    try:
        M = np.array(M, dtype=float) if copy else np.asarray(M, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a numeric matrix") from None
    if M.ndim != 2 or M.size == 0:
        raise InputError(f"{name} must be a non-empty 2-D matrix, got shape {M.shape}")
    if not np.isfinite(M).all():
        raise InputError(f"{name} has a non-finite entry")
    if m is not None and M.shape[1] != m:
        raise InputError(f"{name} has {M.shape[1]} columns but the domain has m = {m} values")
    return M


def make_workload(workload, m: int) -> np.ndarray:
    """``"identity"``, ``"ranges"`` (W_m), ``"prefix"`` (L_m), or a user q×m matrix."""
    if isinstance(workload, str):
        if workload == "ranges" and m * m * (m + 1) // 2 > MAX_ENTRIES:
            raise InputError(f"the all-ranges workload on m = {m} values has m(m+1)/2 = "
                             f"{m * (m + 1) // 2} rows: too large to build explicitly; use m <= 250")
        builders = {"identity": identity, "ranges": all_ranges, "prefix": prefix}
        if workload not in builders:
            raise InputError(f"unknown workload {workload!r}: choose one of {WORKLOADS} or give a matrix")
        return builders[workload](m)
    return check_matrix(workload, "workload W", m)


def make_strategy(strategy, m: int) -> np.ndarray:
    """``"identity"``, ``"prefix"``, ``"hierarchical"``, ``"haar"``, or a user p×m matrix."""
    if isinstance(strategy, str):
        builders = {"identity": identity, "prefix": prefix, "hierarchical": hierarchical,
                    "haar": haar}
        if strategy not in builders:
            raise InputError(f"unknown strategy {strategy!r}: choose one of {STRATEGIES} or give a matrix")
        return builders[strategy](m)
    return check_matrix(strategy, "strategy A", m)


# -------------------------------------------------------------------------------------- metrics


@dataclasses.dataclass(frozen=True, eq=False)
class Metric:
    """A metric E on [m] for E-LDP (Definition 2), with its privacy parameter.

    ``matrix`` includes ε (E(x,x') in nats); ``epsilon`` is the parameter it scales with (1 for a
    user matrix), so a mechanism certified with scale t satisfies (t·E)-LDP, reported as realised
    ε = t·epsilon. ``kind`` names the family (``"E_S"``, ``"line"``, ``"L1"``, ``"matrix"``).
    """

    matrix: np.ndarray
    epsilon: float
    kind: str = "matrix"
    S: tuple[int, ...] | None = None
    sizes: tuple[int, ...] | None = None

    @property
    def m(self) -> int:
        return self.matrix.shape[0]

    def describe(self) -> str:
        if self.kind == "E_S":
            return f"E_S (|S| = {len(self.S)}, epsilon {self.epsilon:g}) on [{self.m}]"
        if self.kind == "line":
            return f"epsilon|x-x'| (epsilon {self.epsilon:g}) on [{self.m}]"
        if self.kind == "L1":
            return f"epsilon L1 (epsilon {self.epsilon:g}) on {'x'.join(map(str, self.sizes))}"
        return f"user metric on [{self.m}]"


def _check_domain(m: int) -> int:
    if m > MAX_DOMAIN:
        raise InputError(f"a metric on {m} values is too large for the matrix mechanism's pair "
                         f"constraints (at most {MAX_DOMAIN}); for D-dimensional range counting "
                         "use lpmech.models.matrix.range_mechanism")
    return m




def es_metric(m: int, S, epsilon: float) -> Metric:
    """E_S (§3.2): ε if x or x' ∈ S (the super-sensitive values), 2ε otherwise; 0 on the diagonal.

    ``S`` is a collection of 0-based values, or an int k meaning S = {0, ..., k−1}.
    """
    m, eps = _check_domain(_check_m(m)), check_program_epsilon(epsilon)
    if isinstance(S, (int, np.integer)) and not isinstance(S, bool):
        if not 0 <= S <= m:
            raise InputError(f"|S| must be in [0, m] = [0, {m}], got {S}")
        S = range(int(S))
    S = tuple(sorted({int(v) for v in S}))
    if S and (S[0] < 0 or S[-1] >= m):
        raise InputError(f"S must hold values in 0..{m - 1}, got {S}")
    inS = np.zeros(m, bool)
    inS[list(S)] = True
    E = np.where(inS[:, None] | inS[None, :], eps, 2 * eps)
    np.fill_diagonal(E, 0.0)
    return Metric(E, eps, "E_S", S=S)


def line_metric(m: int, epsilon: float) -> Metric:
    """ε|x − x'| on [m] (§3.3, the local Blowfish line policy)."""
    m, eps = _check_domain(_check_m(m)), check_program_epsilon(epsilon)
    k = np.arange(m, dtype=float)
    return Metric(eps * np.abs(k[:, None] - k[None, :]), eps, "line")


def l1_metric(sizes, epsilon: float, D: int | None = None) -> Metric:
    """E_{L¹}(x, y) = ε‖x − y‖₁ on [m_1]×…×[m_D], cells in ind order (dimension 1 fastest, §1.6).

    ``sizes`` is one m (with ``D``) or the list of m_d."""
    eps = check_program_epsilon(epsilon)
    if isinstance(sizes, (int, np.integer)):
        if D is None or isinstance(D, bool) or not isinstance(D, (int, np.integer)) or D < 1:
            raise InputError(f"D must be a positive integer, got {D!r}")
        sizes = [int(sizes)] * int(D)
    sizes = tuple(_check_m(v) for v in sizes)
    _check_domain(math.prod(sizes))
    coords = cell_coordinates(sizes)
    E = eps * np.abs(coords[:, None, :] - coords[None, :, :]).sum(axis=2)
    return Metric(E, eps, "L1", sizes=sizes)


def cell_coordinates(sizes: Sequence[int]) -> np.ndarray:
    """The (Π m_d)×D 0-based coordinates of the cells in ind order (dimension 1 fastest)."""
    grids = np.meshgrid(*[np.arange(s) for s in reversed(sizes)], indexing="ij")
    return np.stack([g.ravel() for g in reversed(grids)], axis=1).astype(float)


def metric_from_matrix(E, epsilon: float = 1.0, *, check_triangle: bool = True,
                       copy: bool = True) -> Metric:
    """A user metric (validated: finite, non-negative, symmetric, zero diagonal, triangle).

    A non-metric E loses nothing by being replaced with its shortest-path closure (likelihood
    ratios chain, Proposition 1); pass ``check_triangle=False`` to use it as is. ``copy=False``
    validates a C-contiguous float64 E in place and keeps it (read-only) as the metric.
    """
    E = validate_metric(E, check_triangle=check_triangle, name="metric E", copy=copy)
    lo, hi = EPS_RANGE
    top = float(E.max())
    low = float(np.min(E, where=E > 0, initial=np.inf))
    if top > 0 and not (lo <= low and top <= hi):
        raise InputError(f"metric E has values in [{low:g}, {top:g}]: the Laplace scale "
                         f"program needs its positive values in [{lo:g}, {hi:g}] (its errors scale "
                         "as 1/E^2 and must stay finite doubles); rescale epsilon or the distances")
    return Metric(E, check_epsilon(epsilon), "matrix")


def as_metric(metric) -> Metric:
    return metric if isinstance(metric, Metric) else metric_from_matrix(metric)


# --------------------------------------------------------------------------- Proposition 2


def _constant_rows(A: np.ndarray) -> np.ndarray:
    return np.ptp(A, axis=1) == 0


def _is_identity(A: np.ndarray) -> bool:
    """A == I_m, tested without building I_m (an m×m array at m = 8,192 is 0.5 GB)."""
    return (A.ndim == 2 and A.shape[0] == A.shape[1] and np.count_nonzero(A) == A.shape[0]
            and bool((np.diagonal(A) == 1.0).all()))


def _row_step(m: int, budget: int = 32 * 2**20) -> int:
    """Rows per block so that a few float64 blocks of m columns stay within ``budget`` bytes."""
    return max(1, budget // (8 * max(m, 1)))


def _loss_blocks(A: np.ndarray, u: np.ndarray):
    """(r0, r1, rows r0:r1 of :func:`pair_loss`) in row blocks: no m×m array when A = I (program
    (2)); other strategies get the whole matrix as one block."""
    m = A.shape[1]
    if not _is_identity(A):
        yield 0, m, pair_loss(A, u)
        return
    step = _row_step(m)
    for r0 in range(0, m, step):
        r1 = min(r0 + step, m)
        Lb = u[r0:r1, None] + u[None, :]
        Lb[np.arange(r1 - r0), np.arange(r0, r1)] = 0.0
        yield r0, r1, Lb


def pair_loss(A: np.ndarray, u: np.ndarray) -> np.ndarray:
    """L[x, x'] = Σ_k u_k |A[k,x] − A[k,x']| for all pairs (the left side of Proposition 2 with
    u = 1/s). Vectorised: a Gram product for 0/1 strategies, chunked broadcasting otherwise."""
    A = np.asarray(A, float)
    u = np.asarray(u, float)
    p, m = A.shape
    if _is_identity(A):
        L = u[:, None] + u[None, :]
    elif np.isin(A, (0.0, 1.0)).all():  # |a − b| = a + b − 2ab on {0, 1}
        c = u @ A
        L = c[:, None] + c[None, :] - 2.0 * (A.T @ (u[:, None] * A))
        np.maximum(L, 0.0, out=L)
    else:
        L = np.empty((m, m))
        step = max(1, int(2e7 // max(p * m, 1)))
        for s0 in range(0, m, step):
            L[s0:s0 + step] = np.einsum("k,kij->ij", u,
                                        np.abs(A[:, s0:s0 + step, None] - A[:, None, :]))
    np.fill_diagonal(L, 0.0)
    return L


def privacy_loss(A, s) -> np.ndarray:
    """Proposition 2's left side Σ_k |a_kᵀ(h_x − h_x')| / s_k for every pair (m×m).

    s_k = 0 (no noise) costs nothing on a row of A constant across the domain and is infinite
    (no privacy) on any pair the row separates."""
    A = np.asarray(A, float)
    s = np.asarray(s, float)
    if s.shape != (A.shape[0],) or not np.isfinite(s).all() or (s < 0).any():
        raise InputError(f"scales s must be {A.shape[0]} finite non-negative numbers")
    const = _constant_rows(A)
    u = np.where(s > 0, 1.0 / np.where(s > 0, s, 1.0), 0.0)
    L = pair_loss(A, u)
    bad = (s == 0) & ~const
    if bad.any():
        L[pair_loss(A[bad], np.ones(int(bad.sum()))) > 0] = np.inf
    return L


def certify_strategy(A, s, metric, *, rtol: float = EPS_RTOL) -> PrivacyCertificate:
    """Check Proposition 2 on all m(m−1)/2 pairs.

    ``realized_epsilon`` = t·ε where t = max_{x≠x'} L(x,x')/E(x,x'): the encoder is (t·E)-LDP;
    ``satisfied`` when t ≤ 1 + rtol. Violation ratio and magnitude count the pairs with
    L > E·(1 + rtol)."""
    metric = as_metric(metric)
    A = np.asarray(A, float)
    m = metric.m
    if A.ndim != 2 or A.shape[1] != m:
        raise InputError(f"strategy has {A.shape[1]} columns but the metric is on {m} values")
    s = np.asarray(s, float)
    if s.shape != (A.shape[0],) or not np.isfinite(s).all() or (s < 0).any():
        raise InputError(f"scales s must be {A.shape[0]} finite non-negative numbers")
    if ((s == 0) & ~_constant_rows(A)).any():  # no noise on a separating row: infinite loss
        blocks = [(0, m, privacy_loss(A, s))]
    else:
        blocks = _loss_blocks(A, np.where(s > 0, 1.0 / np.where(s > 0, s, 1.0), 0.0))
    t, worst, n_pairs, n_viol, sum_viol = 0.0, -np.inf, 0, 0, 0.0
    cols = np.arange(m)
    for r0, r1, Lb in blocks:  # the pairs x < x', one block of rows at a time
        upper = cols[None, :] > np.arange(r0, r1)[:, None]
        loss, E = Lb[upper], metric.matrix[r0:r1][upper]
        if not loss.size:
            continue
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(loss > 0, loss / E, 0.0)
        t = max(t, float(ratio.max()))
        excess = loss - E
        worst = max(worst, float(excess.max()))
        violated = loss > E * (1 + rtol)
        n_pairs += loss.size
        n_viol += int(violated.sum())
        sum_viol += float(excess[violated].sum())
    return PrivacyCertificate(
        notion="metric-ldp", realized_epsilon=t * metric.epsilon, target_epsilon=metric.epsilon,
        gamma=math.inf, worst_violation=worst if n_pairs else 0.0,
        violation_ratio=n_viol / n_pairs if n_pairs else 0.0,
        violation_magnitude=sum_viol / n_viol if n_viol else 0.0,
        n_constraints=int(n_pairs), satisfied=t <= 1 + rtol, rtol=rtol)


# ------------------------------------------------------------------------ the mechanism (§3.1)


@dataclasses.dataclass(eq=False)
class MatrixMechanism:
    """The encoder A h_x + Lap(s) and the estimator B Σ_i r_i (§3.1, Propositions 2–3)."""

    A: np.ndarray
    B: np.ndarray
    s: np.ndarray
    name: str = ""
    certificate: PrivacyCertificate | None = None

    def __post_init__(self):
        # read-only float64 arrays (solve's, e.g. W = A = B = I_m of program (2)) are kept as they
        # are: they cannot change under the certificate, and at m = 8,192 a copy is 0.5 GB
        self.A = check_matrix(self.A, "strategy A", copy=not _frozen_float(self.A))
        self.B = self.A if self.B is self.A else check_matrix(
            self.B, "reconstruction B", copy=not _frozen_float(self.B))
        self.s = np.asarray(self.s, float)
        if self.B.shape[1] != self.A.shape[0]:
            raise InputError(f"B has {self.B.shape[1]} columns but A has {self.A.shape[0]} rows")
        if self.s.shape != (self.A.shape[0],) or not np.isfinite(self.s).all() or (self.s < 0).any():
            raise InputError(f"scales s must be {self.A.shape[0]} finite non-negative numbers")

    @property
    def shape(self) -> tuple[int, int]:
        """(m inputs, p report coordinates)."""
        return self.A.shape[1], self.A.shape[0]

    @property
    def workload(self) -> np.ndarray:
        return self.B @ self.A

    def encode(self, x, rng: np.random.Generator) -> np.ndarray:
        """n×p reports A h_{x_i} + Lap(s) for the 0-based values ``x``."""
        if not isinstance(rng, np.random.Generator):
            raise InputError("rng must be a numpy.random.Generator")
        x = np.asarray(x)
        m = self.A.shape[1]
        if x.ndim != 1 or not np.issubdtype(x.dtype, np.integer) or (x < 0).any() or (x >= m).any():
            raise InputError(f"values must be a 1-D array of integers in 0..{m - 1}")
        return self.A[:, x].T + rng.laplace(0.0, 1.0, (len(x), len(self.s))) * self.s

    def estimate(self, reports) -> np.ndarray:
        """q̂ = B Σ_i r_i (unbiased for W c, Proposition 3)."""
        return self.B @ np.asarray(reports, float).sum(axis=0)

    def query_variances(self, n: int) -> np.ndarray:
        """Var of each q̂_j: 2n Σ_k B[j,k]² s_k²."""
        return 2.0 * n * np.einsum("jk,jk,k->j", self.B, self.B, self.s ** 2)

    def total_error(self, n: int) -> float:
        """Proposition 3: E‖q̂ − Wc‖² = 2n Σ_k s_k² ‖B[:,k]‖²."""
        return float(self.query_variances(n).sum())


# ------------------------------------------------------------------------------- closed forms


def es_closed_form(m: int, k: int, epsilon: float, n: int = 1) -> float:
    """Optimum of program (2) under E_S with |S| = k (spec §2.3, derived): 2n Σ_x s_x² =
    2n(k^⅓ + (m−k)^⅓)³/ε² for k ≤ m/2, 8nm/ε² for k > m/2 (2nm/ε² at k = 0)."""
    if k == 0:
        return 2.0 * n * m / epsilon ** 2
    if 2 * k <= m:
        return 2.0 * n * (k ** (1 / 3) + (m - k) ** (1 / 3)) ** 3 / epsilon ** 2
    return 8.0 * n * m / epsilon ** 2


def es_closed_form_scales(m: int, S, epsilon: float) -> np.ndarray:
    """The optimal s of program (2) under E_S (spec §2.3)."""
    inS = np.zeros(m, bool)
    inS[list(S)] = True
    k = int(inS.sum())
    if k == 0:
        return np.full(m, 1.0 / epsilon)
    if 2 * k > m:
        return np.full(m, 2.0 / epsilon)
    a, b = k ** (1 / 3), (m - k) ** (1 / 3)
    return np.where(inS, (a + b) / (epsilon * a), (a + b) / (epsilon * b))


def prefix_closed_form(W, epsilon: float, n: int = 1) -> float:
    """Program (1) with A = L_m under ε|x−x'| (§2.4): s = (1/ε, …, 1/ε, 0), B = W L_m⁻¹, error
    2n Σ_{k<m} ‖B[:,k]‖²/ε²; for W = W_m it is 2nm(m−1)/ε², for W = L_m it is 2n(m−1)/ε²."""
    W = np.asarray(W, float)
    m = W.shape[1]
    B = W @ np.linalg.inv(prefix(m))
    return 2.0 * n * float((B[:, :m - 1] ** 2).sum()) / epsilon ** 2


def closed_form(workload, strategy, metric: Metric, n: int = 1) -> float | None:
    """The known optimum for this (workload, strategy, metric), or None."""
    m = metric.m
    if isinstance(strategy, str) and strategy == "identity" and metric.kind == "E_S" and (
            isinstance(workload, str) and workload == "identity"):
        return es_closed_form(m, len(metric.S), metric.epsilon, n)
    if isinstance(strategy, str) and strategy == "prefix" and metric.kind == "line":
        return prefix_closed_form(make_workload(workload, m), metric.epsilon, n)
    return None


# -------------------------------------------------------------------------- the convex solve


def lagrangian_bound(beta, M, e, lam) -> float:
    """Lower bound of min Σ β_k u_k⁻² s.t. M u ≤ e, u ≥ 0 from ANY λ ≥ 0 (weak duality):
    g(λ) = Σ_k 3(β_k/4)^⅓ (Mᵀλ)_k^⅔ − λ·e. With M a subset of the pair rows it bounds the full
    problem too (fewer constraints, smaller optimum)."""
    lam = np.maximum(np.asarray(lam, float), 0.0)
    mu = np.asarray(M.T @ lam).ravel()
    return float(np.sum(3.0 * np.cbrt(np.asarray(beta) / 4.0) * np.cbrt(mu) ** 2) - lam @ e)


#: solver options for an accurate optimum (the bound is recomputed from the duals anyway)
_TIGHT = {"CLARABEL": {"tol_gap_abs": 1e-9, "tol_gap_rel": 1e-9, "tol_feas": 1e-9}}


def _pair_rows(A: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> sp.csr_matrix:
    """Rows |A[:,x] − A[:,y]|ᵀ of the pair constraints, built sparse (no dense pairs×p array)."""
    At = sp.csr_matrix(A.T)
    M = abs(At[xs] - At[ys])
    M.eliminate_zeros()
    return M.tocsr()


def _separate(A, u, E, k: int, tol: float):
    """One pass over all pairs at u, in row blocks: (t, max excess, rows, cols) with t =
    max_{x≠x'} L/E (L = :func:`pair_loss`), the excess L/E − 1 of each pair clipped at 0, and the
    ``k`` pairs of largest excess of each row whose excess is above ``tol``."""
    t, emax, rows, cols = 0.0, 0.0, [], []
    for r0, r1, Lb in _loss_blocks(A, u):
        Eb = E[r0:r1]
        n = r1 - r0
        with np.errstate(divide="ignore", invalid="ignore"):
            X = Lb / np.where(Eb > 0, Eb, np.inf)
        X[np.arange(n), np.arange(r0, r1)] = 0.0
        t = max(t, float(X.max()))
        X -= 1.0
        np.maximum(X, 0.0, out=X)
        X[np.arange(n), np.arange(r0, r1)] = 0.0
        emax = max(emax, float(X.max()))
        if k < 1:
            continue
        top = np.argpartition(-X, k - 1, axis=1)[:, :k]
        rr = np.repeat(np.arange(n), k)
        cc = top.ravel()
        keep = X[rr, cc] > tol
        rows.append(rr[keep] + r0)
        cols.append(cc[keep])
    rows = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    cols = np.concatenate(cols) if cols else np.zeros(0, np.int64)
    return t, emax, rows, cols


def solve_scales(A, beta, metric, *, solver: str = "CLARABEL", lazy: bool | None = None,
                 time_limit: float | None = None, tol: float = 1e-7, per_row: int = 3,
                 max_rounds: int = 100, warm_s=None):
    """min Σ_k β_k s_k² s.t. Proposition 2 on all pairs, solved in u = 1/s (spec §2.2, §2.5).

    Rows of A constant across the domain get s_k = 0 (no noise, no privacy cost). With ``lazy``
    (default when m > 60) the pair constraints start from each value's nearest neighbour, one
    separating pair per strategy row and the pairs tight at ``warm_s``; each round adds the
    ``per_row`` most violated pairs of each value until none exceeds E by more than ``tol``
    (relative). The final u is scaled down onto the feasible set, so the returned s satisfies
    Proposition 2 exactly. Returns (s, objective, bound, stats)."""
    t0 = time.perf_counter()
    limit = check_time_limit(time_limit)
    A = np.asarray(A, float)
    beta = np.asarray(beta, float)
    E = metric.matrix
    m = A.shape[1]
    if m < 2:
        raise InputError("the domain needs at least 2 values (m >= 2)")
    step = _row_step(m)
    cols = np.arange(m)
    for r0 in range(0, m, step):  # E(x, x') = 0 for x < x' (row blocks: no m×m mask)
        r1 = min(r0 + step, m)
        zero = (E[r0:r1] <= 0) & (cols[None, :] > np.arange(r0, r1)[:, None])
        if zero.any():
            i, j = np.argwhere(zero)[0]
            raise InfeasibleError(f"E({r0 + i}, {j}) = 0 for distinct values: no Laplace "
                                  "mechanism separates them with finite noise; merge the two "
                                  "values")
    var = ~_constant_rows(A)
    Av, bv = A[var], beta[var]
    if (bv <= 0).any():
        raise InputError("every non-constant strategy row must be used by the workload (β > 0)")
    lazy = m > 60 if lazy is None else bool(lazy)
    if not var.any():  # every row constant: the reports are noise-free and reveal nothing
        return np.zeros(A.shape[0]), 0.0, 0.0, {"rounds": 0, "pairs_total": m * (m - 1) // 2,
                                                 "lazy": lazy, "pairs_used": 0, "time_s": 0.0}
    if lazy:
        nearest = np.empty(m, np.int64)
        for r0 in range(0, m, step):  # each value's nearest neighbour, the diagonal left out
            r1 = min(r0 + step, m)
            Eb = np.array(E[r0:r1])
            Eb[np.arange(r1 - r0), np.arange(r0, r1)] = np.inf
            nearest[r0:r1] = np.argmin(Eb, axis=1)
        pairs = {tuple(sorted((x, int(y)))) for x, y in enumerate(nearest)}
        for row in Av:
            pairs.add(tuple(sorted((int(np.argmax(row)), int(np.argmin(row))))))
        if warm_s is not None:
            Lw = pair_loss(Av, 1.0 / np.asarray(warm_s, float)[var])
            tight = np.argwhere(np.triu(Lw >= E * (1 - 1e-9), 1))
            pairs.update(map(tuple, tight.tolist()))
        PI, PJ = (np.array(col) for col in zip(*sorted(pairs)))
    else:
        PI, PJ = np.triu_indices(m, 1)
    scale = obj_scale = None
    stats = {"rounds": 0, "pairs_total": m * (m - 1) // 2, "lazy": lazy, "solve_s": 0.0}
    while True:
        stats["rounds"] += 1
        M = _pair_rows(Av, PI, PJ)
        e = E[PI, PJ]
        if scale is None:  # u_k ≤ U_k from any single pair separating row k: the variables' scale
            coo = M.tocoo()
            scale = np.full(len(bv), np.inf)
            np.minimum.at(scale, coo.col, e[coo.row] / coo.data)
            obj_scale = float(np.sum(bv / scale ** 2))
        # well-scaled model: u = U v, rows divided by E, objective by Σ β/U²
        Mn = sp.diags(1.0 / e) @ M @ sp.diags(scale)
        v = cp.Variable(len(bv), pos=True)
        con = Mn @ v <= 1.0
        prob = cp.Problem(cp.Minimize(cp.sum(cp.multiply(bv / scale ** 2 / obj_scale,
                                                         cp.power(v, -2)))), [con])
        remaining = None if limit is None else limit - (time.perf_counter() - t0)
        if remaining is not None and remaining <= 0:
            raise TimeLimitError(f"time limit reached after {stats['rounds'] - 1} cutting-plane "
                                 "rounds; raise the time limit")
        opts = _TIGHT.get(solver, {})
        with warnings.catch_warnings():  # an inaccurate point is still certified and bounded below
            warnings.filterwarnings("ignore", message="Solution may be inaccurate")
            res = solve_cvxpy(prob, solver=solver, time_limit=remaining, **opts)
        stats["cvxpy_status"] = res.stats.get("cvxpy_status")
        stats["solve_s"] += res.stats.get("time_s", 0.0)
        raise_for_status(res, "matrix-mechanism scale program")
        uv = scale * np.maximum(np.asarray(v.value, float), 1e-300)
        lam = obj_scale * np.asarray(con.dual_value, float) / e
        t, emax, rows, cols = _separate(Av, uv, E, min(per_row, m - 1), tol)
        if not lazy:
            break
        if emax <= tol:
            break
        if stats["rounds"] >= max_rounds:
            log.warning("cutting planes stopped after %d rounds (max excess %.3g)",
                        stats["rounds"], emax)
            break
        new = {tuple(sorted(p)) for p in zip(rows.tolist(), cols.tolist())}
        new -= set(zip(PI.tolist(), PJ.tolist()))
        log.info("round %d: %d pairs, max excess %.3g, adding %d", stats["rounds"], len(PI),
                 emax, len(new))
        if not new:
            break
        NI, NJ = (np.array(col) for col in zip(*sorted(new)))
        PI, PJ = np.concatenate([PI, NI]), np.concatenate([PJ, NJ])
    uv = uv / max(t, 1.0)  # onto the feasible set: the constraints are homogeneous in u
    s = np.zeros(A.shape[0])
    s[var] = 1.0 / uv
    objective = float(np.sum(bv / uv ** 2))
    bound = lagrangian_bound(bv, M, e, lam)
    claimed = None if res.bound is None else res.bound * obj_scale
    stats.update(pairs_used=len(PI), solver_claimed_bound=claimed,
                 time_s=time.perf_counter() - t0, noise_free_rows=int((~var).sum()))
    return s, objective, bound, stats


def _reconstruction(W: np.ndarray, A: np.ndarray) -> np.ndarray:
    """B = W A⁺ (forced when A is square and invertible); InputError if W ∉ rowspace(A)."""
    if _is_identity(A):  # B = W exactly (no m³ product to check it)
        return W
    tol = 1e-8 * max(1.0, np.abs(W).max())
    B = None
    if A.shape[0] == A.shape[1]:  # W A⁻¹ by LU, no SVD; singular A falls through to A⁺
        try:
            B = np.linalg.solve(A.T, W.T).T
        except np.linalg.LinAlgError:
            B = None
        if B is not None and not np.abs(B @ A - W).max() <= tol:
            B = None
    if B is None:
        B = W @ np.linalg.pinv(A)
    err = np.abs(B @ A - W).max()
    if err > tol:
        raise InputError(f"the workload is not answerable from this strategy (max |BA − W| = "
                         f"{err:.3g}); choose a strategy whose rows span the workload's")
    return B


def _column_norms2(B: np.ndarray) -> np.ndarray:
    """‖B[:, k]‖² for every column, without a B² temporary."""
    return np.einsum("ij,ij->j", B, B)


def _weighted_reconstruction(W, A, s):
    """B = W (AᵀS⁻²A)⁻¹AᵀS⁻² (weighted least squares; noise-free rows get a dominant weight)."""
    w = np.where(s > 0, 1.0 / np.where(s > 0, s, 1.0) ** 2, 0.0)
    w[s == 0] = 1e8 * max(w.max(), 1.0)
    G = A.T @ (w[:, None] * A)
    return W @ np.linalg.solve(G, A.T * w)


@stop.scoped
def solve(workload="identity", metric=None, *, strategy="identity", n: int = 1,
          reconstruction: str = "pinv", alternations: int = 10, solver: str = "CLARABEL",
          lazy: bool | None = None, time_limit: float | None = None, **kwargs) -> Result:
    """Program (1) for a fixed strategy A (program (2) when workload = strategy = identity).

    Every user reports A h_x + Lap(s); the collector answers W with B Σ_i r_i, W = B A. The
    scales s solve min_s 2n Σ_k s_k²‖B[:,k]‖² s.t. Σ_k |A[k,x] − A[k,x']| / s_k ≤ E(x, x') for all
    x ≠ x' (Proposition 2), in u = 1/s (:func:`solve_scales`).

    Parameters
    ----------
    workload : str or array_like
        A name (see :data:`WORKLOADS`) or a q×m matrix W.
    metric : Metric or array_like, optional
        A :class:`Metric` or a distance matrix (default E_S with |S| = 10, ε = 1 on [100]).
    strategy : str or array_like
        A name (see :data:`STRATEGIES`) or a p×m matrix A.
    n : int
        Number of users.
    reconstruction : {"pinv", "alternate"}
        B = W A⁺ (``"pinv"``, forced for square A) or alternating weighted least squares and the
        convex s-step (``"alternate"``, never worse than ``"pinv"``).
    alternations : int
        Most rounds of ``"alternate"``.
    solver : str
        CVXPY solver of the convex scale program.
    lazy : bool, optional
        Generate the pair constraints lazily (default when m > 60).
    time_limit : float, optional
        Seconds for the solve.
    **kwargs
        Passed to :func:`solve_scales` (``tol``, ``per_row``, ``max_rounds``).

    Returns
    -------
    Result
        A :class:`MatrixMechanism` certified by :func:`certify_strategy`. The objective is the
        total error 2n Σ_k s_k²‖B[:,k]‖² (Proposition 3); the bound is the Lagrangian bound at the
        final B (for ``"alternate"`` a bound for that B only, since (1) is not convex in B).
        ``stats["closed_form"]`` is the E_S / prefix closed form where one applies, with
        ``closed_form_rel_diff``.

    Raises
    ------
    InputError
        Bad n, reconstruction, workload, strategy or metric, or a workload the strategy cannot
        answer.
    InfeasibleError
        E(x, x') = 0 for two distinct values.
    CertificationError
        The scale program returned an infeasible point.

    References
    ----------
    Z. Xiang, B. Ding, X. He, J. Zhou, "Linear and Range Counting under Metric-based Local
    Differential Privacy", ISIT 2020, §3, programs (1) and (2).

    Examples
    --------
    All ranges of [16] under ε|x − x'| (ε = 0.5) with the prefix strategy, checked against the
    closed form (§2.4 of the spec):

    >>> from lpmech.models.matrix import matrix_mechanism as mm
    >>> res = mm.solve("ranges", mm.line_metric(16, 0.5), strategy="prefix")
    >>> print(res.status, f"{res.objective:.4f}", res.stats["closed_form"], res.gap < 1e-6)
    optimal 1920.0000 1920.0 True
    """
    t0 = time.perf_counter()
    metric = es_metric(100, 10, 1.0) if metric is None else as_metric(metric)
    m = metric.m
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise InputError(f"n (number of users) must be a positive integer, got {n!r}")
    if reconstruction not in ("pinv", "alternate"):
        raise InputError(f"reconstruction must be 'pinv' or 'alternate', got {reconstruction!r}")
    W = make_workload(workload, m)
    if isinstance(strategy, str) and strategy == "identity" and _is_identity(W):
        A = W  # program (2): W = A = B = I_m, one read-only m×m array
    else:
        A = make_strategy(strategy, m)
    B = _reconstruction(W, A)
    if B is A:
        A.setflags(write=False)
    else:
        used = (np.abs(B) > 1e-12).any(axis=0) | _constant_rows(A)
        if not used.all():
            A, B = A[used], B[:, used]
    cf = closed_form(workload, strategy, metric, n)
    warm = None
    if metric.kind == "E_S" and A.shape == (m, m) and np.array_equal(A, np.eye(m)):
        warm = es_closed_form_scales(m, metric.S, metric.epsilon)
    elif metric.kind == "line" and isinstance(strategy, str) and strategy == "prefix":
        warm = np.r_[np.full(m - 1, 1.0 / metric.epsilon), 1.0]
    if warm is not None and len(warm) != A.shape[0]:  # rows were dropped: no warm start
        warm = None
    kw = dict(solver=solver, lazy=lazy, time_limit=time_limit, **kwargs)
    s, obj, bound, stats = solve_scales(A, 2.0 * n * _column_norms2(B), metric, warm_s=warm, **kw)
    history = [obj]
    if reconstruction == "alternate":
        for _ in range(alternations):
            B2 = _weighted_reconstruction(W, A, s)
            s2, obj2, bound2, stats2 = solve_scales(A, 2.0 * n * _column_norms2(B2), metric, **kw)
            if obj2 >= obj * (1 - 1e-9):
                break
            B, s, obj, bound, stats = B2, s2, obj2, bound2, stats2
            history.append(obj)
    name = "program (2)" if _is_identity(W) and _is_identity(A) else "program (1), fixed strategy"
    mech = MatrixMechanism(A, B, s, name=name)
    cert = certify_strategy(A, s, metric)
    res = Result(status="optimal", mechanism=mech, certificate=cert, stats=stats)
    require_certified(cert, name, "the scale program returned an infeasible point", result=res)
    mech.certificate = cert
    total = mech.total_error(n)  # recomputed from (B, s): Proposition 3
    res.optimality = OptimalityCertificate.from_values(total, bound, source="lagrangian (u = 1/s)")
    stats.update(model=name, m=m, p=A.shape[0], q=W.shape[0], n=int(n), metric=metric.describe(),
                 epsilon=metric.epsilon, strategy=strategy if isinstance(strategy, str) else "matrix",
                 workload=workload if isinstance(workload, str) else "matrix",
                 reconstruction=reconstruction, closed_form=cf,
                 closed_form_rel_diff=None if cf is None else abs(total - cf) / cf,
                 alternation_objectives=history, time_s=time.perf_counter() - t0)
    log.info("%s: objective %.10g, bound %.10g, %d rounds", name, total, bound, stats["rounds"])
    return res


def solve_frequency(metric=None, *, n: int = 1, **kwargs) -> Result:
    """Program (2): A = B = I, min 2n Σ s_x² s.t. 1/s_x + 1/s_x' ≤ E(x, x') for x ≠ x'.

    Parameters
    ----------
    metric : Metric or array_like, optional
        A :class:`Metric` or a distance matrix (default E_S with |S| = 10, ε = 1 on [100]).
    n : int
        Number of users.
    **kwargs
        Passed to :func:`solve` (``solver``, ``lazy``, ``time_limit``, …).

    Returns
    -------
    Result
        The frequency oracle's Laplace scales as a :class:`MatrixMechanism`, certified; the
        objective is the total error 2n Σ_x s_x², ``stats["closed_form"]`` the E_S closed form
        (spec §2.3) when the metric is E_S.

    Raises
    ------
    InputError, InfeasibleError
        As :func:`solve`.

    References
    ----------
    Z. Xiang, B. Ding, X. He, J. Zhou, "Linear and Range Counting under Metric-based Local
    Differential Privacy", ISIT 2020, §3, program (2).

    Examples
    --------
    Under E_S on [20] with the four super-sensitive values 0..3 (ε = 1), the optimum meets the
    closed form:

    >>> from lpmech.models.matrix import matrix_mechanism as mm
    >>> res = mm.solve_frequency(mm.es_metric(20, 4, 1.0))
    >>> print(res.status, f"{res.objective:.4f}", f"{res.stats['closed_form']:.4f}")
    optimal 138.5738 138.5738
    >>> print(f"{res.certificate.realized_epsilon:.4f}", res.gap < 1e-6)
    1.0000 True
    """
    return solve("identity", metric, strategy="identity", n=n, **kwargs)


def choose_strategy(workload, metric, *, candidates=("identity", "prefix", "hierarchical"),
                    n: int = 1, **kwargs) -> Result:
    """Heuristic for program (1)'s A: solve the convex scale program for each candidate strategy
    (B = W A⁺) and keep the least certified total error. Each candidate's error is in
    ``stats["candidates"]``. Rule of thumb it reproduces: identity under E_S for frequencies,
    prefix under ε|x−x'| for ranges, hierarchical when the metric is flat (ε-LDP-like)."""
    best, table = None, {}
    for cand in candidates:
        try:
            res = solve(workload, metric, strategy=cand, n=n, **kwargs)
        except InputError as exc:  # workload not answerable from this strategy
            table[cand if isinstance(cand, str) else "matrix"] = str(exc)
            continue
        table[cand if isinstance(cand, str) else "matrix"] = res.objective
        if best is None or res.objective < best.objective:
            best = res
    if best is None:
        raise InputError(f"no candidate strategy answers the workload: {table}")
    best.stats["candidates"] = table
    return best
