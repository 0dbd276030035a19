"""``lpmech certify``: re-certify a mechanism saved by ``lpmech omg --out`` against its saved
metric (realised ε, worst violation, violation ratio and magnitude); exit 5 if it fails."""

from __future__ import annotations

import math

from .. import io as lpio
from ..cli import _EXIT_CODES, json_on_error, print_json
from ..errors import CertificationError, InputError
from ..mechanism import EPS_RTOL, certify

#: listed second in ``lpmech --help``, after ``omg`` (see :func:`lpmech.commands.modules`)
ORDER = 1


def register(sub, common) -> None:
    c = sub.add_parser(
        "certify", parents=[common], epilog=_EXIT_CODES,
        help="re-certify a saved mechanism",
        description="Re-certify a mechanism saved by 'lpmech omg --out' against its saved metric: "
                    "the realised epsilon, the worst violation at the target epsilon and the "
                    "violation ratio and magnitude (seed 002 eqs. (32)-(33)). Exit 5 when the "
                    f"realised epsilon exceeds the target by more than a factor 1+{EPS_RTOL:g}.")
    c.add_argument("file", metavar="FILE.npz", help="a mechanism saved by 'lpmech omg --out'")
    c.add_argument("--epsilon", type=float, help="target epsilon (default: the saved one)")
    c.add_argument("--gamma", type=float, help="neighbour threshold (default: the saved one)")
    c.set_defaults(func=cmd_certify)


def cmd_certify(args) -> int:
    """``lpmech certify``: re-certify a saved mechanism; exit 5 if it fails."""
    info = {"command": "certify", "file": args.file}
    with json_on_error(args, info):
        saved = lpio.load_mechanism(args.file)
        eps = saved.epsilon if args.epsilon is None else args.epsilon
        gamma = saved.gamma if args.gamma is None else args.gamma
        if not gamma > 0:
            raise InputError(f"--gamma must be > 0, got {gamma:g}")
        cert = certify(saved.matrix, saved.metric, eps, gamma)
    out = {**info, "status": "certified" if cert.satisfied else "certification_failed",
           "K": saved.mechanism.shape[0], "certified": cert.satisfied,
           "epsilon": cert.target_epsilon, "gamma": cert.gamma,
           "realized_epsilon": cert.realized_epsilon, "worst_violation": cert.worst_violation,
           "violation_ratio": cert.violation_ratio,
           "violation_magnitude": cert.violation_magnitude, "n_constraints": cert.n_constraints,
           "rtol": cert.rtol, "saved_epsilon": saved.epsilon,
           "saved_realized_epsilon": saved.certificate.get("realized_epsilon")}
    if args.json:
        print_json(out)
    else:
        gamma_txt = "" if math.isinf(cert.gamma) else f", gamma {cert.gamma:g}"
        print("\n".join([
            f"mechanism {args.file}: {out['K']} locations",
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
