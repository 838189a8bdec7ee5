"""`f5lite-studio` in headless Chromium, driven by Playwright as a user drives it: every tab, a speech that plays,
a training run whose loss curve is drawn, that survives a reload of the page, and that stops with a checkpoint.

Needs `/usr/bin/chromium` (Debian: `apt-get install -y chromium`; `make test-browser` runs this), the `studio` extra
and the `dev` extra's Playwright package (the browser is the system one: nothing is downloaded). The screenshots are
kept in `build/test-artifacts/` (ignored by git, removed by `make clean`). Only with `F5LITE_DOCS_SCREENSHOTS=1`
(`make docs-screenshots`) are they also copied to `docs/images/` for the README: a test run writes no tracked file.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.infer_assets import make_model_files
from support.studio_assets import Studio

from f5lite.paths import demo_dir
from f5lite.studio import jobs

CHROMIUM = Path("/usr/bin/chromium")
REQUIRED = os.environ.get("F5LITE_REQUIRE_BROWSER") == "1"
"""Set by `make test-browser` (CI runs it): there a missing Chromium or Playwright fails the test instead of skipping it."""
REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "build" / "test-artifacts"
IMAGES = REPO / "docs" / "images"
DOCS_SCREENSHOTS = os.environ.get("F5LITE_DOCS_SCREENSHOTS") == "1"
"""Set by `make docs-screenshots`: the tabs' screenshots also replace the README's pictures in `IMAGES` (tracked)."""
REFERENCE = Path("audio") / "us_male" / "000_us_male.ogg"
REFERENCE_TEXT = "The kettle started to whistle just as the phone rang."
SCRIPT = "A small model trained on a laptop in a few minutes."
RUN = "browser"
UPDATES = 2000
"""Far more than the test waits for: the run is still training when the page is reloaded and Stop is clicked."""
# --no-sandbox: the test may run as root in a container, where Chromium's sandbox cannot start.
BROWSER_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--no-first-run", "--disable-sync", "--autoplay-policy=no-user-gesture-required",
]  # fmt: skip
# The loss curve's drawn lines: Vega's line marks with a stroke colour and at least one segment.
DRAWN_LINES = """e => Array.from(e.querySelectorAll('g.mark-line path')).filter(
  p => (p.getAttribute('stroke') || 'none') !== 'none' && /L/.test(p.getAttribute('d') || '')).length"""
# Resolves to a player's position once it has moved (the audio decodes and plays), or 0 after 15 s.
PLAYED = """a => new Promise(resolve => {
  const until = Date.now() + 15000;
  (function check() {
    if (a.currentTime > 0 || Date.now() > until) resolve(a.currentTime); else setTimeout(check, 100);
  })();
})"""

if REQUIRED:
    import playwright.sync_api as playwright_api
else:
    playwright_api = pytest.importorskip("playwright.sync_api", reason="needs Playwright's Python package")


def workspace(root: Path) -> Path:
    """ROOT/proj with the tiny random model as `exports/demo` and the shipped demo dataset linked for training."""
    project = root / "studio" / "proj"
    (project / "exports").mkdir(parents=True)
    export, _ = make_model_files(root)
    shutil.copytree(export, project / "exports" / "demo")
    (project / "dataset-source.txt").write_text(f"{demo_dir()}\n", encoding="utf-8")
    return project


@pytest.fixture
def studio(tmp_path: Path) -> Iterator[tuple[Studio, Path]]:
    """A studio process over the workspace; stopped at the end with its process group and any training it began."""
    project = workspace(tmp_path)
    running = Studio(project.parent, auth=None)
    try:
        running.start()
        yield running, project
    finally:
        group = running.process.pid if running.process is not None else None
        for job in (project / "runs").glob("*/studio"):
            jobs.stop(job)
        running.stop()
        if group is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)


def shoot(page: playwright_api.Page, tab: str, docs: bool = True) -> Path:
    """A full-page screenshot in the artifacts, and (`docs` and `DOCS_SCREENSHOTS`) the README's image of the tab."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"studio-{tab}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000
    if docs and DOCS_SCREENSHOTS:
        IMAGES.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, IMAGES / path.name)
    return path


def pick(page: playwright_api.Page, dropdown: str, option: str) -> None:
    """Open a Gradio dropdown by its label and click one of its options."""
    page.get_by_role("combobox", name=dropdown, exact=True).filter(visible=True).click()
    page.get_by_role("option", name=option, exact=True).click()
    playwright_api.expect(page.get_by_role("option")).to_have_count(0)  # closed, not caught fading in a screenshot


def run_info(page: playwright_api.Page, text: str, timeout: float) -> str:
    """Wait until the Train tab's run line contains `text`; return the line."""
    page.wait_for_function(
        "t => (document.querySelector('#run-info')?.innerText || '').includes(t)", arg=text, timeout=timeout * 1000
    )
    return page.locator("#run-info").inner_text()


