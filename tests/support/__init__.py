"""Helpers shared by the tests (tiny models, small datasets, servers and studios on free ports, golden comparisons).

`tests/` is on `sys.path` (pyproject's `pythonpath`), so a test imports them as `from support.tiny_models import ...`.
"""
