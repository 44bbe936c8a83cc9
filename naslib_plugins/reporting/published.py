"""Published figures in our names, each with its source and the protocol it was measured under.

They ship with the package as published.csv, one row per figure (a Kendall and a Spearman are two
rows), read with the csv module:

- kind: correlation, search, or optimum (the benchmark's best architecture)
- method: our predictor (correlation) or optimizer (search) where we have one, else the method's
  name in lower case; name: the method as its paper names it
- space, dataset: our registry's names (a TransNAS-Bench-101 task is the dataset)
- metric: kendall or spearman (correlation); test_accuracy, test_error or rank (search, optimum)
- value, std: as printed (std empty where the paper gives none)
- split (test or val: what the accuracy was measured on), n_archs, epochs, batch_size, runs
  (figures averaged), cost, condition: the protocol as the source states it, empty where it
  states nothing
- settings: for a search figure, the config `KEY=VALUE ...` (alternatives `A|B`) a run of our
  optimizer `method` needs to be set beside it; empty: no run of ours is compared with it
- source: authors, venue, year and the table or figure; note: a caveat a reader needs

A markdown file in the older anchors.md layout is still read (parse_anchors): prose around three
kinds of markdown table (K/S on NB201 from the ZiCo paper, the Suite-Zero Spearman grid, the NB201
search results); the table's layout decides how it is read, and a table of any other layout is an
error rather than silently ignored.
"""
from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from naslib_plugins.data.readers import stand_in
from naslib_plugins.errors import BenchmarkFileError

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

NB201 = "nasbench201"
NB201_DATASETS = {"CIFAR-10": "cifar10", "CIFAR-100": "cifar100", "ImageNet16-120": "ImageNet16-120"}
# the papers' proxy names -> our predictor names; a proxy we do not implement keeps its paper name
PROXY_NAMES = {
    "ZiCo": "zico", "#Params": "params", "SynFlow": "synflow", "NASWOT": "nwot", "nwot": "nwot",
    "snip": "snip", "grasp": "grasp", "flops": "flops", "params": "params", "synflow": "synflow",
    "grad_norm": "grad_norm", "NTK": "ntk",
}
TNB_TASKS = {"Obj": "class_object", "Scn": "class_scene", "Jig": "jigsaw", "Room": "room_layout",
             "AE": "autoencoder", "Nrm": "normal", "Seg": "segmentsemantic"}
SUITE_ZERO_COLUMNS = {
    "NB101": ("nasbench101", "cifar10"), "201C10": (NB201, "cifar10"), "201C100": (NB201, "cifar100"),
    "201IN16": (NB201, "ImageNet16-120"), "NB301": ("nasbench301", "cifar10"),
    **{f"mi-{k}": ("transbench101_micro", v) for k, v in TNB_TASKS.items()},
    **{f"ma-{k}": ("transbench101_macro", v) for k, v in TNB_TASKS.items()},
}
# search-table methods -> (our optimizer, the config values a run must have to be compared; a tuple
# lists the values that all count)
SEARCH_METHODS = {
    "NASI (4T)": ("nasi", {"steps": 400}),
    "NASI (T)": ("nasi", {"steps": 100}),
    "NASWOT (N=1000)": ("zc-random", {"predictor": "nwot", "budget": 1000}),
    "ZiCo, exhaustive argmax": ("zc-random", {"predictor": "zico", "budget": 15625}),
    "Zero-Cost-PT + ZiCo": ("zc-pt", {"predictor": "zico"}),
    # Zero-Cost-PT's code reads NASWOT's codes in eval mode (our nwot_eval); Mellor's in train mode
    "Zero-Cost-PT + NASWOT": ("zc-pt", {"predictor": ("nwot", "nwot_eval")}),
}
# the published searches use real images and true labels; an agnostic-mode run is not their protocol
STANDARD_DATA = {"labels": "true", "data": "real"}


def standard_view(config: dict, dataset: str) -> dict:
    """A search's config as the published protocol sees it: the random labels of stand-in images
    (CIFAR-10's for CIFAR-100 or ImageNet16-120, whose images are absent: data.readers.stand_in)
    are that protocol's labels as far as the data allows, so the key goes; its data line says so."""
    return {k: v for k, v in config.items() if k != "labels"} if stand_in({**config, "dataset": dataset}) else config


_ROW_NOTE = re.compile(r"^(.*?)(?:,\s*(\w+ paper[^,]*)|\s*\((\w+ paper[^)]*)\))$")
_NUM = r"-?\d*\.?\d+"  # also the papers' ".61"
_MEAN_STD = re.compile(rf"^({_NUM})\s*\+-\s*({_NUM})$")


