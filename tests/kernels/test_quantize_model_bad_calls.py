"""``quantize_model(method="gptq"|"mpq")`` (and its options shared with "rtn") on bad input: each call raises a
ValueError (TypeError for a wrong container) whose message starts with the parameter's name, on an equinox and a
flax.nnx model; the calibration is checked before any layer is solved or replaced (an nnx model is left as it was);
and the packed bytes do not depend on the scale of the calibration inputs.

``BAD_CALLS`` is the table (call -> error class, message fragment); ``python -m
tests.kernels.test_quantize_model_bad_calls`` prints it with the full messages.
"""

from __future__ import annotations

import functools
import math
import re

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxwb.pallas_kernels.quant.layers import (
    EqxQATLinear,
    EqxQuantizedLinear,
    NnxQuantizedLinear,
    quantize_model,
)
from tests.bad_calls import print_table, table_tests

nan, inf = math.nan, math.inf


class Net(nnx.Module):
    """A user's nnx model: fc (32 -> 64), fc2 (64 -> 16)."""

    def __init__(self, seed: int = 0):
        self.fc = nnx.Linear(32, 64, rngs=nnx.Rngs(seed))
        self.fc2 = nnx.Linear(64, 16, rngs=nnx.Rngs(seed + 1))

    def __call__(self, v):
        return self.fc2(jax.nn.relu(self.fc(v)))


class NoLinear(nnx.Module):
    def __init__(self):
        self.scale = nnx.Param(jnp.ones(32))


class Narrow(nnx.Module):
    def __init__(self):
        self.fc = nnx.Linear(10, 16, rngs=nnx.Rngs(0))


@functools.cache
def _data():
    k1, k2 = jax.random.split(jax.random.key(0))
    mlp = eqx.nn.MLP(32, 16, 64, depth=1, key=k1)  # .layers[0]: 32 -> 64, .layers[1]: 64 -> 16
    x = jax.random.normal(k2, (128, 32))
    hid = jax.vmap(lambda v: jax.nn.relu(mlp.layers[0](v)))(x)
    h2 = jax.nn.relu(Net().fc(x))
    return mlp, x, hid, h2


def _ns() -> dict:
    mlp, x, hid, h2 = _data()
    cal = {".layers[0]": x, ".layers[1]": hid}
    ncal = {"fc": x, "fc2": h2}
    return dict(
        qm=quantize_model, mlp=mlp, x=x, hid=hid, h2=h2, cal=cal, ncal=ncal, Net=Net, NoLinear=NoLinear,
        Narrow=Narrow, eqx=eqx, jax=jax, jnp=jnp, np=np, nan=nan, inf=inf,
        mlp_nan=eqx.tree_at(lambda m: m.layers[1].weight, mlp, mlp.layers[1].weight.at[0, 0].set(nan)),
        scalar=[eqx.nn.Linear("scalar", 16, key=jax.random.key(3))],
        dead=x.at[:, 5].set(0.0),
    )  # fmt: skip


