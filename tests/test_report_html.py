"""`mccard-report --html`: the self-contained page, its numbers, and the page in a real browser."""

import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from mccard_dist import cli
from mccard_dist.analysis import html as report_html
from mccard_dist.metrics import metric
from mccard_dist.runner import run_serial
from mccard_dist.store import open_results

# every test here runs the pipeline into a store first: slow
pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def store(compose, tmp_path_factory):
    """The smoke experiment with three seeds (every method, tau 5, psi 0 and 0.2); every test
    here needs it, so it also skips them without the html extra (imported here, not at
    collection, which runs for the fast subset too)."""
    from mccard_dist.config import from_dictconfig

    pytest.importorskip("altair")
    pytest.importorskip("vl_convert")

    path = tmp_path_factory.mktemp("html") / "smoke.zarr"
    run_serial(from_dictconfig(compose(["experiment=smoke", "experiment.seeds.count=3",
                                        f"store.path={path}", "run.progress=false"])))
    return path


@pytest.fixture(scope="module")
def page(store, tmp_path_factory):
    out = tmp_path_factory.mktemp("html-out")
    cli._report([str(store), "--out", str(out), "--html"])
    return out / "report.html"


def test_every_plotted_mean_and_interval_is_the_t_interval_of_the_finished_seeds(store):
    """The t-interval of the mean over seeds, kept within the seeds' own range (a log axis
    cannot draw the negative lower ends of a 3-seed interval)."""
    ds = open_results(store)
    rows = report_html.records(ds)
    assert rows
    checked = 0
    for row in rows:
        if row["metric"] != metric("r").heading:
            continue
        values = ds["r"].sel(model=row["key"], tau=row["tau"]).sel(
            psi=row["psi"], method="nearest").values
        values = values[np.isfinite(values)]
        low, high = stats.t.interval(0.95, len(values) - 1, loc=values.mean(),
                                     scale=stats.sem(values))
        assert row["seeds"] == len(values) == 3
        assert row["mean"] == pytest.approx(values.mean(), rel=1e-12)
        if np.isfinite(low):  # three equal values (r = 1.0 to the last digit) have no spread
            expected = (max(low, values.min()), min(high, values.max()))
            assert (row["low"], row["high"]) == pytest.approx(expected, rel=1e-10, abs=1e-12)
        checked += 1
    assert checked == 4 * 2  # every method at both psi


def test_the_page_is_self_contained_and_holds_claims_cells_and_config(page, store):
    text = page.read_text()
    # no script, style or image is fetched: every src/href is inline or an anchor
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)
    scripts = re.findall(r"<script[^>]*>(.*?)</script>", text, flags=re.DOTALL)
    assert sum(len(s) for s in scripts) > 300_000  # vega, vega-lite and vega-embed inline
    assert "<h2>Claims of the paper</h2>" in text and "<td>not in this grid</td>" in text
    assert "<td><strong>all</strong></td><td>24</td><td>0</td><td>0</td><td>24</td>" in text
    assert "&quot;n_relevant&quot;: 5" in text  # the config, escaped
    for _, title, _ in report_html.panels():
        assert title in text
    # a fixed-count store: its figures and claims show t-intervals, and it has no stop rule
    assert "Means over the finished seeds with their 95% t-intervals" in text
    assert "mean and 95% t-intervals of the per-seed quantity" in text
    assert "confidence sequence" not in text and "<h2>Stop rule</h2>" not in text


def test_html_without_altair_is_refused_before_anything_is_written(store, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "altair", None)  # import altair now raises ImportError
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exc:
        cli._report([str(store), "--out", str(out), "--html"])
    message = str(exc.value)
    assert "altair" in message and "mccard-dist[html]" in message and len(message) < 200
    assert not out.exists()


def test_html_needs_out(store, capsys):
    with pytest.raises(SystemExit):
        cli._report([str(store), "--compare", str(store), "--html"])
    assert "--html needs --out DIR" in capsys.readouterr().err


def _chromium(page, tmp_path, *args):
    """Run headless Chromium on the page offline; its stdout and stderr (console messages)."""
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
             "--virtual-time-budget=15000", "--window-size=1200,3000", "--hide-scrollbars"]
    done = subprocess.run([CHROMIUM, *flags, *args, page.as_uri()], capture_output=True,
                          text=True, timeout=180, check=False)
    return done.stdout, done.stderr


needs_chromium = pytest.mark.skipif(CHROMIUM is None and os.environ.get("CI") != "true",
                                    reason="needs Chromium (Debian package chromium); CI installs it")


@pytest.fixture(scope="module")
def rendered(page, tmp_path_factory):
    """The page after Vega has drawn it in headless Chromium: its DOM, the console log and a
    screenshot (RGB in [0, 1])."""
    from matplotlib.image import imread

    assert CHROMIUM is not None, "Chromium is not installed (apt-get install chromium)"
    tmp_path = tmp_path_factory.mktemp("chromium")
    dom, log = _chromium(page, tmp_path, "--dump-dom")
    _chromium(page, tmp_path, f"--screenshot={tmp_path / 'page.png'}")
    return dom, log, imread(tmp_path / "page.png")[..., :3]


