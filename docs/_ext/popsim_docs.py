"""popsim's own Sphinx extension.

- ``results-table``: a table built from a benchmark's JSON output in ``docs/results``, so a
  figure a benchmark measures is never typed by hand (``benchmarks/record_results.py`` writes
  the files).
- ``results-chart``: simulated against published figures of a benchmark's JSON output, as a
  log-log scatter plot drawn with matplotlib when the docs build (inline SVG).
- ``results-bars``: one bar per row of a benchmark's JSON output (a ratio against eager
  PyTorch, say), drawn likewise.
- ``popsim-figure``: a figure drawn from popsim's own runs when the docs build (doc_figures.py:
  schedules from a profile's timeline, memory per IPU, the combined batch).
- The API reference marks each public name with its PopTorch counterpart, or says that
  PopTorch has none.
- Inline code on the other pages that names a documented object (``popsim.sizeJob``,
  ``opts.Training.gradientAccumulation(8)``, ``OutputMode.Final``) links to its entry.
- The build fails (as a warning under ``-W``) when a public name of popsim's modules (their
  ``__all__``) is missing from the API reference.
"""

import importlib
import inspect
import json
import re
from typing import Any, Dict, List, Tuple

from docutils import nodes
from docutils.parsers.rst import Directive, directives
from sphinx.util import logging

LOGGER = logging.getLogger(__name__)

# The modules whose public names (``__all__``) the API reference must document.
API_MODULES = ["popsim", "popsim.optim", "popsim.enums", "popsim.profiling", "popsim.testing"]

# Public names with no PopTorch counterpart (popsim's own additions). Every other public name
# of ``popsim`` and ``popsim.optim`` is PopTorch's, with PopTorch's meaning.
POPSIM_ONLY = {
    "popsim.sizeJob": None,
    "popsim.SizingReport": None,
    "popsim.IpuSizing": None,
    "popsim.plan": None,
    "popsim.Plan": None,
    "popsim.PipelinePlan": None,
    "popsim.PlannedIpu": None,
    "popsim.PipelineSchedule": "PopTorch sets the schedule through PopART's options",
    "popsim.CompilationError": None,
    "popsim.ExecutionError": None,
    "popsim.ExecutableFileError": None,
    "popsim.InputError": None,
    "popsim.InternalError": None,
    "popsim.OptionError": None,
    "popsim.OutOfMemoryError": None,
    "popsim.UnsupportedOperationError": None,
    "popsim.options._SimulatorOptions": "the simulated machine's settings",
    # Methods of PopTorch's classes that only popsim has.
    "popsim.Executor.memoryReport": "the simulated IPUs' memory plan",
    "popsim.Executor.simulatedTime": "the simulated clock",
    "popsim.Executor.executionTrace": "the simulated clock's timeline",
    "popsim.Executor.sizingReport": "see :func:`popsim.sizeJob`",
    "popsim.Executor.profileDirectory": "popsim's profile files, see :mod:`popsim.profiling`",
    "popsim.Executor.compilationTime": None,
}

# Public names whose PopTorch counterpart has another name or another meaning: what the API
# reference says of each instead of "the same name and meaning".
POPTORCH_DIFFERS = {
    "popsim.Executor": "*PopTorch:* ``poptorch.PoplarExecutor``, the same meaning; popsim has "
                       "that name too.",
    "popsim.custom_op": "*PopTorch:* ``poptorch.custom_op`` runs a custom op written in Poplar; "
                        "popsim cannot run Poplar code, so it always raises, naming the op.",
}


def read_results(directive: Directive, name: str) -> Tuple[str, List[Dict[str, Any]]]:
    """The rows of the JSON file the directive's argument names (relative to its page; one
    object stands for a list of one), which the page then depends on."""
    env = directive.state.document.settings.env
    relative, path = env.relfn2path(directive.arguments[0], env.docname)
    env.note_dependency(relative)
    try:
        with open(path, encoding="utf-8") as file:
            rows = json.load(file)
    except (OSError, ValueError) as error:
        raise directive.error(f"{name}: cannot read {relative}: {error}")
    return relative, [rows] if isinstance(rows, dict) else rows


