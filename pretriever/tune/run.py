"""``pretriever tune`` without the command line: :func:`run` scores every candidate on each generator's
pseudo-queries (over the index with those queries' positives masked), chooses, validates on real judgments when
given (after the choice, which never sees them), and writes ``INDEX_DIR/tune.json`` and the ``tuned`` entry of
``index.json``.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pretriever.data import PassageLookup, load_qrels, load_queries, queries_in_qrels
from pretriever.data.qa import word_tokens
from pretriever.evaluate.core import EvaluationOptions, evaluate_retrievers
from pretriever.evaluate.tasks import QrelsTask
from pretriever.index import IndexFolder
from pretriever.index.tuned import TUNE_JSON
from pretriever.metrics import overlap_ratio
from pretriever.progress import QUIET, Reporter
from pretriever.retrieval import Retriever, VectorSearch
from pretriever.stage import StageResult
from pretriever.tune.candidates import DENSE, Candidate, candidates
from pretriever.tune.choose import Choice, bootstrap, choose, paired, ranking, tau
from pretriever.tune.config import TuneConfig
from pretriever.tune.generators import GENERATORS, PseudoQueries, TuneError, make_generator
from pretriever.tune.manifest import TuneManifest
from pretriever.tune.overlay import MaskedDense, Remembered, masked_bm25, masked_texts

DEPTH = 100  # passages fused per system, as `evaluate --hybrid` takes them (nDCG@10 needs the top 10)
COMPARED = "compared dense"  # the --compare index's dense retrieval, beside the candidates


@dataclass
class TuneResult(StageResult):
    """A tune of the index ``out``: ``manifest`` is what tune.json holds (written unless a dry run)."""

    manifest: TuneManifest | None = field(default=None, kw_only=True)
    choice: Choice
    candidates: list[Candidate]
    generators: dict[str, dict[str, Any]]
    validation: dict[str, Any] | None
    seconds: dict[str, float]
    bm25_source: str = ""
    left_out: dict[str, str] = field(default_factory=dict)  # default generators that cannot run or made nothing -> why
    compared: dict[str, Any] | None = None  # --compare: the other index's dense row and the paired difference
    written: list[Path] = field(default_factory=list)

    def to_manifest(self, cfg: TuneConfig) -> TuneManifest:
        """tune.json's content: the choice, every candidate's pseudo (and real) score, the generators and timings.

        Args:
            cfg: the run's settings, recorded beside the choice.

        Returns:
            tune.json's content, typed.
        """
        scores = self.choice.scores
        real = (self.validation or {}).get("nDCG@10", {})
        return TuneManifest.from_json({
            "choice": {"label": self.choice.label, "setting": self.setting.to_json(), "best": self.choice.best,
                       "kept_dense": self.choice.kept_dense, "reason": self.choice.reason},
            "candidates": [{"label": c.label, "setting": c.setting.to_json(),
                            "pseudo_nDCG@10": round(scores[c.label].mean, 4),
                            "interval": [round(scores[c.label].low, 4), round(scores[c.label].high, 4)],
                            "per_generator": {g: round(v, 4) for g, v in scores[c.label].per_generator.items()},
                            **({"real_nDCG@10": round(real[c.label], 4)} if c.label in real else {})}
                           for c in self.candidates],
            "generators": self.generators, "left_out": self.left_out, "bm25": self.bm25_source,
            **({"compare": self.compared} if self.compared else {}),
            "agreement": self.choice.agreement,
            "validation": self.validation,
            "seconds": self.seconds, "config": cfg.to_json()})

    @property
    def setting(self):
        return next(c.setting for c in self.candidates if c.label == self.choice.label)


def score_candidates(cands: list[Candidate], dense: Retriever, lexical: Retriever, queries: dict[str, str],
                     qrels: dict[str, dict[str, int]], lookup) -> dict[str, list[float]]:
    """Per-query nDCG@10 of every candidate (queries in ``qrels`` order), MaxP over the store's documents."""
    result = evaluate_retrievers([c.build(dense, lexical) for c in cands], QrelsTask(queries, qrels, DEPTH),
                                 EvaluationOptions(store=lookup, overlap=False))
    return {c.label: [result.per_query[c.label][q]["nDCG@10"] for q in result.query_ids] for c in cands}


def real_overlap(queries: dict[str, str], qrels: dict[str, dict[str, int]], lookup,
                 prepend_title: bool) -> float | None:
    """Mean share of a real query's words found in its best-overlapping judged document."""
    docs = {d for judged in qrels.values() for d, grade in judged.items() if grade > 0}
    texts = lookup.passage_texts(docs, prepend_title)
    ratios = []
    for qid, judged in qrels.items():
        words = word_tokens(queries[qid])
        found = [overlap_ratio(words, set(word_tokens(texts[d]))) for d, g in judged.items() if g > 0 and d in texts]
        found = [r for r in found if r is not None]
        if found:
            ratios.append(max(found))
    return sum(ratios) / len(ratios) if ratios else None


