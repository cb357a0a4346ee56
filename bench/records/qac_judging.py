"""What the dated qac judgement scripts (bench/judge_qac_*.py) share: a judged triplet as a JSON-lines record, the
file, and the rates per group. The judgements themselves stay in each dated script, as the record of that day."""
import json
from collections import defaultdict


def record(r: dict, run: str, judgement: tuple, doubtful: tuple[str, ...], with_statement: bool = False,
           **extra) -> dict:
    """A mined triplet ``r`` with its judgement ``(answerable, type fits, grammatical, why)``; ``doubtful``: the
    question openings a stricter reader may fail (in-place wh-words); ``extra``: fields after the run's name."""
    ans, typ, gram, why = judgement
    b, s, e = r["positive_text"], r["answer_start"], r["answer_end"]
    statement = {"statement": r["statement"]} if with_statement else {}
    return {"route": r["context_source"], "run": run, **extra, "question": r["query"], **statement,
            "answer": r["answer"], "answer_type": r["answer_type"], "phrase": r["answer_phrase"],
            "context": ("..." if s > 200 else "") + b[max(0, s - 200):e + 150] + ("..." if e + 150 < len(b) else ""),
            "answerable": ans, "type_fits": typ, "grammatical": gram, "pass": ans and typ and gram, "why": why,
            "grammar_doubtful": r["query"].startswith(doubtful)}


def write(path: str, records: list[dict]) -> None:
    with open(path, "w") as f:
        for o in records:
            f.write(json.dumps(o, ensure_ascii=False) + "\n")


def print_rates(records: list[dict], keys, digits: int = 0) -> None:
    """Counts per group: ``keys(record)`` gives the groups a record counts in."""
    agg = defaultdict(lambda: [0] * 6)  # n, pass, answerable, type, grammar, pass and not doubtful
    for o in records:
        for key in keys(o):
            a = agg[key]
            a[0] += 1; a[1] += o["pass"]; a[2] += o["answerable"]; a[3] += o["type_fits"]; a[4] += o["grammatical"]
            a[5] += o["pass"] and not o["grammar_doubtful"]
    for k, a in agg.items():
        print(k, f"n={a[0]} pass={a[1]} ({a[1]/a[0]:.{digits}%}) answerable={a[2]} type={a[3]} grammar={a[4]} "
                 f"pass, doubtful in-place failed={a[5]} ({a[5]/a[0]:.{digits}%})")
