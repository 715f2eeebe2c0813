"""A job plan drawn in HTML: the throughput of every configuration simulated, each IPU's
memory for the chosen one by category (in report.html's colours), and the printed report;
as a self-contained page (JobPlan.to_html, ``python -m popsim plan --html``) and as a
section of report.html for a model run with the plan's options (JobPlan.apply)."""

import html
from typing import Any, List

from popsim.profiling._style import category_colour
from popsim.reports.sizing import mib

# The page draws a job_plan.JobPlan and its JobCandidates, typed Any here since
# job_plan imports this module.

_WIDTH = 900  # the charts' width in pixels
_LABEL = 330  # the width of the configurations' labels
_ROW = 18  # a bar's height with its gap

_CHOSEN, _FITS, _DOES_NOT_FIT = "#1f6f3f", "#4a90d9", "#c8c8c8"


def _label(candidate: Any) -> str:
    schedule = candidate.pipeline.schedule.value
    settings = ["R" if candidate.pipeline.recomputation else "",
                "off" if candidate.pipeline.optimizer_off_chip else "",
                "RTS" if candidate.replicated_tensor_sharding else "",
                "" if schedule == "Interleaved" else schedule,
                "AMP" if candidate.pipeline.memory_proportions else "",
                f"p{candidate.processes}" if candidate.processes > 1 else ""]
    shown = "/".join(s for s in settings if s)
    return (f"{candidate.replicas}x{candidate.ipus_per_replica} {candidate.pipeline.layout} "
            f"mb {candidate.micro_batch} ga {candidate.gradient_accumulation} "
            f"di {candidate.device_iterations}" + (f" {shown}" if shown else ""))


def _throughput_chart(plan: Any) -> str:
    """Horizontal bars, fastest first: the chosen configuration, the others that fit,
    and (grey, at the throughput they would have) those that do not."""
    ranked = sorted(plan.searched, key=lambda c: -c.throughput)
    top = max((c.throughput for c in ranked), default=1.0) or 1.0
    span = _WIDTH - _LABEL - 90
    rows: List[str] = []
    for index, candidate in enumerate(ranked):
        y = 24 + index * _ROW
        colour = (_CHOSEN if candidate is plan.chosen else
                  _FITS if candidate.fits else _DOES_NOT_FIT)
        width = max(1.0, span * candidate.throughput / top)
        note = "" if candidate.fits else " (does not fit)"
        rows.append(
            f'<text x="{_LABEL - 6}" y="{y + 12}" text-anchor="end">'
            f"{html.escape(_label(candidate))}</text>"
            f'<rect x="{_LABEL}" y="{y}" width="{width:.1f}" height="{_ROW - 4}" '
            f'fill="{colour}"><title>{html.escape(candidate.summary())}</title></rect>'
            f'<text x="{_LABEL + width + 4:.1f}" y="{y + 12}">'
            f"{candidate.throughput:,.0f}{note}</text>")
    height = 24 + len(ranked) * _ROW + 8
    return (f'<svg width="{_WIDTH}" height="{height}" font-size="11" '
            f'font-family="sans-serif" role="img" aria-label="throughput of each '
            f'configuration simulated"><text x="{_LABEL}" y="14" font-weight="bold">'
            f"simulated items/s</text>{''.join(rows)}</svg>")


def _memory_chart(candidate: Any) -> str:
    """Each IPU of the chosen configuration: its memory stacked by category against its
    capacity (the dashed line)."""
    ipus = candidate.pipeline.report.ipus
    capacity = max(ipu.capacity_bytes for ipu in ipus)
    scale = max([capacity] + [ipu.memory_bytes for ipu in ipus])
    span = _WIDTH - 80 - 150
    rows: List[str] = []
    names: List[str] = []
    for index, ipu in enumerate(ipus):
        y = 24 + index * 26
        x = 80.0
        rows.append(f'<text x="74" y="{y + 15}" text-anchor="end">IPU {ipu.ipu}</text>')
        for name, size in ipu.memory_by_category.items():
            if size <= 0:
                continue
            if name not in names:
                names.append(name)
            width = span * size / scale
            rows.append(f'<rect x="{x:.1f}" y="{y}" width="{width:.1f}" height="20" '
                        f'fill="{category_colour(name)}"><title>{html.escape(name)}: '
                        f"{mib(size)}</title></rect>")
            x += width
        rows.append(f'<text x="{x + 4:.1f}" y="{y + 15}">{mib(ipu.memory_bytes)} '
                    f"({ipu.memory_bytes / ipu.capacity_bytes:.0%})</text>")
    limit = 80 + span * capacity / scale
    bottom = 24 + len(ipus) * 26
    rows.append(f'<line x1="{limit:.1f}" y1="18" x2="{limit:.1f}" y2="{bottom}" '
                f'stroke="#333" stroke-dasharray="4 3"><title>capacity {mib(capacity)}'
                f"</title></line>")
    legend = [f'<rect x="{80 + 150 * (i % 5)}" y="{bottom + 8 + 16 * (i // 5)}" width="10" '
              f'height="10" fill="{category_colour(name)}"/><text x="{94 + 150 * (i % 5)}" '
              f'y="{bottom + 17 + 16 * (i // 5)}">{html.escape(name)}</text>'
              for i, name in enumerate(names)]
    height = bottom + 16 + 16 * ((len(names) + 4) // 5)
    return (f'<svg width="{_WIDTH}" height="{height}" font-size="11" '
            f'font-family="sans-serif" role="img" aria-label="memory of each IPU">'
            f'<text x="80" y="12" font-weight="bold">memory per IPU by category (dashed: '
            f"capacity)</text>{''.join(rows)}{''.join(legend)}</svg>")


def _title(plan: Any) -> str:
    return f"Job plan for {plan.model} on {plan.ipus} IPUs, global batch {plan.global_batch:,}"


def job_plan_page(plan: Any) -> str:
    """The page's HTML text."""
    title = html.escape(_title(plan))
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title><style>"
            "body{font-family:sans-serif;margin:2em;max-width:1000px}"
            "pre{background:#f6f6f6;padding:1em;overflow-x:auto;font-size:12px}</style>"
            f"</head><body><h1>{title}</h1>{_body(plan, 'h2')}</body></html>")


def job_plan_section(plan: Any) -> str:
    """The plan as a section of a model's report.html (after its summary), whose
    style sheet it shares."""
    return (f'<section id="plan-section"><h2>{html.escape(_title(plan))}</h2>'
            f"{_body(plan, 'h3')}</section>")


def _body(plan: Any, heading: str) -> str:
    """The charts and the printed report, under headings of level `heading`."""
    parts = []
    if plan.chosen is not None:
        parts.append(f"<p>Chosen: {html.escape(plan.chosen.summary())}</p>")
        parts.append(f"<{heading}>Memory of the chosen configuration</{heading}>")
        parts.append(_memory_chart(plan.chosen))
    else:
        parts.append("<p>Nothing fits.</p>")
    parts.append(f"<{heading}>Every configuration simulated ({len(plan.searched)})</{heading}><p>"
                 f'<span style="color:{_CHOSEN}">&#9632;</span> chosen, '
                 f'<span style="color:{_FITS}">&#9632;</span> fits, '
                 f'<span style="color:{_DOES_NOT_FIT}">&#9632;</span> does not fit; R '
                 "recomputation, off optimizer state off chip, RTS sharded state, AMP raised "
                 "memory proportions, p<i>n</i> n host processes</p>")
    parts.append(_throughput_chart(plan))
    parts.append(f"<{heading}>Report</{heading}><pre>{html.escape(str(plan))}</pre>")
    return "".join(parts)
