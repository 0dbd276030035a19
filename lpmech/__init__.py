"""lpmech: optimal privacy mechanisms as LP/convex optimisation models, solved and certified.

The flow is instance → model → solve → certified mechanism::

    import lpmech
    inst = lpmech.instance.grid(5, 5, cell=1.0)
    res = lpmech.models.omg.solve(inst, epsilon=1.0)
    res.mechanism.matrix, res.objective, res.bound, res.gap, res.certificate.realized_epsilon
"""

from . import certificate, errors, instance, mechanism, stop
from .errors import (
    CertificationError,
    InfeasibleError,
    InputError,
    IterationLimitError,
    LpmechError,
    NotOptimalError,
    SolverError,
    TimeLimitError,
)
from .mechanism import Mechanism
from .models import baselines, omg
from .solvers.result import Result

__version__ = "0.2.0"

__all__ = [
    "CertificationError", "InfeasibleError", "InputError", "IterationLimitError", "LpmechError",
    "Mechanism", "NotOptimalError", "Result",
    "SolverError", "TimeLimitError", "baselines", "certificate", "errors", "instance",
    "mechanism", "omg", "stop",
]