@dataclass(frozen=True)
class Source:
    """Where a figure comes from: a short label, the citation, its protocol, and the line of
    anchors.md naming it (None for the CSV, whose every row names its source)."""

    label: str
    text: str
    line: int | None
    protocol: str

    @property
    def paper(self) -> str:
        """`ZiCo` of `ZiCo Table 3` and of `ZiCo paper`: the tables pick one paper's figures by it."""
        return self.label.split(" ", 1)[0]


@dataclass(frozen=True)
class CorrelationAnchor:
    predictor: str
    space: str
    dataset: str
    kendall: float | None
    spearman: float | None
    metric: str  # test_accuracy or val_accuracy: what the paper correlated with
    text: str  # as printed (".61/.80" is Kendall/Spearman, ".31" Spearman alone)
    source: Source
    note: str = ""

    def values(self) -> str:
        return self.text


@dataclass(frozen=True)
class SearchAnchor:
    method: str  # as anchors.md names it
    optimizer: str | None  # ours, None when we have no counterpart
    settings: dict
    space: str
    dataset: str
    mean: float
    std: float | None
    cost: str
    text: str  # as printed
    source: Source
    note: str = ""

    def values(self) -> str:
        return self.text + ("" if self.cost in ("", "-") else f", {self.cost}")

    def matches(self, optimizer: str, space: str, dataset: str, config: dict) -> bool:
        if (self.optimizer, self.space, self.dataset) != (optimizer, space, dataset):
            return False
        if any(config.get(k) not in (v if isinstance(v, tuple) else (v,)) for k, v in self.settings.items()):
            return False
        # `config` as standard_view gives it, for the dataset searched on (a transfer row's random
        # labels were a choice on the dataset searched, not a stand-in's on the one reported)
        return all(config[k] == v for k, v in STANDARD_DATA.items() if k in config)


@dataclass
class Anchors:
    origin: str  # the file, as the leaderboard names it
    note: str  # the caution that protocols differ
    correlation: list[CorrelationAnchor] = field(default_factory=list)
    search: list[SearchAnchor] = field(default_factory=list)
    optimum: dict[tuple[str, str], float] = field(default_factory=dict)  # best test accuracy per benchmark

    def for_benchmark(self, space: str, dataset: str) -> list[CorrelationAnchor]:
        return [a for a in self.correlation if (a.space, a.dataset) == (space, dataset)]

    def for_search(self, optimizer: str, space: str, dataset: str, config: dict) -> list[SearchAnchor]:
        return [a for a in self.search if a.matches(optimizer, space, dataset, config)]


@dataclass
class _Section:
    heading: str
    heading_line: int
    prose: list[tuple[int, str]] = field(default_factory=list)
    tables: list[list[tuple[int, list[str]]]] = field(default_factory=list)

    def source(self) -> Source:
        """The section's `Source:` line with the heading as protocol, or else the heading as
        source and the first prose line as protocol (the layout anchors.md uses for both)."""
        named = next(((n, t) for n, t in self.prose if t.startswith("Source:")), None)
        if named:
            text = named[1].removeprefix("Source:").strip()
            return Source(_label(text), text, named[0], self.heading)
        protocol = next((t for n, t in self.prose if n > self.heading_line), "")
        return Source(_label(self.heading), self.heading, self.heading_line, protocol)


