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

import math
from collections.abc import Callable, Mapping
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
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


METHODS = ("rtn", "gptq", "mpq")
X_SAFE = 32  # calibration inputs are rescaled by 2^-e only when max |x| is outside [2^-X_SAFE, 2^X_SAFE]


def _check_model(model) -> None:
    """A model is an ``nnx.Module`` or a pytree (an ``eqx.Module``, a list or dict of them...), never a bare
    value: a str, bytes, None, a number or an array raise ``TypeError``."""
    if isinstance(model, nnx.Module) or isinstance(model, eqx.Module):
        return
    if model is None or isinstance(model, (str, bytes, int, float, complex)) or hasattr(model, "dtype"):
        raise TypeError(
            "model must be an equinox or flax.nnx model (a module, or a pytree of modules, holding eqx.nn.Linear / "
            f"nnx.Linear layers), got {type(model).__name__}"
        )


def _check_damping(damping) -> None:
    ok = isinstance(damping, (int, float, np.integer, np.floating)) and not isinstance(damping, bool)
    if not ok and hasattr(damping, "dtype") and np.ndim(damping) == 0:
        ok = jnp.issubdtype(damping.dtype, jnp.integer) or jnp.issubdtype(damping.dtype, jnp.floating)
        if ok and not isinstance(damping, jax.core.Tracer):
            damping = float(damping)
    if not ok:
        raise ValueError(f"damping must be a real number (finite, >= 0), got {type(damping).__name__}")
    if isinstance(damping, (int, float, np.integer, np.floating)) and not (math.isfinite(damping) and damping >= 0):
        raise ValueError(f"damping must be finite and >= 0, got {damping!r}")


def _layer_kinds(qat: bool) -> tuple[tuple[type, ...], tuple[type, ...]]:
    """(equinox, nnx) layer classes ``quantize_model`` replaces: the float Linears, and with ``qat=False`` also
    the quantization-aware layers (their trained float weights get packed)."""
    if qat:
        return (eqx.nn.Linear,), (nnx.Linear,)
    return (eqx.nn.Linear, EqxQATLinear), (nnx.Linear, NnxQATLinear)


def _weight_of(layer) -> Any:
    """The float weight (out, in) of a Linear or QAT layer (nnx stores (in, out): transposed)."""
    if isinstance(layer, (nnx.Linear, NnxQATLinear)):
        return layer.kernel[...].T
    return layer.weight


def _bias_of(layer) -> Any:
    if isinstance(layer, (nnx.Linear, NnxQATLinear)):
        return None if layer.bias is None else layer.bias[...]
    return layer.bias


