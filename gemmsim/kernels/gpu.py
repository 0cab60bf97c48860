"""GPU kernels as trace generators: what ONE thread block does, as warp-level memory instructions.

A GPU kernel here knows nothing of caches, SMs or other blocks. Given the matrices' layout and the C tile a
block computes, it emits that block's memory instructions in program order as a :class:`WarpTrace`: for
each warp instruction the 32 lane byte addresses, the bytes each lane moves (4, 8, 16 ...), the space
(global or shared), load or store, the issuing warp and the active-lane mask. Everything is built with
numpy broadcasting over (k-step, instruction, warp, lane) -- no Python loop per lane or per instruction.
Which blocks run together and how their instructions interleave is the GPU memory model's business
(``gemmsim.models.gpu_memory``); the launch order of blocks (raster) is :func:`launch_order`.

Order inside a block's trace: k-step (outer), then the instruction in program order, then the warp --
i.e. all warps issue instruction 1 of a k-step before any issues instruction 2. This is a faithful order
for barrier-synchronised tiles (``__syncthreads`` after the loads) and a convenient one elsewhere.

Kernels (``KERNELS`` maps names to :class:`GPUKernel`):

* ``naive`` and the loop-order names ``ijk ikj jik jki kij kji``: one thread per C element, the k loop runs
  inside the thread with the sum in a register. The GPU has no loop order over i and j -- threads cover
  them -- so a loop-order name says which of i and j runs across a warp's lanes (threadIdx.x): **the one of
  i and j that comes later in the name** (the CPU's inner one of the two). ``ijk``, ``ikj``, ``kij``: j runs
  across lanes -- B[k][j] and C[i][j] loads are coalesced (consecutive lanes, consecutive addresses of a
  row-major matrix) and A[i][k] is one address broadcast to the warp. ``jik``, ``jki``, ``kji``: i runs
  across lanes -- A[i][k] and C[i][j] are strided by a row (lda*elem bytes: one sector per lane) and B[k][j]
  is broadcast. So the names that are good on a CPU (inner j: ikj, kij) are good here too and the bad
  ones (inner i: jki, kji) are bad; ``ijk``/``jik`` split, because k's position does not matter on a GPU.
  ``naive`` is ``ijk``.
* ``tiled_smem`` (also registered as ``blocked``, the GPU's blocked kernel): the classic shared-memory
  tiled kernel with TILE x TILE threads, ``__shared__ float As[TILE][TILE+pad], Bs[TILE][TILE+pad]``;
  per tile step each thread loads A[row][t*TILE+tx] and B[t*TILE+ty][col] into As[ty][tx], Bs[ty][tx],
  then ``acc += As[ty][k] * Bs[k][tx]`` for k < TILE; finally C[row][col] = acc
  (row = tile_m*TILE + ty, col = tile_n*TILE + tx, thread id = ty*TILE + tx).
* ``tensorcore``: a CUTLASS-2.x-style multistage kernel: block tile BM x BN x BK, warps of WM x WN, MMA
  instructions (m16n8k16 for 16-bit types), S shared-memory stages filled by 16-byte ``cp.async.cg`` (L2
  only, bypassing L1), fragments read with ``ldmatrix.x4`` from an XOR-swizzled (conflict-free) or plain
  shared layout, C stored from the accumulators (two elements per lane per row of an m16n8 tile).
* ``gemm``: the machine's sensible default for the dtype -- ``tensorcore`` 128x128x32 with 4 warps of
  64x64 and 3 stages where the machine has tensor cores for the dtype (fp16, bf16, tf32, int8, fp8),
  ``tiled_smem`` with TILE=32 otherwise (fp32, fp64).

Raster orders (``raster``): ``row`` -- consecutive block ids sweep a row of C tiles (blockIdx.x along N, the
CUDA default); ``column`` -- they sweep a column; ``grouped`` -- Triton's GROUP_M order: groups of ``group_m``
tile rows, column by column inside a group.
"""

from __future__ import annotations

import re

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from gemmsim.errors import KernelError
from gemmsim.schema import Strict
from gemmsim.trace import Layout
from gemmsim.units import dtype_bytes

WARP = 32
SPACE_GLOBAL = 0
SPACE_SHARED = 1
#: Operand tags of an instruction (for counters and explanations).
OP_A, OP_B, OP_C = 0, 1, 2
OPERANDS = ("A", "B", "C")

_LANES = np.arange(WARP, dtype=np.int64)
_LANE_BITS = (np.uint32(1) << np.arange(WARP, dtype=np.uint32)).astype(np.uint32)


# ---------------------------------------------------------------------------------------------------
# The trace of one block
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class WarpTrace:
    """Warp-level memory instructions of one thread block, in issue order (n instructions).

    ``addr``: (n, 32) uint64 byte addresses, one per lane (global: device addresses from the Layout;
    shared: offsets in the block's shared memory); inactive lanes hold 0 and are clear in ``mask``.
    ``width``: (n,) bytes each lane moves. ``space``: SPACE_GLOBAL or SPACE_SHARED. ``is_write``: 1 for
    stores. ``bypass_l1``: 1 for accesses that go to L2 without allocating in L1 (cp.async.cg, stores).
    ``warp``: issuing warp within the block. ``mask``: active lanes (bit i = lane i). ``operand``: OP_A,
    OP_B or OP_C, the matrix the data belongs to.
    """

    addr: np.ndarray
    width: np.ndarray
    space: np.ndarray
    is_write: np.ndarray
    bypass_l1: np.ndarray
    warp: np.ndarray
    mask: np.ndarray
    operand: np.ndarray

    def __len__(self) -> int:
        return int(self.width.shape[0])

    def select(self, keep: np.ndarray) -> "WarpTrace":
        """The instructions where ``keep`` (a boolean or index array) says so, order kept."""
        return WarpTrace(*(getattr(self, f)[keep] for f in _FIELDS))

    def of_space(self, space: int) -> "WarpTrace":
        """Only the global (SPACE_GLOBAL) or only the shared (SPACE_SHARED) instructions."""
        return self.select(self.space == space)

    @staticmethod
    def concat(parts: Sequence["WarpTrace"]) -> "WarpTrace":
        """Instructions of several traces one after the other (for small traces and tests)."""
        if not parts:
            return empty_trace()
        return WarpTrace(*(np.concatenate([getattr(p, f) for p in parts]) for f in _FIELDS))

    def lanes_active(self) -> np.ndarray:
        """(n, 32) boolean: which lanes of each instruction are active."""
        return (self.mask[:, None] & _LANE_BITS[None, :]) != 0


