"""Files: atomic writes, saved mechanisms (``.npz``) and small input vectors.

Nothing is written half-way (DESIGN, "Bad input"): :func:`atomic_write` writes to a temporary file
next to the target and moves it into place with :func:`os.replace`, which is atomic on POSIX and
Windows when both names are on the same file system. An interrupted or failed write leaves the
target as it was (absent, or its previous content) and removes the temporary file.

A saved mechanism is an ``.npz`` archive (read with ``allow_pickle=False``) holding

=====================  ========================================================================
``matrix``             K×K row-stochastic matrix Z[i, k] = Pr[report k | true i]
``metric``             K×K distance matrix d the mechanism was built and certified for
``prior``, ``loss``    the instance's prior p (length K) and loss L (K×K)
``epsilon``            target ε (0-d float)
``gamma``              neighbour threshold γ of (ε, γ)-Geo-Ind (0-d float, ``inf`` for classical)
``certificate``        JSON: the :class:`~lpmech.mechanism.PrivacyCertificate`
``optimality``         JSON: the :class:`~lpmech.certificate.OptimalityCertificate`
``summary``            JSON: :meth:`lpmech.solvers.result.Result.summary`
``instance``           JSON: how the instance was built (description, kind, unit, shape, cell)
``format``             ``"lpmech-mechanism/1"``
=====================  ========================================================================

JSON here is strict (no ``NaN``/``Infinity``): non-finite numbers are written as the strings
``"inf"``, ``"-inf"`` and ``"nan"`` (see :func:`jsonable`).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import json
import math
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from .errors import InputError
from .instance import Instance, load_numpy, validate_metric
from .mechanism import Mechanism

FORMAT = "lpmech-mechanism/1"
REQUIRED_ARRAYS = ("matrix", "metric", "prior", "loss", "epsilon", "gamma",
                   "certificate", "optimality", "summary")


# -------------------------------------------------------------------------------- atomic writes


def check_output_path(path, *, suffix: str | None = None, flag: str | None = None) -> Path:
    """Check that ``path`` can be an output file: its directory exists, it is not a directory, and
    it ends in ``suffix`` (e.g. ``".npz"``) when given. Returns it as a :class:`Path`.

    Call it before long work so a bad ``--out`` fails at once, not after the solve. ``flag``
    (``"--out"``, ``"--plot"``) names the option in the messages.
    """
    p = Path(path)
    choose = f"choose another {flag} path" if flag else "choose another output path"
    if suffix is not None and p.suffix.lower() != suffix:
        raise InputError(f"{flag + ' ' if flag else 'output file '}{p} must end in {suffix}")
    parent = p.parent
    if not parent.is_dir():
        raise InputError(f"cannot write {p}: directory {parent} does not exist")
    if p.is_dir():
        raise InputError(f"cannot write {p}: it is a directory")
    probe = parent / f".{p.name}.{secrets.token_hex(4)}.probe"
    try:  # can a file be created there (permissions, read-only or virtual file systems)?
        with open(probe, "xb"):
            pass
    except OSError as exc:
        raise InputError(f"cannot write {p}: directory {parent} is not writable "
                         f"({exc.strerror or exc}); {choose}") from None
    with contextlib.suppress(OSError):
        probe.unlink()
    if p.exists() and not os.access(p, os.W_OK):
        raise InputError(f"cannot write {p}: the file exists and is read-only")
    return p


def atomic_write(path, write_fn: Callable[[BinaryIO], Any], *, flag: str | None = None) -> Path:
    """Write ``path`` atomically: ``write_fn(f)`` fills a binary file object for a temporary file
    in the same directory, which then replaces ``path`` in one step.

    On any error (or interruption) the temporary file is removed and ``path`` is untouched. The
    temporary file is created with the usual permissions (umask applies), so the result has them
    too. Raises :class:`~lpmech.errors.InputError` when the directory does not exist or the file
    cannot be written.
    """
    p = check_output_path(path, flag=flag)
    while True:  # an exclusive create with a random name; retry on the (unlikely) collision
        tmp = p.with_name(f".{p.name}.{secrets.token_hex(6)}.tmp")
        try:
            f = open(tmp, "xb")  # closed by the `with f` below, before the rename
            break
        except FileExistsError:
            continue
        except OSError as exc:
            raise InputError(f"cannot write {p}: {exc.strerror or exc}") from None
    try:
        with f:
            write_fn(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise InputError(f"cannot write {p}: {exc.strerror or exc}") from None
        raise
    return p


# ------------------------------------------------------------------------------------------ JSON


def write_csv(path, rows: list[dict]) -> Path:
    """Write ``rows`` (dicts; columns = their keys in order of first appearance) as CSV, atomically."""
    import csv

    keys = list(dict.fromkeys(k for row in rows for k in row))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=keys)
    writer.writeheader()
    writer.writerows(rows)
    return atomic_write(path, lambda f: f.write(buf.getvalue().encode()))


def jsonable(obj):
    """``obj`` with numpy scalars/arrays turned into Python ones and non-finite floats into the
    strings ``"inf"``, ``"-inf"``, ``"nan"``, so ``json.dumps(..., allow_nan=False)`` accepts it."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    return obj


