"""Settings of ``pretriever pretrain`` (also the ``[pretrain]`` table of a TOML config).

Defaults follow Wu et al. (2023, section 4.1) scaled down: AdamW with a linear warm-up over
10% of the steps then linear decay, weight decay 0.01 (coCondenser); coCondenser masks 15%
and reads the Condenser head from layer L/2; CoT-MAE masks 30% of the encoder input and
45% of the decoder input (Wu et al., 2022) with a one-layer decoder.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pretriever.config import option
from pretriever.train.config import parse_mix


@dataclass
class PretrainConfig:
    pairs: Path = option(help="A pairs folder from `pretriever mine` (methods cc, qc, ict, ...): x = the positive "
                              "passage, y = the query (a generated query for qc, another passage for cc).")
    out: Path = option(help="MODEL_DIR: the pre-trained encoder as a plain sentence-transformers model, plus "
                            "pretrain.json (settings, loss curves per term, time, pairs/s) and checkpoints/.")
    objective: str = option("cocondenser", "cocondenser (contrastive + MLM + Condenser head MLM, eqs 5-7) or "
                                           "cotmae (encoder MLM + context-conditioned decoder MLM, eqs 8-11).")
    model: str | None = option(None, "The sentence-transformers model to start from (a BERT-style encoder).",
                               default_help="the packaged all-MiniLM-L6-v2")
    mix: dict[str, float] | str | None = option(None, "Each step takes its batch from one method drawn with "
                                                      "these shares, e.g. qc:0.5,cc:0.5 (the paper's Table 4).")
    max_length: int = option(128, "Word pieces per passage or query.")
    mask_rate: float = option(0.15, "coCondenser: share of tokens masked (80% [MASK], 10% random, 10% kept).")
    encoder_mask_rate: float = option(0.30, "CoT-MAE: share of x's tokens masked for the encoder.")
    decoder_mask_rate: float = option(0.45, "CoT-MAE: share of y's tokens masked for the decoder.")
    head_layers: int = option(2, "coCondenser: transformer layers of the Condenser head (N).")
    head_from_layer: int | None = option(None, "coCondenser: encoder layer M whose token states feed the head.",
                                         default_help="L/2")
    decoder_layers: int = option(1, "CoT-MAE: transformer layers of the decoder (N), initialised from scratch.")
    temperature: float = option(1.0, "coCondenser: tau in exp(sim(h_x, h_y) / tau); sim is the dot product.")
    epochs: float = option(1.0, "Passes over the pairs (a qc passage counts once per pass, eq. 12).")
    max_steps: int | None = option(None, "Stop after this many optimizer steps (overrides epochs).")
    batch_size: int = option(32, "Pairs per forward pass; in-batch negatives come from the same batch.")
    gradient_accumulation: int = option(1, "Forward passes per optimizer step.")
    learning_rate: float = option(1e-4, "Peak learning rate of AdamW (coCondenser: 1e-4).")
    warmup_ratio: float = option(0.1, "Share of the steps with a linear warm-up; then linear decay to 0.")
    weight_decay: float = option(0.01, "AdamW weight decay.")
    seed: int = option(0, "Batch order, candidate choice, masking, dropout and new layers' initialisation.")
    device: str | None = option(None, "cpu, cuda, ...", default_help="cuda when present, else cpu")
    save_steps: int = option(500, "Checkpoint every N optimizer steps into MODEL_DIR/checkpoints.")
    logging_steps: int = option(10, "Log the loss terms every N optimizer steps.")
    resume: bool = option(False, "Continue from the last checkpoint in MODEL_DIR/checkpoints.")
    overwrite: bool = option(False, "Replace a model already in MODEL_DIR.")

    def __post_init__(self) -> None:
        self.pairs, self.out = Path(self.pairs), Path(self.out)
        self.objective = str(self.objective).lower()
        self.mix = parse_mix(self.mix)
        for name in ("max_length", "batch_size", "gradient_accumulation", "head_layers", "decoder_layers",
                     "save_steps", "logging_steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.batch_size < 2:
            raise ValueError("batch_size must be at least 2 (in-batch negatives)")
        for name in ("mask_rate", "encoder_mask_rate", "decoder_mask_rate"):
            if not 0.0 < getattr(self, name) < 1.0:
                raise ValueError(f"{name} must be in (0, 1), got {getattr(self, name)}")
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {self.max_steps}")
        if not self.epochs > 0 or not self.temperature > 0 or not self.learning_rate > 0:
            raise ValueError("epochs, temperature and learning_rate must be positive")
        if not 0 <= self.warmup_ratio < 1:
            raise ValueError(f"warmup_ratio must be in [0, 1), got {self.warmup_ratio}")
        if self.resume and self.overwrite:
            raise ValueError("--resume continues the run in MODEL_DIR and --overwrite replaces it: pick one")

    def to_json(self) -> dict[str, Any]:
        return {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()}
