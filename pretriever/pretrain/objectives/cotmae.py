"""CoT-MAE (Wu et al., 2022; as in Wu et al., 2023, eqs 8-11, and the code behind its tables).

Inputs: pairs (x, y): x is a passage; y its context (for ``qc`` a generated query, for
``cc`` another passage of the document). The encoder masks its input at
``encoder_mask_rate`` (30%, whole words) and reconstructs it (L_mlm, eq. 4); a decoder
initialised from scratch reconstructs the context from h, the encoder's pooled vector of
the other text before normalisation (the model's own pooling; the paper: the raw last-layer
[CLS], at the scale of the token embeddings beside it). ``decoder`` picks how:

* ``ar`` (caskcsg/ir ``cotmae-qc``, ``--use_dec_head --n_dec_head_layers 1 --attn_window 3
  --dec_head_coef 1.0``): GPT-2 blocks (``decoder_layers``, 1) decode the *unmasked* y
  left to right from [h_x ; e(y_1) ... e(y_n)]; each position sees h_x and the last
  ``attn_window`` (3) positions up to itself; GPT-2's dropout before and LayerNorm after;
  L_ar = cross-entropy of each next token through the shared MLM head.
* ``symmetric`` (CoT-MAE v1): x and y are both encoded (each at 30%), and each is decoded
  at ``decoder_mask_rate`` (45%) from its partner's embedding by ``decoder_layers`` (2)
  transformer layers: L_ctx-mlm over both directions.
* ``mlm`` (the paper text's eq. 10, one direction): [h_x ; e(y masked at 45%)] through
  ``decoder_layers`` (1) transformer layers reconstructs y's masked tokens (eqs 8-10).
* ``auto`` (default): ``ar`` for ``qc`` examples, ``symmetric`` for the others, per example.

Loss = w L_mlm + v (L_ctx-mlm + L_ar), w = ``mlm_weight`` (1), v = ``decoder_weight`` (1): the
context's decoder term has the same weight whichever decoder reads it (caskcsg: ``enc_head_mlm_coef``
and ``dec_head_coef``, 1 each, beside the encoder's MLM at 1); a term that no example of the batch has
counts 0. Requires a BERT-style encoder. Example: ``pretriever pretrain pairs/
--objective cotmae --out model/``. Paper: Wu et al., "ConTextual Masked Auto-Encoder for
Dense Passage Retrieval", AAAI 2023; the MLM terms are averaged over masked tokens.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from pretriever.pretrain.config import DECODERS
from pretriever.pretrain.objectives.base import (Objective, masked, mlm_loss, new_layers, register, rows_of,
                                                 run_layers)


def window_mask(mask: torch.Tensor, window: int, dtype: torch.dtype) -> torch.Tensor:
    """(batch, 1, n, n) additive mask of the AR decoder: position i sees position 0 (the embedding h) and
    positions i - window + 1 .. i, never padding (caskcsg's ``attn_window`` on GPT-2's causal mask)."""
    n = mask.shape[1]
    i = torch.arange(n, device=mask.device)[:, None]
    j = torch.arange(n, device=mask.device)[None, :]
    seen = (j <= i) & ((j == 0) | (j > i - window))
    seen = seen[None, None] & mask[:, None, None, :].bool()
    return (~seen).to(dtype) * torch.finfo(dtype).min


def ar_layers(mlm_model, n: int) -> nn.ModuleList:
    """``n`` GPT-2 blocks shaped from the encoder's config, GPT-2's initialisation (c_proj scaled by
    1/sqrt(2n), as caskcsg's ``_init_weights``)."""
    from transformers import GPT2Config
    from transformers.models.gpt2.modeling_gpt2 import GPT2Block

    c = mlm_model.config
    config = GPT2Config(vocab_size=c.vocab_size, n_positions=c.max_position_embeddings, n_embd=c.hidden_size,
                        n_layer=n, n_head=c.num_attention_heads, activation_function=c.hidden_act,
                        resid_pdrop=c.hidden_dropout_prob, embd_pdrop=c.hidden_dropout_prob,
                        attn_pdrop=c.attention_probs_dropout_prob, layer_norm_epsilon=c.layer_norm_eps,
                        initializer_range=c.initializer_range, bos_token_id=None, eos_token_id=None)
    config._attn_implementation = "eager"  # the windowed mask is given whole
    layers = nn.ModuleList(GPT2Block(config, layer_idx=k) for k in range(n))
    with torch.no_grad():
        for name, p in layers.named_parameters():
            if name.endswith("weight") and p.dim() == 2:
                std = c.initializer_range / math.sqrt(2 * n) if "c_proj" in name else c.initializer_range
                p.normal_(0.0, std)
            elif name.endswith("bias"):
                p.zero_()
    return layers


@register
class CoTMAE(Objective):
    """CoT-MAE: the encoder reconstructs its masked input (MLM) while a shallow decoder, initialised
    from scratch, reconstructs the pair's other text from the encoder's embedding of x, which so has
    to carry the context (the terms in ``terms``; the module docstring gives the formulas).

    Requirements:
        1. A BERT-style masked-LM encoder and its tokenizer (see :class:`Objective`).
        2. (x, y) pairs: for ``qc`` x is the passage and y one of its generated queries
           (query-as-context); for ``cc`` two passages of one document (CoT-MAE's own setting).

    Inputs:
        +------------------------------------------------------+--------+
        | Texts                                                | Labels |
        +======================================================+========+
        | (passage, generated query of the passage) pairs      | none   |
        +------------------------------------------------------+--------+
        | (passage, passage of the same document) pairs        | none   |
        +------------------------------------------------------+--------+

    Example: as :class:`Objective`'s, with ``objective="cotmae"`` (``out`` then holds ``mlm`` and ``ctx_mlm``).
    From the command line: ``pretriever pretrain qc-pairs/ --objective cotmae --mix qc:1 --out model/``.

    References:
        - Wu et al., "ConTextual Masked Auto-Encoder for Dense Passage Retrieval", AAAI 2023 (CoT-MAE;
          arXiv:2208.07670, the query-as-context paper's "Wu et al. 2022").
        - Wu et al., "Query-as-context Pre-training for Dense Passage Retrieval", EMNLP 2023, section 2.4
          (eqs 8-11).
    """

    name = "cotmae"
    terms = ("mlm", "ctx_mlm", "ar")
    heads = {"c_head.": "decoder", "d_head.": "ar_decoder", "d_head_ln_f.": "ar_norm"}  # caskcsg's names

    def __init__(self, mlm_model, tokenizer, cfg, pooling):
        super().__init__(mlm_model, tokenizer, cfg, pooling)
        if cfg.decoder not in DECODERS:
            raise ValueError(f"decoder must be one of {', '.join(DECODERS)}, got {cfg.decoder!r}")
        self.kind = cfg.decoder
        self.encoder_rate = cfg.encoder_mask_rate
        self.decoder_rate = cfg.decoder_mask_rate
        self.window = cfg.attn_window
        self.decoder_weight = cfg.decoder_weight
        self.decoder = (new_layers(mlm_model, cfg.decoder_layers or (1 if self.kind == "mlm" else 2))
                        if self.kind != "ar" else None)
        self.ar_decoder = ar_layers(mlm_model, cfg.decoder_layers or 1) if self.kind in ("auto", "ar") else None
        if self.ar_decoder is not None:
            self.ar_dropout = nn.Dropout(mlm_model.config.hidden_dropout_prob)
            self.ar_norm = nn.LayerNorm(mlm_model.config.hidden_size, eps=mlm_model.config.layer_norm_eps)

    def decoder_of(self, method: str | None) -> str:
        if self.kind != "auto":
            return self.kind
        return "ar" if method == "qc" else "symmetric"

    def prepare(self, xs: list[str], ys: list[str], methods: list[str] | None = None) -> dict[str, torch.Tensor]:
        """Encoder rows: every x, then the y of symmetric examples. MLM-decoder rows (``y_*``): the y of mlm
        and symmetric examples, then the x of symmetric ones; ``y_src`` is the encoder row whose embedding
        conditions each. AR rows (``ar_*``): the unmasked y of ar examples, conditioned on ``ar_src``."""
        kinds = [self.decoder_of(m) for m in (methods or [None] * len(xs))]
        sym = [i for i, k in enumerate(kinds) if k == "symmetric"]
        one_way = [i for i, k in enumerate(kinds) if k == "mlm"]
        ar = [i for i, k in enumerate(kinds) if k == "ar"]
        enc = self.tokenize(list(xs) + [ys[i] for i in sym])
        ids, labels = self.mask(enc, self.encoder_rate)
        out = {"x_ids": ids, "x_mask": enc["attention_mask"], "x_labels": labels}
        targets = [ys[i] for i in one_way + sym] + [xs[i] for i in sym]
        if targets:
            dec = self.tokenize(targets)
            y_ids, y_labels = self.mask(dec, self.decoder_rate)
            source = one_way + sym + [len(xs) + j for j in range(len(sym))]
            out.update(y_ids=y_ids, y_mask=dec["attention_mask"], y_labels=y_labels, y_src=torch.tensor(source))
        if ar:
            unmasked = self.tokenize([ys[i] for i in ar])
            out.update(ar_ids=unmasked["input_ids"], ar_mask=unmasked["attention_mask"], ar_src=torch.tensor(ar))
        return out

    def decoder_input(self, h: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """d_0 = [h ; embeddings of the target without its own [CLS]] (eq. 8)."""
        embedded = self.encoder.embeddings(input_ids=ids)
        return torch.cat([h.unsqueeze(1).to(embedded.dtype), embedded[:, 1:]], dim=1)

    def ar_loss(self, h: torch.Tensor, ids: torch.Tensor, mask: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
        """Next-token cross-entropy of the AR decoder over the target's non-padding tokens after [CLS]."""
        hidden = self.ar_dropout(self.decoder_input(h, ids))
        attention = window_mask(mask, self.window, hidden.dtype)
        for block in self.ar_decoder:
            out = block(hidden, attention_mask=attention)
            hidden = out[0] if isinstance(out, tuple) else out
        hidden = self.ar_norm(hidden)
        labels = ids.masked_fill(mask == 0, -100)
        return mlm_loss(self.mlm_head, hidden[:, :-1], labels[:, 1:], count)  # position t predicts token t + 1

    encoder_rows = (("x_ids", "x_mask", "x_labels"), "x_mask")
    decoder_rows = ((("y_ids", "y_mask", "y_labels", "y_src"), "y_mask"), (("ar_ids", "ar_mask", "ar_src"), "ar_mask"))

    def counts(self, inputs):
        counts = {"mlm": masked(inputs["x_labels"])}
        if "y_labels" in inputs:
            counts["ctx_mlm"] = masked(inputs["y_labels"])
        if "ar_mask" in inputs:
            counts["ar"] = (inputs["ar_mask"][:, 1:] != 0).sum()
        return counts

    def weights(self):
        return {"mlm": self.mlm_weight, "ctx_mlm": self.decoder_weight, "ar": self.decoder_weight}

    def encode(self, inputs):
        last = self.encoder(input_ids=inputs["x_ids"], attention_mask=inputs["x_mask"]).last_hidden_state
        return self.pooled(last, inputs["x_mask"]), last

    def row_terms(self, h, state, inputs, counts):
        return {"mlm": mlm_loss(self.mlm_head, state, inputs["x_labels"], counts["mlm"])}

    def batch_terms(self, h, inputs, counts):
        """The decoders' terms: each decoder row reads the embedding of its source row (``y_src``, ``ar_src``)."""
        ctx = ar = h.new_zeros((), dtype=torch.float32)
        if "y_ids" in inputs:
            decoded = run_layers(self.decoder, self.decoder_input(h[inputs["y_src"]], inputs["y_ids"]), inputs["y_mask"],
                                 inputs["y_labels"] != -100)  # the masked positions' states only
            ctx = mlm_loss(self.mlm_head, decoded, inputs["y_labels"], counts["ctx_mlm"])
        if "ar_ids" in inputs:
            ar = self.ar_loss(h[inputs["ar_src"]], inputs["ar_ids"], inputs["ar_mask"], counts["ar"])
        return {"ctx_mlm": ctx, "ar": ar}

    def batch_pieces(self, inputs, size):
        """Decoder rows, at most ``size`` at a time: each family (MLM decoder, AR decoder) on its own."""
        return [rows_of(inputs, family, slice(i, i + size))
                for family in self.decoder_rows if family[0][0] in inputs
                for i in range(0, len(inputs[family[0][0]]), size)]
