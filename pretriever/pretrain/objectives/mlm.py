"""Masked-language-model training alone (``--objective mlm``): domain adaptation, and the plain start.

Inputs: the pairs' texts, both of each pair (x and y) as sequences of their own, masked at
``mask_rate`` (15%, whole words) and reconstructed through the MLM head from the encoder's
last layer (eq. 4). No bottleneck, no contrastive term: the baseline the Condenser paper
compares with, as sentence-transformers' MLM recipe (``train_mlm.py``) adapts a model to a
corpus. With ``--init random`` it builds a plain masked-LM from nothing, the start that the
papers' objectives assume (a BERT that was never trained for retrieval).
"""

from __future__ import annotations

import torch

from pretriever.pretrain.objectives.base import MASKED_ROWS, Objective, masked, mlm_loss, register


@register
class MaskedLM(Objective):
    """The masked-language-model loss of the encoder alone (the term ``mlm``, weighted by ``mlm_weight``).

    Requirements:
        1. A BERT-style masked-LM encoder and its tokenizer (see :class:`Objective`), or ``--init random``.
        2. Texts, as pairs from ``pretriever mine`` (``cc``: two passages of a document; ``ict``; ...): both
           texts of each pair are masked and reconstructed on their own; which texts are paired does not matter.

    Inputs:
        +--------------------------------------------------+--------+
        | Texts                                            | Labels |
        +==================================================+========+
        | (x, y) pairs: 2 x batch size sequences to mask   | none   |
        +--------------------------------------------------+--------+

    Example: as :class:`Objective`'s, with ``objective="mlm"`` (``out`` then holds ``mlm`` alone).
    From the command line: ``pretriever pretrain cc-pairs/ --objective mlm --init random --out plain-bert/``.

    References:
        - Devlin et al., "BERT", NAACL 2019 (masked language modelling; whole-word masking as the official
          collators, :meth:`Objective.mask`).
        - Gao and Callan, "Condenser", EMNLP 2021: the MLM-only baseline that the Condenser head is compared with.
    """

    name = "mlm"
    terms = ("mlm",)
    heads: dict[str, str] = {}

    def __init__(self, mlm_model, tokenizer, cfg, pooling):
        super().__init__(mlm_model, tokenizer, cfg, pooling)
        self.mask_rate = cfg.mask_rate

    def prepare(self, xs: list[str], ys: list[str], methods: list[str] | None = None) -> dict[str, torch.Tensor]:
        return self.masked_rows(list(xs) + list(ys), self.mask_rate)

    encoder_rows = MASKED_ROWS

    def counts(self, inputs):
        return {"mlm": masked(inputs["labels"])}

    def weights(self):
        return {"mlm": self.mlm_weight}

    def encode(self, inputs):
        last = self.encoder(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"]).last_hidden_state
        return self.pooled(last, inputs["attention_mask"]), last

    def row_terms(self, h, state, inputs, counts):
        return {"mlm": mlm_loss(self.mlm_head, state, inputs["labels"], counts["mlm"])}

    def batch_terms(self, h, inputs, counts):
        return {}
