"""``pretriever pretrain``: coCondenser or CoT-MAE pre-training of a sentence-transformers encoder.

Wire into the main app with ``app.command("pretrain")(pretrain_command)``.
"""

from __future__ import annotations

from rich.markup import escape

from pretriever.cli.common import stage
from pretriever.cli.options import Flag, config_command
from pretriever.pretrain import PretrainConfig
from pretriever.progress import RichReporter, console


@config_command(PretrainConfig, "pretrain", arguments=("pairs",), short={"model": "-m", "batch_size": "-b"},
                flags={"learning_rate": Flag("--lr", deprecated=("--learning-rate",)),
                       "gradient_accumulation": Flag("--grad-accum", deprecated=("--gradient-accumulation",))})
def pretrain_command(cfg: PretrainConfig) -> None:
    """Pre-train an encoder on mined pairs with coCondenser or CoT-MAE (query-as-context: pairs of method
    qc), or with masked-LM alone (--objective mlm; from nothing with --init random).

    MODEL_DIR is a plain sentence-transformers model (the MLM head, Condenser head and decoders kept
    beside it in MODEL_DIR/model.pt, for a later `pretrain --model MODEL_DIR` of the same objective):
    fine-tune it with `pretriever train --model MODEL_DIR`. With --eval-pairs (pairs never trained on) it
    measures the held-out MLM perplexity as it goes, and --target-perplexity stops there: a plain start
    trained to a stated quality.

    What it buys: from a model that is already a retriever (the packaged all-MiniLM-L6-v2), little or
    nothing. On SciFact (bench/README.md, "Pre-training on SciFact, again", 2026-11-27; three seeds) no
    pre-training arm beat fine-tuning the model as it is; coCondenser with titles as the context was level
    with it and above coCondenser on cc (not past Holm's correction), the ICT sentence was not. Those arms'
    bottleneck read the unit-norm embedding; it now reads the pooled vector before normalisation, as the
    official heads read the raw [CLS]. The papers start from plain BERT: --model bert-base-uncased --pooling
    cls --similarity dot --scale 1, or here, without a hub, a plain start built by --objective mlm --init
    random.

    Several GPUs: `torchrun --nproc_per_node N pretriever pretrain ...` runs N processes, each taking
    --batch-size pairs of every global batch of N x --batch-size, as one process at that batch would (the
    MLM terms over the global batch's masked tokens, coCondenser's contrastive term over every process's
    spans, the gradients summed); each process draws its own masks. The first process writes MODEL_DIR;
    --resume continues on as many processes.

    Examples:

      pretriever pretrain qc-pairs/ --objective cotmae --mix qc:1 --batch-size 8 --max-steps 4 --out
          cotmae-minilm/
          (a real run: --batch-size 64, no --max-steps)

      pretriever pretrain qc-pairs/ --objective cocondenser --mix cc:1 --batch-size 8 --max-steps 4 --out
          cocondenser-minilm/

      pretriever pretrain qc-pairs/ --objective mlm --init random --init-layers 2 --init-hidden 64
          --init-heads 2 --batch-size 8 --max-steps 4 --out plain-bert/
          (a plain masked-LM from nothing, the MiniLM tokenizer; then pre-train it with --model plain-bert/;
          with --eval-pairs HELD_OUT_PAIRS/ --target-perplexity P it stops once that perplexity is reached)
    """
    # Imported here, as pretriever.pretrain says: it loads torch and transformers (~6 s of CPU), which every
    # other command, `pretriever corpus build` included, would otherwise pay at start-up.
    from pretriever.pretrain import run as pretraining  # torch + transformers at start-up: see above

    with RichReporter() as report, stage(report):
        result = pretraining.run(cfg, report)
    last = result.curve[-1] if result.curve else {}
    terms = " ".join(f"{k} {v:.3f}" for k, v in last.items()
                     if k not in ("step", "epoch", "learning_rate", "head_learning_rate"))
    console.print(f"{result.steps:,} steps, {result.pairs_seen:,} pairs in {result.seconds:.1f}s "
                  f"({result.rate:,.1f} pairs/s); last: {terms}")
    if result.manifest.pairs["unlisted_files"]:
        console.print(escape(result.manifest.pairs["unlisted_files"]))
    dropped = result.manifest.pairs["duplicate_across_methods"]
    if dropped:
        console.print("found by two methods, trained once: " + ", ".join(
            f"{m} {n:,} left to an earlier method" for m, n in dropped.items()))
    console.print(f"wrote {cfg.out} (sentence-transformers model) and {cfg.out / 'pretrain.json'}")
