"""Speech metrics for text-to-speech evaluation: intelligibility, speaker similarity, quality, mel distances.

`build_metrics(names, MetricSettings(...))` loads each metric's backend once; `score_item` scores an `EvalItem`
with all of them and `summarize` averages the rows. The offline backends (pocketsphinx, Resemblyzer, DNSMOS) ship
their weights in their wheels; Whisper, Paraformer, WavLM and UTMOS load from a local directory or a hub id. The
packages come with the `eval` extra (`pip install 'f5lite[eval]'`) and are imported only when a backend is built,
so importing this package never needs them.
"""

from f5lite.metrics.items import LANGUAGES, METRIC_NAMES, EvalItem, MetricSettings
from f5lite.metrics.scoring import LOWER_IS_BETTER, Metric, build_metrics, score_item, summarize
from f5lite.metrics.textnorm import error_rate, normalize_text

__all__ = [
    "LANGUAGES",
    "LOWER_IS_BETTER",
    "METRIC_NAMES",
    "EvalItem",
    "Metric",
    "MetricSettings",
    "build_metrics",
    "error_rate",
    "normalize_text",
    "score_item",
    "summarize",
]