def dumps(obj, **kwargs) -> str:
    """Strict JSON of :func:`jsonable` (``obj``)."""
    return json.dumps(jsonable(obj), allow_nan=False, **kwargs)


# ----------------------------------------------------------------------------- saved mechanisms


def instance_info(instance: Instance) -> dict:
    """The JSON-ready description of how ``instance`` was built."""
    return {"description": instance.describe(), "kind": instance.kind, "unit": instance.unit,
            "K": instance.K, "shape": instance.shape, "cell": instance.cell,
            "is_metric": instance.is_metric}


def save_result(path, result, instance: Instance) -> Path:
    """Save a solved, certified ``result`` of ``instance`` to ``path`` (``.npz``), atomically.

    The layout is in the module docstring; :func:`load_mechanism` reads it back.
    """
    p = check_output_path(path, suffix=".npz")
    if result.mechanism is None or result.certificate is None:
        raise InputError(f"cannot save a result without a certified mechanism "
                         f"(status {result.status!r})")
    cert = result.certificate
    arrays = {
        "matrix": result.mechanism.matrix,
        "metric": instance.metric,
        "prior": instance.prior,
        "loss": instance.loss,
        "epsilon": np.float64(cert.target_epsilon),
        "gamma": np.float64(cert.gamma),
        "certificate": np.str_(dumps(cert.to_dict())),
        "optimality": np.str_(dumps(None if result.optimality is None
                                    else result.optimality.to_dict())),
        "summary": np.str_(dumps(result.summary())),
        "instance": np.str_(dumps(instance_info(instance))),
        "format": np.str_(FORMAT),
    }
    return atomic_write(p, lambda f: np.savez_compressed(f, **arrays))


@dataclasses.dataclass(frozen=True)
class SavedMechanism:
    """A mechanism read back by :func:`load_mechanism`.

    ``mechanism`` is the validated :class:`~lpmech.mechanism.Mechanism` (its ``matrix`` is
    ``matrix``); ``certificate``, ``optimality``, ``summary`` and ``instance`` are the parsed JSON
    written at save time (what was claimed then, not re-checked).
    """

    path: Path
    mechanism: Mechanism
    metric: np.ndarray
    prior: np.ndarray
    loss: np.ndarray
    epsilon: float
    gamma: float
    certificate: dict
    optimality: dict | None
    summary: dict
    instance: dict

    @property
    def matrix(self) -> np.ndarray:
        return self.mechanism.matrix


def _saved_archive(path, writer: str) -> tuple[Path, dict]:
    """``(path, arrays)`` of a saved-mechanism .npz; :class:`~lpmech.errors.InputError` naming
    ``writer`` (what writes such a file) for a directory, a missing file or another format."""
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{p} is a directory, not a file: give the saved .npz inside it")
    if not p.is_file():
        raise InputError(f"no such file: {p}")
    if p.suffix != ".npz":
        raise InputError(f"{p} is not an .npz archive (a saved mechanism is written by {writer})")
    return p, load_numpy(p, "saved mechanism")


def load_mechanism(path) -> SavedMechanism:
    """Read a mechanism saved by :func:`save_result`; :class:`~lpmech.errors.InputError` for a
    missing, unreadable or corrupt file, missing arrays, or a matrix that is not a mechanism."""
    p, arrays = _saved_archive(path, "'lpmech omg --out FILE.npz'")
    missing = [k for k in REQUIRED_ARRAYS if k not in arrays]
    if missing:
        raise InputError(f"{p} is not a saved mechanism: missing array(s) {', '.join(missing)}")

    def text(name):
        a = arrays.get(name)
        if a is None:
            return None
        if a.dtype.kind != "U" or a.ndim != 0:
            raise InputError(f"{p}: array {name!r} must be a JSON string")
        try:
            return json.loads(str(a))
        except json.JSONDecodeError as exc:
            raise InputError(f"{p}: array {name!r} is not valid JSON: {exc}") from None

    def scalar(name):
        a = arrays[name]
        if a.shape != () or a.dtype.kind not in "fiu":
            raise InputError(f"{p}: array {name!r} must be a number, got shape {a.shape}")
        return float(a)

    try:
        mech = Mechanism(arrays["matrix"], name=p.name)
    except InputError as exc:
        raise InputError(f"{p}: the saved matrix is not a mechanism: {exc}") from None
    K = mech.shape[0]
    metric = validate_metric(arrays["metric"], check_triangle=False, name=f"{p}: saved metric")
    if metric.shape != (K, K) or mech.shape != (K, K):
        raise InputError(f"{p}: matrix {mech.shape} and metric {metric.shape} do not fit")
    if arrays["prior"].shape != (K,) or arrays["loss"].shape != (K, K):
        raise InputError(f"{p}: prior {arrays['prior'].shape} / loss {arrays['loss'].shape} "
                         f"do not fit K = {K}")
    return SavedMechanism(
        path=p, mechanism=mech, metric=metric, prior=arrays["prior"], loss=arrays["loss"],
        epsilon=scalar("epsilon"), gamma=scalar("gamma"), certificate=text("certificate"),
        optimality=text("optimality"), summary=text("summary"), instance=text("instance") or {})


