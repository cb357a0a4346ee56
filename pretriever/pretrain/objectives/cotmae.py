"""CoT-MAE (Wu et al., 2022; as in Wu et al., 2023, eqs 8-11).

Inputs: pairs (x, y): x goes to the encoder, y to the decoder (for ``qc`` x is the passage
and y its generated query; for ``cc`` two passages of one document). Loss = w (L_mlm +
L_ctx-mlm), w = ``mlm_weight`` (1):

* L_mlm: the encoder reconstructs x masked at ``encoder_mask_rate`` (30%) from its
  unmasked tokens (eq. 4);
* L_ctx-mlm: a shallow decoder, ``decoder_layers`` transformer layers initialised from
  scratch, reads d_0 = [h_x ; e(y_1) ... e(y_n)], x's sentence embedding (the model's own
  pooling and normalisation, as ``encode`` returns it; the paper: last-layer [CLS]) followed by
  the embeddings (the encoder's embedding layer) of y masked at ``decoder_mask_rate``
  (45%), attending only over y's own positions, and reconstructs y's masked tokens
  through the shared MLM head (eqs 8-10).

Requires a BERT-style encoder. Example: ``pretriever pretrain pairs/ --objective cotmae
--out model/``. Paper: Wu et al., "ConTextual Masked Auto-Encoder for Dense Passage
Retrieval", AAAI 2023; the MLM terms are averaged over masked tokens.
"""

from __future__ import annotations

import torch

from pretriever.pretrain.objectives.base import Objective, mlm_loss, new_layers, register, run_layers


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

    Example::

        import torch

        from pretriever.pretrain.config import PretrainConfig
        from pretriever.pretrain.run import build_objective

        cfg = PretrainConfig(pairs="pairs/", out="model/", objective="cotmae", max_length=32)
        model, objective, notes = build_objective(cfg, "cpu")  # the packaged MiniLM plus its MLM head
        torch.manual_seed(0)
        batch = objective.prepare(
            ["Vitamin D deficiency is common among elderly people in northern countries.",
             "Aspirin irreversibly inhibits cyclooxygenase in blood platelets."],
            ["who lacks vitamin d in the north", "how does aspirin act on platelets"])
        out = objective(**batch)  # {"loss": total, "mlm": ..., "ctx_mlm": ...}
        out["loss"].backward()
        assert set(out) == {"loss", *objective.terms}

    From the command line: ``pretriever pretrain qc-pairs/ --objective cotmae --mix qc:1 --out model/``.

    References:
        - Wu et al., "ConTextual Masked Auto-Encoder for Dense Passage Retrieval", AAAI 2023 (CoT-MAE;
          arXiv:2208.07670, the query-as-context paper's "Wu et al. 2022").
        - Wu et al., "Query-as-context Pre-training for Dense Passage Retrieval", EMNLP 2023, section 2.4
          (eqs 8-11).
    """

    name = "cotmae"
    terms = ("mlm", "ctx_mlm")
    head = "decoder"

    def __init__(self, mlm_model, tokenizer, cfg, pooling):
        super().__init__(mlm_model, tokenizer, cfg, pooling)
        self.encoder_rate = cfg.encoder_mask_rate
        self.decoder_rate = cfg.decoder_mask_rate
        self.decoder = new_layers(mlm_model, cfg.decoder_layers)

    def prepare(self, xs: list[str], ys: list[str]) -> dict[str, torch.Tensor]:
        x, y = self.tokenize(list(xs)), self.tokenize(list(ys))
        x_ids, x_labels = self.mask(x, self.encoder_rate)
        y_ids, y_labels = self.mask(y, self.decoder_rate)
        return {"x_ids": x_ids, "x_mask": x["attention_mask"], "x_labels": x_labels,
                "y_ids": y_ids, "y_mask": y["attention_mask"], "y_labels": y_labels}

    def decoder_input(self, h: torch.Tensor, y_ids: torch.Tensor) -> torch.Tensor:
        """d_0 = [h_x ; embeddings of masked y without its own [CLS]] (eq. 8)."""
        embedded = self.encoder.embeddings(input_ids=y_ids)
        return torch.cat([h.unsqueeze(1).to(embedded.dtype), embedded[:, 1:]], dim=1)

    def forward(self, x_ids: torch.Tensor, x_mask: torch.Tensor, x_labels: torch.Tensor, y_ids: torch.Tensor,
                y_mask: torch.Tensor, y_labels: torch.Tensor) -> dict[str, torch.Tensor]:
        last = self.encoder(input_ids=x_ids, attention_mask=x_mask).last_hidden_state
        mlm = mlm_loss(self.mlm_head, last, x_labels)
        h = self.sentence_embedding(last, x_mask)
        decoded = run_layers(self.decoder, self.decoder_input(h, y_ids), y_mask)
        ctx = mlm_loss(self.mlm_head, decoded, y_labels)
        return {"loss": self.mlm_weight * (mlm + ctx), "mlm": mlm, "ctx_mlm": ctx}