V, T = ValueError, TypeError
G = "method='gptq'"
P = "method='mpq'"
# (call, error class, fragment of the message; the fragment always starts with the parameter's name)
# fmt: off
BAD_CALLS = [
    # ---- the model itself
    (f"qm('model', 'nvfp4', {G}, calibration=cal)", T, "model must be an equinox or flax.nnx model"),
    (f"qm(None, 'nvfp4', {G}, calibration=cal)", T, "model must be an equinox or flax.nnx model"),
    (f"qm(jnp.ones((4, 32)), 'nvfp4', {P}, calibration=cal)", T, "model must be an equinox or flax.nnx model"),
    (f"qm(np.ones((4, 32)), 'nvfp4', {G}, calibration=cal)", T, "model must be an equinox or flax.nnx model"),
    (f"qm(3.0, 'nvfp4', {P}, calibration=cal)", T, "model must be an equinox or flax.nnx model"),
    ("qm('model', 'nvfp4')", T, "model must be an equinox or flax.nnx model"),
    ("qm(None, 'mxfp4', qat=True)", T, "model must be an equinox or flax.nnx model"),
    (f"qm(eqx.nn.Lambda(jax.nn.relu), 'nvfp4', {G}, calibration=cal)", V, "model has no layer to quantize"),
    (f"qm(NoLinear(), 'nvfp4', {P}, calibration=ncal)", V, "model has no layer to quantize"),
    (f"qm([jnp.ones(3)], 'nvfp4', {G}, calibration=cal)", V, "model has no layer to quantize"),
    ("qm(NoLinear(), 'nvfp4')", V, "model has no layer to quantize"),
    (f"qm(Narrow(), 'nvfp4', {G}, calibration={{'fc': x[:, :10]}})", V, "filter (the default: in_features a mul"),
    ("qm(Narrow(), 'nvfp4')", V, "filter (the default: in_features a multiple of 16) selects none"),
    (f"qm(mlp, 'nvfp4', {G}, calibration=cal, filter=lambda p, m: False)", V, "filter selects none of the model's 2"),
    (f"qm(Net(), 'nvfp4', {P}, calibration=ncal, filter=lambda p, m: False)", V, "filter selects none"),
    (f"qm(mlp, 'nvfp4', {G}, calibration=cal, filter='layers')", T, "filter must be a callable"),
    (f"qm(scalar, 'nvfp4', {G}, calibration={{}}, filter=lambda p, m: True)", V, "model[0] is a 'scalar'"),
    (f"qm(mlp_nan, 'nvfp4', {G}, calibration=cal)", V, "model.layers[1].weight contains 1 non-finite"),
    ("qm(mlp_nan, 'nvfp4')", V, "model.layers[1].weight contains 1 non-finite"),
    # ---- the calibration container
    (f"qm(mlp, 'nvfp4', {G}, calibration=[x, hid])", T, "calibration must be a mapping"),
    (f"qm(mlp, 'nvfp4', {G}, calibration=x)", T, "calibration must be a mapping"),
    (f"qm(mlp, 'nvfp4', {P}, calibration=jnp.array(1.0))", T, "calibration must be a mapping"),
    (f"qm(mlp, 'nvfp4', {G}, calibration='x')", T, "calibration must be a mapping"),
    (f"qm(Net(), 'nvfp4', {P}, calibration=(x, h2))", T, "calibration must be a mapping"),
    (f"qm(Net(), 'nvfp4', {G}, calibration=x)", T, "calibration must be a mapping"),
    (f"qm(mlp, 'nvfp4', {G})", V, "calibration (layer path -> inputs) is required"),
    (f"qm(Net(), 'nvfp4', {P})", V, "calibration (layer path -> inputs) is required"),
    ("qm(mlp, 'nvfp4', calibration=cal)", V, "calibration is used by method='gptq' or 'mpq' only"),
    ("qm(Net(), 'nvfp4', method='rtn', calibration=ncal)", V, "calibration is used by method='gptq' or 'mpq'"),
    # ---- calibration paths
    (f"qm(mlp, 'nvfp4', {G}, calibration={{**cal, '.layers[2]': hid}})", V,
     "calibration has inputs for '.layers[2]', which is not a quantized layer"),
    (f"qm(Net(), 'nvfp4', {P}, calibration={{**ncal, 'fc3': h2}})", V,
     "calibration has inputs for 'fc3', which is not a quantized layer"),
    (f"qm(mlp, 'nvfp4', {G}, calibration={{'layers[0]': x, '.layers[1]': hid}})", V,
     "calibration has inputs for 'layers[0]'"),
    (f"qm(mlp, 'nvfp4', {G}, calibration=cal, filter=lambda p, m: p == '.layers[0]')", V,
     "calibration has inputs for '.layers[1]', which is not a quantized layer"),
    (f"qm(mlp, 'nvfp4', {P}, calibration={{'.layers[0]': x}})", V, "calibration has no inputs for layer '.layers[1]'"),
    (f"qm(Net(), 'nvfp4', {G}, calibration={{'fc2': h2}})", V, "calibration has no inputs for layer 'fc'"),
    (f"qm(mlp, 'nvfp4', {G}, calibration={{0: x, 1: hid}})", V, "calibration keys must be layer paths (str)"),
    (f"qm(Net(), 'nvfp4', {P}, calibration={{'fc': x, ('fc2',): h2}})", V, "calibration keys must be layer paths"),
    # ---- calibration arrays: containers, shapes, dtypes
    (f"qm(mlp, 'nvfp4', {G}, calibration={{**cal, '.layers[1]': 'hid'}})", T,
     "calibration['.layers[1]'] must be an array of the layer's inputs (..., 64), got str"),
    (f"qm(mlp, 'nvfp4', {P}, calibration={{**cal, '.layers[0]': None}})", T,
     "calibration['.layers[0]'] must be an array"),
    (f"qm(Net(), 'nvfp4', {G}, calibration={{**ncal, 'fc': {{'x': x}}}})", T, "calibration['fc'] must be an array"),
    (f"qm(mlp, 'nvfp4', {G}, calibration={{**cal, '.layers[0]': jnp.array(1.0)}})", V,
     "calibration['.layers[0]'] must have shape (..., 32)"),
    (f"qm(mlp, 'nvfp4', {P}, calibration={{**cal, '.layers[0]': x[:, :16]}})", V,
     "calibration['.layers[0]'] must have shape (..., 32)"),
    (f"qm(Net(), 'nvfp4', {G}, calibration={{**ncal, 'fc2': x}})", V, "calibration['fc2'] must have shape (..., 64)"),
    (f"qm(mlp, 'nvfp4', {G}, calibration={{**cal, '.layers[0]': x[:0]}})", V,
     "calibration['.layers[0]'] must hold at least one row"),
    (f"qm(mlp, 'nvfp4', {G}, calibration={{**cal, '.layers[0]': x.astype(jnp.complex64)}})", V,
     "calibration['.layers[0]'] must be real"),
    (f"qm(mlp, 'nvfp4', {P}, calibration={{**cal, '.layers[0]': np.full((4, 32), 'a')}})", V,
     "calibration['.layers[0]'] must be a real array"),
    (f"qm(mlp, 'nvfp4', {G}, calibration={{**cal, '.layers[0]': [[1.0] * 32, [2.0]]}})", V,
     "calibration['.layers[0]'] must be an array of the layer's inputs (..., 32), got a ragged list"),
    # ---- calibration values: NaN / inf, all zero, singular proxy Hessians
    (f"qm(mlp, 'nvfp4', {G}, calibration={{**cal, '.layers[0]': x.at[3, 4].set(nan)}})", V,
     "calibration['.layers[0]'] must be finite (no NaN or inf), got 1 non-finite"),
    (f"qm(mlp, 'nvfp4', {P}, calibration={{**cal, '.layers[1]': hid.at[0, 0].set(inf)}})", V,
     "calibration['.layers[1]'] must be finite"),
    (f"qm(mlp, 'nvfp4', {P}, calibration={{**cal, '.layers[0]': x.at[0, 0].set(nan)}})", V,
     "calibration['.layers[0]'] must be finite"),
    (f"qm(Net(), 'nvfp4', {G}, calibration={{**ncal, 'fc': x.at[0, 0].set(-inf)}})", V,
     "calibration['fc'] must be finite"),
    (f"qm(Net(), 'nvfp4', {P}, calibration={{**ncal, 'fc2': h2.at[5, 5].set(nan)}})", V,
     "calibration['fc2'] must be finite"),
    (f"qm(mlp, 'mxfp4', {G}, calibration={{**cal, '.layers[0]': np.asarray(x, np.float64) * np.nan}})", V,
     "calibration['.layers[0]'] must be finite"),
    (f"qm(mlp, 'nvfp4', {G}, calibration={{**cal, '.layers[0]': jnp.zeros((128, 32))}})", V,
     "calibration['.layers[0]'] must not be all zero"),
    (f"qm(mlp, 'nvfp4', {P}, calibration={{**cal, '.layers[1]': 0 * hid}})", V,
     "calibration['.layers[1]'] must not be all zero"),
    (f"qm(Net(), 'nvfp4', {G}, calibration={{**ncal, 'fc': jnp.zeros((8, 32))}})", V, "calibration['fc'] must not be"),
    (f"qm(Net(), 'nvfp4', {P}, calibration={{**ncal, 'fc2': 0 * h2}})", V, "calibration['fc2'] must not be all zero"),
    (f"qm(mlp, 'nvfp4', {G}, calibration={{**cal, '.layers[0]': x[:8]}}, damping=0.0)", V,
     "calibration['.layers[0]'] gives a singular proxy Hessian with damping=0.0"),
    (f"qm(mlp, 'nvfp4', {P}, calibration={{**cal, '.layers[0]': x[:8]}}, damping=0)", V,
     "calibration['.layers[0]'] gives a singular proxy Hessian with damping=0"),
    (f"qm(Net(), 'nvfp4', {G}, calibration={{**ncal, 'fc': x[:31]}}, damping=0.0)", V,
     "calibration['fc'] gives a singular proxy Hessian"),
    (f"qm(Net(), 'nvfp4', {P}, calibration={{**ncal, 'fc': x[:16]}}, damping=0.0)", V,
     "calibration['fc'] gives a singular proxy Hessian"),
    (f"qm(mlp, 'nvfp4', {G}, calibration={{**cal, '.layers[0]': dead}}, damping=0.0)", V,
     "calibration['.layers[0]'] gives a singular proxy Hessian"),
    (f"qm(mlp, 'nvfp4', {G}, calibration={{**cal, '.layers[0]': x[:8]}}, damping=1e-12)", V,
     "calibration['.layers[0]'] gives a singular proxy Hessian with damping=1e-12"),
    (f"qm(mlp, 'nvfp4', {G}, calibration={{**cal, '.layers[0]': jnp.ones((64, 32))}}, damping=0.0)", V,
     "calibration['.layers[0]'] gives a singular proxy Hessian"),
    # ---- options
    (f"qm(mlp, 'nvfp4', {G}, calibration=cal, damping=-0.1)", V, "damping must be finite and >= 0"),
    (f"qm(mlp, 'nvfp4', {P}, calibration=cal, damping=inf)", V, "damping must be finite and >= 0"),
    (f"qm(Net(), 'nvfp4', {G}, calibration=ncal, damping=nan)", V, "damping must be finite and >= 0"),
    (f"qm(Net(), 'nvfp4', {P}, calibration=ncal, damping='0.01')", V, "damping must be a real number"),
    (f"qm(mlp, 'nvfp4', {G}, calibration=cal, damping=True)", V, "damping must be a real number"),
    (f"qm(mlp, 'nvfp4', {G}, calibration=cal, damping=jnp.ones(2))", V, "damping must be a real number"),
    ("qm(mlp, 'nvfp4', damping=-1.0)", V, "damping must be finite and >= 0"),
    ("qm(mlp, 'nvfp4', method='adaround', calibration=cal)", V, "method must be 'rtn', 'gptq' or 'mpq'"),
    ("qm(Net(), 'nvfp4', method=None)", V, "method must be 'rtn', 'gptq' or 'mpq'"),
    ("qm(mlp, 'nvfp4', method='GPTQ', calibration=cal)", V, "method must be 'rtn', 'gptq' or 'mpq'"),
    (f"qm(mlp, 'razer', {G}, calibration=cal)", V, "fmt must be 'nvfp4' or 'mxfp4' with method='gptq'"),
    (f"qm(Net(), 'razer_activation', {P}, calibration=ncal)", V, "fmt must be 'nvfp4' or 'mxfp4' with method='mpq'"),
    (f"qm(mlp, 'int4', {G}, calibration=cal)", V, "fmt must be one of"),
    (f"qm(mlp, 'nvfp4', {G}, calibration=cal, qat=True)", V, "qat=True trains float weights"),
    (f"qm(Net(), 'nvfp4', {P}, calibration=ncal, qat=True)", V, "qat=True trains float weights"),
]
# fmt: on