# ------------------------------------------------------------- other saved mechanisms (certify)

#: the ``format`` of each kind of saved file; :func:`load_saved` reads all of them
FORMATS = {
    FORMAT: "omg",
    "lpmech-lrgeo/1": "lrgeo",
    "lpmech-lip/1": "lip",
    "lpmech-matrix-mechanism/1": "mm",
}


def _save_npz(path, arrays: dict, flag: str | None = "--out") -> Path:
    p = check_output_path(path, suffix=".npz", flag=flag)
    return atomic_write(p, lambda f: np.savez_compressed(f, **arrays), flag=flag)


def save_lrgeo(path, result, metric, epsilon: float, gamma: float, *, coords=None,
               choices=None) -> Path:
    """Save an LR-Geo result (``lpmech lrgeo --out``): the users' stacked matrices ``matrix``
    (rows: each user's LR set, columns: the K cells), ``row_cells`` (the cell of each row),
    ``row_offsets`` and ``users``, the grid's distances ``metric`` (K×K, km), ``epsilon``,
    ``gamma``, ``coords``, and JSON ``certificate``/``summary``/``choices``; ``format``
    ``"lpmech-lrgeo/1"``. :func:`load_saved` reads it back; each user's block certifies on the
    distances among its rows."""
    st = result.stats
    arrays = {
        "matrix": result.mechanism.matrix,
        "row_cells": np.concatenate([np.asarray(c, int) for c in st["lr_cells"]]),
        "row_offsets": np.asarray(st["row_offsets"], int),
        "users": np.asarray(st["users"], int),
        "metric": np.asarray(metric, float),
        "epsilon": np.float64(epsilon),
        "gamma": np.float64(gamma),
        "certificate": np.str_(dumps(result.certificate.to_dict())),
        "summary": np.str_(dumps(result.summary())),
        "choices": np.str_(dumps(choices)),
        "format": np.str_("lpmech-lrgeo/1"),
    }
    if coords is not None:
        arrays["coords"] = np.asarray(coords, float)
    return _save_npz(path, arrays)


def save_lip(path, result, *, notion: str, epsilon: float, priors=None, correlation=None,
             cip_users=None) -> Path:
    """Save a LIP/LDP/CIP channel (``lpmech lip --out``): ``matrix`` Q[x, y] = Pr(Y=y | X=x), the
    ``notion`` it was certified under, ``epsilon``, the prior(s) ``priors`` (S×d, one row per
    scenario), the latent-secret ``correlation`` (G×d, or absent) and, for CIP, ``cip_users``
    (each user's Pr(D_i = 1)); JSON ``certificate``/``summary``; ``format`` ``"lpmech-lip/1"``."""
    arrays = {
        "matrix": result.mechanism.matrix,
        "notion": np.str_(notion),
        "epsilon": np.float64(epsilon),
        "certificate": np.str_(dumps(result.certificate.to_dict())),
        "summary": np.str_(dumps(result.summary())),
        "format": np.str_("lpmech-lip/1"),
    }
    for name, a in (("priors", priors), ("correlation", correlation), ("cip_users", cip_users)):
        if a is not None:
            arrays[name] = np.asarray(a, float)
    return _save_npz(path, arrays)


def save_matrix_mechanism(path, result, metric) -> Path:
    """Save a Laplace matrix mechanism (``lpmech mm --out``): strategy ``A`` (p×m), reconstruction
    ``B`` (q×p), scales ``s`` (p), the metric ``metric`` E (m×m, ε included) and its ``epsilon``;
    JSON ``certificate``/``summary``; ``format`` ``"lpmech-matrix-mechanism/1"``."""
    mech = result.mechanism
    arrays = {
        "A": mech.A, "B": mech.B, "s": mech.s,
        "metric": np.asarray(metric.matrix, float),
        "epsilon": np.float64(metric.epsilon),
        "certificate": np.str_(dumps(result.certificate.to_dict())),
        "summary": np.str_(dumps(result.summary())),
        "format": np.str_("lpmech-matrix-mechanism/1"),
    }
    return _save_npz(path, arrays)