_FIELDS = ("addr", "width", "space", "is_write", "bypass_l1", "warp", "mask", "operand")


def empty_trace() -> WarpTrace:
    """A trace with no instructions."""
    return WarpTrace(
        np.zeros((0, WARP), np.uint64), *(np.zeros(0, t) for t in (np.uint8, np.uint8, np.uint8, np.uint8)),
        np.zeros(0, np.uint16), np.zeros(0, np.uint32), np.zeros(0, np.uint8),
    )


@dataclass
class _Group:
    """One instruction of a kernel's loop body, for every (step, warp, lane) at once."""

    addr: np.ndarray  # (steps, warps, 32) int64
    active: np.ndarray  # (steps, warps, 32) bool
    width: int
    space: int
    is_write: bool
    bypass_l1: bool
    operand: int


def _assemble(groups: list[_Group], spaces: Iterable[int] | None) -> WarpTrace:
    """Interleave instruction groups into issue order (step, instruction, warp) and drop empty ones."""
    keep_spaces = None if spaces is None else set(spaces)
    groups = [g for g in groups if keep_spaces is None or g.space in keep_spaces]
    if not groups:
        return empty_trace()
    steps, warps = groups[0].addr.shape[:2]
    g = len(groups)
    addr = np.empty((steps, g, warps, WARP), np.uint64)
    mask = np.empty((steps, g, warps), np.uint32)
    for i, grp in enumerate(groups):
        a = np.where(grp.active, grp.addr, 0)
        addr[:, i] = a.astype(np.uint64)
        mask[:, i] = (grp.active.astype(np.uint32) * _LANE_BITS).sum(axis=-1, dtype=np.uint32)

    def per_group(values, dtype) -> np.ndarray:
        return np.broadcast_to(np.asarray(values, dtype)[None, :, None], (steps, g, warps)).reshape(-1)

    n = steps * g * warps
    trace = WarpTrace(
        addr=addr.reshape(n, WARP),
        width=per_group([x.width for x in groups], np.uint8),
        space=per_group([x.space for x in groups], np.uint8),
        is_write=per_group([x.is_write for x in groups], np.uint8),
        bypass_l1=per_group([x.bypass_l1 for x in groups], np.uint8),
        warp=np.broadcast_to(np.arange(warps, dtype=np.uint16)[None, None, :], (steps, g, warps)).reshape(-1),
        mask=mask.reshape(-1),
        operand=per_group([x.operand for x in groups], np.uint8),
    )
    return trace.select(trace.mask != 0)


# ---------------------------------------------------------------------------------------------------
# Launch order of blocks
# ---------------------------------------------------------------------------------------------------
RASTERS = ("row", "column", "grouped")


