"""The query model: one query embedded with the ONNX session and tokenizer a model directory holds.

Recall embeds one short text per call; a per-turn `memstore recall` should not pay for fastembed
(`import fastembed` alone takes about a second: it loads image, hub and logging libraries). This
loads only what the model directory needs, ONNX Runtime, `tokenizers` and NumPy, and computes
exactly what fastembed computes for the same directory (`memstore.vectors.embedder.Embedder`): the
tokenizer truncated at the smaller of `model_max_length` and `max_length` in tokenizer_config.json,
the special tokens of special_tokens_map.json added, zero token types, the first output pooled
(mean over the attention mask in float64, or the first token where 1_Pooling/config.json asks for
CLS), L2-normalised, float32. A test compares the two on the real model.

Batches of memories (`embeddings sync`) keep fastembed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .embedder import MODEL_FILE, local_pooling, require_extra

if TYPE_CHECKING:
    import numpy as np


def _max_context(config: dict[str, Any]) -> int:
    limits = [value for value in (config.get("model_max_length"), config.get("max_length")) if isinstance(value, int) and 0 < value < 10**6]
    if not limits:
        raise ValueError("tokenizer_config.json names no model_max_length or max_length")
    return min(limits)


class QueryModel:
    """Embeds a query with a local model directory, on `threads` ONNX Runtime threads.

    `optimized=False` loads the graph as it is: for an int8 model like the default one, ONNX
    Runtime's graph optimizations turn the weights into float ones, which about doubles the memory
    a process needs (a recall process peaked at 305 MB with them, about 200 MB without) for a query
    embedded in 4 ms instead of about 18. A process that recalls once is better off without them,
    one that keeps recalling with them (`memstore.vectors.embeddings` switches at the second query).
    """

    def __init__(self, directory: str | Path, *, threads: int = 1, optimized: bool = True) -> None:
        ort = require_extra("onnxruntime")
        tokenizers = require_extra("tokenizers")
        self.np = require_extra("numpy")
        directory = Path(directory)
        with open(directory / "tokenizer_config.json", encoding="utf-8") as f:
            config = json.load(f)
        self.tokenizer = tokenizers.Tokenizer.from_file(str(directory / "tokenizer.json"))
        # One text, not a batch: no padding (tokenizer.json may pad every text to a fixed length,
        # which costs a query many times its own length; fastembed pads a batch to its longest).
        self.tokenizer.no_padding()
        truncation = self.tokenizer.truncation or {}
        self.tokenizer.enable_truncation(
            max_length=_max_context(config), direction=config.get("truncation_side") or truncation.get("direction", "right")
        )
        special = directory / "special_tokens_map.json"
        if special.is_file():
            with open(special, encoding="utf-8") as f:
                for value in json.load(f).values():
                    for token in value if isinstance(value, list) else [value]:
                        self.tokenizer.add_special_tokens([token if isinstance(token, str) else tokenizers.AddedToken(**token)])
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimized else ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.intra_op_num_threads = options.inter_op_num_threads = threads
        if not optimized:
            options.enable_cpu_mem_arena = False  # a process that embeds one query keeps no pool
            options.add_session_config_entry("session.disable_prepacking", "1")
        self.session = ort.InferenceSession(str(directory / MODEL_FILE), sess_options=options, providers=["CPUExecutionProvider"])
        self.inputs = {node.name for node in self.session.get_inputs()}
        self.pooling = local_pooling(directory)

    def embed(self, text: str) -> np.ndarray:
        """`text` as a unit float32 vector."""
        np = self.np
        encoded = self.tokenizer.encode(text)
        ids = np.array([encoded.ids], dtype=np.int64)
        mask = np.array([encoded.attention_mask], dtype=np.int64)
        feeds = {"input_ids": ids}
        if "attention_mask" in self.inputs:
            feeds["attention_mask"] = mask
        if "token_type_ids" in self.inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        output = self.session.run(None, feeds)[0]
        if self.pooling == "CLS":
            pooled = output[:, 0].astype(np.float64)
        else:
            summed = np.sum(output, axis=1, where=mask[:, :, np.newaxis].astype(bool), dtype=np.float64)
            pooled = summed / np.maximum(np.sum(mask, axis=1, keepdims=True), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return (pooled / norms).astype(np.float32)[0]
