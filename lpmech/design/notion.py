"""A privacy notion as the engine sees it: homogeneous linear rows on one output column.

Every notion here (Geo-Ind, (ε,γ)-Geo-Ind, d-privacy, ε-LDP, ε-LIP, Pufferfish, ...) constrains one
output column of the K×n mechanism Z at a time: column k must lie in a polyhedral cone

    C_k = {v ∈ R^K : v ≥ 0, A v ≤ 0, v_i = 0 for i in zeros(k)},

where A is the notion's row matrix (the same for every column) and ``zeros(k)`` an optional set of
entries a column may not use (e.g. "never report within r of the truth"). A mechanism is a matrix
whose columns lie in their cones and whose rows sum to one; an objective and extra rows across
columns (a loss cap, a floor on Pr[report = truth]) live in the master. Notions combine by
intersection: ``a & b`` has the rows of both and certifies each.

A notion gives:

* :meth:`Notion.rows` — its rows (a sparse m×K matrix A, A v ≤ 0), used whole by the full LP;
* :meth:`Notion.initial_rows` / :meth:`Notion.separate` — a subset to start from (per output k) and
  a separation oracle, used by lazy solves (the defaults check :meth:`rows` and suit small m);
  :meth:`Notion.separator` wraps them into a stateful oracle for one pricing LP;
* :meth:`Notion.certify` — its certificate of a finished matrix (realised parameter, worst violation).

Auxiliary variables. A notion whose rows are dense in v (ε-LIP: every row holds P·v) may declare
linear maps t = B v (:meth:`Notion.aux_map`, B ≥ 0, a×K): its rows then act on the extended column
u = [v; t] (K + a entries) and include the definition rows B v − t ≤ 0 and t − B v ≤ 0 (from
:func:`definition_rows`). The rows stay sparse (LIP: two entries each, plus one dense definition
pair), and every LP of the engine carries t as a variable in [0, B·1] per output column.
:func:`extend` gives [V; B V] for a plain matrix V.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import scipy.sparse as sp

from ..errors import InputError

#: rows are reported as violated when A v exceeds this (entries of v lie in [0, 1])
SEPARATION_TOL = 1e-8


@dataclasses.dataclass(frozen=True)
class NotionCertificate:
    """What one notion certifies of a matrix.

    Attributes:
        notion: the notion's name (e.g. ``"geo-ind"``, ``"ldp"``, ``"lip"``).
        target: the parameter it was built for (ε), ``None`` when only measured.
        realized: the smallest parameter the matrix satisfies (``inf`` if none).
        worst_violation: max over its rows of (A z_k)/scale at the target (≤ 0 is fine).
        satisfied: ``realized ≤ target·(1 + rtol)``.
        details: anything notion-specific (γ, prior, ...), JSON-ready.
    """

    notion: str
    target: float | None
    realized: float
    worst_violation: float
    satisfied: bool
    details: dict = dataclasses.field(default_factory=dict)


class Notion:
    """Base class: override :meth:`rows` and :meth:`certify`; the rest has sound defaults."""

    name = "notion"
    #: every column of the cone is positive in every entry or zero (Geo-Ind's: its rows chain all
    #: locations), so the decomposition's master is dense (``master_algorithm="auto"``)
    dense_columns = False

    def __init__(self, K: int):
        self.K = int(K)

    # -- rows -------------------------------------------------------------------------------------
    def aux_map(self) -> sp.csr_matrix | None:
        """B (a×K, entries ≥ 0) of the auxiliary variables t = B v its rows use, or None (default)."""
        return None

    @property
    def n_aux(self) -> int:
        B = self.aux_map()
        return 0 if B is None else int(B.shape[0])

    def rows(self) -> sp.csr_matrix:
        """All rows A (m×K, A v ≤ 0) that every output column must satisfy."""
        raise NotImplementedError

    def zeros(self, k: int) -> np.ndarray | None:
        """Indices i with z_ik = 0 forced in column k (default: none)."""
        return None

    def initial_rows(self, k: int | None = None) -> sp.csr_matrix:
        """The rows a lazy solve of output ``k`` starts from (default: all of them)."""
        return self.rows()

    def separate(self, V: np.ndarray, tol: float = SEPARATION_TOL) -> list[sp.csr_matrix]:
        """For each column of ``V`` (K×n; (K + a)×n, the extended columns, with auxiliary
        variables), the rows it violates by more than ``tol`` (may be empty).

        The default evaluates :meth:`rows` on all columns; notions with K² or more rows override it
        with a vectorised oracle (e.g. the max-product oracle of Geo-Ind).
        """
        A = self.rows()
        AV = A @ V
        return [A[np.nonzero(AV[:, c] > tol)[0]] for c in range(V.shape[1])]

    def separator(self, k: int, start: sp.csr_matrix, tol: float = SEPARATION_TOL):
        """A stateful oracle for the lazy LP of output ``k`` that starts with rows ``start``:
        ``f(v) -> rows | None``, the rows v violates by more than ``tol`` and never a row already in
        that LP (the solver enforces those to its own tolerance; finding them again would loop).
        The default wraps :meth:`separate` and drops rows it has seen; notions with a faster way to
        skip present rows override it."""
        seen: set[bytes] = set()

        def key(A, r):
            a, b = A.indptr[r], A.indptr[r + 1]
            return A.indices[a:b].tobytes() + np.round(A.data[a:b], 15).tobytes()

        start = sp.csr_matrix(start)
        seen.update(key(start, r) for r in range(start.shape[0]))

        def separate(v):
            A = sp.csr_matrix(self.separate(np.asarray(v, float)[:, None], tol)[0])
            new = [r for r in range(A.shape[0]) if key(A, r) not in seen]
            if not new:
                return None
            seen.update(key(A, r) for r in new)
            return A[new]

        return separate

    # -- certificate ------------------------------------------------------------------------------
    def certify(self, Z: np.ndarray) -> NotionCertificate:
        """The certificate of the (row-stochastic) matrix ``Z`` under this notion."""
        raise NotImplementedError

    # -- composition ------------------------------------------------------------------------------
    def __and__(self, other: Notion) -> Intersection:
        return Intersection([self, other])


def check_extra_rows(extra_rows, shape: tuple[int, int]) -> list[tuple[np.ndarray, float, float]]:
    """Master rows ``(A_r, lo, hi)``, lo ≤ Σ_ik A_r[i,k] z_ik ≤ hi, checked at the boundary: A_r a
    finite array of ``shape`` (dense or sparse), ``None``/±inf for a missing side, lo ≤ hi."""
    rows = []
    for r, row in enumerate(extra_rows):
        try:
            A, lo, hi = row
        except (TypeError, ValueError):
            raise InputError(f"extra row {r} must be a triple (A, lo, hi)") from None
        A = np.asarray(A.toarray() if sp.issparse(A) else A, float)
        lo = -math.inf if lo is None else float(lo)
        hi = math.inf if hi is None else float(hi)
        if A.shape != tuple(shape) or not np.isfinite(A).all():
            raise InputError(f"extra row {r}: A must be a finite {shape[0]}×{shape[1]} matrix")
        if math.isnan(lo) or math.isnan(hi) or lo > hi:
            raise InputError(f"extra row {r}: need lo <= hi, got [{lo}, {hi}]")
        rows.append((A, lo, hi))
    return rows


def definition_rows(B) -> sp.csr_matrix:
    """The rows B v − t ≤ 0 and t − B v ≤ 0 that tie auxiliary variables t to B v (on [v; t])."""
    B = sp.csr_matrix(B, dtype=float)
    eye = sp.identity(B.shape[0], format="csr")
    return sp.vstack([sp.hstack([B, -eye]), sp.hstack([-B, eye])], format="csr")


def extend(notion: Notion, V: np.ndarray) -> np.ndarray:
    """[V; B V] for the notion's auxiliary map B (V itself when it has none); V is K×n or K."""
    B = notion.aux_map()
    if B is None:
        return V
    V = np.asarray(V, float)
    return np.concatenate([V, np.asarray(B @ V)], axis=0)