test_bad_call_raises_naming_the_parameter, test_the_table_is_large_and_unique = table_tests(BAD_CALLS, _ns, at_least=60)


# ---------------------------------------------------------------------------------------------------------
# Transactional: checked up front, solved before anything is replaced
# ---------------------------------------------------------------------------------------------------------


def _kernels(net: Net) -> list[np.ndarray]:
    return [np.asarray(net.fc.kernel[...]), np.asarray(net.fc2.kernel[...])]


@pytest.mark.parametrize("method", ["gptq", "mpq"])
def test_nnx_model_is_untouched_when_a_later_layer_fails(method):
    _, x, _, h2 = _data()
    for bad in ({"fc": x, "fc2": h2.at[0, 0].set(nan)}, {"fc": x, "fc2": h2[:8]}, {"fc": x, "fc2": 0 * h2}):
        net = Net()
        before = _kernels(net)
        with pytest.raises(ValueError, match=re.escape("calibration['fc2']")):
            quantize_model(net, "nvfp4", method=method, calibration=bad, damping=0.0 if len(bad["fc2"]) == 8 else 0.01)
        assert type(net.fc) is nnx.Linear and type(net.fc2) is nnx.Linear  # not half-quantized
        for a, b in zip(_kernels(net), before, strict=True):
            np.testing.assert_array_equal(a, b)


