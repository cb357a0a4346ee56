"""Issue 38, item 1, the use-test: after ``pretrain --head-warmup-steps`` on a frozen encoder, saved and reloaded as
a later run would, the CoT-MAE decoders restore y better from x's own embedding h than from another passage's.

The mechanism (each head is fed the pooled vector before normalisation) is tested in test_pretrain.py; this tests
that the path from it to a decoder that uses h works end to end: the decoder is trained, saved in model.pt,
loaded again, and fed h from the right row. Each broke once or could: a decoder dropped at saving (71ab7e4) or
fed another row's h scores the same with a rolled h.

At the suite's size a decoder only reads h when h is easy to read: each text is 10 words drawn from a "bag" of 3 of
60 words, x and y from the same bag, over a 65-word vocabulary, and y is masked at 90%. h can then cut a masked
word's loss from ln 60 = 4.1 nats (any word) to ln 3 = 1.1 (a word of the bag). With the 30,522-word MiniLM
vocabulary, 200 steps at 1e-2 left the loss at 7.3: the output bias alone takes hundreds of steps.

Measured on the 2-core VM (2 x 64 random BERT, mean pooling, 200 warm-up steps at 3e-3), rolled - true:
- symmetric decoder: 0.47 (model and data seeds 1-3: 0.45-0.50);
- AR decoder: 0.23 (0.22-0.24);
- a fresh decoder: 0.0000 both.
With y_src rolled by one in ``CoTMAE.batch_terms`` (every decoder row fed another row's h), the symmetric case
fails (0.001).

In this toy a decoder reads h fed at norm 1 about as well: 1.75 against 1.78 at hidden 128, 600 steps at 3e-3.
So the toy cannot show what the fix changed. The scale matters on a start trained for MLM, where the token
states are 10 times h's norm: ``bench/probe_decoder_reads_h.py`` measures that (bench/README, "When does a fresh
decoder start to read h?").

The Condenser head is not tested so: it restores x itself, whose unmasked words its middle-layer input already
holds, so in this toy h tells it nothing new (rolled - true 0.002, 0.0004 and 0.0001 at --mask-rate 0.3, 0.6, 0.9).
"""

from __future__ import annotations

import random
import pytest
import torch

from pretriever.pretrain import PretrainConfig
from pretriever.pretrain.run import build_objective, run
from pretrain_fixtures import tiny_bert_st, write_pairs

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = [f"w{i}" for i in range(60)]
HELD_OUT = 200


def bag_texts(count: int, seed: int) -> tuple[list[str], list[str]]:
    """``count`` pairs (x, y): two texts of 10 words, each drawn from the same 3 of :data:`WORDS`."""
    rng = random.Random(seed)
    xs, ys = [], []
    for _ in range(count):
        bag = rng.sample(WORDS, 3)
        xs.append(" ".join(rng.choices(bag, k=10)))
        ys.append(" ".join(rng.choices(bag, k=10)))
    return xs, ys


@pytest.fixture(scope="module")
def bags(tmp_path_factory):
    """A random 2 x 64 BERT over a 65-word vocabulary (mean pooling, normalised, as the packaged MiniLM), 1,800
    training pairs in a pairs folder, and 200 held-out pairs."""
    from transformers import BertTokenizerFast

    root = tmp_path_factory.mktemp("bags")
    tokenizer = BertTokenizerFast(vocab={w: i for i, w in enumerate(SPECIAL + WORDS)})
    start = tiny_bert_st(root / "st", hidden=64, pooling="mean", normalize=True, tokenizer=tokenizer)
    xs, ys = bag_texts(1800 + HELD_OUT, seed=0)
    (root / "pairs").mkdir()
    return start, write_pairs(root / "pairs", xs[:1800], ys[:1800]), (xs[1800:], ys[1800:])


def decoder_losses(objective, held: tuple[list[str], list[str]], term: str) -> dict[str, float]:
    """The decoder term on the held-out pairs, fed the true h, h rolled by one row (another bag's) and h = 0;
    the same masks in every case and for every model."""
    torch.manual_seed(123)
    losses = {"true": 0.0, "rolled": 0.0, "zero": 0.0}
    objective.eval()
    with torch.no_grad():
        for at in range(0, HELD_OUT, 50):
            inputs = objective.prepare(held[0][at:at + 50], held[1][at:at + 50], ["cc"] * 50)
            counts = objective.counts(inputs)
            h = objective.encode({k: inputs[k] for k in objective.encoder_rows[0]})[0]
            for name, given in (("true", h), ("rolled", h.roll(1, 0)), ("zero", torch.zeros_like(h))):
                losses[name] += objective.batch_terms(given, inputs, counts)[term].item() * 50 / HELD_OUT
    return losses


@pytest.mark.parametrize("decoder,term,margin", [("symmetric", "ctx_mlm", 0.2), ("ar", "ar", 0.1)])
def test_after_a_head_warmup_the_cotmae_decoder_reads_h(bags, tmp_path, decoder, term, margin):
    start, pairs, held = bags
    options = dict(pairs=pairs, objective="cotmae", decoder=decoder, decoder_mask_rate=0.9, batch_size=32,
                   max_length=32)
    fresh = decoder_losses(build_objective(PretrainConfig(out=tmp_path / "x", model=str(start), **options),
                                           "cpu")[1], held, term)
    run(PretrainConfig(out=tmp_path / "warm", model=str(start), max_steps=200, head_warmup_steps=200, head_lr=3e-3,
                       **options))
    _, later, notes = build_objective(PretrainConfig(out=tmp_path / "y", model=str(tmp_path / "warm"), **options),
                                      "cpu")
    assert notes["head_weights_new"] == []  # every decoder weight came from the warm-up's model.pt
    trained = decoder_losses(later, held, term)
    assert abs(fresh["rolled"] - fresh["true"]) < 0.02  # a fresh decoder cannot tell whose h it is fed
    assert trained["true"] < fresh["true"] - 0.5  # it learnt the words (from about ln 65 = 4.2)
    assert trained["rolled"] - trained["true"] > margin  # and reads them from h: another bag's h costs
    assert trained["zero"] - trained["true"] > margin
