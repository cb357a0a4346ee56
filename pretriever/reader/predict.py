"""Reading passages into answers with a trained reader.

For each passage the reader scores every span of at most ``max_answer_length`` passage tokens by
``start logit + end logit`` and keeps its ``n_best`` non-overlapping spans (DPR's rule). The
answer to a question is then (``ReadOptions.rank``):

* ``passage``: the best span of the passage with the highest selection score, as DPR and
  C-MORE (section 3.1: "the span with the highest passage selection score is regarded as the
  final answer");
* ``span``: the best span score over all passages.

Example::

    reader = Reader.load("reader/")
    passage = Passage("hamlet-0", "Hamlet", "Hamlet is a tragedy by William Shakespeare.")
    answer = reader.read("who wrote Hamlet?", [passage])
    answer.text  # 'William Shakespeare'
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from pretriever.data import PassageLookup
from pretriever.models import resolve_device
from pretriever.reader.config import AnswerConfig, ReaderEvaluateConfig, ReadOptions
from pretriever.reader.errors import ReaderError
from pretriever.reader.model import load_reader_model
from pretriever.reader.spans import CharSpan, encode
from pretriever.retrieval import Passage, Searcher


@dataclass
class Span:
    """A candidate answer span: where it is in which passage read, its span score and its passage's selection score."""
    text: str
    start: int  # characters in the passage text
    end: int
    score: float  # start + end logit
    passage: int  # index in the passages read
    relevance: float  # the passage's selection logit


@dataclass
class Answer:
    """The reader's answer to a question: the best span, its passage and scores, and the n-best spans behind it."""
    question: str
    text: str
    score: float
    relevance: float
    passage: Passage
    passage_rank: int  # 0-based rank of the passage in the list read
    start: int
    end: int
    n_best: list[Span] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"question": self.question, "answer": self.text, "span_score": self.score,
                "selection_score": self.relevance, "passage_id": self.passage.passage_id,
                "title": self.passage.title, "passage_rank": self.passage_rank, "start": self.start,
                "end": self.end, "evidence": self.passage.text,
                "n_best": [asdict(s) for s in self.n_best]}


def best_spans(start, end, offsets: list[CharSpan | None], max_answer_length: int, n_best: int) -> list[tuple[int, int, float]]:
    """The ``n_best`` highest-scoring non-overlapping (start token, end token, score) spans of one
    passage, each at most ``max_answer_length`` tokens and inside the passage (DPR's ``_get_best_spans``)."""
    import torch  # lazily: torch is slow to import

    valid = torch.tensor([o is not None for o in offsets], dtype=torch.bool)
    length = len(offsets)
    scores = start[:length, None].float() + end[None, :length].float()
    i = torch.arange(length)
    width = i[None, :] - i[:, None]
    ok = (width >= 0) & (width < max_answer_length) & valid[:, None] & valid[None, :]
    scores = scores.masked_fill(~ok, float("-inf"))
    flat = scores.flatten()
    candidates = int(ok.sum())
    order = torch.topk(flat, min(candidates, max(n_best * max_answer_length * 4, n_best))).indices.tolist()
    chosen: list[tuple[int, int, float]] = []
    for index in order:
        s, e = divmod(index, length)
        if any(not (e < cs or s > ce) for cs, ce, _ in chosen):
            continue
        chosen.append((s, e, float(flat[index])))
        if len(chosen) == n_best:
            break
    return chosen


def whole_words(text: str, start: int, end: int) -> CharSpan:
    """A character span grown to whole words, so a span that starts or ends inside a word (a WordPiece
    such as ``##llin``) reads as the word (DPR's ``_extend_span_to_full_words``)."""
    while start > 0 and text[start - 1].isalnum() and text[start].isalnum():
        start -= 1
    while end < len(text) and text[end].isalnum() and text[end - 1].isalnum():
        end += 1
    return start, end