def aux_upper(notion: Notion) -> np.ndarray:
    """Upper bounds B·1 of the auxiliary variables (v ∈ [0, 1]^K); empty when there are none."""
    B = notion.aux_map()
    return np.zeros(0) if B is None else np.asarray(B.sum(axis=1), float).ravel()


def start_rows(notion: Notion, k: int | None = None) -> sp.csr_matrix:
    """``notion.initial_rows(k)``, also for notions whose ``initial_rows`` takes no output; checked
    to act on the extended column (K + a entries)."""
    try:
        A = sp.csr_matrix(notion.initial_rows(k), dtype=float)
    except TypeError:
        A = sp.csr_matrix(notion.initial_rows(), dtype=float)
    width = notion.K + notion.n_aux
    if A.shape[1] != width and A.shape[0]:
        raise InputError(f"notion {notion.name!r}: its rows must have K + a = {width} columns "
                         f"(K inputs, a auxiliary variables), got {A.shape[1]}")
    return A if A.shape[1] == width else sp.csr_matrix((0, width))


class Intersection(Notion):
    """The intersection of notions: the rows of all, a certificate per notion."""

    name = "intersection"

    def __init__(self, parts):
        flat = []
        for p in parts:
            flat.extend(p.parts if isinstance(p, Intersection) else [p])
        Ks = {p.K for p in flat}
        if len(Ks) != 1:
            from ..errors import InputError

            raise InputError(f"cannot intersect notions over different domains (K = {sorted(Ks)})")
        super().__init__(Ks.pop())
        self.parts = flat
        self.name = " & ".join(p.name for p in flat)
        self.dense_columns = any(p.dense_columns for p in flat)  # a subset of each part's cone
        # part p's auxiliary variables sit at K + offset[p] ... of the extended column
        sizes = [p.n_aux for p in flat]
        self._offset = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        maps = [p.aux_map() for p in flat if p.n_aux]
        self._B = sp.vstack(maps, format="csr") if maps else None

    def aux_map(self) -> sp.csr_matrix | None:
        return self._B

    def _index(self, q: int) -> np.ndarray:
        """Positions of part q's extended column [v; t_q] in the intersection's [v; t]."""
        K, a = self.K, self.parts[q].n_aux
        return np.concatenate([np.arange(K), K + self._offset[q] + np.arange(a)])

    def _lift(self, q: int, A) -> sp.csr_matrix:
        """Part q's rows (on [v; t_q]) as rows on the intersection's [v; t]."""
        A = sp.csr_matrix(A, dtype=float)
        width = self.K + self.n_aux
        if not self.parts[q].n_aux and A.shape[1] == width:
            return A
        A = A.tocoo()
        return sp.csr_matrix((A.data, (A.row, self._index(q)[A.col])), shape=(A.shape[0], width))

    def rows(self) -> sp.csr_matrix:
        return sp.vstack([self._lift(q, p.rows()) for q, p in enumerate(self.parts)], format="csr")

    def zeros(self, k: int) -> np.ndarray | None:
        zs = [z for z in (p.zeros(k) for p in self.parts) if z is not None]
        return np.unique(np.concatenate(zs)) if zs else None

    def initial_rows(self, k: int | None = None) -> sp.csr_matrix:
        return sp.vstack([self._lift(q, start_rows(p, k)) for q, p in enumerate(self.parts)],
                         format="csr")

    def separate(self, V: np.ndarray, tol: float = SEPARATION_TOL) -> list[sp.csr_matrix]:
        V = np.asarray(V, float).reshape(self.K + self.n_aux, -1)
        per_part = [[self._lift(q, A) for A in p.separate(V[self._index(q)], tol)]
                    for q, p in enumerate(self.parts)]
        return [sp.vstack([rows[c] for rows in per_part], format="csr") for c in range(V.shape[1])]

    def separator(self, k: int, start: sp.csr_matrix, tol: float = SEPARATION_TOL):
        fs = [(q, self._index(q), p.separator(k, start_rows(p, k), tol))
              for q, p in enumerate(self.parts)]

        def separate(v):
            got = [self._lift(q, A) for q, A in ((q, f(v[idx])) for q, idx, f in fs)
                   if A is not None and A.shape[0]]
            return sp.vstack(got, format="csr") if got else None

        return separate

    def certify(self, Z: np.ndarray) -> NotionCertificate:
        """The first certificate that fails, else the first one (all are in :meth:`certificates`)."""
        certs = self.certificates(Z)
        return next((c for c in certs if not c.satisfied), certs[0])

    def certificates(self, Z: np.ndarray) -> list[NotionCertificate]:
        return [p.certify(Z) for p in self.parts]
