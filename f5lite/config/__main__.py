"""Print the composed, validated training config: `python -m f5lite.config +recipe=dit_base perf.compile=true`.

It composes exactly what training would (schema, groups, train.yaml, recipe, overrides) and prints it as YAML, or
prints one line naming the bad key and exits with status 2.
"""

from __future__ import annotations

import sys

from f5lite.config.compose import compose_config, config_to_yaml


def main(argv: list[str] | None = None) -> int:
    """Compose the config from Hydra overrides and print it.

    Args:
        argv: Overrides (default: the command line).

    Returns:
        Process exit status: 0, or 2 for a bad config.
    """
    args = sys.argv[1:] if argv is None else argv
    if any(a in ("-h", "--help") for a in args):
        sys.stdout.write(__doc__ or "")
        return 0
    try:
        cfg = compose_config(args)
    except ValueError as err:
        sys.stderr.write(f"f5lite.config: error: {err}\n")
        return 2
    sys.stdout.write(config_to_yaml(cfg))
    return 0


if __name__ == "__main__":
    sys.exit(main())
