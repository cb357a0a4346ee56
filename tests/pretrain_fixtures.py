"""Tiny randomly initialised models built offline from the packaged MiniLM's tokenizer (tests and benchmarks)."""

from __future__ import annotations

from pathlib import Path

from pretriever.models import resolve_model


def minilm_tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(resolve_model(None))


def tiny_t5(path: Path, seed: int = 0) -> Path:
    """A 2-layer T5 with d_model 32 over the MiniLM WordPiece vocabulary, saved with its tokenizer."""
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    tok = minilm_tokenizer()
    config = T5Config(vocab_size=tok.vocab_size, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2,
                      num_heads=4, pad_token_id=tok.pad_token_id, eos_token_id=tok.sep_token_id,
                      decoder_start_token_id=tok.pad_token_id)
    torch.manual_seed(seed)
    T5ForConditionalGeneration(config).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def tiny_bert_st(path: Path, seed: int = 0, layers: int = 2, max_positions: int = 128) -> Path:
    """A sentence-transformers model: a 2-layer BERT with hidden size 32 (MiniLM vocabulary), CLS pooling."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    from transformers import BertConfig, BertModel

    tok = minilm_tokenizer()
    config = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=layers, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=max_positions)
    torch.manual_seed(seed)
    hf = path.with_name(path.name + "-hf")
    BertModel(config).save_pretrained(hf)
    tok.save_pretrained(hf)
    transformer = Transformer(str(hf), max_seq_length=64)
    model = SentenceTransformer(modules=[transformer, Pooling(32, pooling_mode="cls")], device="cpu")
    model.save(str(path))
    return path


def scifact_mini(folder: Path, scifact: Path, n_docs: int = 30, n_queries: int = 6) -> Path:
    """A BEIR folder: the documents judged for the first ``n_queries`` SciFact test queries, then others up to
    ``n_docs``, with those queries and their judgements (split test)."""
    import json

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "qrels").mkdir(exist_ok=True)
    qrels = [line.split("\t") for line in (scifact / "qrels" / "test.tsv").read_text().splitlines()[1:]]
    wanted = list(dict.fromkeys(q[0] for q in qrels))[:n_queries]
    judged = [q for q in qrels if q[0] in wanted]
    needed = {q[1] for q in judged}
    docs = []
    with (scifact / "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            if doc["_id"] in needed or len(docs) < n_docs - len(needed):
                docs.append(doc)
    queries = [json.loads(line) for line in (scifact / "queries.jsonl").read_text().splitlines()]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries if q["_id"] in wanted),
                                          encoding="utf-8")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        "\t".join(q) + "\n" for q in judged), encoding="utf-8")
    return folder
