"""LE's LP (8)+(12) robustness sweep: ``benchmarks/omg_sweep.py --model le`` (see its doc).

    python benchmarks/le_sweep.py --quick          # K = 16, ε ∈ {0.3, 4, 30}
    python benchmarks/le_sweep.py --K 36 --eps 0.05 0.3 1 2 4 8
"""

from __future__ import annotations

import sys

from omg_sweep import main

if __name__ == "__main__":
    sys.exit(main(["--model", "le", *sys.argv[1:]]))
