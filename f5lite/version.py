"""The package's version, in a module of its own.

Any layer can record it (export files, eval summaries) without importing the public API in `f5lite/__init__.py`,
which sits above every other package.
"""

__version__ = "0.1.0"
