"""`python -m f5lite.prepare`: see `f5lite.prepare.cli`."""

import sys

from f5lite.prepare.cli import main

sys.exit(main())
