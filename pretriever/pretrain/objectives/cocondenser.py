"""coCondenser (Gao and Callan, 2022; as in Wu et al., 2023, eqs 5-7).

Inputs: pairs (x, y) of related texts: two passages of one document (``cc``) or a passage
and one of its generated queries (``qc``). Both are masked (``mask_rate``, 15%) and
encoded in one forward pass. Loss = w (L_mlm + L_aux) + L_cl, w = ``mlm_weight`` (1):

* L_mlm: MLM on the encoder's last layer (eq. 4);
* L_aux: the Condenser head, ``head_layers`` fresh transformer layers over
  [h ; h_1^M ... h_n^M] (h the span's sentence embedding, then layer-M token states,
  M = L/2 by default), predicts the same masked tokens through the same MLM head (eq. 6);
* L_cl: the official coCondenser loss (luyug/Condenser, caskcsg/ir ``cocondenser/modeling.py``):
  the 2B x 2B matrix of scale x sim(h_i, h_j) over all 2B spans of the batch, diagonal
  masked; every span is an anchor whose positive is its partner and whose negatives are
  the 2B - 2 other spans (eq. 5 written for both spans of a pair).

The head reads h, the model's own pooled vector before normalisation (the paper: the raw last-layer
[CLS], which ``--pooling cls`` gives and saves; under mean pooling, the mean of the last layer's token
states); L_cl scores the model's sentence embedding (h normalised, as ``encode`` returns it): sim is
cosine (``similarity``, or dot) times ``scale`` (20, as ``pretriever train``; the paper: dot, 1).
Requires a BERT-style encoder (``AutoModelForMaskedLM`` with ``cls``/``lm_head``).
Example: ``pretriever pretrain pairs/ --objective cocondenser --mix qc:1 --out model/``.
Paper: Gao and Callan, "Unsupervised Corpus Aware Language Model Pre-training for Dense
Passage Retrieval", ACL 2022; the MLM terms are averaged over masked tokens.
"""

from __future__ import annotations

import torch
from torch import nn

from pretriever.pretrain.distributed import gather
from pretriever.pretrain.objectives.base import (MASKED_ROWS, Objective, masked, mlm_losses, new_layers, register,
                                                 run_layers)


def contrastive_loss(embeddings: torch.Tensor, scale: float, similarity: str = "cos") -> torch.Tensor:
    """coCondenser's L_cl over ``embeddings`` = [x_1 .. x_n ; y_1 .. y_n] (2n spans): cross-entropy of each span's
    partner among the other 2n - 1 spans, logits scale x sim, the span itself masked out (the official loss, with
    the pairs stacked instead of interleaved). Several processes: every process's spans are the candidates
    (:func:`~pretriever.pretrain.distributed.gather`), this process's are the anchors, and the sum is divided by
    the global batch's 2nW anchors, so the processes' terms add up to one process's loss at that batch."""
    z = nn.functional.normalize(embeddings, dim=-1) if similarity == "cos" else embeddings
    candidates, first = gather(z)
    scores = (z @ candidates.T).float() * scale
    rows = torch.arange(len(z), device=z.device)
    itself = torch.zeros_like(scores, dtype=torch.bool)
    itself[rows, first + rows] = True
    scores = scores.masked_fill(itself, float("-inf"))
    target = first + rows.roll(len(z) // 2)  # x_i <-> y_i
    return nn.functional.cross_entropy(scores, target, reduction="sum") / len(candidates)


@register
class CoCondenser(Objective):
    """coCondenser: MLM through the encoder and through a Condenser head that reads the [CLS] vector,
    plus a contrastive loss that pulls the two texts of a pair together against the batch's others
    (the loss terms ``mlm``, ``aux`` and ``cl``; the module docstring gives the formulas).

    Requirements:
        1. A BERT-style masked-LM encoder and its tokenizer (see :class:`Objective`).
        2. (x, y) pairs of related texts: two passages of one document (``mine --method cc``,
           coCondenser's own setting) or a passage and one of its generated queries (``--method qc``,
           query-as-context). The other pairs of the batch are the negatives of ``cl``: larger
           batches give more.

    Inputs:
        +------------------------------------------------------+--------+
        | Texts                                                | Labels |
        +======================================================+========+
        | (passage, passage of the same document) pairs        | none   |
        +------------------------------------------------------+--------+
        | (passage, generated query of the passage) pairs      | none   |
        +------------------------------------------------------+--------+

    Example: as :class:`Objective`'s, which runs this objective (``out`` then holds ``mlm``, ``aux`` and ``cl``).
    From the command line: ``pretriever pretrain qc-pairs/ --objective cocondenser --mix cc:1 --out model/``.

    References:
        - Gao and Callan, "Unsupervised Corpus Aware Language Model Pre-training for Dense Passage
          Retrieval", ACL 2022 (coCondenser; official code: luyug/Condenser).
        - Wu et al., "Query-as-context Pre-training for Dense Passage Retrieval", EMNLP 2023, section 2.3
          (eqs 4-7).
    """

    name = "cocondenser"
    terms = ("mlm", "aux", "cl")
    heads = {"c_head.": "condenser"}

    def __init__(self, mlm_model, tokenizer, cfg, pooling):
        super().__init__(mlm_model, tokenizer, cfg, pooling)
        layers = mlm_model.config.num_hidden_layers
        self.from_layer = cfg.head_from_layer if cfg.head_from_layer is not None else layers // 2
        if not 0 <= self.from_layer <= layers:
            raise ValueError(f"head_from_layer must be between 0 and {layers}, got {self.from_layer}")
        self.mask_rate = cfg.mask_rate
        self.scale = cfg.scale
        self.similarity = cfg.similarity
        self.condenser = new_layers(mlm_model, cfg.head_layers)

    def prepare(self, xs: list[str], ys: list[str], methods: list[str] | None = None) -> dict[str, torch.Tensor]:
        return self.masked_rows(list(xs) + list(ys), self.mask_rate)

    encoder_rows = MASKED_ROWS

    def counts(self, inputs):
        n = masked(inputs["labels"])
        return {"mlm": n, "aux": n}  # the same masked tokens: row_terms divides both by "mlm"

    def weights(self):
        return {"mlm": self.mlm_weight, "aux": self.mlm_weight, "cl": 1.0}

    def encode(self, inputs):
        out = self.encoder(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"],
                           output_hidden_states=True)
        last = out.hidden_states[-1]
        return self.pooled(last, inputs["attention_mask"]), (last, out.hidden_states[self.from_layer])

    def row_terms(self, h, state, inputs, counts):
        """L_mlm and L_aux: the head's last layer computes only the masked positions (:func:`run_layers`), and
        both read the vocabulary through one call of the MLM head (:func:`mlm_losses`)."""
        last, middle = state
        targets = inputs["labels"] != -100
        with torch.set_grad_enabled(torch.is_grad_enabled() and self.mlm_weight > 0):  # w = 0: logged, not trained
            head_in = torch.cat([h.unsqueeze(1).to(last.dtype), middle[:, 1:]], dim=1)
            head_out = run_layers(self.condenser, head_in, inputs["attention_mask"], targets)
            mlm, aux = mlm_losses(self.mlm_head, [last[targets], head_out], inputs["labels"][targets], counts["mlm"])
        return {"mlm": mlm, "aux": aux}

    def batch_terms(self, h, inputs, counts):
        return {"cl": contrastive_loss(self.finish(h), self.scale, self.similarity)}
