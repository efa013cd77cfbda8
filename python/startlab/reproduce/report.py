"""The reproduction report: per experiment, the setup, our figure drawn like the paper's, our
numbers next to the paper's, the paper's claims and whether our runs support them, and why we
differ where we do. Written as HTML and as Markdown with the same content."""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from startlab.reproduce.runner import ExperimentResult

__all__ = ["draw_figure", "write_report"]

NS_PER_S = 1_000_000_000
PAPER_NAMES = {
    "wang2004": "Wang et al. 2004 — TCP Startup Performance in Large Bandwidth Delay Networks "
    "(Astart)",
    "deng": "Deng et al. — A Parameterized Model of TCP Slow Start (P-Start)",
    "ha2009": "Ha 2009 — Improving TCP Congestion Control for High Bandwidth and Long Distance "
    "Networks (CUBIC, HyStart, BLAST)",
    "ho": "Ho et al. — An Enhanced Slow-Start Mechanism for TCP Vegas (Gallop-Vegas)",
    "sallantin2013": "Sallantin et al. 2013 — Initial Spreading: a Fast Start-Up TCP Mechanism",
}


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _fmt(x: Any, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if isinstance(x, float):
        return f"{x:.{digits}g}"
    return str(x)


def _new_figure(panels: int = 1) -> tuple[Figure, list[Any]]:
    fig = Figure(figsize=(9.5, 3.6 * panels), dpi=100)
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(panels, 1, i + 1) for i in range(panels)]
    return fig, axes


def _x_value(value: Any) -> float | None:
    """An axis value as a number: SI units for quantities (``"20ms"`` -> 0.02)."""
    from startlab.sweep.quantity import parse_quantity

    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    q = parse_quantity(value)
    return q.si if q is not None else None


def _with_positions(
    r: ExperimentResult, column: str, position: dict[Any, float]
) -> ExperimentResult:
    import copy

    out = copy.copy(r)
    out.data = r.data.with_columns(
        pl.col(column).replace_strict(position, return_dtype=pl.Float64).alias("__x")
    )
    return out