class ResultsTable(Directive):
    """``results-table FILE``: one row per object of the JSON list in FILE (relative to the
    page), one column per ``:columns:`` entry ``key=heading:format`` (format: a Python format
    spec such as ``,.0f`` or ``.2f``, ``yesno`` for booleans, ``%`` for a share; nested keys
    with ``.``, and ``a/b`` for the ratio of two keys). ``:where: key=value`` keeps the rows whose key has that value."""

    required_arguments = 1
    has_content = False
    option_spec = {"columns": directives.unchanged_required,
                   "where": directives.unchanged,
                   "caption": directives.unchanged}

    def run(self) -> List[nodes.Node]:
        relative, rows = read_results(self, "results-table")
        if self.options.get("where"):
            key, _, wanted = self.options["where"].partition("=")
            rows = [row for row in rows if str(self._value(row, key.strip())) == wanted.strip()]
        if not rows:
            raise self.error(f"results-table: no rows in {relative} for {self.options}")
        columns = []
        # Columns are separated by ", " before the next "key="; a format such as ",.0f" has no
        # space after its comma.
        for spec in re.split(r",\s+(?=[A-Za-z0-9_./]+=)", self.options["columns"]):
            key, _, rest = spec.strip().partition("=")
            heading, _, fmt = rest.partition(":")
            columns.append((key.strip(), heading.strip() or key.strip(), fmt.strip()))
        cells = [[heading for _, heading, _ in columns]]
        for row in rows:
            cells.append([self._format(self._value(row, key, relative), fmt)
                          for key, _, fmt in columns])
        return [self._table(cells)]

    def _value(self, row: Dict[str, Any], key: str, relative: str = "") -> Any:
        if "/" in key:  # a ratio of two keys
            numerator, denominator = key.split("/", 1)
            return self._value(row, numerator, relative) / self._value(row, denominator, relative)
        value: Any = row
        for part in key.split("."):
            if not isinstance(value, dict) or part not in value:
                raise self.error(f"results-table: {relative} has no '{key}' in {row}")
            value = value[part]
        return value

    @staticmethod
    def _format(value: Any, fmt: str) -> str:
        if fmt == "yesno":
            return "yes" if value else "no"
        if fmt == "%":
            return f"{value:.0%}"
        if fmt and isinstance(value, (int, float)):
            return format(value, fmt)
        return str(value)

    def _table(self, cells: List[List[str]]) -> nodes.table:
        table = nodes.table(classes=["results"])
        if self.options.get("caption"):
            table += nodes.title(text=self.options["caption"])
        group = nodes.tgroup(cols=len(cells[0]))
        table += group
        for _ in cells[0]:
            group += nodes.colspec(colwidth=1)
        head, body = nodes.thead(), nodes.tbody()
        group += head
        group += body
        for index, row in enumerate(cells):
            line = nodes.row()
            for text in row:
                entry = nodes.entry()
                entry += nodes.paragraph(text=text)
                line += entry
            (head if index == 0 else body).append(line)
        return table


class ResultsChart(Directive):
    """``results-chart FILE``: one point per object of the JSON list in FILE (relative to the
    page), ``:x:`` against ``:y:`` (keys) on log-log axes, each labelled by ``:label:``, with
    the line y = x and the band between the two ratios of ``:band:`` ("0.85, 1.18") drawn.
    Rendered as inline SVG, so the page needs no image file."""

    required_arguments = 1
    has_content = False
    option_spec = {"x": directives.unchanged_required, "y": directives.unchanged_required,
                   "label": directives.unchanged_required, "band": directives.unchanged,
                   "xlabel": directives.unchanged, "ylabel": directives.unchanged,
                   "caption": directives.unchanged}

    def run(self) -> List[nodes.Node]:
        plt = pyplot()
        relative, rows = read_results(self, "results-chart")
        try:
            points = [(float(row[self.options["x"]]), float(row[self.options["y"]]),
                       str(row[self.options["label"]])) for row in rows]
        except (ValueError, KeyError, TypeError) as error:
            raise self.error(f"results-chart: cannot read {relative}: {error}")
        if not points:
            raise self.error(f"results-chart: no rows in {relative}")
        low = min(min(x, y) for x, y, _ in points) / 1.6
        high = max(max(x, y) for x, y, _ in points) * 1.6
        figure, axes = plt.subplots(figsize=(7.0, 5.2))
        line = [low, high]
        axes.plot(line, line, color="0.4", linewidth=1, label="simulated = published")
        if self.options.get("band"):
            lower, upper = (float(part) for part in self.options["band"].split(","))
            axes.fill_between(line, [lower * v for v in line], [upper * v for v in line],
                              color="tab:green", alpha=0.15,
                              label=f"{lower:g} to {upper:g} x published")
        axes.scatter([x for x, _, _ in points], [y for _, y, _ in points], color="tab:blue",
                     zorder=3)
        # Labels alternate above and below their points, by x, so neighbours do not overlap.
        for order, (x, y, label) in enumerate(sorted(points)):
            axes.annotate(label, (x, y), textcoords="offset points",
                          xytext=(6, 3 if order % 2 else -10), fontsize=8)
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_xlim(low, high)
        axes.set_ylim(low, high)
        axes.set_xlabel(self.options.get("xlabel", self.options["x"]))
        axes.set_ylabel(self.options.get("ylabel", self.options["y"]))
        axes.grid(True, which="both", linewidth=0.3)
        axes.legend(loc="upper left", fontsize=8)
        figure.tight_layout()
        return inline_svg(figure, self.options.get("caption"))


