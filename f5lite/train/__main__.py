"""`python -m f5lite.train`: see `f5lite.train.cli`."""

import sys

from f5lite.train.cli import main

sys.exit(main())
