"""On the device: per-instruction (per-PC) metrics of every kernel in an ncu report, through Nsight Compute's own
ncu_report module (extras/python), as CSV: kernel,metric,pc,value -- the fallback when `ncu --page source` is absent."""
import glob
import sys

paths = sorted(glob.glob("/usr/local/cuda*/nsight-compute*/extras/python") + glob.glob("/opt/nvidia/nsight-compute/*/extras/python")
               + glob.glob("/usr/local/NVIDIA-Nsight-Compute*/extras/python"))
sys.path[:0] = paths
import ncu_report  # noqa: E402

ctx = ncu_report.load_report(sys.argv[1])
print("kernel,metric,pc,value")
for r in range(ctx.num_ranges()):
    rng = ctx.range_by_idx(r)
    for a in range(rng.num_actions()):
        act = rng.action_by_idx(a)
        name = act.name(ncu_report.IAction.NameBase_MANGLED) if hasattr(ncu_report.IAction, "NameBase_MANGLED") else act.name()
        for mname in act.metric_names():
            m = act.metric_by_name(mname)
            try:
                if not m.has_correlation_ids():
                    continue
                ids = m.correlation_ids()
                for i in range(m.num_instances()):
                    print(f"{name},{mname},{ids.as_uint64(i):#x},{m.as_double(i)}")
            except Exception:  # a metric without instances
                continue
