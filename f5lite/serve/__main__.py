"""`python -m f5lite.serve`: see `f5lite.serve.cli`."""

import sys

from f5lite.serve.cli import main

sys.exit(main())
