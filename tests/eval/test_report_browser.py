"""`f5lite-eval` on a trained tiny model, every metric, its `report.html` opened in headless Chromium.

Needs `/usr/bin/chromium` (Debian: `apt-get install -y chromium`; `make test-browser` runs this) and the `eval`
extra's offline backends. The screenshot is kept in `build/test-artifacts/` (ignored by git, removed by `make clean`).
"""

from __future__ import annotations

import html
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.eval_cli_assets import make_testset
from support.trainer_helpers import make

from f5lite.metrics.scoring import SUMMED_KEYS

CHROMIUM = Path("/usr/bin/chromium")
REQUIRED = os.environ.get("F5LITE_REQUIRE_BROWSER") == "1"
"""Set by `make test-browser` (CI runs it): there a missing Chromium or package fails the test instead of skipping it."""
ARTIFACTS = Path(__file__).resolve().parents[2] / "build" / "test-artifacts"
# Appended to a copy of the report: asks every player to load its clip and counts the ones Chromium decodes into
# attributes of <body>, which --dump-dom prints once the virtual-time budget has run out.
PROBE = """
<script>
let decoded = 0, failed = 0;
for (const audio of document.querySelectorAll('audio')) {
  audio.addEventListener('loadedmetadata', () => { if (audio.duration > 0) document.body.dataset.decoded = ++decoded; });
  audio.addEventListener('error', () => { document.body.dataset.failed = ++failed; });
  audio.preload = 'auto';
  audio.load();
}
</script>
"""


def chromium(*args: str) -> subprocess.CompletedProcess[str]:
    # --no-sandbox: the test may run as root in a container, where Chromium's sandbox cannot start.
    command = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)


def summary_table(dom: str) -> list[list[str]]:
    """The cells of the summary table's body rows, as the browser's DOM holds them (text, unescaped)."""
    table = re.search(r'<table id="summary">.*?<tbody>(.*?)</tbody>', dom, re.S)
    assert table is not None, "the report has no summary table"
    return [
        [html.unescape(cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table.group(1), re.S)
    ]


def shown(key: str, value: float | None) -> str:
    """A summary figure as the report prints it: a count as an integer, a mean to 3 decimals, nothing when absent."""
    if value is None:
        return ""
    return str(int(value)) if key in SUMMED_KEYS else f"{value:.3f}"


def check_summary_table(dom: str, summary: dict, rows: list[dict]) -> None:
    """The summary table holds a row per mean of `summary.json`, in its order, with the model's and the ground truth's
    figure (and the vocoded ground truth's when there is one), then the item counts; nothing else but result columns
    the summary has no mean for (those rows are empty).

    Derived from the run's own summary and results, so a metric added to the evaluation needs no change here, while a
    row that goes missing, moves, shows another figure or appears from nowhere fails.
    """
    table = summary_table(dom)
    floors = [summary["ground_truth"]] + (
        [summary["ground_truth_vocoded"]] if summary.get("ground_truth_vocoded") else []
    )
    assert all(len(cells) == 3 + len(floors) for cells in table), table
    means = {key: value for key, value in summary["means"].items() if key != "count"}
    *metrics, items = table
    assert items == ["items", "", str(len(rows)), *(str(int(floor["count"])) for floor in floors)], items
    names = [cells[0] for cells in metrics]
    assert len(set(names)) == len(names), f"a metric twice in the summary table: {names}"
    with_figure = [cells for cells in metrics if cells[2]]
    assert [cells[0] for cells in with_figure] == list(means), "the summary table's rows are not the summary's means"
    for key, _, model, *truths in with_figure:
        assert [model, *truths] == [shown(key, means[key]), *(shown(key, floor.get(key)) for floor in floors)], key
    results = {key for row in rows for key, value in row.items() if isinstance(value, (int, float))}
    empty = {cells[0] for cells in metrics if not cells[2]}
    assert empty <= results - means.keys(), f"summary rows with no figure that no result column explains: {empty}"


@pytest.mark.slow
@pytest.mark.skipif(
    not REQUIRED and not CHROMIUM.is_file(), reason="needs /usr/bin/chromium (apt-get install -y chromium)"
)
def test_report_of_a_trained_model_opens_in_chromium(tmp_path: Path) -> None:
    assert CHROMIUM.is_file(), "needs /usr/bin/chromium (apt-get install -y chromium)"
    for package in ("jiwer", "pocketsphinx", "resemblyzer", "speechmos"):
        if REQUIRED:
            importlib.import_module(package)
        else:
            pytest.importorskip(package, reason="the eval extra's offline backends: pip install 'f5lite[eval]'")
    make(tmp_path, "optim.max_updates=5").fit()
    testset = make_testset(tmp_path / "test.lst")
    out = tmp_path / "eval"
    script = Path(sys.executable).parent / "f5lite-eval"
    command = [
        str(script),
        f"model={tmp_path / 'run'}",
        f"testset={testset}",
        f"output={out}",
        "sample.vocoder=griffin_lim",
    ]
    done = subprocess.run([*command, "sample.steps=4", "device=cpu"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and all({"wer", "transcript", "sim", "mos"} <= row.keys() for row in rows)
    summary = json.loads((out / "summary.json").read_text())
    assert {"wer", "sim", "mos", "mel_l1"} <= summary["means"].keys() and summary["ground_truth"]["count"] == 2
    assert summary["ground_truth_vocoded"]["count"] == 2  # through the model's Griffin-Lim

    probe = tmp_path / "probe.html"
    probe.write_text((out / "report.html").read_text().replace("</body>", PROBE + "</body>"))
    dom = chromium("--virtual-time-budget=20000", "--dump-dom", probe.as_uri()).stdout
    check_summary_table(dom, summary, rows)
    assert len(re.findall(r'<tr class="item" id="item-', dom)) == 3
    sources = re.findall(r'<audio [^>]*src="([^"]*)"', dom)
    assert len(sources) == 3 + 3 + 2 + 2 and all(s.startswith("data:audio/flac;base64,") for s in sources)
    body = re.search(r"<body([^>]*)>", dom)
    assert body is not None and f'data-decoded="{len(sources)}"' in body.group(1) and "data-failed" not in body.group(1)

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    screenshot = ARTIFACTS / "eval-report.png"
    chromium(f"--screenshot={screenshot}", (out / "report.html").as_uri())
    assert screenshot.stat().st_size > 10_000
    shutil.copy(out / "report.html", ARTIFACTS / "eval-report.html")
    print(f"screenshot: {screenshot}")
