"""``python -m lpmech``: the same as the ``lpmech`` command."""

import sys

from .cli import main

sys.exit(main())
