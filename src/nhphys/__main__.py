"""``python -m nhphys ...``: the same as the ``nhphys`` command."""

import sys

from nhphys.cli import main

sys.exit(main())
