"""Run clock13.py's probe mode against fake torch and cupy that record every call; print the call log.

    git show 55a2d8f:validation/h200/round13/clock13.py > /tmp/clock13_ran.py     # the version that ran (round 13)
    REPS=1 SUSTAIN_S=0 python validation/h200/round13/check_refactor13.py /tmp/clock13_ran.py /tmp/ran > /tmp/a.txt
    REPS=1 SUSTAIN_S=0 python validation/h200/round13/check_refactor13.py validation/h200/round13/clock13.py /tmp/now > /tmp/b.txt
    cmp /tmp/a.txt /tmp/b.txt && cmp /tmp/ran/probe13.csv /tmp/now/probe13.csv

Why: clock13.py's probed-launch sequence was merged into one helper after the measurement. The fakes log every
kernel launch (with its arguments), stream entry, synchronisation, event record, product and host sleep in order, and
hand back synthetic probe samples (1.8 cycles a ns) so the clock arithmetic runs too; identical logs and CSVs mean
the refactored script issues what the measured one issued. No GPU needed.
"""
import runpy
import sys
import types

import numpy as np

LOG = []


class Rec:
    def __init__(self, name):
        self._n = name

    def __call__(self, *a, **k):
        LOG.append((self._n, tuple(_s(x) for x in a), tuple(sorted((kk, _s(v)) for kk, v in k.items()))))
        return Rec(self._n + "()")

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Rec(f"{self._n}.{attr}")

    def __enter__(self):
        LOG.append(("enter", self._n))
        return self

    def __exit__(self, *a):
        LOG.append(("exit", self._n))

    # tensor-ish arithmetic
    def __sub__(self, o): return self
    def __truediv__(self, o): return self
    def __float__(self): return 1.0
    def __getitem__(self, k): return Rec(f"{self._n}[{k}]")


def _s(x):
    if isinstance(x, Rec):
        return x._n
    if isinstance(x, slice):
        return f"{x.start}:{x.stop}"
    return repr(x)


torch = types.ModuleType("torch")
torch.float16, torch.bfloat16 = "float16", "bfloat16"
torch.device = lambda *a: "cuda"
torch.randn = Rec("torch.randn")
torch.matmul = Rec("torch.matmul")
cuda = types.SimpleNamespace(synchronize=Rec("torch.cuda.synchronize"),
                             current_stream=lambda: types.SimpleNamespace(cuda_stream=7))


class Event:
    n = 0

    def __init__(self, **k):
        Event.n += 1
        self.i = Event.n

    def record(self):
        LOG.append(("event.record",))

    def elapsed_time(self, other):
        LOG.append(("event.elapsed",))
        return 1.0


cuda.Event = Event
torch.cuda = cuda


class Array:
    def __init__(self, n, name):
        self.n, self.name = n, name

    def __getitem__(self, k):
        return Array(0, f"{self.name}[{_s(k)}]")

    def __repr__(self):
        return self.name


cp = types.ModuleType("cupy")
cp.uint64 = lambda v: f"u64({v})"
cp.int32 = lambda v: f"i32({v})"
cp.uint64.__name__ = "uint64"
cp.zeros = lambda n, dtype=None: Array(n, f"zeros{n}")
def asnumpy(a):
    """Synthetic probe samples (100 of them, 500 ns apart, 1.8 cycles a ns) and markers bracketing 60 of them."""
    if a.name.startswith("zeros2"):
        return np.array([1000 + 20 * 500, 1000 + 80 * 500], dtype=np.uint64)
    h = np.zeros(a.n, dtype=np.uint64)
    ns = (a.n - 2) // 2
    g = 1000 + 500 * np.arange(100)
    h[0:200:2], h[1:200:2] = g, (1.8 * g + 7 * np.sin(np.arange(100))).astype(np.uint64)
    h[2 * ns], h[2 * ns + 1] = 100, 5
    return h


cp.asnumpy = asnumpy
cp.RawModule = lambda code: types.SimpleNamespace(get_function=lambda name: Rec(f"kernel:{name}"))
cp.cuda = types.SimpleNamespace(Stream=lambda **k: Rec("pstream"), ExternalStream=lambda s: Rec("tstream"))
sys.modules["torch"], sys.modules["cupy"] = torch, cp

import time  # noqa: E402

time.sleep = lambda s: LOG.append(("sleep", s))
_t = [0.0]
time.time = lambda: _t[0]

script, out = sys.argv[1], sys.argv[2]
sys.argv = [script, "probe", out]
runpy.run_path(script, run_name="__main__")
for entry in LOG:
    print(entry)
