"""``lpmech certify``: re-certify a mechanism saved by the ``--out`` of ``lpmech omg``, ``lrgeo``,
``lip`` or ``mm``; exit 5 if it fails.

* ``omg``: (ε, γ)-Geo-Ind against the saved metric (realised ε, worst violation, violation ratio
  and magnitude, Qiu et al., LR-Geo eqs. (32)-(33)).
* ``lrgeo``: each user's matrix (ε, γ)-Geo-Ind on the distances among its LR set (its rows), as
  :func:`lpmech.models.lrgeo.certify_users` checks it; the realised ε is the worst user's.
* ``lip``: the file has no metric; the channel is certified under the notion it records (ε-LIP,
  latent-secret or bounded-prior LIP, ε-LDP, Pufferfish, DI, or CIP on the sum) with its priors.
* ``mm``: Proposition 2 of Xiang et al., metric LDP for the strategy and scales against the saved metric E.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .. import io as lpio
from ..cli import _EXIT_CODES, json_on_error, print_json
from ..errors import CertificationError, InputError
from ..mechanism import EPS_RTOL, PrivacyCertificate, certify

#: listed second in ``lpmech --help``, after ``omg`` (see :func:`lpmech.commands.modules`)
ORDER = 1


def register(sub, common) -> None:
    c = sub.add_parser(
        "certify", parents=[common], epilog=_EXIT_CODES,
        help="re-certify a saved mechanism",
        description="Re-certify a mechanism saved by the --out of 'lpmech omg', 'lrgeo', 'lip' or "
                    "'mm': the realised epsilon and, for Geo-Ind files, the worst violation at the "
                    "target epsilon and the violation ratio and magnitude (Qiu et al., LR-Geo eqs. "
                    "(32)-(33)). An LR-Geo file is certified user by user on each LR set; a LIP "
                    "file (no metric) under the notion it records; a matrix-mechanism file by "
                    "Proposition 2 of Xiang et al., metric LDP. Exit 5 when the realised epsilon "
                    "exceeds the "
                    f"target by more than a factor 1+{EPS_RTOL:g}.")
    c.add_argument("file", metavar="FILE.npz", help="a mechanism saved by an lpmech --out")
    c.add_argument("--epsilon", type=float, help="target epsilon (default: the saved one)")
    c.add_argument("--gamma", type=float,
                   help="neighbour threshold (default: the saved one; omg and lrgeo files only)")
    c.set_defaults(func=cmd_certify)


def cmd_certify(args) -> int:
    """``lpmech certify``: re-certify a saved mechanism; exit 5 if it fails."""
    info = {"command": "certify", "file": args.file}
    with json_on_error(args, info):
        kind, data = lpio.load_saved(args.file)
        info["kind"] = kind
        if args.gamma is not None and kind not in ("omg", "lrgeo"):
            raise InputError(f"--gamma applies only to Geo-Ind files (omg, lrgeo); {args.file} "
                             f"holds a {kind} mechanism")
        if kind == "omg":
            out, cert = _certify_omg(args, data["saved"])
        else:
            out, cert = {"lrgeo": _certify_lrgeo, "lip": _certify_lip, "mm": _certify_mm}[kind](
                args, data)
    out = {**info, "status": "certified" if cert.satisfied else "certification_failed",
           "certified": cert.satisfied, "notion": cert.notion,
           "epsilon": cert.target_epsilon, "gamma": cert.gamma,
           "realized_epsilon": cert.realized_epsilon, "worst_violation": cert.worst_violation,
           "violation_ratio": cert.violation_ratio,
           "violation_magnitude": cert.violation_magnitude, "n_constraints": cert.n_constraints,
           "rtol": cert.rtol, **out}
    if args.json:
        print_json(out)
    else:
        gamma_txt = "" if math.isinf(cert.gamma) else f", gamma {cert.gamma:g}"
        print("\n".join([
            f"mechanism {args.file} ({kind}, {out['notion']}): {out['K']} inputs",
            f"  target epsilon      {cert.target_epsilon:g}{gamma_txt}",
            f"  realised epsilon    {cert.realized_epsilon:.10g}",
            f"  worst violation     {cert.worst_violation:.3g}",
            f"  violation ratio     {cert.violation_ratio:.4g}  "
            f"({round(cert.violation_ratio * cert.n_constraints)} of {cert.n_constraints})",
            f"  violation magnitude {cert.violation_magnitude:.3g}",
            f"  certified           {'yes' if cert.satisfied else 'NO'}",
        ]))
    if not cert.satisfied:
        raise CertificationError(
            f"{args.file} is not certified: realised epsilon {cert.realized_epsilon:.9g} > "
            f"{cert.target_epsilon:g}*(1+{cert.rtol:g}); worst violation "
            f"{cert.worst_violation:.3g}, violation ratio {cert.violation_ratio:.4g}")
    return 0


def _target(args, saved_eps: float) -> float:
    return saved_eps if args.epsilon is None else args.epsilon


def _certify_omg(args, saved):
    eps = _target(args, saved.epsilon)
    gamma = saved.gamma if args.gamma is None else args.gamma
    if not gamma > 0:
        raise InputError(f"--gamma must be > 0, got {gamma:g}")
    cert = certify(saved.matrix, saved.metric, eps, gamma)
    return ({"K": saved.mechanism.shape[0], "saved_epsilon": saved.epsilon,
             "saved_realized_epsilon": saved.certificate.get("realized_epsilon")}, cert)


def _certify_lrgeo(args, a):
    Z, cells, offs, d = a["matrix"], a["row_cells"], a["row_offsets"], a["metric"]
    K = d.shape[0]
    if d.ndim != 2 or d.shape != (K, K) or Z.ndim != 2 or Z.shape[1] != K:
        raise InputError(f"{args.file}: matrix {Z.shape} does not fit the {d.shape} metric")
    if cells.shape != (Z.shape[0],) or (cells < 0).any() or (cells >= K).any():
        raise InputError(f"{args.file}: row_cells must give a cell in 0..{K - 1} for each of the "
                         f"{Z.shape[0]} rows")
    if (offs.ndim != 1 or offs.size == 0 or offs[0] != 0 or (np.diff(offs) <= 0).any()
            or offs[-1] >= Z.shape[0]):
        raise InputError(f"{args.file}: row_offsets must start at 0 and increase below the "
                         f"{Z.shape[0]} rows")
    eps = _target(args, a["epsilon"])
    gamma = a["gamma"] if args.gamma is None else args.gamma
    if not gamma > 0:
        raise InputError(f"--gamma must be > 0, got {gamma:g}")
    bounds = [*offs.tolist(), Z.shape[0]]
    certs = []
    for lo, hi in itertools.pairwise(bounds):
        rows = cells[lo:hi]
        certs.append(certify(Z[lo:hi], d[np.ix_(rows, rows)], eps, gamma))
    worst = max(certs, key=lambda c: c.realized_epsilon)
    cert = PrivacyCertificate(**{**worst.to_dict(),
                                 "n_constraints": sum(c.n_constraints for c in certs),
                                 "satisfied": all(c.satisfied for c in certs)})
    return ({"K": K, "users": a["users"].tolist(), "saved_epsilon": a["epsilon"],
             "user_realized_epsilon": [c.realized_epsilon for c in certs]}, cert)


def _certify_lip(args, a):
    from ..models.lip import lip as L
    from ..models.lip import lip_cip

    Q, notion = a["matrix"], a["notion"]
    eps = _target(args, a["epsilon"])
    if notion == "cip":
        if "cip_users" not in a:
            raise InputError(f"{args.file}: a CIP channel needs its array 'cip_users'")
        real = lip_cip.cip_epsilon(Q, a["cip_users"])
        viol = lip_cip.cip_rows(a["cip_users"], eps) @ Q  # the CIP rows, <= 0 when they hold
        bad = viol > 1e-12
        cert = PrivacyCertificate(
            notion="cip", realized_epsilon=real, target_epsilon=eps, gamma=math.inf,
            worst_violation=float(viol.max(initial=0.0)), violation_ratio=float(bad.mean()),
            violation_magnitude=float(viol[bad].mean()) if bad.any() else 0.0,
            n_constraints=int(viol.size), satisfied=real <= eps * (1 + EPS_RTOL))
    else:
        priors = a.get("priors")
        if priors is None:
            raise InputError(f"{args.file}: a {notion} channel needs its array 'priors'")
        T = a.get("correlation")
        scen = L._scenarios(priors=priors, T=None if T is None else [T] * len(priors))
        cert = L.lip_certificate(Q, scen, eps, notion=notion)
    return {"K": Q.shape[0], "saved_epsilon": a["epsilon"]}, cert


def _certify_mm(args, a):
    from ..models.matrix import matrix_mechanism as mm

    E, eps = a["metric"], a["epsilon"]
    t = 1.0 if args.epsilon is None else args.epsilon / eps  # the metric scales with epsilon
    metric = mm.Metric(E * t, eps * t)
    return ({"K": E.shape[0], "saved_epsilon": eps},
            mm.certify_strategy(a["A"], a["s"], metric))