class Reader:
    """A trained reader (``pretriever reader train``) with its reading options."""

    def __init__(self, module, tokenizer, options: ReadOptions | None = None, path: Path | None = None):
        self.module, self.tokenizer = module, tokenizer
        self.options = options or ReadOptions()
        self.path = path

    @classmethod
    def load(cls, path: Path | str, options: ReadOptions | None = None) -> Reader:
        path = Path(path)
        if not path.is_dir():
            raise ReaderError(f"{path}: no such reader folder (train one with `pretriever reader train`)")
        module, tokenizer = load_reader_model(str(path))
        options = options or ReadOptions()
        return cls(module.to(resolve_device(options.device)).eval(), tokenizer, options, path)

    def spans(self, question: str, passages: list[Passage]) -> list[list[Span]]:
        """The n-best spans of every passage, in the order given."""
        import torch  # lazily: torch is slow to import

        opts = self.options
        device = next(self.module.parameters()).device
        was_training = self.module.training
        self.module.eval()
        out: list[list[Span]] = []
        try:
            for lo in range(0, len(passages), opts.batch_size):
                chunk = passages[lo:lo + opts.batch_size]
                enc = encode(self.tokenizer, [question] * len(chunk), [p.title for p in chunk],
                             [p.text for p in chunk], opts.max_length)
                features = {k: v.to(device)[None] for k, v in enc.features.items()}
                with torch.inference_mode():
                    result = self.module(**features)
                starts, ends = result["start_logits"][0].cpu(), result["end_logits"][0].cpu()
                relevance = result["relevance_logits"][0].float().cpu().tolist()
                for j, passage in enumerate(chunk):
                    offsets = enc.offsets[j]
                    row: dict[CharSpan, Span] = {}
                    for s, e, score in best_spans(starts[j], ends[j], offsets, opts.max_answer_length, opts.n_best):
                        cs, ce = whole_words(passage.text, offsets[s][0], offsets[e][1])
                        row.setdefault((cs, ce), Span(passage.text[cs:ce], cs, ce, score, lo + j, relevance[j]))
                    out.append(list(row.values()))
        finally:
            self.module.train(was_training)
        return out

    def read(self, question: str, passages: list[Passage]) -> Answer:
        """The answer to ``question`` from ``passages`` (best first, as retrieved), by ``options.rank``."""
        if not passages:
            raise ReaderError(f"no passage to read for the question {question!r} (nothing was retrieved)")
        per_passage = self.spans(question, passages)
        spans = [s for row in per_passage for s in row]
        if not spans:
            raise ReaderError(f"no answer span fits in the passages read for {question!r} (the question fills "
                              f"the {self.options.max_length} tokens of an input; raise max_length)")
        if self.options.rank == "passage":
            ranked = sorted((row for row in per_passage if row), key=lambda row: -row[0].relevance)
            best = ranked[0][0]
            n_best = ranked[0] + [row[0] for row in ranked[1:]]
        else:
            n_best = sorted(spans, key=lambda s: -s.score)
            best = n_best[0]
        passage = passages[best.passage]
        return Answer(question=question, text=best.text, score=best.score, relevance=best.relevance,
                      passage=passage, passage_rank=best.passage, start=best.start, end=best.end,
                      n_best=n_best[:self.options.n_best])


def passages_for(source: Searcher | PassageLookup, hits) -> list[Passage]:
    """The passages behind retrieved hits (text and title from the store ``source`` reads: a searcher, or a
    store's lookup), in rank order; ids not in the store are left out."""
    found = source.passages(h.passage_id for h in hits)
    return [p for p in found.values() if p.text is not None]


def load_reader(cfg: ReaderEvaluateConfig | AnswerConfig) -> Reader:
    """The reader ``cfg`` names, on the command's --device unless [..read] names another."""
    read = cfg.read if cfg.read.device is not None else replace(cfg.read, device=cfg.device)
    return Reader.load(cfg.reader, read)
