"""Drop-in quantized-linear layers for users' models, over :func:`jaxwb.pallas_kernels.quant.fp4_matmul`.

* :meth:`QuantizedLinear.from_linear`: an ``eqx.nn.Linear`` -> :class:`EqxQuantizedLinear`, an
  ``nnx.Linear`` -> :class:`NnxQuantizedLinear`; each behaves like the layer it replaces (same call
  signature, ``key=None`` for equinox, ``in_features``/``out_features``/``use_bias``, works inside
  ``eqx.nn.Sequential`` / ``nnx.Sequential`` and under ``jax.vmap``).
* :func:`quantize_model`: every (filtered) Linear of an equinox or flax.nnx model, without touching its code.
* Quantization-aware training: ``from_linear(..., qat=True, surrogate="gaussian", sigma=None)`` (and
  ``quantize_model(..., qat=True)``) returns :class:`EqxQATLinear` / :class:`NnxQATLinear`, which keep the float
  weight trainable and use ``fake_quant`` (``jaxwb.pallas_kernels.quant.fake_quant``): the forward is the same
  quantize/dequantize round trip, the backward the closed-form ZOE-Grad surrogate (``"ste"`` for the
  straight-through estimator). After training, ``from_linear`` on the QAT layer's float weight packs it.

``y = x @ dequantize(W).T + b`` with bfloat16-rounded activations and float32 accumulation (``matmul.py``);
``fmt`` is one of "nvfp4", "mxfp4", "razer" (RaZeR weight variant) or
"razer_activation". The weight is frozen (inference adapters: no gradient flows into the codes); in nnx the
packed arrays are ``QuantizedWeight`` variables, not ``nnx.Param`` (optimizers leave them out).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from flax import nnx

from jaxwb.pallas_kernels.dispatch import Implementation
from jaxwb.pallas_kernels.quant import fp4
from jaxwb.pallas_kernels.quant.fake_quant import fake_quant
from jaxwb.pallas_kernels.quant.fp4 import QuantizedArray
from jaxwb.pallas_kernels.quant.matmul import fp4_matmul
from jaxwb.pallas_kernels.quant.mxfp4 import mxfp4_quantize
from jaxwb.pallas_kernels.quant.nvfp4 import nvfp4_quantize
from jaxwb.pallas_kernels.quant.razer import razer_quantize

__all__ = [
    "EqxQATLinear",
    "EqxQuantizedLinear",
    "NnxQATLinear",
    "NnxQuantizedLinear",
    "QuantizedLinear",
    "QuantizedWeight",
    "quantize_model",
    "quantize_weight",
]

WEIGHT_FORMATS = ("nvfp4", "mxfp4", "razer", "razer_activation")
_BLOCK = {"nvfp4": 16, "mxfp4": 32, "razer": 16, "razer_activation": 16}


def _check_fmt(fmt: str | None) -> str:
    """``fmt`` (None: "nvfp4") checked against :data:`WEIGHT_FORMATS`."""
    fmt = "nvfp4" if fmt is None else fmt
    if fmt not in WEIGHT_FORMATS:
        raise ValueError(f"fmt must be one of {WEIGHT_FORMATS}, got {fmt!r}")
    return fmt


def quantize_weight(
    w, fmt: str | None = None, *, implementation: Implementation = None, name: str = "w"
) -> QuantizedArray:
    """Quantize a float weight of shape (out, in) (blocks along ``in``) to ``fmt``. A bad weight raises
    ``ValueError`` naming ``name`` (the caller's parameter: ``w``, or ``linear.weight`` from ``from_linear``)."""
    fmt = _check_fmt(fmt)
    fp4.check_input(w, _BLOCK[fmt], name=name)
    if fmt == "nvfp4":
        return nvfp4_quantize(w, implementation=implementation)
    if fmt == "mxfp4":
        return mxfp4_quantize(w, implementation=implementation)
    if fmt == "razer":
        return razer_quantize(w, variant="weight", implementation=implementation)
    return razer_quantize(w, variant="activation", implementation=implementation)


class EqxQuantizedLinear(eqx.Module):
    """Drop-in for ``eqx.nn.Linear``: unbatched ``__call__(x [in], *, key=None) -> [out]`` (any leading axes
    also work); ``weight`` is a :class:`QuantizedArray` (out, in), FP4 blocks along ``in``."""

    weight: QuantizedArray
    bias: jax.Array | None
    in_features: int = eqx.field(static=True)
    out_features: int = eqx.field(static=True)
    use_bias: bool = eqx.field(static=True)
    implementation: Implementation = eqx.field(static=True, default=None)

    def __init__(self, weight: QuantizedArray, bias=None, *, implementation: Implementation = None):
        fp4.check_format(weight, fp4.FORMATS, name="weight")
        if len(weight.shape) != 2:
            raise ValueError(f"weight must be a 2-D (out, in) QuantizedArray, got shape {weight.shape}")
        self.weight, self.bias = weight, bias
        self.out_features, self.in_features = weight.shape
        self.use_bias = bias is not None
        self.implementation = implementation

    @classmethod
    def from_linear(
        cls,
        linear: eqx.nn.Linear,
        fmt: str | None = None,
        *,
        implementation: Implementation = None,
    ) -> EqxQuantizedLinear:
        if not isinstance(linear, eqx.nn.Linear):
            raise ValueError(f"linear must be an eqx.nn.Linear, got {type(linear).__name__}")
        if linear.in_features == "scalar" or linear.out_features == "scalar":
            raise ValueError("a 'scalar' eqx.nn.Linear has no block of weights to quantize")
        w = quantize_weight(linear.weight, _check_fmt(fmt), name="linear.weight")
        return cls(w, linear.bias, implementation=implementation)

    def __call__(self, x, *, key: jax.Array | None = None):
        del key
        y = fp4_matmul(x, self.weight, implementation=self.implementation)
        return y if self.bias is None else y + self.bias.astype(y.dtype)


class QuantizedWeight(nnx.Variable):
    """A frozen packed-weight array (codes, scales or the global scale): not an ``nnx.Param``."""


class NnxQuantizedLinear(nnx.Module):
    """Drop-in for ``nnx.Linear``: ``__call__(inputs [..., in]) -> [..., out]``, W (out, in) stored packed."""

    def __init__(self, weight: QuantizedArray, bias=None, *, implementation: Implementation = None):
        fp4.check_format(weight, fp4.FORMATS, name="weight")
        if len(weight.shape) != 2:
            raise ValueError(f"weight must be a 2-D (out, in) QuantizedArray, got shape {weight.shape}")
        self.codes = QuantizedWeight(weight.codes)
        self.scales = QuantizedWeight(weight.scales)
        self.global_scale = QuantizedWeight(weight.global_scale)
        self.shape, self.format, self.block_size = weight.shape, weight.format, weight.block_size
        self.out_features, self.in_features = weight.shape
        self.use_bias = bias is not None
        self.bias = None if bias is None else nnx.Param(jnp.asarray(bias))
        self.implementation = implementation

    @classmethod
    def from_linear(
        cls,
        linear: nnx.Linear,
        fmt: str | None = None,
        *,
        implementation: Implementation = None,
    ) -> NnxQuantizedLinear:
        """nnx.Linear keeps its kernel as (in, out): it is transposed to (out, in) before quantizing."""
        if not isinstance(linear, nnx.Linear):
            raise ValueError(f"linear must be an nnx.Linear, got {type(linear).__name__}")
        bias = None if linear.bias is None else linear.bias[...]
        w = quantize_weight(linear.kernel[...].T, _check_fmt(fmt), name="linear.kernel")
        return cls(w, bias, implementation=implementation)

    @property
    def weight(self) -> QuantizedArray:
        return QuantizedArray(
            codes=self.codes[...],
            scales=self.scales[...],
            global_scale=self.global_scale[...],
            shape=self.shape,
            format=self.format,
            block_size=self.block_size,
        )

    def __call__(self, inputs):
        y = fp4_matmul(inputs, self.weight, implementation=self.implementation)
        return y if self.bias is None else y + self.bias[...].astype(y.dtype)


class QuantizedLinear:
    """``QuantizedLinear.from_linear(linear, fmt)``: the quantized drop-in for an ``eqx.nn.Linear``
    (:class:`EqxQuantizedLinear`) or an ``nnx.Linear`` (:class:`NnxQuantizedLinear`)."""

    def __new__(cls, *args, **kwargs):
        raise TypeError("build a quantized layer with QuantizedLinear.from_linear(linear, fmt)")

    @staticmethod
    def from_linear(
        linear,
        fmt: str | None = None,
        *,
        implementation: Implementation = None,
        qat: bool = False,
        surrogate: str = "gaussian",
        sigma: float | None = None,
    ):
        if qat:
            fmt = _check_fmt(fmt)
            if isinstance(linear, eqx.nn.Linear):
                return EqxQATLinear(linear, fmt, surrogate=surrogate, sigma=sigma, implementation=implementation)
            if isinstance(linear, nnx.Linear):
                return NnxQATLinear(linear, fmt, surrogate=surrogate, sigma=sigma, implementation=implementation)
            raise ValueError(f"linear must be an eqx.nn.Linear or an nnx.Linear, got {type(linear).__name__}")
        if isinstance(linear, eqx.nn.Linear):
            return EqxQuantizedLinear.from_linear(linear, fmt, implementation=implementation)
        if isinstance(linear, nnx.Linear):
            return NnxQuantizedLinear.from_linear(linear, fmt, implementation=implementation)
        raise ValueError(f"linear must be an eqx.nn.Linear or an nnx.Linear, got {type(linear).__name__}")


class EqxQATLinear(eqx.Module):
    """Quantization-aware drop-in for ``eqx.nn.Linear``: float ``weight`` (out, in) trained through
    ``fake_quant`` (quantized forward, surrogate backward); unbatched ``__call__(x, *, key=None)``."""

    weight: jax.Array
    bias: jax.Array | None
    fmt: str = eqx.field(static=True)
    surrogate: str = eqx.field(static=True)
    sigma: float | None = eqx.field(static=True)
    in_features: int = eqx.field(static=True)
    out_features: int = eqx.field(static=True)
    use_bias: bool = eqx.field(static=True)
    implementation: Implementation = eqx.field(static=True, default=None)

    def __init__(
        self,
        linear: eqx.nn.Linear,
        fmt: str = "nvfp4",
        *,
        surrogate: str = "gaussian",
        sigma: float | None = None,
        implementation: Implementation = None,
    ):
        if not isinstance(linear, eqx.nn.Linear):
            raise ValueError(f"linear must be an eqx.nn.Linear, got {type(linear).__name__}")
        self.weight, self.bias = linear.weight, linear.bias
        self.fmt, self.surrogate, self.sigma = _check_fmt(fmt), surrogate, sigma
        self.out_features, self.in_features = linear.weight.shape
        self.use_bias = linear.bias is not None
        self.implementation = implementation
        fake_quant(self.weight, fmt=self.fmt, surrogate=surrogate, sigma=sigma)  # eager argument checks

    def __call__(self, x, *, key: jax.Array | None = None):
        del key
        w = fake_quant(
            self.weight, fmt=self.fmt, surrogate=self.surrogate, sigma=self.sigma, implementation=self.implementation
        )
        y = x @ w.T.astype(x.dtype)
        return y if self.bias is None else y + self.bias.astype(y.dtype)


class NnxQATLinear(nnx.Module):
    """Quantization-aware drop-in for ``nnx.Linear``: the float ``kernel`` (in, out) stays an ``nnx.Param`` and
    the forward uses its ``fake_quant`` round trip (blocks along ``in``), the backward the surrogate."""

    def __init__(
        self,
        linear: nnx.Linear,
        fmt: str = "nvfp4",
        *,
        surrogate: str = "gaussian",
        sigma: float | None = None,
        implementation: Implementation = None,
    ):
        if not isinstance(linear, nnx.Linear):
            raise ValueError(f"linear must be an nnx.Linear, got {type(linear).__name__}")
        self.kernel = nnx.Param(linear.kernel[...])
        self.bias = None if linear.bias is None else nnx.Param(linear.bias[...])
        self.fmt, self.surrogate, self.sigma = _check_fmt(fmt), surrogate, sigma
        self.in_features, self.out_features = linear.kernel.shape
        self.use_bias = linear.bias is not None
        self.implementation = implementation
        fake_quant(self.kernel[...].T, fmt=self.fmt, surrogate=surrogate, sigma=sigma)

    def __call__(self, inputs):
        w = fake_quant(
            self.kernel[...].T,
            fmt=self.fmt,
            surrogate=self.surrogate,
            sigma=self.sigma,
            implementation=self.implementation,
        )
        y = inputs @ w.T.astype(inputs.dtype)
        return y if self.bias is None else y + self.bias[...].astype(y.dtype)


def _in_features(linear) -> Any:
    return linear.in_features


def _default_filter(fmt: str) -> Callable[[str, Any], bool]:
    """Quantize every Linear whose input width is a whole number of blocks (others stay float)."""
    return lambda path, linear: isinstance(_in_features(linear), int) and _in_features(linear) % _BLOCK[fmt] == 0


def quantize_model(
    model,
    fmt: str | None = None,
    *,
    filter: Callable[[str, Any], bool] | None = None,
    implementation: Implementation = None,
    qat: bool = False,
    surrogate: str = "gaussian",
    sigma: float | None = None,
    method: str = "rtn",
    calibration: Mapping[str, Any] | None = None,
    damping: float = 0.01,
):
    """Replace the Linear layers of an equinox or flax.nnx ``model`` by their quantized drop-ins.

    ``method`` picks the codes (the scales are always the ones the kernels choose for the float weight):
    ``"rtn"`` (default) rounds every weight to its nearest code (the kernels' quantizer, bit-identical to what
    this function did before ``method`` existed); ``"gptq"`` (GPTQ, Frantar et al. 2023) and ``"mpq"``
    (message-passing PTQ: VAMP marginals -> exact coordinate descent; ``jaxwb.theory.mpq``) solve for the codes
    that minimise the layer-output error (w - q)^T H (w - q) on the proxy Hessian H = X^T X / n + ``damping``
    * mean(diag) * I of calibration inputs. They need ``calibration``: a mapping from each quantized layer's
    path (the string ``filter`` receives) to its inputs X, an array (..., in) (leading axes flattened), and
    ``fmt`` "nvfp4" or "mxfp4" (RaZeR's special values are not in the solvers' grids).

    ``qat=True`` swaps in the quantization-aware layers instead (float weights, ``fake_quant`` forward,
    ``surrogate``/``sigma`` backward) for training; a later ``quantize_model`` on the trained model packs them.

    ``filter(path, linear) -> bool`` picks the layers (``path`` as ``jax.tree_util.keystr`` for equinox, a
    dotted attribute path for nnx); the default takes every Linear whose ``in_features`` is a multiple of the
    format's block (16, or 32 for MXFP4). equinox: returns a new model; nnx: replaces in place and returns it.
    """
    fmt = _check_fmt(fmt)
    keep = filter or _default_filter(fmt)
    if method not in ("rtn", "gptq", "mpq"):
        raise ValueError(f"method must be 'rtn', 'gptq' or 'mpq', got {method!r}")
    if method != "rtn":
        if qat:
            raise ValueError(f"qat=True trains float weights: use method='rtn' with it, got method={method!r}")
        if fmt not in ("nvfp4", "mxfp4"):
            raise ValueError(f"fmt must be 'nvfp4' or 'mxfp4' with method={method!r}, got {fmt!r}")
        if calibration is None:
            raise ValueError(f"calibration (layer path -> inputs) is required with method={method!r}")

    def solved(path: str, w) -> QuantizedArray:
        """The float weight (out, in) quantized by ``method`` on its layer's calibration inputs."""
        from jaxwb.theory import mpq

        assert calibration is not None
        if path not in calibration:
            raise ValueError(f"calibration has no inputs for layer {path!r} (keys: {sorted(calibration)})")
        x = jnp.asarray(calibration[path], jnp.float32)
        x = x.reshape(-1, x.shape[-1])
        if x.shape[-1] != w.shape[1]:
            raise ValueError(f"calibration[{path!r}] must have last axis {w.shape[1]}, got shape {x.shape}")
        fp4.check_input(w, _BLOCK[fmt], name="linear.weight")
        codes, book = mpq.quantize_layer(w, mpq.proxy_hessian(x, damping=damping), fmt, method)
        return mpq.codebooks.pack_fp4(codes, book)

    if isinstance(model, nnx.Module):
        targets = [
            (path, m) for path, m in _iter_modules(model) if isinstance(m, nnx.Linear) and keep(_dotted(path), m)
        ]
        for path, lin in targets:
            if method != "rtn":
                bias = None if lin.bias is None else lin.bias[...]
                w = solved(_dotted(path), lin.kernel[...].T)
                new: Any = NnxQuantizedLinear(w, bias, implementation=implementation)
            else:
                new = (
                    NnxQATLinear(lin, fmt, surrogate=surrogate, sigma=sigma, implementation=implementation)
                    if qat
                    else NnxQuantizedLinear.from_linear(lin, fmt, implementation=implementation)
                )
            parent: Any = model  # nnx modules: attributes, or items of nnx.List / nnx.Sequential layers
            for p in path[:-1]:
                parent = parent[p] if isinstance(p, int) else getattr(parent, p)
            if isinstance(path[-1], int):
                parent[path[-1]] = new
            else:
                setattr(parent, path[-1], new)
        return model
    is_lin = lambda x: isinstance(x, eqx.nn.Linear)

    def swap(path, x):
        if is_lin(x) and keep(jax.tree_util.keystr(path), x):
            if qat:
                return EqxQATLinear(x, fmt, surrogate=surrogate, sigma=sigma, implementation=implementation)
            if method != "rtn":
                w = solved(jax.tree_util.keystr(path), x.weight)
                return EqxQuantizedLinear(w, x.bias, implementation=implementation)
            return EqxQuantizedLinear.from_linear(x, fmt, implementation=implementation)
        return x

    return jax.tree_util.tree_map_with_path(swap, model, is_leaf=is_lin)


def _dotted(path) -> str:
    return ".".join(str(p) for p in path)


def _iter_modules(model):
    """``nnx.iter_modules`` (flax >= 0.12) or the older method."""
    it = getattr(nnx, "iter_modules", None)
    return it(model) if it is not None else model.iter_modules()