def test_nnx_model_is_untouched_when_a_weight_fails_with_rtn():
    net = Net()
    net.fc2.kernel[...] = net.fc2.kernel[...].at[0, 0].set(nan)
    with pytest.raises(ValueError, match=re.escape("model.fc2.kernel contains 1 non-finite")):
        quantize_model(net, "nvfp4")
    assert type(net.fc) is nnx.Linear


@pytest.mark.parametrize("kind", ["eqx", "nnx"])
def test_calibration_is_checked_before_any_solve_and_solves_before_any_change(kind, monkeypatch):
    from jaxwb.theory import mpq

    mlp, x, hid, h2 = _data()
    model, cal, last = (mlp, {".layers[0]": x, ".layers[1]": hid}, ".layers[1]") if kind == "eqx" else (
        Net(), {"fc": x, "fc2": h2}, "fc2")  # fmt: skip
    calls = []
    real = mpq.quantize_layer

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(mpq, "quantize_layer", counting)
    with pytest.raises(ValueError, match="must be finite"):
        quantize_model(model, "nvfp4", method="gptq", calibration={**cal, last: cal[last].at[0, 0].set(nan)})
    assert calls == []  # the last layer's inputs were checked before the first layer was solved

    def failing(*a, **k):  # a solver failing on the second layer
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("solver failed")
        return real(*a, **k)

    monkeypatch.setattr(mpq, "quantize_layer", failing)
    with pytest.raises(RuntimeError, match="solver failed"):
        quantize_model(model, "nvfp4", method="gptq", calibration=cal)
    if kind == "nnx":
        assert type(model.fc) is nnx.Linear and type(model.fc2) is nnx.Linear