def _calibration_inputs(label: str, value, d: int):
    """The checked calibration inputs of one layer as float32 (n, d), rescaled by 2^-e (exact) when max |x| is
    outside [2^-32, 2^32]: the proxy Hessian then neither overflows nor underflows, and the solvers' codes do not
    depend on the scale of x. Traced (under jit) inputs are only shape-checked."""
    from jaxwb.theory.mpq import checks as mc

    if (
        value is None
        or isinstance(value, (str, bytes, Mapping))
        or not (hasattr(value, "shape") and hasattr(value, "dtype") or isinstance(value, (list, tuple)))
    ):
        raise TypeError(f"{label} must be an array of the layer's inputs (..., {d}), got {type(value).__name__}")
    if isinstance(value, (list, tuple)):
        try:
            value = np.asarray(value)
        except ValueError as err:  # ragged
            raise ValueError(f"{label} must be an array of the layer's inputs (..., {d}), got a ragged list") from err
    dt = np.dtype(value.dtype) if not isinstance(value.dtype, np.dtype) else value.dtype
    if jnp.issubdtype(dt, jnp.complexfloating):
        raise ValueError(f"{label} must be real, got complex dtype {dt.name}")
    if not (jnp.issubdtype(dt, jnp.number) or dt == np.bool_):
        raise ValueError(f"{label} must be a real array of the layer's inputs (..., {d}), got dtype {dt}")
    shape = tuple(np.shape(value))
    if len(shape) == 0 or shape[-1] != d:
        raise ValueError(f"{label} must have shape (..., {d}) (rows of the layer's {d} inputs), got shape {shape}")
    if math.prod(shape[:-1]) == 0:
        raise ValueError(f"{label} must hold at least one row of inputs, got shape {shape}")
    cx = mc.concrete(value)
    if cx is None:  # traced: no value checks, no rescaling
        x = jnp.asarray(value, jnp.float32)
        return x.reshape(-1, d)
    bad = ~np.isfinite(cx) if jnp.issubdtype(cx.dtype, jnp.inexact) else np.zeros(cx.shape, bool)
    if bad.any():
        first = cx[bad][0]
        raise ValueError(
            f"{label} must be finite (no NaN or inf), got {int(bad.sum())} non-finite of {cx.size} entries, "
            f"first {first}"
        )
    wide = cx.dtype.itemsize > 4 and jnp.issubdtype(cx.dtype, jnp.floating)
    amax = float(np.max(np.abs(cx.astype(np.float64) if not wide else cx)))
    if amax == 0:
        raise ValueError(
            f"{label} must not be all zero (its proxy Hessian X^T X / n is 0: no information on the layer's inputs)"
        )
    e = mc.pow2_exponent(amax, X_SAFE)
    if wide:  # rescale before the cast, so that a float64 x beyond float32's range keeps its values
        x = jnp.asarray(np.ldexp(cx, -e) if e else value, jnp.float32)
    else:
        x = mc.times_pow2(jnp.asarray(value, jnp.float32), -e)
    return x.reshape(-1, d)


def _calibrated_hessian(label: str, x, damping):
    """The damped proxy Hessian of checked inputs ``x`` (n, d); a singular one (``damping=0`` with fewer rows
    than inputs, or linearly dependent inputs) is refused naming ``label``."""
    from jaxwb.theory import mpq
    from jaxwb.theory.mpq import checks as mc

    h = mpq.proxy_hessian(x, damping=damping)
    ch = mc.concrete(h)
    if ch is None:
        return h
    tol = mc.DEF_EPS * mc.eps_of(h)
    if not bool(mc.cholesky_ok(ch, -tol)):
        n, d = x.shape
        rows = f"; {n} rows for {d} inputs" if n < d else ""
        raise ValueError(
            f"{label} gives a singular proxy Hessian with damping={damping!r} ({mc.eig_range(ch)}, need the smallest "
            f"> {tol:.2g} max(diag){rows}: constant or linearly dependent inputs): pass damping > 0 (e.g. 0.01) or "
            "more, independent rows"
        )
    return h


def _check_method_args(method, fmt, filter, damping, qat: bool, calibration) -> None:
    """``quantize_model``'s options checked against each other (before the model is looked at)."""
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be 'rtn', 'gptq' or 'mpq', got {method!r}")
    if filter is not None and not callable(filter):
        raise TypeError(f"filter must be a callable filter(path, linear) -> bool, got {type(filter).__name__}")
    _check_damping(damping)
    if method != "rtn":
        if qat:
            raise ValueError(f"qat=True trains float weights: use method='rtn' with it, got method={method!r}")
        if fmt not in ("nvfp4", "mxfp4"):
            raise ValueError(f"fmt must be 'nvfp4' or 'mxfp4' with method={method!r}, got {fmt!r}")
        if calibration is None:
            raise ValueError(f"calibration (layer path -> inputs) is required with method={method!r}")
        if not isinstance(calibration, Mapping):
            raise TypeError(
                "calibration must be a mapping (a dict) from each quantized layer's path to its inputs, got "
                f"{type(calibration).__name__}"
            )
    elif calibration is not None:
        raise ValueError(
            "calibration is used by method='gptq' or 'mpq' only (layer-output solvers); method='rtn' would ignore "
            "it: pass method='gptq' or 'mpq', or no calibration"
        )


