"""DPR's extractive reader (Karpukhin et al., 2020, section 3; C-MORE, Yue et al., ACL 2022, section 3.1).

Any Hugging Face encoder reads ``question [SEP] title [SEP] passage``; a linear layer gives each token
a start and an end logit (the standard question-answering head, ``qa_outputs``) and another one gives
the passage a selection logit from the [CLS] vector.

Training instance: one positive passage (it holds the answer) and ``m - 1`` negatives for a question.
Loss (:func:`reader_loss`):

* passage selection: cross-entropy of the positive among the ``m`` selection logits;
* span: ``-log sum over the answer occurrences (s, e) of P_start(s) P_end(e)`` in the positive,
  the marginal likelihood of every occurrence of the answer (the start and end distributions are
  softmaxes over the passage tokens). DPR marginalises the same way.

READER_DIR is a standard transformers question-answering folder (``AutoModelForQuestionAnswering``,
so ``pipeline("question-answering", model=READER_DIR)`` loads it) plus ``selection_head.safetensors``
(the passage-selection layer) and ``reader.json``.

Example::

    model, tokenizer = load_reader_model(None)        # the packaged MiniLM, heads initialised
    out = model(**features)                           # start_logits, end_logits: [B, m, L]; relevance: [B, m]
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pretriever.models import resolve_model
from pretriever.reader.errors import ReaderError

SELECTION_HEAD = "selection_head.safetensors"
READER_JSON = "reader.json"
_NEG = -1e4  # logit of a token that cannot start or end an answer (fits fp16)


def _torch():
    import torch  # torch is slow to import: only when a model is built

    return torch


def reader_module(qa_model):
    """The reader as a torch module: ``qa_model`` (AutoModelForQuestionAnswering) plus a selection layer."""
    torch = _torch()
    nn = torch.nn

    class ExtractiveReader(nn.Module):
        def __init__(self, qa):
            super().__init__()
            if not hasattr(qa, "qa_outputs"):
                raise ReaderError(f"{type(qa).__name__} has no `qa_outputs` span head; use an encoder whose "
                                  "question-answering class has one (BERT, RoBERTa, ELECTRA, DeBERTa, ...)")
            self.qa = qa
            self.selector = nn.Linear(qa.config.hidden_size, 1)
            self.config = qa.config  # the Trainer reads it

        def forward(self, input_ids, attention_mask, token_type_ids=None, passage_mask=None, span_starts=None,
                    span_ends=None, span_mask=None) -> dict[str, Any]:
            """Inputs ``[B, m, L]`` (m passages per question); logits ``[B, m, L]`` and relevance ``[B, m]``.
            With span labels (``[B, S]``, the positive is passage 0), also ``loss``."""
            shape = input_ids.shape
            flat = {"input_ids": input_ids.view(-1, shape[-1]), "attention_mask": attention_mask.view(-1, shape[-1])}
            if token_type_ids is not None:
                flat["token_type_ids"] = token_type_ids.view(-1, shape[-1])
            hidden = self.qa.base_model(**flat)[0]
            logits = self.qa.qa_outputs(hidden)
            start, end = (x.squeeze(-1).view(shape) for x in logits.split(1, dim=-1))
            relevance = self.selector(hidden[:, 0, :]).view(shape[:-1])
            if passage_mask is not None:
                start = start.masked_fill(~passage_mask, _NEG)
                end = end.masked_fill(~passage_mask, _NEG)
            out = {"start_logits": start, "end_logits": end, "relevance_logits": relevance}
            if span_starts is not None:
                out["loss"] = reader_loss(start, end, relevance, span_starts, span_ends, span_mask)
            return out

    return ExtractiveReader(qa_model)


def reader_loss(start, end, relevance, span_starts, span_ends, span_mask):
    """The extractive reader's loss: passage selection plus the answer span, marginalised over the answer's
    occurrences in the positive passage.

    * selection: cross-entropy of the positive (passage 0 of each question) among the question's ``m``
      selection logits;
    * span: ``-log sum_{(s, e)} P_start(s) P_end(e)`` over the answer occurrences (s, e) in the positive,
      with P_start and P_end softmaxes over the positive's tokens. Every occurrence counts, so the model is
      not told which one is "the" answer (DPR's official reader marginalises the same way).

    The loss is the mean over the ``B`` questions of selection + span.

    Requirements:
        1. Per question, one positive passage first and ``m - 1`` negatives.
        2. At least one answer occurrence in each positive (``span_mask`` true somewhere in each row).

    Inputs:
        +-------------------------------------+-------------+---------------------------------------------+
        | Tensor                              | Shape       | Meaning                                     |
        +=====================================+=============+=============================================+
        | ``start``, ``end``                  | [B, m, L]   | start / end logit of each token             |
        +-------------------------------------+-------------+---------------------------------------------+
        | ``relevance``                       | [B, m]      | selection logit of each passage             |
        +-------------------------------------+-------------+---------------------------------------------+
        | ``span_starts``, ``span_ends``      | [B, S] long | token positions of the answer occurrences   |
        +-------------------------------------+-------------+---------------------------------------------+
        | ``span_mask``                       | [B, S] bool | which of the S slots hold an occurrence     |
        +-------------------------------------+-------------+---------------------------------------------+

    Example::

        import math

        import torch

        from pretriever.reader.model import reader_loss

        # one question, 2 passages of 4 tokens, all logits 0: selection = log 2, span = -log(1/4 * 1/4)
        start, end, relevance = torch.zeros(1, 2, 4), torch.zeros(1, 2, 4), torch.zeros(1, 2)
        loss = reader_loss(start, end, relevance, span_starts=torch.tensor([[1, 0]]),
                           span_ends=torch.tensor([[2, 0]]), span_mask=torch.tensor([[True, False]]))
        assert math.isclose(loss.item(), math.log(2) + math.log(16), rel_tol=1e-6)
        # a second occurrence of the answer doubles the span's probability: the span term drops by log 2
        loss = reader_loss(start, end, relevance, span_starts=torch.tensor([[1, 3]]),
                           span_ends=torch.tensor([[2, 3]]), span_mask=torch.tensor([[True, True]]))
        assert math.isclose(loss.item(), math.log(2) + math.log(8), rel_tol=1e-6)

    References:
        - Karpukhin et al., "Dense Passage Retrieval for Open-Domain Question Answering", EMNLP 2020,
          section 6.1 (the reader; official code: facebookresearch/DPR).
        - Yue et al., "C-MORE: Pretraining to Answer Open-Domain Questions by Consulting Millions of
          References", ACL 2022, section 3.1 (the same reader, pre-trained on question-answer-context
          triplets).
    """
    torch = _torch()
    functional = torch.nn.functional
    target = torch.zeros(relevance.shape[0], dtype=torch.long, device=relevance.device)
    selection = functional.cross_entropy(relevance.float(), target)
    log_start = functional.log_softmax(start[:, 0].float(), dim=-1)
    log_end = functional.log_softmax(end[:, 0].float(), dim=-1)
    pair = log_start.gather(1, span_starts.clamp(min=0)) + log_end.gather(1, span_ends.clamp(min=0))
    pair = pair.masked_fill(~span_mask, float("-inf"))
    span = -torch.logsumexp(pair, dim=1).mean()
    return selection + span


def load_reader_model(name_or_path: str | os.PathLike | None):
    """(reader module, fast tokenizer) from a reader folder, a Hugging Face encoder or the packaged MiniLM.

    A reader folder brings its trained selection layer; any other encoder gets new heads."""
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer
    from transformers.utils import logging as hf_logging

    path = resolve_model(name_or_path)
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # "some weights are newly initialized": expected for new heads
    hf_logging.disable_progress_bar()  # no "Loading weights" bar on stderr for a 100 MB model
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, use_fast=True)
        qa = AutoModelForQuestionAnswering.from_pretrained(path)
    except (OSError, ValueError) as err:
        raise ReaderError(f"{path}: cannot load a question-answering model and tokenizer: {err}") from err
    finally:
        hf_logging.set_verbosity(verbosity)
        hf_logging.enable_progress_bar()
    module = reader_module(qa)
    head = Path(path) / SELECTION_HEAD
    if head.is_file():
        from safetensors.torch import load_file

        module.selector.load_state_dict(load_file(str(head)))
    return module, tokenizer


def save_reader_model(module, tokenizer, out: Path) -> None:
    """A transformers question-answering folder plus the selection layer (``selection_head.safetensors``)."""
    from safetensors.torch import save_file

    from transformers.utils import logging as hf_logging

    out.mkdir(parents=True, exist_ok=True)
    hf_logging.disable_progress_bar()
    try:
        module.qa.save_pretrained(out)
    finally:
        hf_logging.enable_progress_bar()
    tokenizer.save_pretrained(out)
    save_file({k: v.detach().cpu().contiguous() for k, v in module.selector.state_dict().items()},
              str(out / SELECTION_HEAD))
