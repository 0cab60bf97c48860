"""Hopper GEMM kernels: warp-specialised, TMA-fed, warpgroup-MMA, persistent (CUTLASS 3.x / cuBLAS on sm_90).

What one CTA of such a kernel does (CUTLASS ``include/cutlass/gemm/kernel/sm90_gemm_tma_warpspecialized_
cooperative.hpp`` and ``..._pingpong.hpp``, ``include/cutlass/gemm/collective/sm90_mma_tma_gmma_ss_warpspecialized.hpp``):

* **Warp specialisation.** 384 threads = three warpgroups of 128: one *producer* (its one elected thread
  issues the TMA copies; ``setmaxnreg`` drops it to 40 registers) and two *consumer* warpgroups that issue
  the MMAs (232 registers each). The launch asks for 65,536 / 384 = 168 registers per thread, so one CTA
  per SM.
* **TMA loads.** ``cp.async.bulk.tensor`` copies a BM x BK tile of A and a BK x BN tile of B into one of
  ``stages`` shared-memory buffers (L2 -> shared memory, no L1, no registers); completion is counted on
  the stage's mbarrier. With a cluster of ``cluster_m x cluster_n`` CTAs, a tile of B is multicast to the
  ``cluster_m`` CTAs of a cluster column (and A to the ``cluster_n`` CTAs of a row): the L2 sends it once.
* **Warpgroup MMA.** ``wgmma.mma_async`` m64nNk16 (fp16/bf16) reads A and B from shared memory through
  descriptors: no ldmatrix, no register fragments. Each consumer warpgroup owns BM/2 rows of the tile
  (*cooperative*) or a whole tile of its own, the two alternating mainloop and epilogue (*pingpong*).
* **Persistent tiles.** The grid is one CTA per SM (per cluster slot); CTA j computes tiles j, j + G,
  j + 2G ... (the static persistent scheduler), so the producer runs ahead into the next tile.

Tile shapes are given as cuBLAS and CUTLASS name them: ``kernel_name`` accepts a profiler kernel name --
``nvjet_hsh_256x128_64x4_2x1_v_bz_coopB_TNT`` (cuBLAS's nvjet: BMxBN, BKxstages, cluster), a CUTLASS 3.x
``..._256x128x64_2x1x1_0_..._warpspecialized_cooperative...`` or an ``sm90_xmma_..._tilesize256x128x64_...``
-- and the parameters are read from it (:func:`parse_kernel_name`).

The trace a block emits (for the memory model) is its TMA copies as 16-byte chunks (global reads that
bypass L1, shared writes) and its C stores; wgmma's shared-memory reads are not in it (they do not go
through the load/store pipe).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from gemmsim.errors import KernelError
from gemmsim.kernels.gpu import (
    OP_C,
    WARP,
    GPUKernel,
    GPUKernelSpec,
    TensorCoreSpec,
    _assemble,
    _Group,
    _LANES,
    _RasterParams,
    SPACE_GLOBAL,
    SPACE_SHARED,
    WarpTrace,
)
from gemmsim.units import dtype_bytes

#: Threads of a warpgroup (wgmma is issued by 4 warps together).
WARPGROUP = 128
#: Registers per thread the warp-specialised kernels launch with: 65,536 / 384 (CUTLASS: producer 40, consumers 232).
LAUNCH_REGS = 168
_DEFAULT_ACC = {"fp16": "fp32", "bf16": "fp32", "tf32": "fp32", "fp8": "fp32", "int8": "int32"}
_WGMMA_K = {1: 32, 2: 16, 4: 8}  # K of one wgmma by input element size

# nvjet_hsh_256x128_64x4_2x1_v_bz_coopB_TNT: BMxBN _ BKxSTAGES _ CMxCN
_NVJET = re.compile(r"_(\d+)x(\d+)_(\d+)x(\d+)_(\d+)x(\d+)(?:_|$)")
# cutlass3x_sm90_..._256x128x64_2x1x1_0_...: BMxBNxBK _ CMxCNxCK
_CUTLASS3 = re.compile(r"_(\d+)x(\d+)x(\d+)_(\d+)x(\d+)x(\d+)(?:_|$)")
# sm90_xmma_gemm_..._tilesize256x128x64_warpgroupsize2x1x1_..._stages4? / cluster{M}x{N}
_XMMA = re.compile(r"tilesize(\d+)x(\d+)x(\d+)")


def parse_kernel_name(name: str) -> dict:
    """Tile, stages, cluster and schedule of a Hopper GEMM kernel as the profiler names it.

    Returns a dict with BM, BN, BK and, when the name says, stages, cluster_m, cluster_n, schedule.
    ``nvjet_hsh_256x128_64x4_2x1_v_bz_coopB_TNT`` -> BM 256, BN 128, BK 64, stages 4, cluster 2 x 1,
    cooperative. Raises KernelError when no tile can be read from the name.
    """
    out: dict = {}
    if (m := _NVJET.search(name)) and "nvjet" in name:
        bm, bn, bk, st, cm, cn = map(int, m.groups())
        out.update(BM=bm, BN=bn, BK=bk, stages=st, cluster_m=cm, cluster_n=cn)
    elif m := _CUTLASS3.search(name):
        bm, bn, bk, cm, cn, _ = map(int, m.groups())
        out.update(BM=bm, BN=bn, BK=bk, cluster_m=cm, cluster_n=cn)
    elif m := _XMMA.search(name):
        bm, bn, bk = map(int, m.groups())
        out.update(BM=bm, BN=bn, BK=bk)
        if c := re.search(r"cluster(\d+)x(\d+)", name):
            out.update(cluster_m=int(c.group(1)), cluster_n=int(c.group(2)))
    else:
        raise KernelError(f"cannot read a tile shape from kernel name {name!r} (expected e.g. nvjet_hsh_256x128_64x4_2x1_...)")
    if s := re.search(r"stages?_?(\d+)", name):
        out.setdefault("stages", int(s.group(1)))
    low = name.lower()
    if "pingpong" in low:
        out["schedule"] = "pingpong"
    elif "coop" in low:
        out["schedule"] = "cooperative"
        if c := re.search(r"coop([ab])(?:_|$)", low):  # nvjet: coopA / coopB, which operand's tile the two consumers split
            out["split"] = "M" if c.group(1) == "a" else "N"
    return out


class HopperParams(_RasterParams):
    """A warp-specialised TMA + wgmma GEMM kernel (CUTLASS 3.x / cuBLAS on sm_90)."""

    BM: int = Field(128, ge=64, description="CTA tile rows (of C); a multiple of 64 (wgmma's M) per consumer warpgroup.")
    BN: int = Field(256, ge=8, le=512, description="CTA tile columns (of C); wgmma's N is 8..256 in steps of 8.")
    BK: int = Field(64, ge=16, description="K elements per pipeline stage.")
    stages: int = Field(4, ge=1, le=16, description="Shared-memory stage buffers (TMA copies in flight).")
    cluster_m: int = Field(1, ge=1, le=16, description="CTAs of a cluster along M (they share, by multicast, their B tiles).")
    cluster_n: int = Field(1, ge=1, le=16, description="CTAs of a cluster along N (they share their A tiles).")
    schedule: Literal["cooperative", "pingpong"] = Field(
        "cooperative", description="cooperative: both consumer warpgroups on one tile; pingpong: one tile each, "
        "alternating mainloop and epilogue."
    )
    split: Literal["M", "N"] = Field(
        "M", description="cooperative: the consumer warpgroups split the tile's rows (M, CUTLASS's default; nvjet 'coopA') "
        "or its columns (N, nvjet 'coopB')."
    )
    persistent: bool = Field(True, description="One CTA per SM looping over tiles (False: one CTA per tile).")
    ctas: int | None = Field(
        None, ge=1, description="Persistent CTAs the kernel launches (the grid a profiler shows; clusters of 4 or 8 may not "
        "fill every GPC); default: the SMs rounded down to whole clusters."
    )
    acc: Literal["fp32", "fp16", "int32"] | None = Field(None, description="Accumulator dtype (default fp32, int32 for int8).")
    kernel_name: str | None = Field(
        None, description="A profiler kernel name (nvjet_..., cutlass3x_sm90_..., sm90_xmma_...) to read BM, BN, BK, "
        "stages, cluster and schedule from; fields it names override the others."
    )

    @model_validator(mode="after")
    def _from_name(self) -> "HopperParams":
        if self.kernel_name:
            try:
                parsed = parse_kernel_name(self.kernel_name)
            except KernelError as err:
                raise ValueError(str(err)) from None
            for k, v in parsed.items():
                object.__setattr__(self, k, v)
        if self.cluster_m * self.cluster_n > 16:
            raise ValueError(f"cluster {self.cluster_m}x{self.cluster_n} has more than 16 CTAs (Hopper's non-portable limit)")
        return self


@dataclass(frozen=True)
class HopperSpec(TensorCoreSpec):
    """A warp-specialised Hopper GEMM: tile, stages, cluster, schedule (see the module docstring)."""

    consumers: int = 2  # consumer warpgroups
    cluster_m: int = 1
    cluster_n: int = 1
    schedule: str = "cooperative"
    split: str = "M"
    persistent: bool = True
    ctas: int | None = None

    @property
    def math_warps(self) -> int:
        """Warps issuing MMAs on one tile at a time: both consumer warpgroups (cooperative) or one (pingpong)."""
        return 4 * (self.consumers if self.schedule == "cooperative" else 1)

    @property
    def mma_padding(self) -> float:
        """MMA work paid per useful MMA work: wgmma computes 64 rows (its M) at a time by 8..256 columns (its N), so
        a warpgroup's part of the tile is padded to whole m64 along the side fed as wgmma's M.

        Which side that is, is the kernel's choice (A and B both come from shared memory through descriptors; the
        kernel may compute the transposed tile), and which side the two cooperative consumers split is named by
        nvjet only as coopA / coopB, whose meaning is not documented. The model takes the arrangement that wastes
        least: cuBLAS's 160x192 is split into two 80 x 192 halves with 192 = 3 x 64 as M (no padding), not into
        160 x 96 with 160 padded to 192 (20 % more MMA work). A split or orientation that leaves no valid wgmma N
        (a multiple of 8 up to 256) is not considered; with none valid, the named split with rows as M.
        """
        def pad(m_side: int) -> float:
            return (-(-m_side // 64) * 64) / m_side

        if self.schedule == "cooperative":
            parts = [(self.BM // 2, self.BN), (self.BM, self.BN // 2)]
        else:
            parts = [(self.BM, self.BN)]
        options = [pad(m_side) for r, c in parts if r > 0 and c > 0
                   for m_side, n_side in ((r, c), (c, r)) if n_side % 8 == 0 and n_side <= 256]
        if options:
            return min(options)
        return pad(self.BM // 2 if self.schedule == "cooperative" and self.split == "M" else self.BM)

    @property
    def cluster_size(self) -> int:
        return self.cluster_m * self.cluster_n

    def l2_bytes_per_step(self) -> float:
        """Bytes the L2 sends for one CTA's k-step: A once per cluster row (multicast to cluster_n CTAs),
        B once per cluster column (multicast to cluster_m CTAs)."""
        e = self.elem
        return self.BM * self.BK * e / self.cluster_n + self.BK * self.BN * e / self.cluster_m

    def math_instructions_per_step(self) -> float:
        """wgmma instructions per k-step of the CTA (m64 x BN' x k per warpgroup, counted once per warpgroup)."""
        return (self.BM // 64) * max(self.BK // self.mma[2], 1)

    def block_trace(self, layout, tile_m, tile_n, spaces=None):
        L = layout
        steps = -(-L.K // self.BK)
        groups: list[_Group] = []
        full_shape = (steps, self.warps, WARP)
        for which, n_inst, gaddr, act, saddr in self._copies(L, tile_m, tile_n, steps):
            for q in range(n_inst):
                a = np.broadcast_to(act[:, q], full_shape)
                groups.append(_Group(gaddr[:, q], a, 16, SPACE_GLOBAL, False, True, which))
                groups.append(_Group(saddr[:, q], a, 16, SPACE_SHARED, True, False, which))
        body = _assemble(groups, spaces)
        return WarpTrace.concat([body, _assemble(self._c_stores(L, tile_m, tile_n), spaces)])

    def _c_stores(self, L, tile_m: int, tile_n: int) -> list[_Group]:
        """The C tile written row by row in 16-byte chunks (the TMA store of the epilogue), spread over the threads."""
        e, v = self.elem, 16 // self.elem
        per_row = max(self.BN // v, 1)
        chunks = self.BM * per_row
        tid = np.arange(self.warps, dtype=np.int64)[:, None] * WARP + _LANES[None, :]
        out = []
        for q in range(-(-chunks // self.threads)):
            c = q * self.threads + tid
            row, col = tile_m * self.BM + c // per_row, tile_n * self.BN + (c % per_row) * v
            act = (c < chunks) & (row < L.M) & (col < L.N)
            out.append(_Group((L.c_base + row * L.c_rs + col * L.c_cs)[None], act[None], 16, SPACE_GLOBAL, True, True, OP_C))
        return out

    def counts(self, M, N, K):
        c = super().counts(M, N, K)
        c["shared_loads"] = 0
        c["global_stores"] = -(-(self.BM * max(self.BN * self.elem // 16, 1)) // self.threads) * self.warps
        c["mma"] = self.math_instructions_per_step() * -(-K // self.BK)
        return c


def build_hopper(kernel: GPUKernel, p: HopperParams, dtype: str, machine=None) -> HopperSpec:
    """Bind parameters and a dtype into a HopperSpec; KernelError for shapes wgmma or the machine cannot run."""
    e = dtype_bytes(dtype)
    if e not in _WGMMA_K:
        raise KernelError(f"hopper_ws: wgmma takes 1-, 2- or 4-byte inputs (fp8/int8, fp16/bf16, tf32), not {dtype}")
    if machine is not None and machine.cc < (9, 0):
        raise KernelError(f"hopper_ws needs wgmma and TMA (compute capability 9.0); {machine.name} is {machine.compute_capability}")
    acc = p.acc or _DEFAULT_ACC.get(dtype, "fp32")
    coop_m = p.schedule == "cooperative" and p.split == "M"
    coop_n = p.schedule == "cooperative" and p.split == "N"
    rows_per_wg = p.BM // 2 if coop_m else p.BM
    cols_per_wg = p.BN // 2 if coop_n else p.BN
    if rows_per_wg % 32 or rows_per_wg < 32:
        raise KernelError(f"hopper_ws: each consumer warpgroup needs a multiple of 32 rows (BM={p.BM}, {p.schedule}, split {p.split}); "
                          "wgmma computes 64 at a time")
    if cols_per_wg % 8 or cols_per_wg < 8:
        raise KernelError(f"hopper_ws: each consumer warpgroup needs a multiple of 8 columns (BN={p.BN}, {p.schedule}, split {p.split})")
    k = _WGMMA_K[e]
    if p.BK % k or (p.BK * e) % 16:
        raise KernelError(f"hopper_ws: BK={p.BK} must be a multiple of wgmma's K={k} for {dtype}")
    smem = p.stages * (p.BM * p.BK + p.BK * p.BN) * e
    threads = WARPGROUP * 3
    wn = min(cols_per_wg, 256)  # wgmma's N per instruction: the warpgroup's columns, at most 256
    return HopperSpec(
        name=kernel.name, dtype=dtype, BM=p.BM, BN=p.BN, threads=threads, regs=LAUNCH_REGS, smem_bytes=smem, tensor=True,
        acc=acc, raster=p.raster, group_m=p.group_m, stages=p.stages, BK=p.BK, WM=64, WN=wn, mma=(64, wn, k),
        swizzle=True, kstep=p.BK, consumers=2, cluster_m=p.cluster_m, cluster_n=p.cluster_n, schedule=p.schedule, split=p.split, ctas=p.ctas,
        persistent=p.persistent,
    )


@dataclass(frozen=True)
class HopperKernel(GPUKernel):
    """The ``hopper_ws`` kernel name."""

    def spec(self, params, dtype: str, machine=None, M: int | None = None) -> GPUKernelSpec:
        p = params if isinstance(params, self.params) else self.params(**(params or {}))
        return build_hopper(self, p, dtype, machine)


HOPPER_KERNELS = {
    "hopper_ws": HopperKernel(
        "hopper_ws", "Hopper warp-specialised GEMM: TMA loads, warpgroup MMA, producer/consumer warpgroups, cluster, "
        "persistent tiles (CUTLASS 3.x / cuBLAS nvjet)", HopperParams),
}