def pyplot() -> Any:
    """matplotlib's pyplot, drawing without a display."""
    import matplotlib
    matplotlib.use("agg")
    import matplotlib.pyplot as plt
    return plt


def inline_svg(figure: Any, caption: Any = None) -> List[nodes.Node]:
    """A matplotlib figure as SVG inside the page (no image file), with its caption; the
    figure is closed."""
    import io

    plt = pyplot()
    plt.rcParams["svg.hashsalt"] = "popsim"  # the same ids from build to build
    svg = io.StringIO()
    figure.savefig(svg, format="svg", metadata={"Date": None})
    plt.close(figure)
    text = svg.getvalue()
    text = text[text.index("<svg"):]  # inline: no XML prologue
    result: List[nodes.Node] = [nodes.raw("", f'<div class="results-chart">{text}</div>',
                                          format="html")]
    if caption:
        result.append(nodes.paragraph(text=caption))
    return result


class ResultsBars(Directive):
    """``results-bars FILE``: one horizontal bar per object of the JSON list in FILE
    (relative to the page): its ``:value:`` key, labelled by ``:label:`` (a format string over
    the row's keys, such as ``{model} {isa}``), with a dashed line at ``:reference:`` (such
    as 1 for "as fast as eager") and a log scale with ``:log:``. Inline SVG, as
    results-chart."""

    required_arguments = 1
    has_content = False
    option_spec = {"value": directives.unchanged_required,
                   "label": directives.unchanged_required,
                   "reference": directives.unchanged, "log": directives.flag,
                   "xlabel": directives.unchanged, "caption": directives.unchanged}

    def run(self) -> List[nodes.Node]:
        plt = pyplot()
        relative, rows = read_results(self, "results-bars")
        try:
            bars = [(self.options["label"].format(**row), float(row[self.options["value"]]))
                    for row in rows]
        except (ValueError, KeyError, TypeError) as error:
            raise self.error(f"results-bars: cannot read {relative}: {error}")
        if not bars:
            raise self.error(f"results-bars: no rows in {relative} for {self.options}")
        figure, axes = plt.subplots(figsize=(7.0, 0.8 + 0.28 * len(bars)))
        positions = range(len(bars))
        axes.barh(positions, [value for _, value in bars], color="tab:blue", height=0.7)
        axes.set_yticks(list(positions))
        axes.set_yticklabels([label for label, _ in bars], fontsize=8)
        axes.invert_yaxis()  # the file's first row on top
        if "log" in self.options:
            axes.set_xscale("log")
        if self.options.get("reference"):
            axes.axvline(float(self.options["reference"]), color="0.3", linestyle="--",
                         linewidth=1)
        for position, (_, value) in zip(positions, bars):
            axes.annotate(f"{value:.3g}", (value, position), textcoords="offset points",
                          xytext=(3, -3), fontsize=7)
        axes.set_xlabel(self.options.get("xlabel", self.options["value"]))
        axes.grid(True, axis="x", which="both", linewidth=0.3)
        figure.tight_layout()
        return inline_svg(figure, self.options.get("caption"))


class PopsimFigure(Directive):
    """``popsim-figure NAME``: a figure of doc_figures.FIGURES, drawn from popsim's own runs
    when the docs build (inline SVG), with ``:caption:``."""

    required_arguments = 1
    has_content = False
    option_spec = {"caption": directives.unchanged}

    def run(self) -> List[nodes.Node]:
        pyplot()  # (the figures draw with it)
        from doc_figures import FIGURES

        name = self.arguments[0]
        if name not in FIGURES:
            raise self.error(f"popsim-figure: no figure '{name}'; there are {sorted(FIGURES)}")
        env = self.state.document.settings.env
        env.note_dependency(__file__.replace("popsim_docs.py", "doc_figures.py"))
        return inline_svg(FIGURES[name](), self.options.get("caption"))


