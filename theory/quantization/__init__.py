"""Independent specifications of quantization formats (NumPy + ``ml_dtypes``), to check the kernels against.

:mod:`jaxwb.theory.quantization.fp4_formats`: NVFP4, MXFP4 and both RaZeR variants decoded from their published
rules with ``ml_dtypes``' float4_e2m1fn / float8_e4m3fn casts and a table for E3M3; it shares no code with
``jaxwb.pallas_kernels.quant``.
"""