def load_saved(path) -> tuple[str, dict]:
    """``(kind, arrays)`` of a file written by any ``--out`` of lpmech that holds a mechanism:
    kind ``"omg"`` (:func:`save_result`; arrays is then the :class:`SavedMechanism`), ``"lrgeo"``,
    ``"lip"`` or ``"mm"`` (the arrays of :func:`save_lrgeo`, :func:`save_lip`,
    :func:`save_matrix_mechanism`). :class:`~lpmech.errors.InputError` for anything else."""
    p, arrays = _saved_archive(path, "the --out of 'lpmech omg', 'lrgeo', 'lip' or 'mm'")
    fmt = arrays.get("format")
    fmt = str(fmt) if fmt is not None and fmt.dtype.kind == "U" and fmt.ndim == 0 else None
    kind = FORMATS.get(fmt) if fmt is not None else ("omg" if "metric" in arrays else None)
    if kind is None:
        found = ", ".join(repr(k) for k in sorted(arrays)) or "none"
        raise InputError(f"{p} is not a mechanism saved by lpmech (format {fmt!r}, arrays {found}); "
                         "'lpmech certify' reads the --out files of omg, lrgeo, lip and mm")
    if kind == "omg":
        return kind, {"saved": load_mechanism(p)}
    need = {"lrgeo": ("matrix", "row_cells", "row_offsets", "users", "metric", "epsilon", "gamma"),
            "lip": ("matrix", "notion", "epsilon"),
            "mm": ("A", "B", "s", "metric", "epsilon")}[kind]
    missing = [k for k in need if k not in arrays]
    if missing:
        raise InputError(f"{p} ({fmt}) is missing array(s) {', '.join(missing)}")
    for k in ("epsilon", "gamma"):
        if k in arrays:
            a = arrays[k]
            if a.shape != () or a.dtype.kind not in "fiu":
                raise InputError(f"{p}: array {k!r} must be a number, got shape {a.shape}")
            arrays[k] = float(a)
    if "notion" in arrays:
        arrays["notion"] = str(arrays["notion"])
    return kind, arrays


# ------------------------------------------------------------------------------ input vectors


def existing_file(path, what: str) -> Path:
    """``path`` when it is an existing regular file; else an :class:`InputError` saying whether it
    is missing or a directory (``what`` names it, e.g. ``"--weights"``)."""
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{what} {p} is a directory, not a file: give the file inside it")
    if not p.is_file():
        raise InputError(f"no such {what} file: {p}")
    return p


def read_vector(path, what: str = "vector") -> np.ndarray:
    """A 1-D float vector from ``.npy`` (shape (K,) or (K, 1)) or a one-column CSV/text file
    (an optional header line is skipped). Used for ``--prior FILE`` and ``--prior counts:FILE``."""
    p = existing_file(path, what)
    if p.suffix.lower() == ".npy":
        v = load_numpy(p, what)[""]
        if v.ndim == 2 and v.shape[1] == 1:
            v = v[:, 0]
        if v.ndim != 1 or v.dtype.kind not in "fiub":
            raise InputError(f"{what} file {p} must hold a 1-D numeric array, got shape "
                             f"{v.shape} of {v.dtype}")
        return v.astype(float)
    try:
        with p.open(newline="") as f:
            rows = [r for r in csv.reader(f) if r and any(c.strip() for c in r)]
    except UnicodeDecodeError as exc:
        raise InputError(f"cannot read {what} file {p}: not a UTF-8 text file (byte "
                         f"{exc.object[exc.start]:#04x} at offset {exc.start} is not text)") from None
    except (OSError, csv.Error) as exc:
        raise InputError(f"cannot read {what} file {p}: {exc}") from None
    values = []
    for n, row in enumerate(rows, start=1):
        cells = [c for c in row if c.strip()]
        if len(cells) != 1:
            raise InputError(f"{what} file {p}, line {n}: expected one value per line, got {row}")
        try:
            values.append(float(cells[0]))
        except ValueError:
            if n == 1:
                continue  # a header line
            raise InputError(f"{what} file {p}, line {n}: {cells[0]!r} is not a number") from None
    if not values:
        raise InputError(f"{what} file {p} has no values")
    return np.array(values)


__all__ = [
    "FORMAT",
    "FORMATS",
    "SavedMechanism",
    "atomic_write",
    "check_output_path",
    "dumps",
    "existing_file",
    "instance_info",
    "jsonable",
    "load_mechanism",
    "load_saved",
    "read_vector",
    "save_lip",
    "save_lrgeo",
    "save_matrix_mechanism",
    "save_result",
    "write_csv",
]
