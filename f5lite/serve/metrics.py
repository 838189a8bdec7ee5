"""`GET /metrics`: the server's counters and histograms in Prometheus's text format (prometheus-client).

- `f5lite_requests_total{endpoint, status}`: requests answered, by HTTP status;
- `f5lite_request_seconds{endpoint}`: from a request's arrival to its last byte;
- `f5lite_time_to_first_audio_seconds`: from a speech request's arrival to its first audio bytes;
- `f5lite_real_time_factor`: seconds of work per second of audio made, per speech request;
- `f5lite_queue_depth`: speech requests admitted and not finished; `f5lite_queue_pieces`: pieces waiting for the
  model;
- `f5lite_batch_size`: pieces per sampler call.

Each server has its own registry, so two apps in one process (tests) do not mix their numbers.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

_LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
_RTF_BUCKETS = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
_BATCH_BUCKETS = (1, 2, 3, 4, 6, 8, 12, 16, 32)


class ServerMetrics:
    """The collectors of one server (see the module docstring)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        registry = self.registry
        self.requests = Counter("f5lite_requests", "Requests answered", ["endpoint", "status"], registry=registry)
        self.latency = Histogram(
            "f5lite_request_seconds", "Request time", ["endpoint"], buckets=_LATENCY_BUCKETS, registry=registry
        )
        self.first_audio = Histogram(
            "f5lite_time_to_first_audio_seconds", "Time to first audio", buckets=_LATENCY_BUCKETS, registry=registry
        )
        self.real_time_factor = Histogram(
            "f5lite_real_time_factor", "Seconds of work per second of audio", buckets=_RTF_BUCKETS, registry=registry
        )
        self.queue_depth = Gauge("f5lite_queue_depth", "Speech requests admitted, not finished", registry=registry)
        self.queue_pieces = Gauge("f5lite_queue_pieces", "Pieces waiting for the model", registry=registry)
        self.batch_size = Histogram(
            "f5lite_batch_size", "Pieces per sampler call", buckets=_BATCH_BUCKETS, registry=registry
        )

    def render(self) -> bytes:
        """Every collector in Prometheus's text format."""
        return generate_latest(self.registry)