# ---------------------------------------------------------------------------------------------------------
# Scale invariance of the calibration
# ---------------------------------------------------------------------------------------------------------


def _bytes_eqx(method, s, dtype=None):
    mlp, x, hid, _ = _data()
    xs, hs = (x, hid) if dtype is None else (np.asarray(x, dtype), np.asarray(hid, dtype))
    q = quantize_model(mlp, "nvfp4", method=method, calibration={".layers[0]": xs * s, ".layers[1]": hs * s})
    return np.concatenate([np.asarray(layer.weight.codes).ravel() for layer in q.layers])


def _bytes_nnx(method, s):
    _, x, _, h2 = _data()
    net = quantize_model(Net(), "mxfp4", method=method, calibration={"fc": x * s, "fc2": h2 * s})
    assert isinstance(net.fc, NnxQuantizedLinear)
    return np.concatenate([np.asarray(net.fc.codes[...]).ravel(), np.asarray(net.fc2.codes[...]).ravel()])


@pytest.mark.parametrize("method", ["gptq", "mpq"])
@pytest.mark.parametrize("kind", ["eqx", "nnx"])
def test_packed_bytes_do_not_depend_on_the_scale_of_the_calibration(method, kind):
    """A power-of-two scale is exact, so the bytes are equal bit for bit, as far as 2^+-100 (H = 4^+-100 X^T X / n
    overflows / underflows float32 without the rescaling: before it, 1532 of 1536 GPTQ codes changed). Scales
    1e20 and 1e-20 give the same bytes as well; in general a non-power-of-two scale rounds every input (x * 3
    does too) and may flip a near-tie code of MPQ, never more than rounding does inside float32's range."""
    run = _bytes_eqx if kind == "eqx" else _bytes_nnx
    base = run(method, 1.0)
    for s in (2.0**66, 2.0**-66, 2.0**100, 2.0**-100):
        np.testing.assert_array_equal(run(method, s), base, err_msg=f"scale {s}")
    for s in (1e20, 1e-20):
        got = run(method, s)
        if method == "gptq" or kind == "nnx":
            np.testing.assert_array_equal(got, base, err_msg=f"scale {s}")
        e = math.frexp(s)[1]  # the same rounded inputs brought back to float32's ordinary range: the same bytes
        mlp, x, hid, _ = _data()
        if kind == "eqx":
            cal = {".layers[0]": (x * s) * 2.0**-e, ".layers[1]": (hid * s) * 2.0**-e}
            ordinary = quantize_model(mlp, "nvfp4", method=method, calibration=cal)
            np.testing.assert_array_equal(
                got, np.concatenate([np.asarray(layer.weight.codes).ravel() for layer in ordinary.layers])
            )
        assert np.mean(got != base) <= 0.005, (s, int(np.sum(got != base)))