@pytest.mark.slow
@pytest.mark.skipif(
    not REQUIRED and not CHROMIUM.is_file(), reason="needs /usr/bin/chromium (apt-get install -y chromium)"
)
def test_every_tab_of_the_studio_works_in_chromium(studio: tuple[Studio, Path]) -> None:
    assert CHROMIUM.is_file(), "needs /usr/bin/chromium (apt-get install -y chromium)"
    server, project = studio
    started = time.monotonic()
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(60_000)
            page.goto(server.url)
            page.wait_for_selector("#speak-button")

            # Speak: the project's export, the demo clip as the reference, a sentence; it plays as it is made (the
            # streamed player starts by itself), and the whole speech plays from its player.
            pick(page, "Project", "proj")
            model = "Model (exports and checkpoints of the project)"
            page.wait_for_function(
                "l => document.querySelector(`input[aria-label='${l}']`)?.value === 'exports/demo'", arg=model
            )
            pick(page, model, "exports/demo")
            reference = page.locator("div.block").filter(has=page.get_by_text("Reference clip (1-15 s)", exact=True))
            reference.locator("input[type=file]").set_input_files(str(demo_dir() / REFERENCE))
            page.get_by_label("Its transcript").fill(REFERENCE_TEXT)
            page.get_by_label("Text to say").fill(SCRIPT)
            page.locator("#speak-button").click()
            page.get_by_text("saved as speech/").wait_for(timeout=120_000)
            assert page.locator("#speech-stream audio").evaluate(PLAYED) > 0, "the streamed speech did not play"
            player = page.locator("#speech-result audio[src]")
            assert player.evaluate("a => a.duration") > 1.0
            page.locator("#speech-result").get_by_role("button", name="Play", exact=True).click()
            assert player.evaluate(PLAYED) > 0, "the speech did not play in the browser"
            assert len(list((project / "speech").glob("*.wav"))) == 1
            shoot(page, "speak")

            # Data: one raw recording added.
            page.get_by_role("tab", name="Data").click()
            raw = page.locator("div.block").filter(has=page.get_by_text("Raw recordings", exact=True))
            raw.locator("input[type=file]").set_input_files(str(demo_dir() / REFERENCE))
            page.get_by_role("button", name="Add recordings", exact=True).click()
            page.get_by_text("Added 1 recording(s)").wait_for()
            assert len(list((project / "raw").iterdir())) == 1
            shoot(page, "data")

            # Train: a run from scratch on the linked demo data; its loss curve is drawn while it trains.
            page.get_by_role("tab", name="Train").click()
            page.get_by_label("Run name").fill(RUN)
            pick(page, "Recipe", "debug_tiny")
            page.get_by_label("Updates", exact=True).fill(str(UPDATES))
            page.get_by_label("Checkpoint, validation and samples every (updates)").fill("20")
            page.locator("#train-start").click()
            run_info(page, "running", timeout=60)
            # Both curves (the training loss and the validation loss) drawn as lines, and a training sample.
            drawn = f"() => ({DRAWN_LINES})(document.querySelector('#loss-curve')) >= 2"
            try:
                page.wait_for_function(drawn, timeout=120_000)
            except playwright_api.TimeoutError:
                shoot(page, "train-failed", docs=False)
                raise AssertionError(
                    f"the loss curve draws no lines; the run says: {page.locator('#run-info').inner_text()!r}"
                ) from None
            page.get_by_test_id("waveform-Newest training sample").wait_for()
            assert "running" in page.locator("#run-info").inner_text()
            shoot(page, "train")

            # A reload while it trains: the project comes back from the browser's storage, the run is shown running.
            page.reload()
            page.wait_for_selector("#speak-button")
            page.get_by_role("tab", name="Train").click()
            line = run_info(page, "running", timeout=30)
            assert line.startswith(f"Run {RUN}: running"), line
            assert page.get_by_role("combobox", name="Project", exact=True).input_value() == "proj"
            assert page.get_by_role("combobox", name="Run", exact=True).filter(visible=True).input_value() == RUN

            # Stop: the trainer writes a checkpoint and exits.
            page.locator("#train-stop").click()
            line = run_info(page, "stopped", timeout=90)
            checkpoints = list((project / "runs" / RUN / "checkpoints").glob("step-*"))
            assert checkpoints, f"no checkpoint after Stop ({line})"

            # Evaluate & export: the run's newest checkpoint is one of the models to evaluate.
            page.get_by_role("tab", name="Evaluate & export").click()
            pick(page, "Model", f"runs/{RUN} (newest checkpoint)")
            shoot(page, "evaluate")
        finally:
            browser.close()
    print(f"studio in Chromium: {time.monotonic() - started:.0f} s; screenshots in {ARTIFACTS}")
