"""Settings of ``pretriever pretrain`` (also the ``[pretrain]`` table of a TOML config).

Defaults follow Wu et al. (2023, section 4.1) scaled down: AdamW with a linear warm-up over
10% of the steps then linear decay, weight decay 0.01 (coCondenser); coCondenser masks 15%
and reads the Condenser head from layer L/2; CoT-MAE masks 30% of the encoder input and, as
the code behind Table 1 (caskcsg/ir), decodes a generated query with one autoregressive
GPT-2 block (window 3) and a passage context symmetrically with 2 layers at 45%.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pretriever.config import (batch_size_option, device_option, option, overwrite_option,
                               refuse_resume_with_overwrite, resume_option, seed_option)
from pretriever.training import PRECISION_HELP, check_precision
from pretriever.train.config import POOLINGS, SIMILARITIES, parse_mix

DECODERS = ("auto", "ar", "symmetric", "mlm")  # CoT-MAE's decoders (see pretrain/objectives/cotmae.py)
INITS = ("model", "random")


@dataclass
class PretrainConfig:
    """Settings of ``pretriever pretrain`` (coCondenser, CoT-MAE or MLM pre-training on mined pairs).

    Each field's help lives in its metadata (:func:`pretriever.config.option`), which ``--help`` and the TOML config
    read.
    """

    pairs: Path = option(help="A pairs folder from `pretriever mine` (methods cc, qc, ict, ...): x = the positive "
                              "passage, y = the query (a generated query for qc, another passage for cc).")
    out: Path = option(help="MODEL_DIR: the pre-trained encoder as a plain sentence-transformers model, plus "
                            "pretrain.json (settings, loss curves per term, time, pairs/s) and checkpoints/.")
    objective: str = option("cocondenser", "cocondenser (contrastive + MLM + Condenser head MLM, eqs 5-7), "
                                           "cotmae (encoder MLM + context-conditioned decoder MLM, eqs 8-11) or mlm "
                                           "(masked-LM alone, on both texts of each pair: domain adaptation, or a "
                                           "plain start with --init random).")
    model: str | None = option(None, "The sentence-transformers model to start from (a BERT-style encoder); with "
                                     "--init random only its tokenizer is used.",
                               default_help="the packaged all-MiniLM-L6-v2")
    init: str = option("model", "model (start from --model's weights) or random (a BERT of --init-layers x "
                                "--init-hidden with --init-heads heads, feed-forward 4 x hidden, 512 positions, "
                                "weights drawn from --seed, --model's tokenizer): the plain start the papers assume, "
                                "which no hub can send here.")
    init_layers: int = option(4, "--init random: transformer layers.")
    init_hidden: int = option(256, "--init random: hidden size (a multiple of --init-heads).")
    init_heads: int = option(4, "--init random: attention heads.")
    mix: dict[str, float] | str | None = option(None, "Each example's method is drawn with these shares, e.g. "
                                                      "qc:0.5,cc:0.5, so a batch mixes contexts (the paper's "
                                                      "Table 4, as caskcsg's code draws per example).")
    max_length: int = option(144, "Word pieces per passage or query (the official scripts: 144); a longer text keeps "
                                  "a window at a random offset, as the official collators cut.")
    mask_rate: float = option(0.15, "coCondenser: share of word pieces masked, whole words, at least one per "
                                    "sequence (80% [MASK], 10% random, 10% kept).")
    encoder_mask_rate: float = option(0.30, "CoT-MAE: share of x's word pieces masked (whole words) for the encoder.")
    decoder_mask_rate: float = option(0.45, "CoT-MAE: share of y's word pieces masked (whole words) for the decoder.")
    head_layers: int = option(2, "coCondenser: transformer layers of the Condenser head (N).")
    head_from_layer: int | None = option(None, "coCondenser: encoder layer M whose token states feed the head.",
                                         default_help="L/2")
    decoder: str = option("auto", "CoT-MAE: ar (caskcsg's query-as-context decoder: GPT-2 blocks decode the "
                                  "unmasked context left to right, each position seeing h and --attn-window "
                                  "tokens), symmetric (CoT-MAE v1: both texts encoded, each decoded at 45% from "
                                  "the other's h), mlm (the paper text's eq. 10, one direction) or auto (ar for qc "
                                  "examples, symmetric for the others).")
    decoder_layers: int | None = option(None, "CoT-MAE: layers of the decoder(s), initialised from scratch.",
                                        default_help="1 for ar and mlm, 2 for symmetric")
    attn_window: int = option(3, "CoT-MAE ar decoder: context tokens each position sees besides h (caskcsg: 3).")
    pooling: str | None = option(None, "cls (the papers, from a BERT checkpoint) | mean | max: the sentence "
                                       "embedding that the contrastive term and the bottleneck read, saved with "
                                       "the model.",
                                 default_help="keep the model's own (the packaged model: mean, then normalize); a "
                                              "plain Hugging Face checkpoint gets cls")
    normalize: bool | None = option(None, "L2-normalise the sentence embedding (saved with the model).",
                                    default_help="keep the model's own (packaged model: yes; a plain checkpoint: no)")
    similarity: str = option("cos", "coCondenser: sim in the contrastive term, cos (as `pretriever train`) or dot "
                                    "(the paper, with --pooling cls --scale 1).")
    scale: float = option(20.0, "coCondenser: logits = scale x sim (1/tau; the paper: 1 with dot).",
                          default_help="20, as `pretriever train`")
    mlm_weight: float = option(1.0, "Weight of the encoder's masked-LM terms (coCondenser: L_mlm and L_aux; "
                                    "CoT-MAE: L_mlm; mlm: the loss); 0 trains coCondenser's contrastive term, or "
                                    "CoT-MAE's decoder, alone.")
    decoder_weight: float = option(1.0, "CoT-MAE: weight of the context decoder's term, whichever decoder the context "
                                        "gets (L_ctx-mlm of symmetric and mlm, L_ar of ar), so every context is "
                                        "weighted alike (caskcsg: enc_head_mlm_coef and dec_head_coef, both 1).")
    epochs: float = option(1.0, "Passes over the pairs (a qc passage and a cc document count once per pass: one "
                                "generated query, or two passages drawn anew, each time; eq. 12).")
    max_steps: int | None = option(None, "Stop after this many optimizer steps (overrides epochs).")
    batch_size: int = batch_size_option(32, "Pairs", per="forward pass of each process", more=(
        "; in-batch negatives come from the same batch (under torchrun, from every process's)"))
    mini_batch_size: int | None = option(None, "Use GradCache (as `pretriever train`): encode this many texts at "
                                               "a time, so a batch whose contrastive term scores --batch-size pairs "
                                               "fits in the memory of this many. Same gradients, one more encoder "
                                               "pass without a graph.", default_help="off")
    gradient_accumulation: int = option(1, "Forward passes per optimizer step. It does not add in-batch negatives "
                                           "(each pass scores its own batch only; the papers' 2,048+ sequences share "
                                           "one batch: use --mini-batch-size), so the run warns.")
    precision: str = option("auto", PRECISION_HELP + " fp16 scales the loss (torch.amp.GradScaler).")
    learning_rate: float = option(1e-4, "Peak learning rate of AdamW (coCondenser: 1e-4).")
    warmup_ratio: float = option(0.1, "Share of the steps with a linear warm-up; then linear decay to 0 (with "
                                      "--head-warmup-steps, within each of the two phases).")
    head_warmup_steps: int = option(0, "Train only the new pieces for the first N optimizer steps (of --max-steps or "
                                       "the epochs' steps: both phases count): the Condenser head, the CoT-MAE "
                                       "decoders and the MLM head's transform and bias, with the encoder frozen (no "
                                       "gradient, no weight decay; the MLM head's output matrix, tied to the input "
                                       "embeddings, stays frozen with it), at --head-lr; then everything trains "
                                       "together at --lr, each phase with its own warm-up and decay. Why: fresh heads "
                                       "start random, and their first gradients un-train an encoder that is already a "
                                       "retriever (bench/README, \"Pre-training on SciFact\"; issue 21: about 200 "
                                       "steps, then jointly at 2e-5). Needs a term that reads a head (not "
                                       "coCondenser with --mlm-weight 0).", default_help="0: off, all weights "
                                                                                         "train from the first step")
    head_lr: float = option(1e-4, "Peak learning rate of the heads during --head-warmup-steps (then --lr for all). "
                                  "1e-4, the papers' rate for these heads trained from scratch: a fine-tuning-sized "
                                  "--lr (2e-5) barely moves random layers in 200 steps, and the frozen encoder "
                                  "cannot suffer from a larger one.")
    weight_decay: float = option(0.01, "AdamW weight decay.")
    seed: int = seed_option("the batch order, candidate choice, masking, dropout and new layers' initialisation")
    device: str | None = device_option("the model trains")
    save_steps: int = option(500, "Checkpoint every N optimizer steps into MODEL_DIR/checkpoints.")
    logging_steps: int = option(10, "Log the loss terms every N optimizer steps (the progress line shows the last "
                                        "logged ones: reading a loss waits for the device to finish the step).")
    eval_pairs: Path | None = option(None, "Held-out pairs (a pairs folder, as PAIRS, never trained on): every "
                                           "--eval-steps optimizer steps and at the end, the masked-LM loss of the "
                                           "encoder and its MLM head on their texts (both texts of each pair, each "
                                           "distinct text once, masked at --mask-rate with a fixed seed, dropout off) "
                                           "and its perplexity, the exp of that mean loss per masked word piece, in "
                                           "pretrain.json's held_out. How good a plain start is (--objective mlm "
                                           "--init random), or how much another objective costs the MLM.")
    eval_steps: int = option(500, "With --eval-pairs: evaluate every N optimizer steps (and at the last).")
    target_perplexity: float | None = option(None, "With --eval-pairs: stop at the first evaluation whose held-out "
                                                   "perplexity is at or below this; the learning-rate schedule stays "
                                                   "the one planned for --max-steps or --epochs, which end the run "
                                                   "otherwise.", default_help="none: run the planned steps")
    resume: bool = resume_option("from the last checkpoint in MODEL_DIR/checkpoints")
    overwrite: bool = overwrite_option("a model already in MODEL_DIR")

    def __post_init__(self) -> None:
        self.pairs, self.out = Path(self.pairs), Path(self.out)
        self.eval_pairs = None if self.eval_pairs is None else Path(self.eval_pairs)
        self.objective = str(self.objective).lower()
        self.mix = parse_mix(self.mix)
        for name in ("max_length", "batch_size", "gradient_accumulation", "head_layers", "attn_window",
                     "save_steps", "logging_steps", "eval_steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.batch_size < 2:
            raise ValueError("batch_size must be at least 2 (in-batch negatives)")
        for name in ("mask_rate", "encoder_mask_rate", "decoder_mask_rate"):
            if not 0.0 < getattr(self, name) < 1.0:
                raise ValueError(f"{name} must be in (0, 1), got {getattr(self, name)}")
        self.precision = check_precision(self.precision)
        for name in ("max_steps", "mini_batch_size"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if not self.epochs > 0 or not self.scale > 0 or not self.learning_rate > 0 or not self.head_lr > 0:
            raise ValueError("epochs, scale, learning_rate and head_lr must be positive")
        if self.head_warmup_steps < 0:
            raise ValueError(f"head_warmup_steps must be at least 0, got {self.head_warmup_steps}")
        if self.head_warmup_steps and self.mlm_weight == 0 and self.objective == "cocondenser":
            raise ValueError("--head-warmup-steps with coCondenser at --mlm-weight 0: no trained term reads the "
                             "Condenser or MLM head, so the frozen encoder leaves nothing to warm up (use 0)")
        if self.pooling is not None:
            self.pooling = str(self.pooling).lower()
            if self.pooling not in POOLINGS:
                raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, got {self.pooling!r}")
        self.similarity = str(self.similarity).lower()
        if self.similarity not in SIMILARITIES:
            raise ValueError(f"similarity must be one of {', '.join(SIMILARITIES)}, got {self.similarity!r}")
        if self.mlm_weight < 0 or self.decoder_weight < 0:
            raise ValueError(f"mlm_weight and decoder_weight must be at least 0, got {self.mlm_weight} and "
                             f"{self.decoder_weight}")
        if self.mlm_weight == 0 and (self.objective == "mlm" or self.objective == "cotmae" and not self.decoder_weight):
            raise ValueError(f"--mlm-weight 0 leaves {self.objective} nothing to train")
        self.init = str(self.init).lower()
        if self.init not in INITS:
            raise ValueError(f"init must be one of {', '.join(INITS)}, got {self.init!r}")
        for name in ("init_layers", "init_hidden", "init_heads"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.init_hidden % self.init_heads:
            raise ValueError(f"init_hidden ({self.init_hidden}) must be a multiple of init_heads ({self.init_heads})")
        if self.decoder_layers is not None and self.decoder_layers < 1:
            raise ValueError(f"decoder_layers must be at least 1, got {self.decoder_layers}")
        self.decoder = str(self.decoder).lower()
        if self.decoder not in DECODERS:
            raise ValueError(f"decoder must be one of {', '.join(DECODERS)}, got {self.decoder!r}")
        if not 0 <= self.warmup_ratio < 1:
            raise ValueError(f"warmup_ratio must be in [0, 1), got {self.warmup_ratio}")
        if self.target_perplexity is not None and (self.eval_pairs is None or not self.target_perplexity > 1):
            raise ValueError("target_perplexity needs eval_pairs (the held-out texts it is measured on) and a value "
                             f"above 1 (a perplexity), got {self.target_perplexity} with eval_pairs {self.eval_pairs}")
        refuse_resume_with_overwrite(self.resume, self.overwrite, "MODEL_DIR")

    def to_json(self) -> dict[str, Any]:
        return {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()}
