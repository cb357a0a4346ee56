"""What a pre-training objective is: a registered ``torch.nn.Module`` around a masked-LM encoder.

An objective gets the encoder with its MLM head (``AutoModelForMaskedLM``: the head is
created, tied to the input embeddings, when the checkpoint has none) and adds what it
needs (a Condenser head, a decoder). ``prepare`` turns a batch of (x, y) texts into
tensors, masking whole words as the official collators do (luyug/Condenser's and caskcsg's
``CondenserCollator``): :meth:`Objective.mask`; ``forward``
maps those tensors to ``{"loss": total, term: value, ...}``. Only the encoder and its MLM head
are kept after training (the head in ``model.pt`` beside the saved model).

The vector a bottleneck (Condenser head, CoT-MAE decoder) reads is the model's own pooled vector
*before* normalisation (:meth:`Objective.pooled`: the mean of the last layer's token states under mean
pooling, the raw [CLS] under CLS pooling), at the scale of the token states beside it in the head, as
the official heads read the raw last-layer [CLS]; a unit vector there is drowned by token states of norm
10 and more, and the head learns to ignore it. The contrastive term scores the model's own sentence
embedding (:meth:`Objective.finish` of that vector: normalisation and what follows), so both terms'
gradients reach what ``encode`` and ``index build`` return.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from sentence_transformers.sentence_transformer.modules import Normalize
from torch import nn
from transformers.models.bert.modeling_bert import BertLayer

from pretriever.pretrain.distributed import summed

OBJECTIVES: dict[str, type["Objective"]] = {}


def register(cls: type["Objective"]) -> type["Objective"]:
    """Class decorator: add an objective to :data:`OBJECTIVES` under its ``name`` (twice is a ValueError).

    Args:
        cls: the objective class.

    Returns:
        ``cls``, unchanged.
    """
    if cls.name in OBJECTIVES:
        raise ValueError(f"pre-training objective {cls.name!r} registered twice")
    OBJECTIVES[cls.name] = cls
    return cls


def mlm_loss(head: nn.Module, hidden: torch.Tensor, labels: torch.Tensor,
             count: torch.Tensor | None = None) -> torch.Tensor:
    """Cross-entropy of ``head(hidden)`` summed over the masked positions (labels -100 elsewhere) and divided by
    ``count``, by default their number: the mean of eqs 4, 6, 10. Given the whole batch's count, the terms of its
    chunks (GradCache) add up to the batch's mean. Only masked positions go through the head: the vocabulary
    projection is the costly part. ``hidden`` may hold only those positions' states already, in order
    (:func:`run_layers` with ``targets``)."""
    keep = labels != -100
    if hidden.dim() == labels.dim() + 1:
        hidden = hidden[keep]
    return mlm_losses(head, [hidden], labels[keep], count)[0]


def mlm_losses(head: nn.Module, states: list[torch.Tensor], targets: torch.Tensor,
               count: torch.Tensor | None = None) -> list[torch.Tensor]:
    """:func:`mlm_loss` of several sets of states (one row per target each) that predict the same ``targets``
    (coCondenser's encoder and Condenser head), through the head in one call: one vocabulary projection and one
    gradient of its weight instead of one per set. Each loss is its own sum divided by ``count``."""
    logits = head(torch.cat(states) if len(states) > 1 else states[0])
    losses = nn.functional.cross_entropy(logits.float(), targets.repeat(len(states)), reduction="none")
    denominator = len(targets) if count is None else count
    return list(losses.view(len(states), len(targets)).sum(1) / denominator)  # a chunk may have no targets: 0


def masked(labels: torch.Tensor) -> torch.Tensor:
    """How many positions of ``labels`` are targets (not -100): the denominator of :func:`mlm_loss`."""
    return (labels != -100).sum()


Family = tuple[tuple[str, ...], str]  # the input keys indexed by one kind of row, and the attention mask among them
MASKED_ROWS: Family = (("input_ids", "attention_mask", "labels"), "attention_mask")  # Objective.masked_rows


def rows_of(inputs: dict[str, torch.Tensor], family: Family, rows: slice) -> dict[str, torch.Tensor]:
    """``rows`` of one family of inputs, without the trailing columns that are padding in all of them (a chunk
    of short texts is not computed at the batch's width; padding is never attended, so nothing else changes)."""
    keys, mask_key = family
    width = int(inputs[mask_key][rows].any(0).nonzero().max()) + 1
    return {k: inputs[k][rows][:, :width] if inputs[k].dim() == 2 else inputs[k][rows] for k in keys}


def additive_mask(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A (batch, 1, 1, length) additive attention mask for ``BertLayer``: 0 where seen, -inf-ish where padded."""
    return (1.0 - mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min


def new_layers(mlm_model, n: int) -> nn.ModuleList:
    """``n`` transformer layers shaped like the encoder's, freshly initialised the encoder's way."""
    layers = nn.ModuleList(BertLayer(mlm_model.config) for _ in range(n))
    layers.apply(mlm_model._init_weights)
    return layers


def run_layers(layers: nn.ModuleList, hidden: torch.Tensor, mask: torch.Tensor,
               targets: torch.Tensor | None = None) -> torch.Tensor:
    """``layers`` over ``hidden`` (padding, ``mask`` 0, never attended). With ``targets`` (bool, like ``mask``) only
    the states at those positions are returned (as ``hidden[targets]``), and the last layer computes only them
    after its self-attention (which reads every position): its attention output projection and feed-forward,
    most of a layer's cost, run on the masked tokens (about 15%) instead of all. The values are those of the
    whole layer at those positions; with dropout on, the last layer draws only for them."""
    ext = additive_mask(mask, hidden.dtype)
    whole = layers if targets is None else layers[:-1]
    for layer in whole:
        out = layer(hidden, attention_mask=ext)
        hidden = out[0] if isinstance(out, tuple) else out
    if targets is None:
        return hidden
    last = layers[-1]  # BertLayer: attention (self + output: dense, dropout, residual, LayerNorm), feed-forward
    attended = last.attention.self(hidden, attention_mask=ext)[0]
    return last.feed_forward_chunk(last.attention.output(attended[targets], hidden[targets]))


class Tokenized(dict):
    """A padded batch of word pieces (``input_ids``, ``attention_mask``) that also knows each row's word ids, as
    a fast tokenizer's ``BatchEncoding`` does, after :meth:`Objective.tokenize` cut long texts."""

    def __init__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, words: list[list[int | None]]):
        super().__init__(input_ids=input_ids, attention_mask=attention_mask)
        self.words = words

    def word_ids(self, row: int) -> list[int | None]:
        return self.words[row]


class Objective(nn.Module):
    """A context-supervised pre-training objective: a masked-LM encoder plus the pieces the objective
    adds (a Condenser head, a decoder), trained on pairs (x, y) of related texts. Only the encoder is
    kept, with its MLM head: ``pretriever pretrain`` saves it as a plain sentence-transformers model and the
    head in ``model.pt`` beside it.

    A subclass sets ``name`` (the ``--objective`` value) and ``terms`` (the loss terms it reports),
    registers itself with :func:`register`, and implements ``prepare`` (texts -> masked tensors, drawn
    from torch's global generator, so ``torch.manual_seed`` fixes them) and ``forward`` (tensors ->
    ``{"loss": total, term: value, ...}``).

    Requirements:
        1. A BERT-style masked-LM encoder (``AutoModelForMaskedLM`` with its head as ``cls`` or
           ``lm_head``; created and tied to the input embeddings when the checkpoint has none).
        2. Pairs (x, y): two passages of one document (``mine --method cc``) or a passage and one of
           its generated queries (``--method qc``).

    Inputs:
        +--------------------------------------------------+--------+
        | Texts                                            | Labels |
        +==================================================+========+
        | (x, y) pairs, as two lists of the same length    | none   |
        +--------------------------------------------------+--------+

    Example::

        import torch

        from pretriever.pretrain.config import PretrainConfig
        from pretriever.pretrain.run import build_objective

        cfg = PretrainConfig(pairs="pairs/", out="model/", objective="cocondenser", max_length=32)
        model, objective, notes = build_objective(cfg, "cpu")  # the packaged MiniLM plus its MLM head
        torch.manual_seed(0)
        batch = objective.prepare(
            ["Vitamin D deficiency is common among elderly people in northern countries.",
             "Aspirin irreversibly inhibits cyclooxygenase in blood platelets."],
            ["who lacks vitamin d in the north", "how does aspirin act on platelets"])
        out = objective(**batch)  # {"loss": total, "mlm": ..., "aux": ..., "cl": ...}
        out["loss"].backward()
        assert set(out) == {"loss", *objective.terms}

    References:
        Wu et al., "Query-as-context Pre-training for Dense Passage Retrieval", EMNLP 2023: section 2
        (context-supervised pre-training, eqs 1-11) and section 3.1 (a generated query as the context).

    Relations:
        :class:`~pretriever.pretrain.objectives.cocondenser.CoCondenser`,
        :class:`~pretriever.pretrain.objectives.cotmae.CoTMAE` and :class:`~pretriever.pretrain.objectives.mlm.MaskedLM`
        subclass it; :func:`pretriever.pretrain.run.build_objective` builds one from a config.

    Args:
        mlm_model: the masked-LM encoder (its MLM head is kept).
        tokenizer: its tokenizer.
        cfg: the pretrain settings (:class:`~pretriever.pretrain.PretrainConfig`).
        pooling: the sentence-transformers modules after the Transformer (pooling, normalisation, ...).
    """

    name: ClassVar[str]
    terms: ClassVar[tuple[str, ...]]  # the loss terms ``forward`` reports besides "loss"
    heads: ClassVar[dict[str, str]]  # model.pt key prefix -> the attribute (new layers) those weights fill

    def __init__(self, mlm_model, tokenizer, cfg: Any, pooling: list[nn.Module]):
        super().__init__()
        self.mlm = mlm_model
        self.tokenizer = tokenizer
        self.max_length = cfg.max_length
        self.mlm_weight = cfg.mlm_weight
        self.pooling = nn.ModuleList(pooling)  # the sentence-transformers modules after the Transformer
        self.normalized_from = next((i for i, m in enumerate(pooling) if isinstance(m, Normalize)), len(pooling))
        head = getattr(mlm_model, "cls", None) or getattr(mlm_model, "lm_head", None)  # BERT-like / RoBERTa-like
        if head is None:
            raise TypeError(f"{type(mlm_model).__name__} has no MLM head named cls or lm_head")
        self.mlm_head = head  # phi: hidden states -> vocabulary logits, shared by every reconstruction

    @property
    def encoder(self) -> nn.Module:
        return self.mlm.base_model

    def pooled(self, hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """The model's pooled vector of these last-layer states before normalisation: what the heads read.

        Args:
            hidden: the encoder's last-layer states.
            attention_mask: the batch's attention mask.

        Returns:
            One vector per row.
        """
        features: dict[str, torch.Tensor] = {"token_embeddings": hidden, "attention_mask": attention_mask}
        for module in self.pooling[:self.normalized_from]:
            features = module(features)
        return features["sentence_embedding"]

    def finish(self, pooled: torch.Tensor) -> torch.Tensor:
        """The saved model's sentence embedding from :meth:`pooled`'s vector: its normalisation and what follows.

        Args:
            pooled: :meth:`pooled`'s vectors.

        Returns:
            The embeddings.
        """
        features: dict[str, torch.Tensor] = {"sentence_embedding": pooled}
        for module in self.pooling[self.normalized_from:]:
            features = module(features)
        return features["sentence_embedding"]

    def sentence_embedding(self, hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """The saved model's embedding of these last-layer states: what ``encode`` returns.

        Args:
            hidden: the encoder's last-layer states.
            attention_mask: the batch's attention mask.

        Returns:
            One embedding per row.
        """
        return self.finish(self.pooled(hidden, attention_mask))

    def tokenize(self, texts: list[str]) -> "Tokenized":
        """The padded batch (``input_ids``, ``attention_mask``) and each row's word ids, for :meth:`mask`.

        A text longer than ``max_length`` word pieces keeps a window of them at a random offset (torch's global
        generator), as the official collators cut (caskcsg/ir and luyug/Condenser ``_truncate``), so the end of a
        long passage is trained too and not only its beginning.

        Args:
            texts: the batch's texts.

        Returns:
            The padded batch, its word ids kept.
        """
        tok = self.tokenizer
        full = tok(list(texts), truncation=False, verbose=False, return_token_type_ids=False)
        special = set(tok.all_special_ids)
        rows, words = [], []
        for i, ids in enumerate(full["input_ids"]):
            try:
                word_of = full.word_ids(i)
            except (ValueError, AttributeError):  # a slow tokenizer: every piece its own word
                word_of = [None if t in special else k for k, t in enumerate(ids)]
            if len(ids) > self.max_length:  # keep the leading and trailing special tokens, cut what is between
                head = next((k for k, t in enumerate(ids) if t not in special), 0)
                tail = next((k for k, t in enumerate(reversed(ids)) if t not in special), 0)
                room = max(1, self.max_length - head - tail)
                start = head + int(torch.randint(len(ids) - head - tail - room + 1, ()))
                keep = [*range(head), *range(start, start + room), *range(len(ids) - tail, len(ids))]
                ids, word_of = [ids[k] for k in keep], [word_of[k] for k in keep]
            rows.append(ids)
            words.append(word_of)
        padded = tok.pad({"input_ids": rows}, padding=True, return_tensors="pt", return_attention_mask=True)
        return Tokenized(padded["input_ids"], padded["attention_mask"], words)

    def mask(self, enc: "Tokenized", rate: float) -> tuple[torch.Tensor, torch.Tensor]:
        """(masked ids, labels) of a tokenised batch ``enc``: whole-word masking as the official collators.

        Per sequence, whole words (a fast tokenizer's ``word_ids``: a word's pieces together) are taken in a
        random order until max(1, round(rate x n)) of its n word pieces (special and padding tokens not
        counted, never masked) are chosen, a word that would overshoot skipped: at least one token per
        sequence. Each chosen piece is then [MASK] (80%), a random token (10%) or left (10%); labels are -100
        elsewhere. Draws come from torch's global generator (seeded).

        Args:
            enc: the batch, from :meth:`tokenize`.
            rate: the share of word pieces to mask.

        Returns:
            ``(input_ids, labels)``.
        """
        ids = enc["input_ids"]
        # chosen in Python lists and made a tensor once: indexing a tensor per token ran ~8,000 operators a step
        picked = [[False] * ids.shape[1] for _ in range(len(ids))]
        special = set(self.tokenizer.all_special_ids)
        for row, (tokens, seen) in enumerate(zip(ids.tolist(), enc["attention_mask"].tolist())):
            words: dict[int, list[int]] = {}
            for i, (token, word, on) in enumerate(zip(tokens, enc.word_ids(row), seen)):
                if word is not None and token not in special and on:
                    words.setdefault(word, []).append(i)
            pieces = list(words.values())
            target = max(1, round(rate * sum(len(w) for w in pieces))) if pieces else 0
            taken = 0
            for j in torch.randperm(len(pieces)).tolist():
                if taken >= target:
                    break
                if taken + len(pieces[j]) <= target:
                    for i in pieces[j]:
                        picked[row][i] = True
                    taken += len(pieces[j])
        chosen = torch.tensor(picked, dtype=torch.bool)
        labels = ids.masked_fill(~chosen, -100)
        masked = ids.clone()
        replaced = torch.bernoulli(torch.full(ids.shape, 0.8)).bool() & chosen
        masked[replaced] = self.tokenizer.mask_token_id
        randomised = torch.bernoulli(torch.full(ids.shape, 0.5)).bool() & chosen & ~replaced
        masked[randomised] = torch.randint(len(self.tokenizer), ids.shape)[randomised]
        return masked, labels

    def prepare(self, xs: list[str], ys: list[str], methods: list[str] | None = None) -> dict[str, torch.Tensor]:
        """Tensors for ``forward`` from a batch of pairs; ``methods`` names each pair's mining method.

        Args:
            xs: the pairs' first texts (passages).
            ys: their second texts (the context: a passage or a generated query).
            methods: each pair's mining method (None: not known).

        Returns:
            The tensors ``forward`` takes, by name.
        """
        raise NotImplementedError

    def masked_rows(self, texts: list[str], rate: float) -> dict[str, torch.Tensor]:
        """``texts`` as one family of :data:`MASKED_ROWS`: tokenised (:meth:`tokenize`) and masked (:meth:`mask`).

        Args:
            texts: the texts.
            rate: the share of word pieces to mask.

        Returns:
            ``input_ids``, ``attention_mask`` and ``labels``.
        """
        enc = self.tokenize(texts)
        ids, labels = self.mask(enc, rate)
        return {"input_ids": ids, "attention_mask": enc["attention_mask"], "labels": labels}

    # The loss in three parts, so that GradCache (pretriever.pretrain.gradcache) can chunk the encoder: ``encode``
    # maps rows of the ``encoder_rows`` family to their pooled vectors h (:meth:`pooled`, before normalisation;
    # a contrastive term scores :meth:`finish` of them) and what ``row_terms`` needs,
    # ``row_terms`` are the terms that read one row each (MLM), ``batch_terms`` those that read the embeddings of
    # other rows (the contrastive term, a decoder conditioned on the partner's h). Every term is a sum divided by
    # the whole batch's ``counts``, so the terms of chunks add up to the batch's.
    encoder_rows: ClassVar[Family]

    def counts(self, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The denominator of each averaged term over the whole batch (masked positions).

        Args:
            inputs: the batch's tensors (:meth:`prepare`).

        Returns:
            Each term's denominator.
        """
        raise NotImplementedError

    def weights(self) -> dict[str, float]:
        """Each term's weight in the loss; a term of weight 0 is reported, not trained."""
        raise NotImplementedError

    def encode(self, inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, Any]:
        """(h, state): the rows' pooled vectors (:meth:`pooled`) and what ``row_terms`` reads besides them.

        Args:
            inputs: the encoder's rows of the batch.

        Returns:
            ``(h, state)``.
        """
        raise NotImplementedError

    def row_terms(self, h: torch.Tensor, state: Any, inputs: dict[str, torch.Tensor],
                  counts: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The terms computed row by row from the encoder's output (MLM, a head's MLM, a decoder's), each
        averaged over the whole batch by ``counts`` so that GradCache's pieces add up to the batch's value.

        Args:
            h: the rows' pooled vectors.
            state: what :meth:`encode` returned besides them.
            inputs: the batch's tensors.
            counts: each term's denominator (:meth:`counts`).

        Returns:
            Term name -> value.
        """
        raise NotImplementedError

    def batch_terms(self, h: torch.Tensor, inputs: dict[str, torch.Tensor],
                    counts: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The terms that score the whole batch at once (coCondenser's contrastive ``cl``; others return {}).

        Args:
            h: the rows' pooled vectors.
            inputs: the batch's tensors.
            counts: each term's denominator.

        Returns:
            Term name -> value.
        """
        raise NotImplementedError

    def batch_pieces(self, inputs: dict[str, torch.Tensor], size: int) -> list[dict[str, torch.Tensor]]:
        """The inputs of ``batch_terms`` in pieces that GradCache computes one after the other: by default one
        piece (a contrastive term scores the whole batch at once).

        Args:
            inputs: the batch's tensors.
            size: GradCache's piece size.

        Returns:
            The pieces.
        """
        return [inputs]

    def weighted(self, terms: dict[str, torch.Tensor]) -> torch.Tensor | float:
        """The loss: the weighted sum of the terms that are trained.

        Args:
            terms: term name -> value.

        Returns:
            The loss.
        """
        weights = self.weights()
        return sum((weights[t] * v for t, v in terms.items() if weights[t] > 0), 0.0)

    def forward(self, **inputs: torch.Tensor) -> dict[str, torch.Tensor]:
        """The loss of one batch and each of its terms (for the trainer and the loss curves).

        Args:
            **inputs: the tensors :meth:`prepare` made.

        Returns:
            ``{"loss": total, term: value, ...}``.
        """
        counts = summed(self.counts(inputs))  # several processes: the global batch's (pretrain.distributed)
        h, state = self.encode({k: inputs[k] for k in self.encoder_rows[0]})
        terms = self.row_terms(h, state, inputs, counts) | self.batch_terms(h, inputs, counts)
        return {"loss": self.weighted(terms), **{t: terms[t] for t in self.terms}}