def _sweep_figure(r: ExperimentResult, path: Path) -> Path | None:
    f = r.experiment.figure
    x = f.get("x")
    # `y` is one column, or several drawn as one line each (``y = ["ncl_blast", "ncl_queue"]``).
    wanted = f.get("y")
    listed: list[Any] = wanted if isinstance(wanted, list) else [wanted]
    columns: list[str] = [str(c) for c in listed if c and c in r.data.columns]
    if not x or not columns:
        return None
    xcol = r.x_column if r.x_column and r.x_column in r.data.columns else x
    scale = float(f.get("scale", 1.0))
    xscale = float(f.get("x_scale", 1.0))
    series = f.get("series")
    fig, (ax,) = _new_figure()
    categories: list[Any] = []
    if xcol in r.data.columns and not r.data[xcol].dtype.is_numeric():
        # A categorical x (algorithms, modes): one position per value, in the data's order.
        categories = list(dict.fromkeys(r.data[xcol].to_list()))
        position = {c: float(i) for i, c in enumerate(categories)}
        r = _with_positions(r, xcol, position)
        xcol, xscale = "__x", 1.0
    groups = r.data.partition_by(series, maintain_order=True) if series else [r.data]
    for g, y in [(g, y) for g in groups for y in columns]:
        g = g.sort(xcol)
        # A line is named by its series value and, when several columns are drawn, the column.
        parts = ([str(g[series][0])] if series else []) + ([y] if len(columns) > 1 else [])
        label = " ".join(parts) or "startlab"
        xs = [v * xscale for v in g[xcol].to_list()]
        ys = [v * scale if v is not None else None for v in g[y].to_list()]
        ci_col = f"{y}_ci95"
        errs = [(e or 0.0) * scale for e in g[ci_col].to_list()] if ci_col in g.columns else None
        name = f"startlab: {label}" if parts else "startlab"
        line = ax.errorbar(xs, ys, yerr=errs, marker="o", ms=4, capsize=3, label=name)
        color = line[0].get_color()
        paper = [row for row in r.experiment.paper_rows if y in row.values]
        if series:
            paper = [row for row in paper if str(row.where.get(series)) == str(g[series][0])]
        if paper:
            # The paper's points at their own x (the axis value they name), all of them, also
            # where the quick version did not run that point.
            pts = []
            for row in paper:
                xv = position.get(row.where.get(x)) if categories else _x_value(row.where.get(x))
                if xv is not None:
                    pts.append((xv * xscale, row.values[y] * scale))
            pts.sort()
            name = f"paper: {label}" if series else "paper"
            ax.plot(
                [p[0] for p in pts],
                [p[1] for p in pts],
                linestyle="--",
                marker="s",
                mfc="none",
                color=color,
                label=name,
            )
    if categories:
        ax.set_xticks(range(len(categories)), [str(c) for c in categories], fontsize=8)
    ax.set_xlabel(f.get("xlabel", x))
    ax.set_ylabel(f.get("ylabel", ", ".join(columns)))
    if f.get("xlog"):
        ax.set_xscale("log")
    if f.get("ylog"):
        ax.set_yscale("log")
    if "ylim" in f:
        ax.set_ylim(*f["ylim"])
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    seeds = f"; mean of {r.seeds} seeds, bars: 95 % CI" if r.seeds > 1 else ""
    ax.set_title(f"{r.experiment.title}{seeds}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    return path


SERIES = {
    "cwnd": ("flow_series", "cwnd", "cwnd (segments)"),
    "ssthresh": ("flow_series", "ssthresh", "ssthresh (segments)"),
    "queue": ("queue_series", "queue_packets", "queue (packets)"),
    "rtt": ("flow_series", "srtt_ns", "smoothed RTT (ms)"),
}


def _flow_labels(result: Any) -> dict[int, str]:
    flows = result.flows
    return dict(zip(flows["flow"].to_list(), flows["label"].to_list(), strict=True))


def _runs_figure(r: ExperimentResult, path: Path) -> Path | None:
    f = r.experiment.figure
    panels = f.get("panels") or [{"y": "cwnd"}]
    fig, axes = _new_figure(len(panels))
    for ax, panel in zip(axes, panels, strict=False):
        what = panel.get("y", "cwnd")
        for label, result in r.results.items():
            if what == "goodput":
                rates = result.throughput(float(panel.get("interval", 0.5)))
                flows = panel.get("flows")
                if flows is not None:
                    rates = rates.filter(pl.col("flow").is_in(flows))
                labels = _flow_labels(result)
                parts = rates.partition_by("flow", maintain_order=True)
                for g in parts:
                    suffix = f" {labels.get(g['flow'][0], '')}" if len(parts) > 1 else ""
                    ax.step(
                        g["start_s"], g["goodput_bps"] / 1e6, where="post", label=f"{label}{suffix}"
                    )
                ax.set_ylabel("goodput (Mbit/s)")
                continue
            table, column, ylabel = SERIES[what]
            df = getattr(result, table)
            names = _flow_labels(result)
            if what == "queue":
                link = panel.get("link")
                if link is not None:
                    ids = result.links.filter((pl.col("name") == link) | (pl.col("alias") == link))[
                        "link"
                    ]
                    df = df.filter(pl.col("link").is_in(ids.to_list()))
                groups = df.partition_by("link", maintain_order=True)
            else:
                flows = panel.get("flows")
                if flows is not None:
                    df = df.filter(pl.col("flow").is_in(flows))
                groups = df.partition_by("flow", maintain_order=True)
            for g in groups:
                ys = g[column].cast(pl.Float64)
                if what == "rtt":
                    ys = ys / 1e6
                if what == "ssthresh":
                    ys = ys.map_elements(
                        lambda v: None if math.isinf(v) else v, return_dtype=pl.Float64
                    )
                suffix = ""
                if what != "queue" and len(groups) > 1:
                    suffix = f" {names.get(g['flow'][0], 'flow ' + str(g['flow'][0]))}"
                elif what == "queue" and len(groups) > 1:
                    suffix = f" {g['link_name'][0]}"
                ax.plot(
                    g["time_ns"].to_numpy() / NS_PER_S,
                    ys.to_numpy(),
                    label=f"{label}{suffix}",
                    lw=1.2,
                )
            ax.set_ylabel(panel.get("ylabel", ylabel))
        if "xlim" in panel:
            ax.set_xlim(*panel["xlim"])
        if "ylim" in panel:
            ax.set_ylim(*panel["ylim"])
        ax.set_xlabel("time (s)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_title(r.experiment.title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    return path


def draw_figure(r: ExperimentResult, directory: Path) -> Path | None:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{_slug(r.experiment.id)}.png"
    if r.experiment.kind == "sweep":
        return _sweep_figure(r, path)
    return _runs_figure(r, path)


def _verdict(c: Any) -> str:
    if c.supported is None:
        return "not checked"
    return "supported" if c.supported else "not supported"


def _rows(r: ExperimentResult) -> list[list[str]]:
    rows = []
    for row in r.comparison.iter_rows(named=True):
        ours = _fmt(row["ours"])
        if row["ci95"] is not None and row["ours"] is not None:
            ours += f" ± {_fmt(row['ci95'], 2)}"
        rel = row["relative"]
        rows.append(
            [
                row["where"],
                row["metric"],
                _fmt(row["paper"]),
                ours,
                _fmt(row["difference"], 3),
                "–" if rel is None else f"{rel * 100:+.1f} %",
            ]
        )
    return rows


HEADER = ["where", "metric", "paper", "startlab", "difference", "relative"]


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _html_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _data_rows(r: ExperimentResult) -> tuple[list[str], list[list[str]]]:
    cols = [c for c in r.data.columns if not c.endswith("_ci95") and c != "n"]
    rows = []
    for row in r.data.iter_rows(named=True):
        cells = []
        for c in cols:
            v = _fmt(row[c])
            ci = row.get(f"{c}_ci95")
            if ci is not None and isinstance(ci, float) and not math.isnan(ci):
                v += f" ± {_fmt(ci, 2)}"
            cells.append(v)
        rows.append(cells)
    return cols, rows


def write_report(
    results: Sequence[ExperimentResult],
    directory: Path,
    *,
    quick: bool,
    elapsed_s: float,
    command: str,
) -> list[Path]:
    """Writes ``index.html``, ``README.md`` and ``figures/*.png`` into ``directory``."""
    figures_dir = directory / "figures"
    figures: dict[str, Path | None] = {
        r.experiment.id: draw_figure(r, figures_dir) for r in results
    }
    supported = sum(c.supported is True for r in results for c in r.claims)
    total = sum(len(r.claims) for r in results)
    expected = sum(c.as_expected for r in results for c in r.claims)
    mode = "quick (reduced) version" if quick else "full version"
    runs = sum(r.runs for r in results)
    simulated = sum(r.simulated for r in results)
    reused = f"{runs - simulated} taken from the run cache" if simulated < runs else "none cached"
    intro = (
        f"{len(results)} experiments, {mode}, generated by `{command}` in {elapsed_s:.0f} s: "
        f"{runs} runs, {simulated} simulated now and {reused}. "
        f"{supported} of {total} claims of the papers are supported by our runs; "
        f"{expected} of {total} turn out as this report expects (a claim we do not support is "
        "explained in its section)."
    )
    md = ["# Reproducing the papers with startlab", "", intro, ""]
    body = [f"<h1>Reproducing the papers with startlab</h1><p>{html.escape(intro)}</p>"]

    summary_rows = []
    for r in results:
        e = r.experiment
        ok = sum(c.supported is True for c in r.claims)
        summary_rows.append([e.id, e.title, e.source, f"{ok}/{len(r.claims)}"])
    md += [_md_table(["experiment", "title", "in the paper", "claims supported"], summary_rows), ""]
    body.append(
        _html_table(["experiment", "title", "in the paper", "claims supported"], summary_rows)
    )

    current_paper = None
    for r in results:
        e = r.experiment
        if e.paper != current_paper:
            current_paper = e.paper
            name = PAPER_NAMES.get(e.paper, e.paper)
            md += [f"## {name}", ""]
            body.append(f"<h2>{html.escape(name)}</h2>")
        md += [f"### {e.id}: {e.title} ({e.source})", "", f"**Setup.** {e.setup}", ""]
        body.append(
            f"<h3 id='{_slug(e.id)}'>{html.escape(e.id)}: {html.escape(e.title)} "
            f"({html.escape(e.source)})</h3>"
        )
        body.append(f"<p><b>Setup.</b> {html.escape(e.setup)}</p>")
        fig = figures.get(e.id)
        if fig is not None:
            rel = fig.relative_to(directory).as_posix()
            md += [f"![{e.id}]({rel})", ""]
            body.append(
                f"<img src='{html.escape(rel)}' alt='{html.escape(e.id)}' style='max-width:100%'>"
            )
        if len(r.comparison):
            md += ["Our numbers next to the paper's:", "", _md_table(HEADER, _rows(r)), ""]
            body.append("<p>Our numbers next to the paper's:</p>" + _html_table(HEADER, _rows(r)))
        cols, rows = _data_rows(r)
        seeds_text = f", {r.seeds} seeds per point" if r.seeds > 1 else ""
        md += [
            f"All our numbers ({r.runs} runs{seeds_text}):",
            "",
            _md_table(cols, rows),
            "",
        ]
        body.append(
            f"<details><summary>All our numbers ({r.runs} runs)</summary>"
            f"{_html_table(cols, rows)}</details>"
        )
        md += [f"**The paper's claim.** {e.claim}", ""]
        body.append(f"<p><b>The paper's claim.</b> {html.escape(e.claim)}</p>")
        claim_rows = [
            [c.claim.text, _verdict(c), c.detail, "yes" if c.as_expected else "NO"]
            for c in r.claims
        ]
        if claim_rows:
            head = ["claim", "our runs", "numbers checked", "as expected"]
            md += [_md_table(head, claim_rows), ""]
            body.append(_html_table(head, claim_rows))
        if e.explanation:
            md += [f"**Where we differ, and why.** {e.explanation}", ""]
            body.append(f"<p><b>Where we differ, and why.</b> {html.escape(e.explanation)}</p>")
        if e.notes:
            md += [f"**Notes.** {e.notes}", ""]
            body.append(f"<p><b>Notes.</b> {html.escape(e.notes)}</p>")

    directory.mkdir(parents=True, exist_ok=True)
    md_path = directory / "README.md"
    md_path.write_text("\n".join(md) + "\n", encoding="utf-8")
    style = (
        "body{font-family:sans-serif;max-width:1000px;margin:auto;padding:1em;line-height:1.4}"
        "table{border-collapse:collapse;margin:0.5em 0;font-size:0.9em}"
        "td,th{border:1px solid #ccc;padding:3px 6px;text-align:left}th{background:#f3f3f3}"
    )
    html_path = directory / "index.html"
    html_path.write_text(
        "<!doctype html><html><head><meta charset='utf-8'><title>startlab reproduction</title>"
        f"<style>{style}</style></head><body>" + "".join(body) + "</body></html>\n",
        encoding="utf-8",
    )
    return [md_path, html_path, *[p for p in figures.values() if p is not None]]
