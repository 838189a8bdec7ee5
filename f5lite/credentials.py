"""The environment variables that hold credentials, named once for the tools that read them and those that hide them.

`F5LITE_API_KEY` is `f5lite-serve`'s API key (when `--api-key` is not given); `F5LITE_STUDIO_AUTH` is the studio's
`USER:PASSWORD` login (when `--auth` is not given). The studio starts its jobs (training, evaluation, a server)
without them (`CREDENTIAL_ENV`), so a job's log or its code never sees a secret it was not given.

This module imports nothing of f5lite, so that any layer may use it.
"""

from __future__ import annotations

API_KEY_ENV = "F5LITE_API_KEY"
"""`f5lite-serve`'s API key, when `--api-key` is not given."""
STUDIO_AUTH_ENV = "F5LITE_STUDIO_AUTH"
"""The studio's `USER:PASSWORD` login, when `--auth` is not given."""
CREDENTIAL_ENV = (STUDIO_AUTH_ENV, API_KEY_ENV)
"""Every variable above: what a job started by the studio does not inherit."""