def qualified_name(obj: Any, name: str) -> str:
    module = getattr(obj, "__module__", "") or ""
    qualname = getattr(obj, "__qualname__", "")
    return f"{module}.{qualname}" if module and qualname else name


def mark_poptorch_names(app: Any, what: str, name: str, obj: Any, options: Any,
                        lines: List[str]) -> None:
    """Adds to each class, function and option group of the API reference what PopTorch
    calls it, or that it is popsim's own."""
    if what == "method":
        if name in POPSIM_ONLY:
            reason = POPSIM_ONLY[name]
            lines.extend(["", "*popsim only:* PopTorch has no such method" +
                          (f" ({reason})" if reason else "") + "."])
        return
    if what not in ("class", "function", "exception"):
        return
    # A class's docstring and its __init__'s arrive one after the other: mark the first only.
    marked = app.env.temp_data.setdefault("popsim_marked_names", set())
    if name in marked:
        return
    marked.add(name)
    if not name.startswith("popsim.") or name.startswith("popsim.profiling"):
        if name.startswith("popsim.profiling"):
            lines.extend(["", "*popsim only:* PopTorch has no counterpart (its profiles are "
                          "PopVision's)."])
        return
    for key in (name, qualified_name(obj, name)):
        if key in POPTORCH_DIFFERS:
            lines.extend(["", POPTORCH_DIFFERS[key]])
            return
        if key in POPSIM_ONLY:
            reason = POPSIM_ONLY[key]
            lines.extend(["", "*popsim only:* PopTorch has no counterpart" +
                          (f" ({reason})" if reason else "") + "."])
            return
    short = name.split(".", 1)[1]
    if short.startswith("options._") or short.startswith("enums."):
        short = short.split(".", 1)[1]
    if short.startswith("_"):
        return
    lines.extend(["", f"*PopTorch:* ``poptorch.{short}``, the same name and meaning."])


def documented_objects(env: Any) -> Dict[int, str]:
    """id() of every Python object the API reference documents, to its documented name."""
    found: Dict[int, str] = {}
    for fullname in env.domaindata["py"]["objects"]:
        obj = resolve(fullname)
        if obj is not None:
            found[id(obj)] = fullname
    for module in env.domaindata["py"]["modules"]:
        obj = resolve(module)
        if obj is not None:
            found[id(obj)] = module
    return found


def resolve(fullname: str) -> Any:
    parts = fullname.split(".")
    for split in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        try:
            for part in parts[split:]:
                obj = getattr(obj, part)
        except AttributeError:
            return None
        return obj
    return None


def check_api_is_complete(app: Any, env: Any) -> None:
    """Warns (an error under -W) for each public name no page of the API reference documents."""
    documented = documented_objects(env)
    for module_name in API_MODULES:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if f"{module_name}.{name}" in env.domaindata["py"]["objects"]:
                continue
            if (inspect.isclass(obj) or inspect.isfunction(obj) or inspect.ismodule(obj)) and \
                    id(obj) in documented:
                continue
            LOGGER.warning(f"API reference: {module_name}.{name} is public (in {module_name}."
                           "__all__) but no page of docs/api documents it; add it to the page "
                           "of its topic.", type="popsim", subtype="api")


# Inline code on a guide page that names a documented object links to its entry in the API
# reference: ``popsim.X`` (a call's arguments aside), a popsim class or enum by its own name
# (``PipelinedExecution(...)``, ``OutputMode.Final``), and options as guide pages write them
# (``opts.deviceIterations(4)``, ``opts.Training.gradientAccumulation(8)``).
_CODE_NAME = re.compile(r"^([A-Za-z_][\w.]*)(\(.*\))?$", re.S)
_OPTION_GROUPS = ("Training", "Simulator", "TensorLocations", "Precision", "Jit",
                  "Distributed")