def launch_order(tiles_m: int, tiles_n: int, raster: str = "row", group_m: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """C tile (tile_m, tile_n) of each block id, in launch order (block 0 first).

    ``row``: block b -> (b // tiles_n, b % tiles_n), the CUDA default with blockIdx.x along N.
    ``column``: block b -> (b % tiles_m, b // tiles_m).
    ``grouped``: Triton's matmul tutorial order (GROUP_M): groups of ``group_m`` tile rows; inside a group
    consecutive blocks go down a column of tiles before moving to the next column, so a wave of blocks
    reads group_m A panels and few B panels from L2.
    """
    if tiles_m < 1 or tiles_n < 1:
        raise KernelError(f"a grid needs at least one tile each way (got {tiles_m} x {tiles_n})")
    b = np.arange(tiles_m * tiles_n, dtype=np.int64)
    if raster == "row":
        return b // tiles_n, b % tiles_n
    if raster == "column":
        return b % tiles_m, b // tiles_m
    if raster == "grouped":
        if group_m < 1:
            raise KernelError(f"group_m must be >= 1 (got {group_m})")
        in_group = group_m * tiles_n
        group = b // in_group
        first_m = group * group_m
        size_m = np.minimum(tiles_m - first_m, group_m)
        local = b % in_group
        return first_m + local % size_m, local // size_m
    raise KernelError(f"unknown raster order {raster!r}; known: {', '.join(RASTERS)}")


# ---------------------------------------------------------------------------------------------------
# Parameters
# ---------------------------------------------------------------------------------------------------
class _RasterParams(Strict):
    raster: Literal["row", "column", "grouped"] = Field("row", description="Launch order of blocks over C tiles.")
    group_m: int = Field(8, ge=1, description="Tile rows per group for raster='grouped' (Triton's GROUP_M).")
    max_blocks: int | None = Field(
        None, ge=1, description="Simulate only the first max_blocks blocks (launch order) in the memory model and scale, "
        "rounded up to whole waves of resident blocks, at least two (gemmsim.models.gpu_memory.MIN_SAMPLE_WAVES: part "
        "of a wave misstates what shares the L2); the row then says sampled=True and blocks_simulated. None: every block, or "
        "the memory model's own sample where that would take too long."
    )


class NaiveParams(_RasterParams):
    """One thread per C element; the block is BX x BY threads (threadIdx.x runs across a warp's lanes)."""

    BX: int = Field(32, ge=1, le=1024, description="Threads along threadIdx.x (the index that runs across lanes).")
    BY: int = Field(8, ge=1, le=1024, description="Threads along threadIdx.y.")
    regs: int = Field(32, ge=1, le=255, description="Registers per thread (estimate; ptxas gives ~30 for this kernel).")
    unroll: int = Field(4, ge=1, le=64, description="k iterations whose loads are in flight together (nvcc unrolls the k loop by 4).")


class TiledParams(_RasterParams):
    """Shared-memory tiled kernel: TILE x TILE threads, tiles [TILE][TILE+pad] of A and B."""

    TILE: int = Field(32, ge=1, le=32, description="Tile edge in elements; the block has TILE x TILE threads.")
    pad: int = Field(0, ge=0, le=32, description="Elements added to each shared-memory tile row ([TILE][TILE+pad]).")
    regs: int = Field(32, ge=1, le=255, description="Registers per thread (estimate; ptxas gives ~30-40).")


class BlockedParams(_RasterParams):
    """``blocked`` on a GPU: the shared-memory tiled kernel, with the CPU blocked kernel's parameter names.

    The GPU kernel's tile is square (one thread per C element of a TILE x TILE tile, K in TILE steps), so
    BM = BN = BK = TILE is required.
    """

    BM: int = Field(32, ge=1, le=32, description="Tile rows (= TILE).")
    BN: int = Field(32, ge=1, le=32, description="Tile columns (= TILE).")
    BK: int = Field(32, ge=1, le=32, description="Tile depth (= TILE).")
    pad: int = Field(0, ge=0, le=32, description="Elements added to each shared-memory tile row ([TILE][TILE+pad]).")
    regs: int = Field(32, ge=1, le=255, description="Registers per thread (estimate; ptxas gives ~30-40).")

    @model_validator(mode="after")
    def _square(self) -> "BlockedParams":
        if not self.BM == self.BN == self.BK:
            raise ValueError(f"the GPU blocked kernel (tiled_smem) has square tiles: BM = BN = BK (got {self.BM}, {self.BN}, {self.BK})")
        return self


#: What a copy_trace may hold (gemmsim.models.sm_pipeline.copy_phase tokens).
_COPY_TRACE = re.compile(r"^[\w/,<@ ]*$")


class TensorCoreParams(_RasterParams):
    """Warp-tiled tensor-core kernel with a multistage cp.async pipeline (CUTLASS 2.x style)."""

    BM: int = Field(128, ge=16, description="Block tile rows (of C).")
    BN: int = Field(128, ge=8, description="Block tile columns (of C).")
    BK: int = Field(32, ge=8, description="Block tile depth: K elements per pipeline stage.")
    WM: int = Field(64, ge=16, description="Warp tile rows.")
    WN: int = Field(64, ge=8, description="Warp tile columns.")
    mma: str = Field("16x8x16", pattern=r"^\d+x\d+x\d+$", description="MMA instruction shape MxNxK (m16n8k16 for fp16).")
    stages: int = Field(3, ge=1, le=8, description="Shared-memory pipeline stages S (cp.async groups in flight).")
    swizzle: bool = Field(True, description="XOR-swizzled shared layout (conflict-free ldmatrix) or plain row-major.")
    acc: Literal["fp32", "fp16", "int32", "fp64"] | None = Field(
        None, description="Accumulator dtype (default: fp32 for float inputs, int32 for int8)."
    )
    regs: int | None = Field(None, ge=1, le=255, description="Registers per thread; default: the estimate of TensorCoreSpec.")
    smem: int | None = Field(
        None, ge=0, description="Shared memory per block, bytes, when the kernel's own layout differs from stages x "
        "(BM + BN) x BK elements (padded rows); default: that product."
    )
    pad: int = Field(
        0, ge=0, description="Elements added to each BK-long shared-memory row of both tiles (K-contiguous tiles with "
        "padded rows, as validation/h200/round3/mma_pipe.cu's BK + 8): shared memory = stages x (BM + BN) x (BK + pad)."
    )
    warp_instructions_per_step: float | None = Field(
        None, gt=0, description="Instructions one warp executes per k-step in its compute phase (ldmatrix, mma, their "
        "addresses, loop and barrier; not the copies): ncu's inst_executed of the kernel's copy-less twin / (warps x "
        "k-steps), as validation/h200/round4 measured; default: only its ldmatrix and mma instructions."
    )
    warp_copy_instructions_per_step: float | None = Field(
        None, ge=0, description="Instructions one warp executes per k-step to issue the copies of the next stage "
        "(cp.async and their address arithmetic): ncu's inst_executed of the kernel minus its copy-less twin's, per warp "
        "and k-step; default: only its cp.async instructions."
    )
    fragment_trace: str | None = Field(
        None, pattern=r"^\s*((L\d+:\d+\+\d+|H:\d+\+\d+,\d+\+\d+)\s*)*$",
        description="One warp's ldmatrix and mma instructions of one k-step in issue order, as compiled (tokens "
        "L<wavefronts>:<reg>+<n> and H:<reg>+<n>,<reg>+<n>, e.g. from the kernel's SASS): which mma waits for which "
        "ldmatrix (gemmsim.models.sm_pipeline.fragment_groups); default: no fragment waits modelled."
    )

    copy_trace: str | dict[int, str] | None = Field(
        None,
        description="The instructions one warp executes in its copy phase of one k-step, in order, as "
        "gemmsim.models.sm_pipeline.copy_phase tokens (kind[/dst,...][<src,...], e.g. from the kernel's SASS and ncu's "
        "executed counts, validation/h200/round6/copy_trace.py): with the machine's copy_code_latency_cycles, how long "
        "the copy phase lasts (its dependent chain); or a mapping stages -> trace, since the compiler lays the copy "
        "code out differently for each stage count (for a sweep over stages); default: its issue slots only."
    )

    api: Literal["mma.sync", "wmma"] = Field(
        "mma.sync", description="The warp-level API of the kernel's source: PTX mma.sync or nvcuda::wmma. It selects "
        "which measured H200 reference is shown beside the row (gemmsim.sim.reference_tc); the model sees the API only "
        "through fragment_trace, copy_trace, the instruction counts and regs (on sm_90 both compile to LDSM.x4 + "
        "HMMA.16816, validation/h200/round28)."
    )

    @model_validator(mode="after")
    def _shape(self) -> "TensorCoreParams":
        problems = []
        per_stage = isinstance(self.copy_trace, dict)
        for st, tr in (self.copy_trace.items() if per_stage else [(None, self.copy_trace or "")]):
            if not _COPY_TRACE.match(tr):
                problems.append(f"copy_trace{f'[{st}]' if per_stage else ''}: copy_phase tokens hold only letters, "
                                "digits, spaces and _ / , < @")
        if per_stage and self.stages not in self.copy_trace:
            problems.append(f"copy_trace has traces for stages {sorted(self.copy_trace)}, none for stages={self.stages}")
        if self.BM % self.WM or self.BN % self.WN:
            problems.append(f"the warp tile {self.WM}x{self.WN} must divide the block tile {self.BM}x{self.BN}")
        m, n, _ = (int(x) for x in self.mma.split("x"))
        if self.WM % 16 or self.WN % 16:
            problems.append(f"warp tile {self.WM}x{self.WN} must be multiples of 16 (ldmatrix.x4 fragments)")
        if self.WM % m or self.WN % n:
            problems.append(f"MMA shape {self.mma} must divide the warp tile {self.WM}x{self.WN}")
        if problems:
            raise ValueError("; ".join(problems))
        return self


class Seed003Params(TensorCoreParams):
    """Seed 003's CUTLASS kernel on the RTX 4060: 256x128x32 block tile, 64x64 warp tiles (8 warps), fp32 accumulators."""

    BM: int = Field(256, ge=16, description="Block tile rows (of C).")
    BN: int = Field(128, ge=8, description="Block tile columns (of C).")
    acc: Literal["fp32", "fp16", "int32", "fp64"] | None = Field("fp32", description="Accumulator dtype (s16816gemm: fp32).")


class GemmParams(_RasterParams):
    """The machine's default GEMM kernel for the dtype (tensorcore for tensor-core dtypes, tiled_smem otherwise)."""

    stages: int = Field(3, ge=1, le=8, description="Pipeline stages when the default is the tensor-core kernel.")


# ---------------------------------------------------------------------------------------------------
# Concrete kernels (a parameter set bound to a dtype)
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GPUKernelSpec:
    """A kernel with its parameters and dtype fixed: tile, launch resources and a per-block trace.

    ``BM x BN`` is the C tile of one block; ``threads``, ``regs`` and ``smem_bytes`` are what the launch
    asks for (occupancy decides what fits); ``tensor`` says whether the math runs on tensor cores,
    with ``acc`` the accumulator dtype; ``raster``/``group_m`` the launch order.
    """

    name: str
    dtype: str
    BM: int
    BN: int
    threads: int
    regs: int
    smem_bytes: int
    tensor: bool
    acc: str
    raster: str = "row"
    group_m: int = 8
    stages: int = 1
    kstep: int = 1
    extra: dict = field(default_factory=dict)

    @property
    def lockstep(self) -> bool:
        """Whether resident blocks run in lockstep (True) or spread over their k-loop (False); see
        ``gemmsim.models.gpu_memory.start_stagger``."""
        return False

    @property
    def elem(self) -> int:
        """Bytes per element of A, B and C."""
        return dtype_bytes(self.dtype)

    @property
    def warps(self) -> int:
        """Warps per block."""
        return -(-self.threads // WARP)

    def steps(self, K: int) -> int:
        """k-steps of one block: ceil(K / kstep) (a step = one round of loads, then the math on them)."""
        return -(-K // self.kstep)

    def grid(self, M: int, N: int) -> tuple[int, int]:
        """(tiles_m, tiles_n): blocks along M and along N."""
        return -(-M // self.BM), -(-N // self.BN)

    def order(self, M: int, N: int) -> tuple[np.ndarray, np.ndarray]:
        """Tile coordinates of the blocks in launch order."""
        tm, tn = self.grid(M, N)
        return launch_order(tm, tn, self.raster, self.group_m)

    def block_trace(self, layout: Layout, tile_m: int, tile_n: int, spaces: Iterable[int] | None = None) -> WarpTrace:
        """The instructions of the block computing C tile (tile_m, tile_n); ``spaces`` filters by space."""
        raise NotImplementedError

    def counts(self, M: int, N: int, K: int) -> dict:
        """Closed-form warp-instruction counts of one interior block: global loads/stores, shared loads/stores."""
        raise NotImplementedError

    def flops_per_block(self, K: int) -> float:
        """FLOPs one full tile executes (2 BM BN K; edge tiles do the same math on padding)."""
        return 2.0 * self.BM * self.BN * K

    def math_instructions_per_step(self) -> float:
        """Warp-level math instructions of one block per k-step (FFMA/HFMA2 on CUDA cores, MMA on tensor cores)."""
        return self.BM * self.BN * self.kstep / WARP


def _thread_xy(warps: int, bx: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(tid, tx, ty) of every (warp, lane), shape (warps, 32), for a block of bx threads along x."""
    tid = np.arange(warps, dtype=np.int64)[:, None] * WARP + _LANES[None, :]
    return tid, tid % bx, tid // bx


@dataclass(frozen=True)
class NaiveSpec(GPUKernelSpec):
    """One thread per C element; ``lanes`` ('i' or 'j') is the index that runs across threadIdx.x."""

    lanes: str = "j"
    BX: int = 32
    BY: int = 8

    @property
    def lockstep(self) -> bool:
        """In row and column order, yes: the H200's block-start traces of the naive 16x16 kernel keep a wave's
        starts within 0.02-0.14 of a block at N = 3072-6144 in row order and 3072-4096 in column order; in grouped
        order they drift to 0.85-0.95 (validation/h200/round3/order_wave_spread.csv, round5/order_wave_spread5.csv)."""
        return self.raster in ("row", "column")

    def block_trace(self, layout, tile_m, tile_n, spaces=None):
        L = layout
        tid, tx, ty = _thread_xy(self.warps, self.BX)
        valid = tid < self.threads
        if self.lanes == "j":
            i, j = tile_m * self.BM + ty, tile_n * self.BN + tx
        else:
            i, j = tile_m * self.BM + tx, tile_n * self.BN + ty
        inside = valid & (i < L.M) & (j < L.N)
        k = np.arange(L.K, dtype=np.int64)[:, None, None]
        e = L.elem
        act = np.broadcast_to(inside, (L.K,) + inside.shape)
        ga = _Group(L.a_base + i[None] * L.a_rs + k * L.a_cs, act, e, SPACE_GLOBAL, False, False, OP_A)
        gb = _Group(L.b_base + k * L.b_rs + j[None] * L.b_cs, act, e, SPACE_GLOBAL, False, False, OP_B)
        body = _assemble([ga, gb], spaces)
        gc = _Group((L.c_base + i * L.c_rs + j * L.c_cs)[None], inside[None], e, SPACE_GLOBAL, True, True, OP_C)
        return WarpTrace.concat([body, _assemble([gc], spaces)])

    def counts(self, M, N, K):
        w = self.warps
        return {"global_loads": 2 * K * w, "global_stores": w, "shared_loads": 0, "shared_stores": 0}


@dataclass(frozen=True)
class TiledSpec(GPUKernelSpec):
    """Shared-memory tiled kernel (see the module docstring for its code)."""

    TILE: int = 32
    pad: int = 0

    @property
    def a_vector(self) -> int:
        """As[ty][k] reads fused per instruction: 16 // elem when rows stay 16-byte aligned (what nvcc -O3 emits for
        the H200 SGEMM: 8 LDS.128 + 32 LDS per tile step, validation/h200 sass_sgemm.txt), else 1."""
        v = 16 // self.elem
        return v if v > 1 and self.TILE % v == 0 and (self.TILE + self.pad) % v == 0 else 1

    def smem_addr(self, which: int, r: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Shared-memory byte offset of As[r][c] (which=0) or Bs[r][c] (which=1)."""
        T, e = self.TILE, self.elem
        return (which * T * (T + self.pad) + r * (T + self.pad) + c) * e

    def block_trace(self, layout, tile_m, tile_n, spaces=None):
        L, T, e = layout, self.TILE, self.elem
        steps = -(-L.K // T)
        tid, tx, ty = _thread_xy(self.warps, T)
        valid = tid < self.threads
        row, col = tile_m * T + ty, tile_n * T + tx
        t = np.arange(steps, dtype=np.int64)[:, None, None]
        ka, kb = t * T + tx[None], t * T + ty[None]
        act_a = valid & (row < L.M) & (ka < L.K)
        act_b = valid & (kb < L.K) & (col < L.N)
        full = np.broadcast_to(valid, (steps,) + valid.shape)
        groups = [
            _Group(L.a_base + row[None] * L.a_rs + ka * L.a_cs, act_a, e, SPACE_GLOBAL, False, False, OP_A),
            _Group(L.b_base + kb * L.b_rs + col[None] * L.b_cs, act_b, e, SPACE_GLOBAL, False, False, OP_B),
            _Group(np.broadcast_to(self.smem_addr(0, ty, tx), full.shape), full, e, SPACE_SHARED, True, False, OP_A),
            _Group(np.broadcast_to(self.smem_addr(1, ty, tx), full.shape), full, e, SPACE_SHARED, True, False, OP_B),
        ]
        if spaces is None or SPACE_SHARED in set(spaces):
            v = self.a_vector
            for k0 in range(0, T, v):  # the unrolled inner loop, each instruction for every step/warp/lane at once
                if v > 1:  # nvcc fuses v consecutive As[ty][k] reads into one 16-byte broadcast load (LDS.128)
                    groups.append(_Group(np.broadcast_to(self.smem_addr(0, ty, k0), full.shape), full, 16, SPACE_SHARED, False, False, OP_A))
                for k in range(k0, k0 + v):
                    if v == 1:
                        groups.append(_Group(np.broadcast_to(self.smem_addr(0, ty, k), full.shape), full, e, SPACE_SHARED, False, False, OP_A))
                    groups.append(_Group(np.broadcast_to(self.smem_addr(1, k, tx), full.shape), full, e, SPACE_SHARED, False, False, OP_B))
        body = _assemble(groups, spaces)
        act_c = valid & (row < L.M) & (col < L.N)
        gc = _Group((L.c_base + row * L.c_rs + col * L.c_cs)[None], act_c[None], e, SPACE_GLOBAL, True, True, OP_C)
        return WarpTrace.concat([body, _assemble([gc], spaces)])

    def counts(self, M, N, K):
        w, T = self.warps, self.TILE
        steps = -(-K // T)
        lds = T + T // self.a_vector
        return {"global_loads": 2 * steps * w, "global_stores": w, "shared_loads": lds * steps * w, "shared_stores": 2 * steps * w}


@dataclass(frozen=True)
class TensorCoreSpec(GPUKernelSpec):
    """Multistage warp-tiled tensor-core kernel (see the module docstring)."""

    BK: int = 32
    WM: int = 64
    WN: int = 64
    mma: tuple[int, int, int] = (16, 8, 16)
    swizzle: bool = True

    @property
    def warps_m(self) -> int:
        """Warps along M in the block."""
        return self.BM // self.WM

    @property
    def warps_n(self) -> int:
        """Warps along N in the block."""
        return self.BN // self.WN

    @property
    def stage_bytes(self) -> int:
        """Shared memory of one stage: (BM*BK + BK*BN) elements."""
        return (self.BM * self.BK + self.BK * self.BN) * self.elem

    @property
    def kspan(self) -> int:
        """K elements one ldmatrix.x4 A fragment covers: two 16-byte columns (k16 for 16-bit types)."""
        return 32 // self.elem

    def math_instructions_per_step(self) -> float:
        """MMA instructions of the whole block per k-step."""
        return self.mma_per_warp_per_stage * self.warps

    @property
    def mma_per_warp_per_stage(self) -> int:
        """MMA instructions a warp issues per k-step: (WM/m)(WN/n)(BK/k)."""
        m, n, k = self.mma
        return (self.WM // m) * (self.WN // n) * max(self.BK // k, 1)

    def _smem(self, base: int, r: np.ndarray, byte_in_row: np.ndarray, row_bytes: int) -> np.ndarray:
        """Shared offset of byte ``byte_in_row`` of tile row ``r``; XOR-swizzles 16-byte chunks within 128-byte lines
        with the row group (CuTe Swizzle<3,4,3>-like), a bijection on each line."""
        o = r * row_bytes + byte_in_row
        if self.swizzle:
            key = (o // max(128, row_bytes)) % 8
            o = (o // 128) * 128 + ((((o % 128) // 16) ^ key) * 16) + o % 16
        return base + o

    def copy_bytes(self, L: Layout, which: int) -> int:
        """Bytes per copy of operand ``which``: 16 when its base and row stride are 16-byte aligned, else the widest of
        8, 4, 2 ... (down to the element) that they are -- what a library's lower-alignment kernel falls back to (cp.async
        takes 16, 8 or 4 bytes; narrower loads go through registers)."""
        e = self.elem
        base, stride = (L.a_base, max(L.a_rs, L.a_cs)) if which == OP_A else (L.b_base, max(L.b_rs, L.b_cs))
        w = 16
        while w > e and (base % w or stride % w):
            w //= 2
        return w

    def _copies(self, L: Layout, tile_m: int, tile_n: int, steps: int, fallback: bool = False):
        """cp.async 16-byte copies of the A and B tiles of every k-step: global and shared addresses. With
        ``fallback``, an operand whose rows are not 16-byte aligned is copied in ``copy_bytes`` pieces."""
        e = self.elem
        tid = np.arange(self.warps, dtype=np.int64)[:, None] * WARP + _LANES[None, :]
        t = np.arange(steps, dtype=np.int64)[:, None, None, None]
        out = []
        for which, rows, cols in ((OP_A, self.BM, self.BK), (OP_B, self.BK, self.BN)):
            # a transposed (or column-major) operand is contiguous down its columns: the 16-byte chunks run along
            # the rows instead (the tile lands transposed in shared memory, as CUTLASS's column-major iterators do)
            flip = (L.a_rs == e != L.a_cs) if which == OP_A else (L.b_rs == e != L.b_cs)
            if flip:
                rows, cols = cols, rows
            cb = self.copy_bytes(L, which) if fallback else 16
            v = max(cb // e, 1)
            per_row = max(cols // v, 1)
            chunks = rows * per_row
            n_inst = -(-chunks // self.threads)
            c = np.arange(n_inst, dtype=np.int64)[None, :, None, None] * self.threads + tid[None, None]
            r, cc = c // per_row, c % per_row
            stage = (t % self.stages)
            if which == OP_A and flip:
                gr, gc = tile_m * self.BM + cc * v, t * self.BK + r
                gaddr = L.a_base + gr * L.a_rs + gc * L.a_cs
                act = (c < chunks) & (gr < L.M) & (gc < L.K)
                base = stage * self.BM * self.BK * e
            elif which == OP_B and flip:
                gr, gc = t * self.BK + cc * v, tile_n * self.BN + r
                gaddr = L.b_base + gr * L.b_rs + gc * L.b_cs
                act = (c < chunks) & (gr < L.K) & (gc < L.N)
                base = self.stages * self.BM * self.BK * e + stage * self.BK * self.BN * e
            elif which == OP_A:
                gr, gc = tile_m * self.BM + r, t * self.BK + cc * v
                gaddr = L.a_base + gr * L.a_rs + gc * L.a_cs
                act = (c < chunks) & (gr < L.M) & (gc < L.K)
                base = stage * self.BM * self.BK * e
            else:
                gr, gc = t * self.BK + r, tile_n * self.BN + cc * v
                gaddr = L.b_base + gr * L.b_rs + gc * L.b_cs
                act = (c < chunks) & (gr < L.K) & (gc < L.N)
                base = self.stages * self.BM * self.BK * e + stage * self.BK * self.BN * e
            saddr = self._smem(base, r, cc * cb, cols * e)
            out.append((which, n_inst, gaddr, act, np.broadcast_to(saddr, gaddr.shape)))
        return out

    def block_trace(self, layout, tile_m, tile_n, spaces=None):
        L = layout
        steps = -(-L.K // self.BK)
        want = None if spaces is None else set(spaces)
        groups: list[_Group] = []
        full_shape = (steps, self.warps, WARP)
        for which, n_inst, gaddr, act, saddr in self._copies(L, tile_m, tile_n, steps, fallback=True):
            cb = self.copy_bytes(L, which)  # 16 unless the operand's rows are not 16-byte aligned
            for q in range(n_inst):
                a = np.broadcast_to(act[:, q], full_shape)
                # one cp.async: a global read (L2 only) and a shared write, recorded as two instructions
                groups.append(_Group(gaddr[:, q], a, cb, SPACE_GLOBAL, False, True, which))
                groups.append(_Group(saddr[:, q], a, cb, SPACE_SHARED, True, False, which))
        if want is None or SPACE_SHARED in want:
            groups += self._fragment_reads(steps)
        body = _assemble(groups, spaces)
        return WarpTrace.concat([body, _assemble([self._epilogue(L, tile_m, tile_n)], spaces)])

    def _fragment_reads(self, steps: int) -> list[_Group]:
        """ldmatrix.x4 reads of A (16 rows x 2 chunks) and B (.trans: 16 k-rows x 2 n-chunks) per k-slice."""
        e = self.elem
        w = np.arange(self.warps, dtype=np.int64)[:, None]
        wm, wn = w // self.warps_n, w % self.warps_n
        lane = _LANES[None, :]
        t = np.arange(steps, dtype=np.int64)[:, None, None]
        stage = t % self.stages
        a_base = stage * self.BM * self.BK * e
        b_base = self.stages * self.BM * self.BK * e + stage * self.BK * self.BN * e
        groups = []
        full = np.ones((steps, self.warps, WARP), bool)
        for ks in range(max(self.BK // self.kspan, 1)):
            for f in range(self.WM // 16):
                r = wm * self.WM + f * 16 + lane % 16
                byte = (ks * 2 + lane // 16) * 16
                groups.append(_Group(self._smem(a_base, r[None], byte[None], self.BK * e), full, 16, SPACE_SHARED, False, False, OP_A))
            for f in range(self.WN // 16):
                kr = ks * self.kspan + lane % 8 + 8 * ((lane // 8) % 2)
                byte = (wn * self.WN + f * 16) * e + (lane // 16) * 16
                groups.append(_Group(self._smem(b_base, kr[None], byte[None], self.BN * e), full, 16, SPACE_SHARED, False, False, OP_B))
        return groups

    def _epilogue(self, L: Layout, tile_m: int, tile_n: int) -> _Group:
        """C stores from the accumulators: per m16n8 tile, rows g and g+8 (g = lane/4), 2 elements per lane."""
        w = np.arange(self.warps, dtype=np.int64)[:, None]
        wm, wn = w // self.warps_n, w % self.warps_n
        lane = _LANES[None, :]
        fm, fn, half = np.meshgrid(np.arange(self.WM // 16), np.arange(self.WN // 8), np.arange(2), indexing="ij")
        fm, fn, half = (x.reshape(-1)[:, None, None] for x in (fm, fn, half))
        row = tile_m * self.BM + wm[None] * self.WM + fm * 16 + half * 8 + lane[None] // 4
        col = tile_n * self.BN + wn[None] * self.WN + fn * 8 + (lane[None] % 4) * 2
        act = (row < L.M) & (col < L.N)
        return _Group(L.c_base + row * L.c_rs + col * L.c_cs, act, 2 * self.elem, SPACE_GLOBAL, True, True, OP_C)

    def warp_instructions_per_step(self) -> float:
        """Instructions one warp executes per k-step: its compute phase's and its copies' (the two methods below)."""
        return self.warp_compute_instructions_per_step() + self.warp_copy_instructions_per_step()

    def warp_compute_instructions_per_step(self) -> float:
        """Instructions of one warp's compute phase per k-step (MMAs included): the compiled kernel's executed count
        where given (``extra``, measured on its copy-less twin), else its ldmatrix and mma instructions alone."""
        given = (self.extra or {}).get("warp_instructions_per_step")
        if given:
            return float(given)
        frag = max(self.BK // self.kspan, 1) * (self.WM // 16 + self.WN // 16)
        return float(frag + self.mma_per_warp_per_stage)

    def warp_copy_instructions_per_step(self) -> float:
        """Instructions one warp executes per k-step to issue its copies: the compiled kernel's executed count where
        given (``extra``), else its cp.async instructions alone."""
        given = (self.extra or {}).get("warp_copy_instructions_per_step")
        if given is not None:
            return float(given)
        v = 16 // self.elem
        return float(-(-(self.BM * max(self.BK // v, 1)) // self.threads) + -(-(self.BK * max(self.BN // v, 1)) // self.threads))

    def counts(self, M, N, K):
        steps = -(-K // self.BK)
        v = 16 // self.elem
        cp = -(-(self.BM * max(self.BK // v, 1)) // self.threads) + -(-(self.BK * max(self.BN // v, 1)) // self.threads)
        frag = max(self.BK // self.kspan, 1) * (self.WM // 16 + self.WN // 16)
        epi = (self.WM // 16) * (self.WN // 8) * 2
        w = self.warps
        return {
            "global_loads": cp * steps * w,
            "global_stores": epi * w,
            "shared_loads": frag * steps * w,
            "shared_stores": cp * steps * w,
            "mma": self.mma_per_warp_per_stage * steps * w,
        }


def tensorcore_registers(WM: int, WN: int, acc_bytes: int = 4) -> int:
    """Registers per thread of a warp-tiled tensor-core kernel, estimated and capped at 255.

    Accumulators ``WM*WN/32 * acc_bytes/4`` + double-buffered fragments ``2*(4*WM/16 + 2*WN/8)`` (an A
    ldmatrix.x4 fragment is 4 registers per lane, a B n8 fragment 2) + 32 for addresses and counters.
    For CUTLASS's 64x64 warp tile with fp32 accumulators this gives 224; ptxas reports 226 for the
    256x128x32 kernel of seed 003 (ptxas -v of CUTLASS's 256x128x32 device::Gemm for sm_89 reports 226 registers).
    """
    return min(255, WM * WN // 32 * acc_bytes // 4 + 2 * (4 * (WM // 16) + 2 * (WN // 8)) + 32)


# ---------------------------------------------------------------------------------------------------
# Registry
# ---------------------------------------------------------------------------------------------------
_DEFAULT_ACC = {"fp16": "fp32", "bf16": "fp32", "tf32": "fp32", "fp8": "fp32", "int8": "int32", "fp64": "fp64", "fp32": "fp32"}
_ACC_BYTES = {"fp32": 4, "fp16": 2, "int32": 4, "fp64": 8}
_MMA_BY_ELEM = {1: "16x8x32", 2: "16x8x16", 4: "16x8x8", 8: "8x8x4"}


@dataclass(frozen=True)
class GPUKernel:
    """One GPU kernel name: its parameter model and how to bind parameters and a dtype into a spec."""

    name: str
    description: str
    params: type[Strict]
    lanes: str | None = None  # for loop-order names: 'i' or 'j' across lanes

    def spec(self, params: Strict | dict, dtype: str, machine=None, M: int | None = None) -> GPUKernelSpec:
        """The concrete kernel for these parameters and dtype (``machine`` and the problem's ``M`` pick ``gemm``'s default)."""
        p = params if isinstance(params, self.params) else self.params(**(params or {}))
        try:
            dtype_bytes(dtype)
        except ValueError as err:
            raise KernelError(str(err)) from None
        if self._family == "gemm":
            return _build_gemm(self, p, dtype, machine, M)
        return _BUILDERS[self._family](self, p, dtype, machine)

    @property
    def _family(self) -> str:
        for cls, fam in ((NaiveParams, "naive"), (TiledParams, "tiled"), (BlockedParams, "tiled"), (TensorCoreParams, "tensorcore")):
            if issubclass(self.params, cls):
                return fam
        return "gemm"


def _build_naive(k: GPUKernel, p: NaiveParams, dtype: str, machine) -> NaiveSpec:
    lanes = k.lanes or "j"
    bm, bn = (p.BY, p.BX) if lanes == "j" else (p.BX, p.BY)
    return NaiveSpec(
        name=k.name, dtype=dtype, BM=bm, BN=bn, threads=p.BX * p.BY, regs=p.regs, smem_bytes=0, tensor=False,
        acc=dtype, raster=p.raster, group_m=p.group_m, lanes=lanes, BX=p.BX, BY=p.BY, kstep=p.unroll,
    )


def _build_tiled(k: GPUKernel, p: TiledParams | BlockedParams, dtype: str, machine) -> TiledSpec:
    T = p.TILE if isinstance(p, TiledParams) else p.BM
    return TiledSpec(
        name=k.name, dtype=dtype, BM=T, BN=T, threads=T * T, regs=p.regs, smem_bytes=2 * T * (T + p.pad) * dtype_bytes(dtype),
        tensor=False, acc=dtype, raster=p.raster, group_m=p.group_m, TILE=T, pad=p.pad, kstep=T,
    )


def _build_tensorcore(k: GPUKernel, p: TensorCoreParams, dtype: str, machine) -> TensorCoreSpec:
    e = dtype_bytes(dtype)
    acc = p.acc or _DEFAULT_ACC.get(dtype, "fp32")
    mma = tuple(int(x) for x in p.mma.split("x"))
    if p.BK * e < 32:
        raise KernelError(f"tensorcore: BK={p.BK} {dtype} is {p.BK * e} B per row; ldmatrix needs at least 32 B (BK >= {32 // e})")
    if (p.BK * e) % 16 or (p.BN * e) % 16:
        raise KernelError(f"tensorcore: tile rows must be whole 16-byte cp.async chunks (BK={p.BK}, BN={p.BN}, {dtype})")
    warps = (p.BM // p.WM) * (p.BN // p.WN)
    regs = p.regs if p.regs is not None else tensorcore_registers(p.WM, p.WN, _ACC_BYTES.get(acc, 4))
    smem = p.smem if p.smem is not None else p.stages * (p.BM + p.BN) * (p.BK + p.pad) * e
    return TensorCoreSpec(
        name=k.name, dtype=dtype, BM=p.BM, BN=p.BN, threads=warps * WARP, regs=regs, smem_bytes=smem, tensor=True, acc=acc,
        raster=p.raster, group_m=p.group_m, stages=p.stages, BK=p.BK, WM=p.WM, WN=p.WN, mma=mma, swizzle=p.swizzle,
        kstep=p.BK, extra={"warp_instructions_per_step": p.warp_instructions_per_step,
                           "warp_copy_instructions_per_step": p.warp_copy_instructions_per_step,
                           "fragment_trace": p.fragment_trace, "smem_row_pad": p.pad, "api": p.api,
                           "copy_trace": p.copy_trace.get(p.stages) if isinstance(p.copy_trace, dict) else p.copy_trace},
    )


def uses_tensor_cores(machine, dtype: str) -> bool:
    """Whether ``gemm`` picks the tensor-core kernel: the machine has tensor cores for dtype (fp32/fp64 go to CUDA cores)."""
    if dtype in ("fp32", "fp64"):
        return False
    table = getattr(machine, "tensor_flops_per_clk", None)
    return bool(table and dtype in table) if machine is not None else dtype in ("fp16", "bf16", "tf32", "int8", "fp8")


def _build_gemm(k: GPUKernel, p: GemmParams, dtype: str, machine, M: int | None = None) -> GPUKernelSpec:
    if uses_tensor_cores(machine, dtype):
        # cuBLAS picks skinny tiles when M is small (decode: M = batch), e.g. 64x48 / 64x64 seen on the H200
        # (NVIDIA, Matrix Multiplication Background User's Guide, DU-09799-001, ch. 3): a 128-row tile would compute mostly padding. Rows: the power of two >= M, 16..128.
        bm = 128 if M is None else min(128, max(16, 1 << max(0, (M - 1).bit_length())))
        tp = TensorCoreParams(BM=bm, WM=min(64, bm), WN=64 if bm >= 64 else 32, stages=p.stages, raster=p.raster,
                              group_m=p.group_m, mma=_MMA_BY_ELEM[dtype_bytes(dtype)], BK=max(32, 32 // dtype_bytes(dtype)))
        return _build_tensorcore(KERNELS["tensorcore"], tp, dtype, machine)
    return _build_tiled(KERNELS["tiled_smem"], TiledParams(TILE=32, raster=p.raster, group_m=p.group_m), dtype, machine)


_BUILDERS = {"naive": _build_naive, "tiled": _build_tiled, "tensorcore": _build_tensorcore}

#: Loop-order names and the index that runs across a warp's lanes: the later of i and j in the name.
LOOP_ORDER_LANES = {o: ("j" if o.index("j") > o.index("i") else "i") for o in ("ijk", "ikj", "jik", "jki", "kij", "kji")}

KERNELS: dict[str, GPUKernel] = {
    "naive": GPUKernel("naive", "one thread per C element, j across lanes (= ijk)", NaiveParams, "j"),
    **{
        o: GPUKernel(o, f"one thread per C element, {lanes} across a warp's lanes ({'coalesced' if lanes == 'j' else 'strided'} "
                     "for row-major matrices)", NaiveParams, lanes)
        for o, lanes in LOOP_ORDER_LANES.items()
    },
    "tiled_smem": GPUKernel("tiled_smem", "shared-memory tiled kernel, TILE x TILE threads, [TILE][TILE+pad] tiles", TiledParams),
    "blocked": GPUKernel("blocked", "the GPU's blocked kernel: tiled_smem with TILE = BM = BN = BK", BlockedParams),
    "tensorcore": GPUKernel("tensorcore", "warp-tiled tensor-core kernel with S cp.async stages", TensorCoreParams),
    "gemm": GPUKernel("gemm", "the machine's default: tensorcore 128x128x32 (tensor-core dtypes) or tiled_smem TILE=32", GemmParams),
    "seed003_cutlass": GPUKernel("seed003_cutlass", "seed 003's CUTLASS 256x128x32 tensor-core kernel (8 warps of 64x64, fp32 accumulate)",
                                 Seed003Params),
}

# Hopper's warp-specialised family lives in its own module (it builds on TensorCoreSpec above).
from gemmsim.kernels.hopper import HOPPER_KERNELS  # noqa: E402

KERNELS.update(HOPPER_KERNELS)