def _selected_layers(model, fmt: str, keep, custom_filter: bool, qat: bool) -> list:
    """(path, layer, name) of every layer ``keep`` selects, their weights checked: a bad layer is named before
    any is replaced."""
    eqx_kinds, nnx_kinds = _layer_kinds(qat)
    is_nnx = isinstance(model, nnx.Module)
    if is_nnx:
        found = [(p, m, _dotted(p)) for p, m in _iter_modules(model) if isinstance(m, nnx_kinds)]
    else:
        is_lin = lambda x: isinstance(x, eqx_kinds)
        leaves = jax.tree_util.tree_flatten_with_path(model, is_leaf=is_lin)[0]
        found = [(p, m, jax.tree_util.keystr(p)) for p, m in leaves if is_lin(m)]
    kinds = ("nnx.Linear" if is_nnx else "eqx.nn.Linear") + ("" if qat else " or QAT layer")
    if not found:
        raise ValueError(f"model has no layer to quantize (no {kinds} in a {type(model).__name__})")
    targets = [(p, m, name) for p, m, name in found if keep(name, m)]
    if not targets:
        names = [name for _, _, name in found]
        which = "filter" if custom_filter else f"filter (the default: in_features a multiple of {_BLOCK[fmt]})"
        raise ValueError(f"{which} selects none of the model's {len(found)} Linear layers {names}: nothing to quantize")
    where = (lambda name: f"model.{name}") if is_nnx else (lambda name: f"model{name}")
    for _, m, name in targets:
        if getattr(m, "in_features", None) == "scalar" or getattr(m, "out_features", None) == "scalar":
            raise ValueError(f"{where(name)} is a 'scalar' eqx.nn.Linear: no block of weights to quantize")
        fp4.check_input(_weight_of(m), _BLOCK[fmt], name=f"{where(name)}.{'kernel' if is_nnx else 'weight'}")
    return targets


