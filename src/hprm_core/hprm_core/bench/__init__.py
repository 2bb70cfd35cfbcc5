"""Benchmark plumbing shared by every ``hprm bench NAME``.

Each benchmark is a function ``main(argv: list[str]) -> int`` registered under
the ``hprm.benchmarks`` entry-point group, so packages that hprm_core must not
import (hprm_bridge, carla_demo) can add their own. A benchmark measures its
baselines in the same run and reports ratios, because these machines are shared
and noisy: absolute figures from different runs do not compare.

Results have one shape everywhere::

    {"benchmark": "reactions",
     "params": {"quick": false, ...},
     "results": [{"variant": "hprm chain", "reactions_per_s": 512000.0}, ...],
     "ratios": {"hprm/asyncio": 1.7}}           # optional

Example, inside a benchmark module::

    def main(argv=None):
        args = bench.parser("reactions", "Reaction invocations per second").parse_args(argv)
        result = bench.result("reactions", {"quick": args.quick}, rows)
        bench.report(result, args)
        return 0
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

ENTRY_POINT_GROUP = "hprm.benchmarks"


def parser(name: str, description: str) -> argparse.ArgumentParser:
    """An argument parser with the options every benchmark takes."""
    # a module docstring's first paragraph, its reST literals made plain for --help
    plain = description.replace("``", "")
    p = argparse.ArgumentParser(prog=f"hprm bench {name}", description=plain)
    p.add_argument("--quick", action="store_true", help="fewer iterations (for smoke tests)")
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    return p


def at_least(minimum: int) -> Callable[[str], int]:
    """An argparse ``type`` for a count (frames, runs, repeats): an integer >= ``minimum``,
    refused at the command line otherwise (a 0 or a negative count used to run the
    default, run nothing, or run until a timeout)."""

    def count(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if n < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {n}")
        return n

    count.__name__ = "count"  # argparse names the type in its messages
    return count


def result(
    name: str,
    params: dict[str, Any],
    rows: Sequence[dict[str, Any]],
    ratios: dict[str, float] | None = None,
    notes: Sequence[str] = (),
) -> dict[str, Any]:
    """Build the result document, stamped with the machine it ran on. ``notes``: how to
    read a column whose name cannot say it all (printed under the table, kept in the
    JSON)."""
    doc: dict[str, Any] = {
        "benchmark": name,
        "params": dict(params),
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "processor": platform.machine(),
        },
        "results": [dict(r) for r in rows],
    }
    if ratios:
        doc["ratios"] = dict(ratios)
    if notes:
        doc["notes"] = list(notes)
    return doc


def spread(values: Sequence[float], unit: str, scale: float = 1.0) -> dict[str, float]:
    """``median_<unit>``, ``p90_<unit>`` and ``max_<unit>`` of ``values`` (each divided
    by ``scale``), the columns every latency table shows; empty for no values.

    Example::

        >>> spread([3.0, 1.0, 2.0], "ms")
        {'median_ms': 2.0, 'p90_ms': 3.0, 'max_ms': 3.0}
    """
    xs = sorted(v / scale for v in values)
    if not xs:
        return {}
    return {
        f"median_{unit}": statistics.median(xs),
        f"p90_{unit}": xs[min(len(xs) - 1, int(0.9 * len(xs)))],
        f"max_{unit}": xs[-1],
    }


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        if value == 0 or 0.01 <= abs(value) < 1e6:
            return f"{value:,.2f}"
        return f"{value:.3g}"
    return str(value)


def format_table(doc: dict[str, Any]) -> str:
    """Render the results as an aligned plain-text table, then the ratios."""
    rows = doc["results"]
    cols: list[str] = []
    for row in rows:
        cols.extend(k for k in row if k not in cols)
    cells = [[_fmt(row.get(c, "")) for c in cols] for row in rows]
    numeric = [all(isinstance(row.get(c), int | float) for row in rows) for c in cols]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(cols)]
    lines = [f"benchmark: {doc['benchmark']}  params: {json.dumps(doc['params'])}"]
    lines.append("  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)))
    lines.append("  ".join("-" * w for w in widths))
    for r in cells:
        lines.append(
            "  ".join(
                v.rjust(w) if num else v.ljust(w)
                for v, w, num in zip(r, widths, numeric, strict=True)
            ).rstrip()
        )
    for k, v in doc.get("ratios", {}).items():
        lines.append(f"ratio {k}: {_fmt(v)}")
    lines += [f"note: {n}" for n in doc.get("notes", [])]
    return "\n".join(lines)


def report(doc: dict[str, Any], args: argparse.Namespace) -> None:
    """Print the table; write JSON when ``--json`` was given."""
    print(format_table(doc), flush=True)
    if getattr(args, "json", None):
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=2) + "\n")
        print(f"wrote {path}", file=sys.stderr)


def available() -> dict[str, metadata.EntryPoint]:
    """Benchmarks registered by every installed package, by name."""
    return {ep.name: ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}


def load(name: str) -> Callable[[list[str]], int]:
    """The ``main`` of benchmark NAME; a clear error lists the known ones."""
    eps = available()
    if name not in eps:
        known = ", ".join(sorted(eps)) or "none installed"
        print(f"hprm bench: unknown benchmark {name!r} (available: {known})", file=sys.stderr)
        raise SystemExit(2)  # a usage error, as argparse's
    return eps[name].load()


def save_plot(
    path: str,
    series: dict[str, tuple[Sequence[Any], Sequence[float]]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    bars: bool = False,
    logx: bool = False,
) -> None:
    """A PNG with one line (or bar group) per series and a log-scale y axis,
    like the paper's figures (``logx``: the x axis too, for series whose x
    values span decades). Shared by every benchmark's ``--plot``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    height = 0.45 * len(series) + 1.5 if bars else 4.5
    fig, ax = plt.subplots(figsize=(8, height), dpi=110)
    try:
        if bars:  # horizontal, so long variant names stay readable; log value axis
            labels = list(series)
            values = [series[k][1][0] for k in labels]
            ax.barh(range(len(labels)), values, color=[f"C{i}" for i in range(len(labels))])
            ax.set_yticks(range(len(labels)), labels)
            ax.invert_yaxis()
            for i, v in enumerate(values):
                ax.annotate(f" {v:,.0f}", (v, i), ha="left", va="center", fontsize=8)
            ax.set_xscale("log")
            xlabel, ylabel = ylabel, xlabel
        else:
            for name, (xs, ys) in series.items():
                ax.plot(xs, ys, marker="o", label=name)
            ax.legend()
            ax.set_yscale("log")
            if logx:
                ax.set_xscale("log")
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)
