"""`python -m f5lite.transcribe`: see `f5lite.transcribe.cli`."""

import sys

from f5lite.transcribe.cli import main

sys.exit(main())