def test_float64_calibration_beyond_float32_is_rescaled_before_the_cast():
    base = _bytes_eqx("gptq", 1.0)
    np.testing.assert_array_equal(_bytes_eqx("gptq", 2.0**200, np.float64), base)
    np.testing.assert_array_equal(_bytes_eqx("gptq", 2.0**-200, np.float64), base)


# ---------------------------------------------------------------------------------------------------------
# Ordinary calls: unchanged behaviour, QAT layers packed
# ---------------------------------------------------------------------------------------------------------


def test_trained_qat_layers_are_packed_by_a_later_quantize_model():
    mlp, x, _, _ = _data()
    qat = quantize_model(mlp, "nvfp4", qat=True)
    assert all(isinstance(layer, EqxQATLinear) for layer in qat.layers)
    packed = quantize_model(qat, "nvfp4")
    direct = quantize_model(mlp, "nvfp4")
    assert all(isinstance(layer, EqxQuantizedLinear) for layer in packed.layers)
    for a, b in zip(jax.tree.leaves(packed), jax.tree.leaves(direct), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    net = quantize_model(Net(), "nvfp4", qat=True)
    net = quantize_model(net, "nvfp4")
    assert isinstance(net.fc, NnxQuantizedLinear) and net(x).shape == (128, 16)


if __name__ == "__main__":  # print the table: call -> message
    print_table([call for call, _, _ in BAD_CALLS], _ns)
