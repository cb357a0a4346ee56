"""Tiny randomly initialised models built offline from the packaged MiniLM's tokenizer (the T5, the BEIR subset
and the tokenizer are in pretriever.testing, which the benchmarks share)."""

from __future__ import annotations

from pathlib import Path

from pretriever.testing import minilm_tokenizer


def tiny_bert_st(path: Path, seed: int = 0, layers: int = 2, max_positions: int = 128, pooling: str = "cls",
                 normalize: bool = False, hidden: int = 32, tokenizer=None) -> Path:
    """A sentence-transformers model: a 2-layer BERT with hidden size 32 (MiniLM vocabulary, or ``tokenizer``'s),
    CLS pooling (or ``pooling``, then ``normalize``, e.g. mean + normalize as the packaged MiniLM)."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    from transformers import BertConfig, BertModel

    tok = tokenizer or minilm_tokenizer()
    config = BertConfig(vocab_size=len(tok), hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=4,
                        intermediate_size=2 * hidden, max_position_embeddings=max_positions)
    torch.manual_seed(seed)
    hf = path.with_name(path.name + "-hf")
    BertModel(config).save_pretrained(hf)
    tok.save_pretrained(hf)
    transformer = Transformer(str(hf), max_seq_length=64)
    modules = [transformer, Pooling(hidden, pooling_mode=pooling)] + ([Normalize()] if normalize else [])
    model = SentenceTransformer(modules=modules, device="cpu")
    model.save(str(path))
    return path


def tiny_condenser(path: Path, seed: int = 0, head_layers: int = 2, ar_layers: int = 0) -> Path:
    """A plain Hugging Face checkpoint laid out as Luyu/condenser's: a 2-layer BERT with its MLM head (hidden
    size 32, MiniLM vocabulary) and, beside it, ``model.pt`` with the Condenser head (``c_head.N.*``); with
    ``ar_layers``, also caskcsg CoT-MAE's AR decoder as its ``save_pretrained`` writes it (``d_head.N.*`` GPT-2
    blocks with their window-mask buffer ``attn.bias``, ``d_head_ln_f.*``)."""
    import torch
    from torch import nn
    from transformers import BertConfig, BertForMaskedLM
    from transformers.models.bert.modeling_bert import BertLayer

    tok = minilm_tokenizer()
    config = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=128)
    torch.manual_seed(seed)
    BertForMaskedLM(config).save_pretrained(path)
    tok.save_pretrained(path)
    head = nn.ModuleList(BertLayer(config) for _ in range(head_layers))
    state = {f"c_head.{k}": v for k, v in head.state_dict().items()}
    if ar_layers:
        from transformers import GPT2Config
        from transformers.models.gpt2.modeling_gpt2 import GPT2Block

        gpt2 = GPT2Config(vocab_size=tok.vocab_size, n_positions=128, n_embd=32, n_layer=2, n_head=4)
        blocks = nn.ModuleList(GPT2Block(gpt2, layer_idx=i) for i in range(ar_layers))
        for block in blocks:
            for p in block.parameters():
                p.data.normal_(0.0, 0.02)
        state |= {f"d_head.{k}": v for k, v in blocks.state_dict().items()}
        state |= {f"d_head.{i}.attn.bias": torch.tril(torch.ones(1, 1, 128, 128, dtype=torch.uint8))
                  for i in range(ar_layers)}
        norm = nn.LayerNorm(32)
        norm.weight.data.normal_(1.0, 0.1)
        state |= {f"d_head_ln_f.{k}": v for k, v in norm.state_dict().items()}
    torch.save(state, path / "model.pt")
    return path


def write_pairs(folder: Path, xs: list[str], ys: list[str]) -> Path:
    """A pairs folder of method cc: each (x, y) as (positive_text, query)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist([{"method": "cc", "query": y, "positive_text": x} for x, y in zip(xs, ys)]),
                   folder / "cc.parquet")
    return folder
