"""`python -m f5lite.eval`: the same as `f5lite-eval`."""

import sys

from f5lite.eval.cli import main

sys.exit(main())
