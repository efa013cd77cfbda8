"""``python -m startlab``: the same as the ``startlab`` command."""

import sys

from startlab.cli import main

sys.exit(main())