def run(cfg: TuneConfig, report: Reporter = QUIET) -> TuneResult:
    """Tune ``cfg.index`` (see the module docstring); returns the result and, unless ``dry_run``, writes it.
    ``report`` hears each step (pseudo-queries made, candidates scored, validation)."""
    started = time.perf_counter()
    folder = IndexFolder(cfg.index, cfg.corpus)
    if folder.is_bm25:
        raise TuneError(f"{cfg.index} is a BM25 index: tune chooses between a dense index, its BM25 and their "
                        "fusions; give the dense index folder")
    seconds: dict[str, float] = {}
    with ExitStack() as held:
        system = held.enter_context(folder.open(device=cfg.device, require_store=True, report=report))
        if not isinstance(system, VectorSearch):
            raise TuneError(f"{cfg.index}: its retriever cannot encode passages again; tune needs a dense index")
        lookup = system.lookup
        made = pseudo_queries(cfg, lookup, report)  # first: a named generator that makes none fails at once
        other = held.enter_context(_open_compared(cfg, lookup.path, report)) if cfg.compare is not None else None
        lexical_system, source = folder.bm25(lookup, report)
        bm25 = lexical_system.retriever
        prepend = _prepends(system)
        per_query: dict[str, dict[str, list[float]]] = {}
        generators: dict[str, dict[str, Any]] = {}
        cands: list[Candidate] = []
        compared: dict[str, dict[str, list[float]]] = {}
        for name, pseudo in made.pseudo.items():
            t1 = time.perf_counter()
            report.message(f"{name}: {len(pseudo.queries):,} pseudo-queries, encoding {len(pseudo.masked):,} masked passages")
            dense = MaskedDense(system, masked_texts(pseudo.masked, prepend), cfg.batch_size)
            lexical = Remembered(masked_bm25(lookup, pseudo.masked, bm25.options) if pseudo.masked else bm25, "bm25")
            t2 = time.perf_counter()
            cands = candidates(dense, cfg.prf)
            report.message(f"{name}: scoring {len(cands)} candidates")
            per_query[name] = score_candidates(cands, dense, lexical, pseudo.queries, pseudo.qrels, lookup)
            if other is not None:
                report.message(f"{name}: scoring {cfg.compare}'s dense retrieval on the same pseudo-queries")
                baseline = MaskedDense(other, masked_texts(pseudo.masked, _prepends(other)), cfg.batch_size)
                compared[name] = {COMPARED: score_candidates(cands[:1], baseline, lexical, pseudo.queries,
                                                             pseudo.qrels, lookup)[DENSE],
                                  DENSE: per_query[name][DENSE]}
            generators[name] = {"queries": len(pseudo.queries), "masked": len(pseudo.masked),
                                "skipped": pseudo.skipped, "skipped_because": dict(pseudo.skips.most_common()),
                                "overlap": _round(pseudo.mean_overlap),
                                "mask_seconds": round(made.seconds[name] + t2 - t1, 2),
                                "score_seconds": round(time.perf_counter() - t2, 2),
                                "examples": [{"query": pseudo.queries[q], "positive": next(iter(pseudo.qrels[q]))}
                                             for q in list(pseudo.queries)[:3]]}
        seconds["choice_inputs"] = round(time.perf_counter() - started, 2)
        choice = choose(per_query, cfg.bootstrap, cfg.seed)
        summary = _compared(cfg, compared) if other is not None else None
        seconds["pseudo_total"] = round(time.perf_counter() - started, 2)
        validation = None
        if cfg.qrels is not None:  # after the choice: nothing above reads it
            report.message(f"validating on {cfg.qrels}")
            validation = _validate(cfg, cands, system, bm25, lookup, prepend, choice)
            seconds["validation"] = round(time.perf_counter() - started - seconds["pseudo_total"], 2)
    result = TuneResult(choice, cands, generators, validation, seconds, source, made.left_out, summary,
                        out=cfg.index)
    result.manifest = result.to_manifest(cfg)
    if not cfg.dry_run:
        result.manifest.write(cfg.index)
        folder.record_tuned(result.setting, TUNE_JSON)
        result.written = [cfg.index / TUNE_JSON, cfg.index / "index.json"]
    return result


@dataclass
class Made:
    """The pseudo-queries of the generators that fit (by name, in the order tried) with the seconds each took to
    make, and the default ones left out, with why."""

    pseudo: dict[str, PseudoQueries]
    seconds: dict[str, float]
    left_out: dict[str, str]