@needs_chromium
def test_the_page_renders_every_figure_in_headless_chromium_without_console_errors(rendered):
    dom, log, _ = rendered
    console = [line for line in log.splitlines() if "CONSOLE" in line]
    errors = [line for line in console if re.search(r"error|uncaught|failed", line, re.IGNORECASE)]
    assert not errors, errors
    warnings = [line for line in console if "WARN" in line]  # Vega's console.warn
    assert not warnings, warnings
    figures = dom[dom.index('id="figures"'):]
    assert "<svg" in figures, "vega-embed drew nothing"
    # each panel's title is drawn as SVG text by Vega (not just present in the JSON spec)
    drawn = set(re.findall(r"<text[^>]*>([^<]+)</text>", figures))
    panels = [title for _, title, _ in report_html.panels()] + [
        "test r of each seed at the marked psi", "features kept by each seed at the marked psi"]
    missing = [t for t in panels if t not in drawn]
    assert not missing, f"panels not drawn: {missing}"
    # the selectors are bound inputs under the chart
    assert figures.count("<select") >= 2
    # each psi axis is labelled at the grid's psi values (0 and 0.2), not at Vega's own steps
    axes = figures.split("X-axis titled 'psi (share of outliers)'")[1:]
    assert axes
    for axis in axes:
        labels = re.findall(r"<text[^>]*>([^<]+)</text>", axis)
        assert labels[:labels.index("psi (share of outliers)")] == ["0", "0.2"], labels[:6]


def _figure_colours(ds) -> dict:
    """Each method's colour in the PNG figure 1, by its legend label, as matplotlib draws it."""
    from matplotlib.colors import to_hex

    from mccard_dist.analysis.figures import fig_prediction

    colours = {}
    for ax in fig_prediction(ds).axes:
        for container in ax.containers:  # one errorbar per method and panel
            colours.setdefault(container.get_label(), to_hex(container.lines[0].get_color()))
    return colours


def test_the_page_gives_each_method_the_css_colour_of_the_report_figures(store):
    """Vega draws a colour only if SVG knows it: a CSS hex colour, the one figure 1 draws."""
    ds = open_results(store)
    spec = report_html.chart(ds).to_dict()
    scales = []

    def walk(node):
        if isinstance(node, dict):
            color = node.get("color")
            if isinstance(color, dict) and "scale" in color:
                scales.append(color["scale"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(spec)
    want = _figure_colours(ds)
    assert len(want) == 4 and len(set(want.values())) == 4
    assert scales
    for scale in scales:
        assert all(re.fullmatch(r"#[0-9a-f]{6}", c) for c in scale["range"]), scale["range"]
        assert dict(zip(scale["domain"], scale["range"])) == want


@needs_chromium
def test_chromium_draws_every_method_in_the_colour_of_the_report_figures(rendered, store):
    """The rendered SVG: every line, point, interval and seed tick carries its method's colour;
    the screenshot: each colour covers more pixels than its legend swatch (about 60) alone."""
    dom, _, pixels = rendered
    want = _figure_colours(open_results(store))
    paint = {"line": "stroke", "symbol": "fill", "rule": "stroke", "rect": "fill"}  # rect: ticks
    drawn = {kind: {} for kind in paint}
    for kind, attribute in paint.items():
        for group in re.findall(rf'<g class="mark-{kind} role-mark[^>]*>(.*?)</g>', dom, re.DOTALL):
            for mark in re.findall(r"<(?:path|line)\b[^>]*>", group):
                method = re.search(r"method: ([^;\"]+)", mark)
                colour = re.search(rf'\b{attribute}="([^"]*)"', mark)
                if method:  # the dashed psi rule names no method
                    drawn[kind].setdefault(method.group(1), set()).add(colour and colour.group(1))
    for kind, colours in drawn.items():
        assert colours == {label: {hex_} for label, hex_ in want.items()}, (kind, colours)
    for label, hex_ in want.items():
        rgb = np.array([int(hex_[i:i + 2], 16) / 255 for i in (1, 3, 5)])
        count = int((np.abs(pixels - rgb).max(axis=-1) < 0.04).sum())
        assert count > 1000, f"{label} ({hex_}): {count} pixels in the screenshot"


@needs_chromium
def test_every_interval_is_drawn_inside_its_panel_over_the_marked_psi_rule(rendered):
    """An interval at the grid's first or last psi lies inside the clipped frame (not half cut
    off on its edge), and the dashed marked-psi rule is drawn before (beneath) the intervals."""
    dom, _, _ = rendered
    panels = re.split(r'class="mark-group role-scope concat_\d+_group"', dom)[1:1 + 5]
    assert len(panels) == 5
    for panel in panels:
        bars = [(m.start(), float(m.group(1))) for m in re.finditer(
            r'aria-roledescription="errorbar" transform="translate\(([-\d.e]+),', panel)]
        assert bars and all(0 < x < 520 for _, x in bars), bars  # 520: the panels' width
        assert panel.index('stroke="gray" stroke-dasharray="4,3"') < bars[0][0]


def test_a_store_with_no_finished_cell_gets_a_page_that_says_so(compose, tmp_path):
    """A run interrupted before its first block: the page is written, with its cells table (all
    pending) and no figure."""
    pytest.importorskip("altair")
    from mccard_dist import compose as compose_spec
    from mccard_dist.store import ResultsStore

    path = tmp_path / "empty.zarr"
    ResultsStore.open_or_create(compose_spec("smoke", [f"store.path={path}"]))
    assert cli._report([str(path), "--out", str(tmp_path / "out"), "--html"]) in (None, 0)
    text = (tmp_path / "out" / "report.html").read_text()
    assert "No figures yet: the store has no finished cell." in text
    assert "<h2>Cells</h2>" in text and 'id="figures"' not in text
