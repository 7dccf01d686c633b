"""The fp32 projection at the kept positions only, inside the model's own forward (`kept_logits`).

Every score softeval computes from logits (option log-likelihoods, the tuning loss, the hf
judge) goes through `kept_logits`: the model's own forward, with its output-embedding module
replaced for that one call by a projection of the kept positions only. Whatever the forward
does after the projection (Gemma 2/3's final-logit softcapping, Cohere's logit_scale,
Granite's logits_scaling) therefore applies as it does in `model(...).logits`, with no list of
architectures to keep up to date. The projection runs in fp32 even for a bf16/fp16 model:
bf16 logits are spaced 0.125 apart for |logit| in [16, 32), so a 12-token answer's sum would
move by tenths of a nat. On an fp32 model it is the output module itself, bit for bit.
A module of its own because it is no part of the tuning: loglik's prompt-cache passes call it
directly, and everything else through `scoring.answer_logprobs`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from softeval.schema import InputError

# fp32 weight elements cast at once by the fp32 projection (128 MB): a 256k x 3584 vocabulary
# in fp32 would be 3.7 GB, so the cast runs a slice of the vocabulary at a time.
PROJECTION_CHUNK = 1 << 25
LOW_PRECISION = (torch.bfloat16, torch.float16)


def kept_logits(model: Any, select: Callable[[torch.Tensor], torch.Tensor], **inputs: Any) -> tuple[torch.Tensor, Any]:
    """fp32 logits of the positions `select` keeps, exactly as the model's forward makes them.

    `select` maps the hidden states the forward hands its output-embedding module (batch x
    length x width) to the rows (n x width) to project. The forward runs with that module
    replaced, for this one call, by an fp32 projection of those rows alone, so what it applies
    after the projection applies to them. Returns the (n x vocabulary) logits and the forward's
    output (its KV cache). A forward that projects without that module, or more than once, is
    refused: its logits could not be the ones scored.
    """
    head = model.get_output_embeddings()
    owner, name = _owner_of(model, head)
    stand_in = _KeptProjection(head, select)
    setattr(owner, name, stand_in)
    try:
        out = model(**inputs)
    finally:
        setattr(owner, name, head)
    if stand_in.calls != 1:
        raise InputError(
            f"{type(model).__name__}: its forward used its output projection (get_output_embeddings) "
            f"{stand_in.calls} times, not once, so softeval cannot compute its logits at the scored positions "
            "alone; option log-likelihoods, soft-prompt tuning and the hf judge do not support this model"
        )
    return out.logits[0], out


class _KeptProjection(torch.nn.Module):
    """Stands in for a model's output-embedding module during one forward (kept_logits)."""

    def __init__(self, head: Any, select: Callable[[torch.Tensor], torch.Tensor]) -> None:
        super().__init__()
        self.__dict__["head"] = head  # a plain reference: not registered as a submodule
        self.select, self.calls = select, 0

    @property
    def weight(self) -> torch.Tensor:  # code that reads the head's weight (its dtype) still can
        return self.head.weight

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return project_rows(self.head, self.select(hidden)).unsqueeze(0)


def _owner_of(model: Any, module: Any) -> tuple[Any, str]:
    """The module that holds `module` as an attribute, and the attribute's name."""
    for path, candidate in model.named_modules():
        if candidate is module and path:
            parent, _, name = path.rpartition(".")
            return model.get_submodule(parent), name
    raise InputError(f"{type(model).__name__}: its output embeddings are not one of its modules; cannot score it")


def project_rows(head: Any, rows: torch.Tensor) -> torch.Tensor:
    """fp32 logits of `rows` (n x width) through the output-embedding module `head`.

    A bf16/fp16 nn.Linear is projected in fp32: bf16 values are exact in fp32 (and in TF32), so
    the result is the exact products with fp32 sums, rounded once to fp32 instead of to bf16.
    Anything else (fp32 weights, quantised or offloaded heads) is the module's own output: on an
    fp32 model the logits are bit for bit those of the module."""
    weight = getattr(head, "weight", None)
    if (
        isinstance(head, torch.nn.Linear)
        and isinstance(weight, torch.Tensor)
        and weight.dtype in LOW_PRECISION
        and weight.device.type != "meta"
    ):
        return _Fp32Projection.apply(rows.to(weight.device).float(), weight, head.bias)
    return head(rows).float()


class _Fp32Projection(torch.autograd.Function):
    """rows (fp32) x weight^T (+ bias) in fp32, the low-precision weight cast a vocabulary slice
    at a time, in the forward and again in the backward pass: no fp32 copy of the table is held.
    The weight is frozen (softeval never trains it): only the rows get a gradient."""

    @staticmethod
    def forward(ctx: Any, rows: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        ctx.save_for_backward(weight)
        step = max(1, PROJECTION_CHUNK // weight.shape[1])
        logits = rows.new_empty(rows.shape[0], weight.shape[0])
        for start in range(0, weight.shape[0], step):
            logits[:, start : start + step] = rows @ weight[start : start + step].float().T
        if bias is not None:
            logits += bias.float()
        return logits

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, None, None]:
        if not ctx.needs_input_grad[0]:
            return None, None, None
        (weight,) = ctx.saved_tensors
        step = max(1, PROJECTION_CHUNK // weight.shape[1])
        rows = grad.new_zeros(grad.shape[0], weight.shape[1])
        for start in range(0, weight.shape[0], step):
            rows += grad[:, start : start + step] @ weight[start : start + step].float()
        return rows, None, None