def pseudo_queries(cfg: TuneConfig, lookup: PassageLookup, report: Reporter = QUIET) -> Made:
    """Every generator's pseudo-queries, made before anything is encoded, so that a generator that cannot run
    (:meth:`~pretriever.tune.generators.Generator.missing`) or makes none fails the run at once when named, and
    is left out (with why) from the default set.

    Args:
        cfg: the run's settings (the generators, n, seed and pairs).
        lookup: the store the index searches.
        report: hears each generator left out.

    Returns:
        The pseudo-queries made and the generators left out.

    Raises:
        TuneError: a named generator made none, or no generator of the default set fits.
    """
    made = Made({}, {}, {})
    for name in cfg.generators:
        started = time.perf_counter()
        generator = make_generator(name, cfg.pairs)
        why = generator.missing()
        if why is None:
            pseudo = generator.make(lookup, cfg.n, cfg.seed)
            if pseudo.queries:
                made.pseudo[name], made.seconds[name] = pseudo, time.perf_counter() - started
                continue
            why = f"it made no pseudo-query from {lookup.path} ({pseudo.why_none()})"
        if not cfg.by_default:
            raise TuneError(f"the {name} generator was asked for but {why}; leave it out of --queries-from")
        made.left_out[name] = f"left out by default because {why}"
        report.message(f"{name}: {made.left_out[name]}")
    if not made.pseudo:
        raise TuneError(f"no pseudo-query generator fits {lookup.path}: "
                        + "; ".join(f"{name} {why}" for name, why in made.left_out.items()) + ". Each needs: "
                        + "; ".join(f"{name}, {GENERATORS[name].needs}" for name in made.left_out))
    return made


def _validate(cfg: TuneConfig, cands: list[Candidate], system, bm25, lookup, prepend: bool,
              choice: Choice) -> dict[str, Any]:
    """Every candidate on the real judgments: nDCG@10, Kendall tau against the pseudo scores, nDCG@10 lost."""
    qrels = load_qrels(cfg.qrels)
    queries = queries_in_qrels(load_queries(cfg.queries), qrels, cfg.queries, cfg.qrels)
    per_query = score_candidates(cands, MaskedDense(system, {}), Remembered(bm25, "bm25"), queries, qrels, lookup)
    real = {c: sum(v) / len(v) for c, v in per_query.items()}
    pseudo = {c: s.mean for c, s in choice.scores.items()}
    best = ranking(real)[0]
    return {"qrels": str(cfg.qrels), "queries": len(qrels), "nDCG@10": real, "best": best,
            "kendall_tau": tau(pseudo, real), "lost": real[best] - real[choice.label],
            "best_on_pseudo_lost": real[best] - real[choice.best],
            "overlap": _round(real_overlap(queries, qrels, lookup, prepend)), **qrels.described()}


def _prepends(system) -> bool:
    """Whether the index's passages were encoded as "title text" (as its masked passages must be again)."""
    encoder = system.meta.encoder
    return encoder.prepend_title if encoder is not None else True


def _open_compared(cfg: TuneConfig, store: Path, report: Reporter):
    """The --compare index, opened to search by vector; it must index ``store``, the tuned index's store."""
    other = IndexFolder(cfg.compare, cfg.corpus).open(device=cfg.device, require_store=True, report=report)
    if not isinstance(other, VectorSearch) or Path(other.lookup.path).resolve() != Path(store).resolve():
        why = ("not a dense index (its retriever cannot encode passages again)" if not isinstance(other, VectorSearch)
               else f"indexes {other.lookup.path}, not {store}: the pseudo-queries' positives must be passages of both")
        other.close()
        raise TuneError(f"--compare {cfg.compare}: {why}")
    return other


def _compared(cfg: TuneConfig, compared: dict[str, dict[str, list[float]]]) -> dict[str, Any]:
    """The --compare index's dense score and the paired difference (this index's dense minus it), each with its
    95% bootstrap interval, weighted over generators as the candidates are."""
    theirs = bootstrap({g: {COMPARED: v[COMPARED]} for g, v in compared.items()}, cfg.bootstrap, cfg.seed)[COMPARED]
    ours = bootstrap({g: {DENSE: v[DENSE]} for g, v in compared.items()}, cfg.bootstrap, cfg.seed)[DENSE]
    change = paired(compared, DENSE, COMPARED, cfg.bootstrap, cfg.seed)
    return {"index": str(cfg.compare), "dense": _scored(theirs), "this_dense": _scored(ours),
            "difference": _scored(change)}


def _scored(s) -> dict[str, Any]:
    return {"pseudo_nDCG@10": round(s.mean, 4), "interval": [round(s.low, 4), round(s.high, 4)],
            "per_generator": {g: round(v, 4) for g, v in s.per_generator.items()}}


def _round(value: float | None) -> float | None:
    return round(value, 4) if value is not None else None
