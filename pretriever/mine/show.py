"""Render pairs and statistics for the terminal (like the HLP paper's Tables 9-10)."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from pretriever.data.pairs import PairsManifest

QUERY_ANCHOR = "bold yellow"  # the evidential anchor of the query (DL: to P, CM: to E)
BACK_ANCHOR = "bold green"  # the positive's anchor linking back to Q
ENTITY_ANCHOR = "bold magenta"  # CM: the positive's anchor to the co-mentioned entity E
ANSWER = "bold cyan"  # QAC: the answer span in the positive and its wh-phrase in the question
SNIPPET = 600


def _highlight(text: str, spans: list[tuple[int | None, int | None, str]], limit: int | None = None) -> Text:
    out = Text(text)
    for start, end, style in spans:
        if start is not None and end is not None and 0 <= start < end:
            out.stylize(style, start, min(end, len(text)))
    if limit is not None and len(text) > limit:
        out.truncate(limit, overflow="ellipsis")
    return out


def render_pair(row: dict[str, Any], snippet: int = SNIPPET) -> Panel:
    """One mined pair as a panel for ``pretriever pairs show``: its query and positive with the anchors, entity and
    answer highlighted, the positive cut to ``snippet`` characters.
    """
    method = row["method"]
    query = _highlight(row["query"], [(row.get("query_anchor_start"), row.get("query_anchor_end"), QUERY_ANCHOR)])
    positive = _highlight(row["positive_text"], [
        (row.get("positive_anchor_start"), row.get("positive_anchor_end"), BACK_ANCHOR),
        (row.get("entity_anchor_start"), row.get("entity_anchor_end"), ENTITY_ANCHOR),
        (row.get("answer_start"), row.get("answer_end"), ANSWER),
    ], limit=snippet)
    parts: list[Any] = [Text.assemble(("Query", "bold"), f"  (title: {row.get('query_title')}, passage "
                                      f"{row['query_passage_id']})"), query, Text("")]
    parts += [Text.assemble(("Positive", "bold"), f"  (title: {row.get('positive_title')}, passage "
                                         f"{row['positive_passage_id']})"), positive]
    evidence = []
    if row.get("query_anchor"):
        target = row.get("entity") or row.get("positive_title")
        evidence.append(Text.assemble(("query anchor ", ""), (row["query_anchor"], QUERY_ANCHOR), f" -> {target}"))
    if row.get("positive_anchor"):
        evidence.append(Text.assemble(("positive anchor ", ""), (row["positive_anchor"], BACK_ANCHOR),
                                      f" -> {row.get('query_title')}"))
    if row.get("entity"):
        evidence.append(Text.assemble(("co-mentioned entity ", ""), (row["entity"], ENTITY_ANCHOR),
                                      f" (in-degree {row.get('entity_indegree')}; anchor in positive: "
                                      f"{row.get('entity_anchor')!r})"))
    if row.get("query_sentence_kept") is not None:
        evidence.append(Text("query sentence " + ("kept in" if row["query_sentence_kept"] else "removed from")
                             + " the positive"))
    if row.get("answer"):
        source = row.get("reference_url") or f"linked article {row.get('positive_title')}"
        evidence.append(Text.assemble(("answer ", ""), (row["answer"], ANSWER),
                                      f" ({row.get('answer_type')} -> {row.get('answer_phrase')!r}) from {source}"))
        evidence.append(Text(f"statement: {row.get('statement')}"))
    if evidence:
        parts += [Text(""), Text("Evidence", style="bold"), *evidence]
    if row.get("negative_passage_id"):
        parts += [Text(""), Text.assemble((f"Negative ({row.get('negative_kind')})", "bold"),
                                          f"  (title: {row.get('negative_title')})"),
                  _highlight(row["negative_text"], [], limit=snippet // 2)]
    return Panel(Group(*parts), title=f"{method}  {row['pair_id']}", title_align="left")


def stats_table(stats: dict[str, Any], manifest: PairsManifest | None = None) -> Table:
    """The ``pretriever mine`` summary table: pairs, distinct queries and positives, lengths and Q-P overlap per method
    (a method with no pairs shows a row of dashes).
    """
    table = Table(title="mined pairs")
    for column, justify in (("method", "left"), ("pairs", "right"), ("distinct queries", "right"),
                            ("distinct positives", "right"), ("query words", "right"),
                            ("passage words", "right"), ("Q-P overlap", "right")):
        table.add_column(column, justify=justify)
    methods = list(manifest.methods if manifest else {}) or list(stats.get("methods", {}))
    for method in methods:
        s = stats.get("methods", {}).get(method)
        if s is None or "pairs" not in s:  # no pairs (a report may still say why)
            table.add_row(method, "0", "-", "-", "-", "-", "-")
            continue
        overlap = f"{s['mean_overlap']:.3f}" if "mean_overlap" in s else "-"
        table.add_row(method, f"{s['pairs']:,}", f"{s['distinct_queries']:,}", f"{s['distinct_positives']:,}",
                      f"{s['mean_query_words']:.1f}", f"{s['mean_passage_words']:.1f}", overlap)
    return table