def _calibration_hessians(calibration, targets: list, damping) -> dict[str, Any]:
    """Every selected layer's damped proxy Hessian from its calibration inputs, all checked before any solve."""
    names = [name for _, _, name in targets]
    for key in calibration:
        if not isinstance(key, str):
            raise ValueError(f"calibration keys must be layer paths (str), got {key!r} ({type(key).__name__})")
        if key not in names:
            raise ValueError(
                f"calibration has inputs for {key!r}, which is not a quantized layer of the model "
                f"(the quantized layers: {names})"
            )
    for name in names:
        if name not in calibration:
            raise ValueError(f"calibration has no inputs for layer {name!r} (keys: {sorted(calibration)})")
    hessians = {}
    for _, m, name in targets:
        label = f"calibration[{name!r}]"
        d = int(np.shape(_weight_of(m))[1])
        hessians[name] = _calibrated_hessian(label, _calibration_inputs(label, calibration[name], d), damping)
    return hessians


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
    ``surrogate``/``sigma`` backward) for training; a later ``quantize_model`` (``qat=False``) on the trained
    model packs them (their float weights, like a Linear's).

    ``filter(path, linear) -> bool`` picks the layers (``path`` as ``jax.tree_util.keystr`` for equinox, a
    dotted attribute path for nnx); the default takes every Linear whose ``in_features`` is a multiple of the
    format's block (16, or 32 for MXFP4). equinox: returns a new model; nnx: replaces in place and returns it.

    Checked before any layer is touched (``ValueError`` naming the parameter, ``TypeError`` for a wrong
    container): ``model`` an equinox or nnx model (not a str, None, number or array) holding at least one Linear
    that ``filter`` selects; ``fmt``, ``method``, ``filter`` (callable), ``damping`` (finite, >= 0); the selected
    layers' weights finite. For "gptq"/"mpq": ``calibration`` a mapping with exactly one entry per selected layer
    (a missing or an unknown path is refused; ``calibration`` with "rtn" too, which would ignore it), each an
    array (..., in) that is real, finite, non-empty and not all zero, whose damped proxy Hessian is positive
    definite (``damping=0`` with fewer rows than inputs is refused: pass ``damping`` > 0). Every layer's
    calibration is checked, and every layer solved, before the model is changed: a failure leaves an nnx model
    as it was. Scale: inputs whose max |x| is outside [2^-32, 2^32] are multiplied by 2^-e first (exact), so
    that H does not overflow or underflow; the codes do not depend on the scale of the inputs (in exact
    arithmetic; a scale that is a power of two gives the same bytes).
    """
    fmt = _check_fmt(fmt)
    _check_method_args(method, fmt, filter, damping, qat, calibration)
    _check_model(model)
    keep = filter or _default_filter(fmt)
    eqx_kinds, _ = _layer_kinds(qat)
    is_nnx = isinstance(model, nnx.Module)
    is_lin = lambda x: isinstance(x, eqx_kinds)
    targets = _selected_layers(model, fmt, keep, filter is not None, qat)
    where = (lambda name: f"model.{name}") if is_nnx else (lambda name: f"model{name}")
    hessians = {} if method == "rtn" else _calibration_hessians(calibration, targets, damping)

    def solved(name: str, w) -> QuantizedArray:
        """The float weight (out, in) quantized by ``method`` on its layer's proxy Hessian."""
        from jaxwb.theory import mpq

        codes, book = mpq.quantize_layer(w, hessians[name], fmt, method)
        return mpq.codebooks.pack_fp4(codes, book)

    def replacement(m, name: str) -> Any:
        if qat:
            if isinstance(m, nnx.Linear):
                return NnxQATLinear(m, fmt, surrogate=surrogate, sigma=sigma, implementation=implementation)
            return EqxQATLinear(m, fmt, surrogate=surrogate, sigma=sigma, implementation=implementation)
        if method != "rtn":
            w = solved(name, _weight_of(m))
        elif isinstance(m, nnx.Linear):
            return NnxQuantizedLinear.from_linear(m, fmt, implementation=implementation)
        elif isinstance(m, eqx.nn.Linear):
            return EqxQuantizedLinear.from_linear(m, fmt, implementation=implementation)
        else:  # a trained QAT layer: its float weight packed as a Linear's would be
            w = quantize_weight(_weight_of(m), fmt, name=f"{where(name)}.{'kernel' if is_nnx else 'weight'}")
        if is_nnx:
            return NnxQuantizedLinear(w, _bias_of(m), implementation=implementation)
        return EqxQuantizedLinear(w, _bias_of(m), implementation=implementation)

    new = [replacement(m, name) for _, m, name in targets]  # every layer built before the model changes
    if is_nnx:
        for (path, _, _), layer in zip(targets, new, strict=True):
            parent: Any = model  # nnx modules: attributes, or items of nnx.List / nnx.Sequential layers
            for p in path[:-1]:
                parent = parent[p] if isinstance(p, int) else getattr(parent, p)
            if isinstance(path[-1], int):
                parent[path[-1]] = layer
            else:
                setattr(parent, path[-1], layer)
        return model
    swaps = {path: layer for (path, _, _), layer in zip(targets, new, strict=True)}
    return jax.tree_util.tree_map_with_path(
        lambda path, x: swaps.get(path, x) if isinstance(x, eqx_kinds) else x, model, is_leaf=is_lin
    )


def _dotted(path) -> str:
    return ".".join(str(p) for p in path)


def _iter_modules(model):
    """``nnx.iter_modules`` (flax >= 0.12) or the older method."""
    it = getattr(nnx, "iter_modules", None)
    return it(model) if it is not None else model.iter_modules()
