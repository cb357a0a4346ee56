"""Stage 1: turn a corpus (Wikipedia dump, WikiExtractor output, BEIR/JSONL/DPR) into a linked passage store."""
