"""``python -m mccard_dist.bench``."""

import sys

from . import main

sys.exit(main())
