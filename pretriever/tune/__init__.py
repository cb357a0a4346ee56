"""``pretriever tune``: choose dense, BM25 or a fusion for a corpus without labels.

:func:`pretriever.tune.run.run` makes pseudo-queries from the corpus (:mod:`pretriever.tune.generators`: masked ICT, titles,
HLP's linked pairs), scores every candidate (:mod:`pretriever.tune.candidates`) over the index with the
pseudo-queries' positives masked (:mod:`pretriever.tune.overlay`), and keeps the best only when it is clearly
better than dense retrieval (:mod:`pretriever.tune.choose`). The choice goes to ``INDEX_DIR/tune.json`` and to
``index.json`` (:mod:`pretriever.index.tuned`), where search, evaluate, serve and answer find it.
"""

from pretriever.tune.candidates import Candidate, candidates
from pretriever.tune.choose import Choice, bootstrap, choose
from pretriever.tune.config import TuneConfig
from pretriever.tune.generators import GENERATORS, PseudoQueries, TuneError, make_generator
from pretriever.tune.run import TUNE_JSON, TuneResult

__all__ = ["Candidate", "Choice", "GENERATORS", "PseudoQueries", "TUNE_JSON", "TuneConfig", "TuneError",
           "TuneResult", "bootstrap", "candidates", "choose", "make_generator"]
