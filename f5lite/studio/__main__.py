"""`python -m f5lite.studio`: the same as `f5lite-studio`."""

import sys

from f5lite.studio.cli import main

sys.exit(main())