def _api_targets(env: Any) -> Dict[str, Tuple[str, str]]:
    """The names guide pages may use for each documented object -> (its page, its anchor)."""
    targets: Dict[str, Tuple[str, str]] = {}
    # A method of Options, an option group or the executor by its own name
    # (``deviceIterations(4)``, ``memoryReport()``), where only one object has it.
    methods: Dict[str, List[Tuple[str, str]]] = {}
    for fullname, entry in env.get_domain("py").objects.items():
        if entry.aliased:
            continue
        target = (entry.docname, entry.node_id)
        targets.setdefault(fullname, target)
        parts = fullname.split(".")
        if fullname.startswith("popsim.Options."):
            targets.setdefault("opts." + fullname[len("popsim.Options."):], target)
            methods.setdefault(parts[-1], []).append(target)
        if len(parts) == 4 and parts[:2] == ["popsim", "options"] and parts[2].startswith("_"):
            group = parts[2][1:].removesuffix("Options")  # _TrainingOptions -> Training
            if group in _OPTION_GROUPS:
                targets.setdefault(f"opts.{group}.{parts[3]}", target)
                targets.setdefault(f"{group}.{parts[3]}", target)
                methods.setdefault(parts[3], []).append(target)
        if fullname.startswith("popsim.Executor.") and len(parts) == 3:
            methods.setdefault(parts[2], []).append(target)
        if len(parts) >= 2 and parts[0] == "popsim" and parts[1][:1].isupper():
            targets.setdefault(".".join(parts[1:]), target)  # a class and its members
    for name, found in methods.items():
        # lowerCamelCase only: plain words (``compile``, ``train``) stay text.
        if len(set(found)) == 1 and name[:1].islower() and name != name.lower():
            targets.setdefault(name, found[0])
    return targets


# Names torch has too, which a page may mean as torch's.
_TORCH_NAMES = {"DataLoader", "Dataset", "Optimizer"}


def link_api_names(app: Any, doctree: nodes.document, docname: str) -> None:
    """Turns inline code naming a documented object into a link to it, on every page but the
    API reference's own and the C++ pages (whose names are C++'s)."""
    if docname.startswith(("api/", "cpp")) or app.builder.format != "html":
        return
    targets = app.env.temp_data.get("popsim_api_targets")
    if targets is None:
        targets = app.env.temp_data["popsim_api_targets"] = _api_targets(app.env)
    for literal in list(doctree.findall(nodes.literal)):
        if isinstance(literal.parent, (nodes.reference, nodes.literal_block)):
            continue
        match = _CODE_NAME.match(literal.astext().strip())
        if match is None or match.group(1) not in targets or match.group(1) in _TORCH_NAMES:
            continue
        target_doc, anchor = targets[match.group(1)]
        uri = app.builder.get_relative_uri(docname, target_doc) + "#" + anchor
        reference = nodes.reference("", "", internal=True, refuri=uri,
                                    reftitle=match.group(1))
        literal.replace_self(reference)
        reference += literal


# Doxygen's settings for the C++ reference: the public headers' /// comments, as XML for
# breathe (no HTML of its own).
_DOXYFILE = """
PROJECT_NAME = popsim
INPUT = {headers}
FILE_PATTERNS = *.h
OUTPUT_DIRECTORY = {output}
GENERATE_XML = YES
GENERATE_HTML = NO
GENERATE_LATEX = NO
EXTRACT_ALL = NO
EXTRACT_PRIVATE = NO
HIDE_UNDOC_MEMBERS = NO
EXCLUDE_SYMBOLS = popsim::optim::detail popsim::Session::State
JAVADOC_AUTOBRIEF = YES
QUIET = YES
WARNINGS = NO
WARN_IF_UNDOCUMENTED = NO
WARN_IF_DOC_ERROR = NO
"""


def run_doxygen(app: Any, config: Any) -> None:
    """Writes the XML of include/popsim where breathe_projects says, before pages are read."""
    import os
    import shutil
    import subprocess

    output = os.path.dirname(config.breathe_projects["popsim"])
    headers = os.path.join(app.srcdir, "..", "include", "popsim")
    if shutil.which("doxygen") is None:
        raise RuntimeError("popsim docs: the C++ reference needs Doxygen (apt install doxygen; "
                           "scripts/docs.sh installs it).")
    os.makedirs(output, exist_ok=True)
    subprocess.run(["doxygen", "-"], input=_DOXYFILE.format(headers=headers, output=output),
                   text=True, check=True, timeout=300)


def setup(app: Any) -> Dict[str, Any]:
    app.add_directive("results-table", ResultsTable)
    app.add_directive("results-chart", ResultsChart)
    app.add_directive("results-bars", ResultsBars)
    app.add_directive("popsim-figure", PopsimFigure)
    app.connect("doctree-resolved", link_api_names)
    app.connect("config-inited", run_doxygen)
    app.connect("autodoc-process-docstring", mark_poptorch_names)
    app.connect("env-check-consistency", check_api_is_complete)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}

