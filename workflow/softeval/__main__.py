"""`python -m softeval`: the same command line as the `softeval` script."""

import sys

from softeval.cli import main

sys.exit(main())
