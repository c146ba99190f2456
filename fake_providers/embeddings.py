"""OpenAI Embeddings on the wire (``POST /openai/v1/embeddings``): validation and bodies.

Shapes follow the openai-python SDK types: ``input`` is a string, a list of strings, a
list of token ids or a list of those lists; ``encoding_format`` ``float`` (a list of
numbers) or ``base64`` (little-endian float32, which the SDK sends by default and decodes);
``dimensions`` shortens the vector (not for ``text-embedding-ada-002``). Vectors are unit
length and deterministic: the same model and input give the same vector, on every run.
"""

from __future__ import annotations

import base64
import hashlib
import math
import random
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fake_providers.openai_common import (
    body_object,
    error_body,
    error_response,
    headers,
    invalid,
    missing,
    model_of,
    wrong_type,
)
from fake_providers.tokens import count_tokens
from fake_providers.wire import (
    Answer,
    Api,
    ErrorKind,
    Headers,
    Ids,
    ParsedRequest,
    StreamEvents,
    WireResponse,
    is_int,
    sse,
)

DEFAULT_DIMENSIONS = 1536
MODEL_DIMENSIONS = {"text-embedding-3-large": 3072, "text-embedding-3-small": 1536}
FIXED_DIMENSIONS = frozenset({"text-embedding-ada-002"})  # `dimensions` is refused
MAX_INPUTS = 2048


@dataclass(frozen=True, kw_only=True)
class EmbeddingRequest:
    """An embeddings request the fake accepted."""

    model: str
    inputs: tuple[str, ...]  # each input as text (token ids joined by spaces)
    base64: bool
    dimensions: int
    tokens: int  # prompt tokens over every input


def parse(body: bytes) -> EmbeddingRequest:
    """Validate like the real API; raise `WireError` with its words when it would refuse."""
    data = body_object(body)
    model = model_of(data)
    if "input" not in data:
        raise missing("input")
    inputs, tokens = _inputs(data["input"])
    fmt = data.get("encoding_format", "float")
    if fmt not in ("float", "base64"):
        raise invalid(
            f"Invalid value: '{fmt}'. Supported values are: 'float' and 'base64'.",
            "encoding_format",
            "invalid_value",
        )
    full = MODEL_DIMENSIONS.get(model, DEFAULT_DIMENSIONS)
    dimensions = data.get("dimensions")
    if dimensions is None:
        dimensions = full
    elif model in FIXED_DIMENSIONS:
        raise invalid("This model does not support specifying dimensions.", "dimensions")
    elif not is_int(dimensions) or not 1 <= dimensions <= full:
        raise invalid(
            f"Invalid value for 'dimensions': must be an integer from 1 to {full}.",
            "dimensions",
            "invalid_value",
        )
    return EmbeddingRequest(
        model=model, inputs=inputs, base64=fmt == "base64", dimensions=dimensions, tokens=tokens
    )


def _inputs(value: object) -> tuple[tuple[str, ...], int]:
    if isinstance(value, str):
        items: Sequence[object] = [value]
    elif isinstance(value, list) and value and all(is_int(v) for v in value):
        items = [value]  # one input given as token ids
    elif isinstance(value, list):
        items = value
    else:
        raise wrong_type("input", "a string or array", value)
    if not items or len(items) > MAX_INPUTS:
        raise invalid(f"'$.input' must hold 1 to {MAX_INPUTS} inputs.", "input")
    texts, tokens = [], 0
    for i, item in enumerate(items):
        if isinstance(item, str) and item:
            texts.append(item)
            tokens += count_tokens(item)
        elif isinstance(item, list) and item and all(is_int(t) for t in item):
            texts.append(" ".join(map(str, item)))
            tokens += len(item)
        else:
            raise invalid(
                f"'$.input[{i}]' is invalid: give a non-empty string or array of token ids.",
                "input",
            )
    return tuple(texts), tokens


def vector(model: str, text: str, dimensions: int) -> list[float]:
    """A unit vector that depends only on the model, the text and the length asked for."""
    seed = hashlib.sha256(f"{model}\0{dimensions}\0{text}".encode()).digest()
    draw = random.Random(seed).gauss
    values = [draw(0.0, 1.0) for _ in range(dimensions)]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


def response(req: EmbeddingRequest, input_tokens: int | None = None) -> dict[str, Any]:
    """The embeddings list; usage counts `input_tokens` (the ledger's count) when given."""
    tokens = req.tokens if input_tokens is None else input_tokens
    data = []
    for index, text in enumerate(req.inputs):
        values = vector(req.model, text, req.dimensions)
        embedding: list[float] | str = values
        if req.base64:
            embedding = base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()
        data.append({"object": "embedding", "index": index, "embedding": embedding})
    return {
        "object": "list",
        "data": data,
        "model": req.model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


class EmbeddingsDialect:
    """OpenAI Embeddings as a `Dialect`, so every behaviour, the ledger and the price
    table work here as on the completion routes; it never streams."""

    stream_error_kind = ErrorKind.SERVER_ERROR
    api = Api.OPENAI
    endpoint = "embeddings"

    def parse(self, headers: Mapping[str, str], body: bytes, *, counting: bool) -> ParsedRequest:
        req = parse(body)
        return ParsedRequest(api=self.api, model=req.model, texts=req.inputs, payload=req)

    def headers(self, request_id: str, *, sse: bool) -> Headers:
        return headers(request_id, sse=False)

    def error_body(self, kind: ErrorKind) -> dict[str, Any]:
        return error_body(kind)

    def error(
        self,
        kind: ErrorKind,
        request_id: str,
        *,
        message: str | None = None,
        param: str | None = None,
        code: str | None = None,
        retry_after: float | None = None,
    ) -> WireResponse:
        return error_response(
            kind, request_id, message=message, param=param, code=code, retry_after=retry_after
        )

    def completion(self, req: ParsedRequest, ids: Ids, answer: Answer) -> dict[str, Any]:
        assert isinstance(req.payload, EmbeddingRequest)
        return response(req.payload, answer.input_tokens)

    def stream(self, req: ParsedRequest, ids: Ids, answer: Answer) -> StreamEvents:
        raise AssertionError("embeddings never stream")  # pragma: no cover

    def pending(self, req: ParsedRequest, ids: Ids) -> dict[str, Any] | None:
        return None

    def stream_error(self) -> bytes:  # pragma: no cover - never streams
        return sse(self.error_body(self.stream_error_kind))

    def malformed_event(self) -> bytes:  # pragma: no cover - never streams
        return b"data: {\n\n"

    def token_count(self, req: ParsedRequest, input_tokens: int) -> dict[str, Any] | None:
        return None
