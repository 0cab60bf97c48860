"""Executors: local processes and a Dask cluster give exactly the rows of a serial run; bad addresses fail cleanly."""

import socket
import sys

import pytest

from gemmsim.cli.main import main
from gemmsim.errors import GemmsimError
from gemmsim.run.executor import DaskExecutor, LocalExecutor, make_executor
from gemmsim.run.experiment import Experiment, plan
from gemmsim.run.runner import simulate_cases

#: columns that differ between runs of the same case (wall time, provenance)
VOLATILE = {"sim_wall_s", "from_cache"}


def _square(x):
    return x * x


def _fail_on_three(x):
    if x == 3:
        raise ValueError("three")
    return x


def _plan():
    exp = Experiment.model_validate(
        {"schema_version": 1, "name": "ex", "machines": ["toy"], "kernels": ["ijk", "ikj"], "sizes": [4, 6, 8], "dtypes": ["fp32", "fp64"]}
    )
    return plan(exp)


def _stable(rows):
    return [{k: v for k, v in r.items() if k not in VOLATILE} for r in rows]


@pytest.mark.parametrize("jobs", [1, 2])
def test_local_executor_yields_every_index_once(jobs):
    got = dict(LocalExecutor(jobs).map(_square, range(7)))
    assert got == {i: i * i for i in range(7)}


def test_local_executor_propagates_errors():
    with pytest.raises(ValueError, match="three"):
        list(LocalExecutor(2).map(_fail_on_three, range(5)))
    with pytest.raises(GemmsimError, match="at least 1"):
        LocalExecutor(0)


def test_parallel_and_dask_rows_equal_serial_rows():
    distributed = pytest.importorskip("distributed")
    p = _plan()
    serial = simulate_cases(p, jobs=1, quiet=True)
    assert len(serial) == len(p.cases) == 12
    assert [(r["kernel"], r["M"], r["dtype"]) for r in serial] == [(c.kernel, c.M, c.dtype) for c in p.cases]
    assert _stable(simulate_cases(p, jobs=2, quiet=True)) == _stable(serial)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        with distributed.Client(cluster, set_as_default=False) as client:
            ex = DaskExecutor(client=client)
            assert dict(ex.map(_square, range(5))) == {i: i * i for i in range(5)}
            assert _stable(simulate_cases(p, quiet=True, executor=ex)) == _stable(serial)
            # and through the address, as --executor dask --address does
            with DaskExecutor(cluster.scheduler_address) as by_address:
                assert _stable(simulate_cases(p, quiet=True, executor=by_address)) == _stable(serial)


def test_missing_dask_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(GemmsimError, match=r"pip install gemmsim\[dask\]"):
        make_executor("dask", address="127.0.0.1:8786")


def test_executor_choice_errors():
    with pytest.raises(GemmsimError, match="needs --address"):
        make_executor("dask")
    with pytest.raises(GemmsimError, match="only for --executor dask"):
        make_executor("local", address="x:1")
    pytest.importorskip("distributed")
    with pytest.raises(GemmsimError, match="not HOST:PORT"):
        make_executor("dask", address="localhost")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nobody listens on it once the socket is closed


def test_unreachable_dask_address_is_a_clear_error_and_writes_nothing(tmp_path, capsys):
    pytest.importorskip("distributed")
    exp = tmp_path / "e.yaml"
    exp.write_text("schema_version: 1\nname: e\nmachines: [toy]\nkernels: [ijk]\nsizes: [4]\n")
    addr = f"127.0.0.1:{_closed_port()}"
    out = tmp_path / "results" / "res"
    code = main(["run", str(exp), "--out", str(out), "--executor", "dask", "--address", addr, "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    assert addr in err and "cannot reach the Dask scheduler" in err and "Traceback" not in err
    assert not (tmp_path / "results").exists()  # no results folder, no .partial, no cache
