"""The routes of `f5lite-serve`, one router per concern, all reaching the server through `f5lite.serve.context`.

- `speech`: `POST /v1/audio/speech` (OpenAI's speech endpoint) and the warm-up request;
- `voices`: `GET /v1/voices`; `POST /v1/voices` and `DELETE /v1/voices/{name}` (with `--voice-upload`);
- `operations`: `GET /v1/models`, `GET /health`, `GET /metrics`.
"""
