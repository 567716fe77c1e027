"""Per-row reductions of a distance block on its device: what closeness, harmonic
centrality and eccentricity need of each row, without the row leaving the device.

Each reduction is one pass of a CuPy reduction kernel along the rows (no temporary of
the block's size); sums accumulate in float64 whatever the block's dtype.
"""

from __future__ import annotations

from ..reductions import HISTOGRAM_BINS
from .loader import cupy_module

__all__ = ["row_reductions", "histogram_counts", "ordered_harmonic"]

_KERNELS: dict = {}


def _kernels() -> dict:
    if not _KERNELS:
        cupy = cupy_module()
        _KERNELS.update(
            reachable=cupy.ReductionKernel(
                "T x", "int64 y", "isfinite(x) ? 1 : 0", "a + b", "y = a", "0",
                "mgapsp_row_reachable"),
            total=cupy.ReductionKernel(
                "T x", "float64 y", "isfinite(x) ? (double)x : 0.0", "a + b", "y = a",
                "0", "mgapsp_row_total"),
            harmonic=cupy.ReductionKernel(
                "T x", "float64 y", "(isfinite(x) && x > 0) ? 1.0 / (double)x : 0.0",
                "a + b", "y = a", "0", "mgapsp_row_harmonic"),
            # a row's own source is at 0: the largest finite distance is at least 0
            eccentricity=cupy.ReductionKernel(
                "T x", "float64 y", "isfinite(x) ? (double)x : 0.0", "max(a, b)",
                "y = a", "0", "mgapsp_row_eccentricity"),
        )
    return _KERNELS


def row_reductions(block) -> dict:
    """``{"reachable", "total", "harmonic", "eccentricity"}`` of each row of the device
    ``block`` (``inf`` unreachable): finite entries, their sum, the sum of the
    reciprocals of the positive ones, the largest; device arrays."""
    return {name: k(block, axis=1) for name, k in _kernels().items()}


# Each block counts into shared memory, then adds its non-zero bins to the device's
# counts: the distances of a batch crowd into a few dozen bins, which one set of
# global atomics per element would serialize.  The bin is the float32 value rounded
# toward zero (__double2float_rz for float64 rows), as mgapsp.reductions defines it.
_HISTOGRAM = r"""
extern "C" __global__ void mgapsp_histogram_{T}(const {T}* x, long long size,
                                               unsigned long long* counts) {{
    __shared__ unsigned int local[{BINS}];
    for (int i = threadIdx.x; i < {BINS}; i += blockDim.x) local[i] = 0;
    __syncthreads();
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < size;
         i += stride) {{
        {T} v = x[i] + ({T})0;     // -0.0 (a distance to itself, Johnson's) is 0
        if (isfinite(v)) {{
            atomicAdd(&local[__float_as_uint({ROUND}) >> {SHIFT}], 1u);
        }}
    }}
    __syncthreads();
    for (int i = threadIdx.x; i < {BINS}; i += blockDim.x) {{
        if (local[i]) atomicAdd(&counts[i], (unsigned long long)local[i]);
    }}
}}
"""


#: the RawKernels by name and dtype (apart from _KERNELS, which row_reductions runs all of)
_RAW_KERNELS: dict = {}


def _histogram_kernel(dtype):
    name = f"histogram_{dtype}"
    if name not in _RAW_KERNELS:
        cupy = cupy_module()
        t = "float" if dtype == "float32" else "double"
        src = _HISTOGRAM.format(T=t, BINS=HISTOGRAM_BINS, SHIFT=32 - 13,
                                ROUND="v" if t == "float" else "__double2float_rz(v)")
        _RAW_KERNELS[name] = cupy.RawKernel(src, f"mgapsp_histogram_{t}")
    return _RAW_KERNELS[name]


def histogram_counts(block, *, self_pairs: int = 0):
    """:func:`mgapsp.reductions.histogram_counts` of the device ``block``: the
    counts, a device array of :data:`~mgapsp.reductions.HISTOGRAM_BINS` uint64."""
    cupy = cupy_module()
    x = cupy.ascontiguousarray(block)
    if x.dtype not in (cupy.float32, cupy.float64):
        x = x.astype(cupy.float64)
    counts = cupy.zeros(HISTOGRAM_BINS, dtype=cupy.uint64)
    size = x.size
    if size:
        threads = 512
        sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
        # a block's counts are 32-bit: at most 2**31 elements a block
        blocks = int(max(min(4 * sms, -(-size // threads)), -(-size // (1 << 31))))
        _histogram_kernel(str(x.dtype))((blocks,), (threads,),
                                        (x, cupy.int64(size), counts))
    if self_pairs:
        counts[0] -= self_pairs
    return counts


# One thread per column, down the rows in their order: each sum adds its terms in the
# order a loop over the sources would (IEEE division and addition, no reassociation),
# so the device's sums are the host's to the bit.
_ORDERED_HARMONIC = r"""
extern "C" __global__ void mgapsp_ordered_harmonic_{T}(
        const {T}* d, long long rows, long long n, const long long* columns,
        long long k, double* acc, bool* touched) {{
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= k) return;
    const {T}* col = d + columns[t];
    double a = acc[t];
    bool hit = touched[t];
    for (long long r = 0; r < rows; ++r) {{
        double x = (double)col[r * n];
        if (isfinite(x) && x != 0.0) {{
            a += 1.0 / x;
            hit = true;
        }}
    }}
    acc[t] = a;
    touched[t] = hit;
}}
"""


def ordered_harmonic(block, columns, acc, touched) -> None:
    """:func:`mgapsp.reductions.ordered_harmonic` of the device ``block`` into the
    device arrays ``acc`` (float64) and ``touched`` (bool), ``columns`` a device int64
    array."""
    cupy = cupy_module()
    x = cupy.ascontiguousarray(block)
    if x.dtype not in (cupy.float32, cupy.float64):
        x = x.astype(cupy.float64)
    t = "float" if x.dtype == cupy.float32 else "double"
    name = f"ordered_harmonic_{t}"
    if name not in _RAW_KERNELS:
        _RAW_KERNELS[name] = cupy.RawKernel(_ORDERED_HARMONIC.format(T=t),
                                                  f"mgapsp_ordered_harmonic_{t}")
    k = len(columns)
    if k and len(x):
        _RAW_KERNELS[name]((-(-k // 256),), (256,),
                                 (x, cupy.int64(len(x)), cupy.int64(x.shape[1]), columns,
                                  cupy.int64(k), acc, touched))