def _sections(text: str) -> list[_Section]:
    sections = [_Section("", 0)]
    table: list[tuple[int, list[str]]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(re.fullmatch(r"-+", c) for c in cells):
                table.append((number, cells))
            continue
        if table:
            sections[-1].tables.append(table)
            table = []
        if line.startswith("## "):
            sections.append(_Section(line[3:].strip(), number))
        elif line.strip() and not line.startswith("#"):  # the title is neither prose nor a section
            sections[-1].prose.append((number, line.strip()))
    if table:
        sections[-1].tables.append(table)
    return sections


def _label(text: str) -> str:
    """`ZiCo paper (Li et al., ICLR 2023), Table 3; ...` -> `ZiCo Table 3`."""
    name = re.split(r" \(| paper|,", text, maxsplit=1)[0].strip()
    number = re.search(r"\b(Table|Fig\.) ?(\d+)", text)
    return f"{name} {number.group(1)} {number.group(2)}" if number else name


def _float(cell: str, path: Path, line: int) -> float:
    try:
        return float(cell)
    except ValueError:
        raise BenchmarkFileError(f"{path} line {line}: not a number: {cell!r}") from None


def _pair(cell: str, path: Path, line: int) -> tuple[float, float]:
    """`.61/.80` -> (Kendall, Spearman)."""
    parts = cell.split("/")
    if len(parts) != 2:
        raise BenchmarkFileError(f"{path} line {line}: expected Kendall/Spearman, got {cell!r}")
    return _float(parts[0], path, line), _float(parts[1], path, line)


def _paragraph(section: _Section, start: str) -> tuple[int, str] | None:
    """The prose paragraph (consecutive lines) that begins with `start`."""
    lines = section.prose
    first = next((i for i, (_, t) in enumerate(lines) if t.startswith(start)), None)
    if first is None:
        return None
    text, i = lines[first][1], first + 1
    while i < len(lines) and lines[i][0] == lines[i - 1][0] + 1:
        text, i = f"{text} {lines[i][1]}", i + 1
    return lines[first][0], text


def _ks_table(out: Anchors, section: _Section, table: list, path: Path) -> None:
    source = section.source()
    header = table[0][1]
    for number, row in table[1:]:
        name = PROXY_NAMES.get(row[0], PROXY_NAMES.get(row[0].split(" (")[0], row[0]))
        for col, cell in zip(header[1:], row[1:]):
            k, s = _pair(cell, path, number)
            out.correlation.append(CorrelationAnchor(name, NB201, NB201_DATASETS[col], k, s, "test_accuracy",
                                                     cell, source))
    # "ZiCo also reports NB101 .46/.63 and TransNAS-Bench-101-micro: autoencoder .24/.35, ..."
    found = _paragraph(section, "ZiCo also reports")
    if found:
        number, text = found
        also = Source("ZiCo paper", text, number, "not stated in anchors.md (ZiCo paper, beside its Table 3)")
        nb101, _, micro = text.partition("TransNAS-Bench-101-micro:")
        pairs = [("nasbench101", m) for m in re.finditer(rf"(NB101) ({_NUM}/{_NUM})", nb101)]
        pairs += [("transbench101_micro", m) for m in re.finditer(rf"(\w+) ({_NUM}/{_NUM})", micro)]
        for space, m in pairs:
            dataset = "cifar10" if space == "nasbench101" else m.group(1)
            k, s = _pair(m.group(2), path, number)
            out.correlation.append(CorrelationAnchor("zico", space, dataset, k, s, "test_accuracy", m.group(2), also))


def _suite_zero_table(out: Anchors, section: _Section, table: list, path: Path) -> None:
    source = section.source()
    header = table[0][1]
    for number, row in table[1:]:
        name = PROXY_NAMES.get(row[0], row[0])
        for col, cell in zip(header[1:], row[1:]):
            space, dataset = SUITE_ZERO_COLUMNS[col]
            out.correlation.append(CorrelationAnchor(name, space, dataset, None, _float(cell, path, number),
                                                     "val_accuracy", cell, source))


def _search_table(out: Anchors, section: _Section, table: list, path: Path) -> None:
    source = section.source()
    header = table[0][1]
    for number, row in table[1:]:
        m = _ROW_NOTE.match(row[0])
        method, note = (m.group(1), m.group(2) or m.group(3)) if m else (row[0], None)
        row_source = Source(note, note, number, source.protocol) if note else source
        optimizer, settings = SEARCH_METHODS.get(method, (None, {}))
        for col, cell in zip(header[1:-1], row[1:-1]):
            value = _MEAN_STD.match(cell)
            if not value:
                raise BenchmarkFileError(f"{path} line {number}: expected 'mean +- std', got {cell!r}")
            out.search.append(SearchAnchor(method, optimizer, settings, NB201, NB201_DATASETS[col],
                                           _float(value.group(1), path, number), _float(value.group(2), path, number),
                                           row[-1], cell, row_source))


def parse_anchors(path: Path) -> Anchors:
    """Every table of anchors.md (and ZiCo's extra figures and the NB201 optimum in its prose)."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise BenchmarkFileError(f"anchors file {path}: {e.strerror}") from None
    sections = _sections(text)
    intro = " ".join(t for _, t in sections[0].prose)
    out = Anchors(str(path), note=intro.split(" NB201 optimum")[0])
    optimum = re.search(r"NB201 optimum[^:]*:(.*?)\.(?:\s|$)", intro)
    if optimum:
        for name, value in re.findall(r"(CIFAR-10|CIFAR-100|ImageNet16-120) ([\d.]+)", optimum.group(1)):
            out.optimum[(NB201, NB201_DATASETS[name])] = float(value)
    for section in sections:
        for table in section.tables:
            number, header = table[0]
            for row_number, row in table[1:]:
                if len(row) != len(header):
                    raise BenchmarkFileError(f"{path} line {row_number}: {len(row)} cells under a header of "
                                             f"{len(header)}")
            if header[0] == "proxy" and header[1:] == list(NB201_DATASETS):
                _ks_table(out, section, table, path)
            elif header[0] == "proxy" and all(c in SUITE_ZERO_COLUMNS for c in header[1:]):
                _suite_zero_table(out, section, table, path)
            elif header[0] == "method" and header[-1] == "cost" and all(c in NB201_DATASETS for c in header[1:-1]):
                _search_table(out, section, table, path)
            else:
                raise BenchmarkFileError(f"{path} line {number}: a table with columns {header} is not a layout "
                                         "the anchors parser knows")
    return out


PACKAGE_FILE = "published.csv"
PACKAGE_ORIGIN = f"naslib_plugins/reporting/{PACKAGE_FILE}"
CSV_NOTE = ("The papers' protocols differ (all architectures or a sample, test or validation accuracy, batch size, "
            "runs): compare a figure only under the protocol listed with its source.")
CSV_COLUMNS = ("kind", "method", "name", "space", "dataset", "metric", "value", "std", "split", "n_archs", "epochs",
               "batch_size", "runs", "cost", "settings", "condition", "source", "note")
REQUIRED = ("kind", "method", "name", "space", "dataset", "metric", "value", "source")
METRICS = {"correlation": ("kendall", "spearman"), "search": ("test_accuracy", "test_error", "rank"),
           "optimum": ("test_accuracy",)}
SPLITS = {"test": "test", "val": "validation"}
COUNTS = ("n_archs", "epochs", "batch_size", "runs")
FIGURE_KEY = ("kind", "method", "name", "space", "dataset", "metric", "source")  # what tells two figures apart
SEARCH_UNITS = {"test_accuracy": "", "test_error": " (test error)", "rank": " (rank)"}
MEASURED = {"test_error": "error", "rank": "rank"}  # what a figure measures where not accuracy or a correlation


def default_anchors() -> Traversable:
    """The published figures shipped with the package."""
    return resources.files(__package__) / PACKAGE_FILE


def load_anchors(source: Path | Traversable | None = None) -> Anchors:
    """The published figures in `source` (default: the package's): a .csv in the package file's
    layout, anything else a markdown file in anchors.md's."""
    if source is None or source == default_anchors():
        return read_published_csv(default_anchors(), PACKAGE_ORIGIN)
    if source.name.lower().endswith(".csv"):
        return read_published_csv(source, str(source))
    return parse_anchors(Path(source))


def _check_value(metric: str, value: float) -> bool:
    if not math.isfinite(value):
        return False
    if metric in ("kendall", "spearman"):
        return -1 <= value <= 1
    if metric == "rank":
        return value >= 1
    return 0 <= value <= 100


def _protocol(row: dict) -> str:
    """The protocol columns as one phrase: `15625 archs, 200-epoch test accuracy, batch 64`."""
    measured = " ".join(p for p in (row["epochs"] and f"{row['epochs']}-epoch", SPLITS.get(row["split"]),
                                    MEASURED.get(row["metric"], "accuracy")) if p)
    parts = [row["n_archs"] and f"{row['n_archs']} archs", measured, row["batch_size"] and f"batch {row['batch_size']}",
             row["runs"] and f"{row['runs']} runs", row["condition"]]
    return ", ".join(p for p in parts if p) or "not stated"


def _setting_value(text: str):
    """`400` -> 400, `1.0` -> 1.0, `true` -> True, `nwot` -> 'nwot': as a config's YAML gives them."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _settings(cell: str, where: str) -> dict:
    """`predictor=nwot|nwot_eval budget=1000` -> {"predictor": ("nwot", "nwot_eval"), "budget": 1000}."""
    settings = {}
    for item in cell.split():
        key, sep, values = item.partition("=")
        if not (key and sep and values):
            raise BenchmarkFileError(f"{where}: settings: expected KEY=VALUE, got {item!r}")
        alternatives = tuple(_setting_value(v) for v in values.split("|"))
        settings[key] = alternatives if len(alternatives) > 1 else alternatives[0]
    return settings


def _checked_row(row: dict, where: str) -> tuple[float, float | None, dict]:
    """The row's value, std and settings; a one-line error for anything out of place."""
    missing = [c for c in REQUIRED if not row[c]]
    if missing:
        raise BenchmarkFileError(f"{where}: empty {', '.join(missing)}")
    kind, metric = row["kind"], row["metric"]
    if kind not in METRICS:
        raise BenchmarkFileError(f"{where}: kind {kind!r}: expected one of {', '.join(METRICS)}")
    if metric not in METRICS[kind]:
        raise BenchmarkFileError(f"{where}: metric {metric!r}: a {kind} figure is one of {', '.join(METRICS[kind])}")
    if row["split"] not in ("", *SPLITS) or (kind == "correlation" and not row["split"]):
        raise BenchmarkFileError(f"{where}: split {row['split']!r}: expected test or val"
                                 + (" (a correlation must say which)" if kind == "correlation" else " or empty"))
    numbers = []
    for column in ("value", "std"):
        try:
            numbers.append(float(row[column]) if row[column] else None)
        except ValueError:
            raise BenchmarkFileError(f"{where}: {column}: not a number: {row[column]!r}") from None
    value, std = numbers
    if not _check_value(metric, value):
        raise BenchmarkFileError(f"{where}: {metric} {row['value']} is out of range")
    if std is not None and std < 0:
        raise BenchmarkFileError(f"{where}: std {row['std']} is negative")
    for column in COUNTS:
        if row[column] and not (row[column].isdigit() and int(row[column]) > 0):
            raise BenchmarkFileError(f"{where}: {column}: expected a positive integer, got {row[column]!r}")
    if row["settings"] and kind != "search":
        raise BenchmarkFileError(f"{where}: settings are for search figures only")
    return value, std, _settings(row["settings"], where)


def _source(row: dict) -> Source:
    return Source(_label(row["source"]), row["source"], None, _protocol(row))


def _printed(value: str) -> str:
    """`0.61` -> `.61`, `-0.02` -> `-.02`: correlations as the papers print them."""
    return re.sub(r"^(-?)0\.", r"\1.", value)


def read_published_csv(source: Path | Traversable, origin: str) -> Anchors:
    """The figures of a CSV in published.csv's layout, checked row by row."""
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as e:
        raise BenchmarkFileError(f"anchors file {origin}: {e.strerror}") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = reader.fieldnames or []
    missing, unknown = [c for c in CSV_COLUMNS if c not in header], [c for c in header if c not in CSV_COLUMNS]
    if missing or unknown:
        raise BenchmarkFileError(f"{origin}: " + "; ".join(
            p for p in (missing and f"missing columns {', '.join(missing)}",
                        unknown and f"unknown columns {', '.join(unknown)}") if p))
    out = Anchors(origin, note=CSV_NOTE)
    correlations: dict[tuple, dict] = {}  # a figure's Kendall and Spearman rows, in file order
    keys: dict[tuple, int] = {}
    for raw in reader:
        where = f"{origin} line {reader.line_num}"
        if None in raw or None in raw.values():
            raise BenchmarkFileError(f"{where}: expected {len(header)} cells")
        row = {k: v.strip() for k, v in raw.items()}
        value, std, settings = _checked_row(row, where)
        key = tuple(row[c] for c in FIGURE_KEY)
        if key in keys:
            raise BenchmarkFileError(f"{where}: the same figure as line {keys[key]}")
        keys[key] = reader.line_num
        if row["kind"] == "optimum":
            out.optimum[(row["space"], row["dataset"])] = value
        elif row["kind"] == "search":
            printed = row["value"] + (f" +- {row['std']}" if row["std"] else "") + SEARCH_UNITS[row["metric"]]
            out.search.append(SearchAnchor(row["name"], row["method"] if settings else None, settings, row["space"],
                                           row["dataset"], value, std, row["cost"], printed, _source(row), row["note"]))
        else:
            figure = correlations.setdefault(tuple(v for c, v in row.items() if c not in ("metric", "value", "std")),
                                             {"row": row, "values": {}, "printed": {}})
            figure["values"][row["metric"]] = value
            figure["printed"][row["metric"]] = _printed(row["value"])
    for figure in correlations.values():
        row, values, printed = figure["row"], figure["values"], figure["printed"]
        text = "/".join(printed[m] for m in ("kendall", "spearman") if m in printed)
        if "spearman" not in printed:  # alone, a figure reads as a Spearman
            text += " (Kendall)"
        out.correlation.append(CorrelationAnchor(row["method"], row["space"], row["dataset"], values.get("kendall"),
                                                 values.get("spearman"), f"{row['split']}_accuracy", text,
                                                 _source(row), row["note"]))
    return out
