"""Device selection, tensors and the kernel loader."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pyopencl as cl
import pytest

import netcl_lite as nl
from netcl_lite.core import device as device_mod
from netcl_lite.core import kernels
from netcl_lite.core.device import DeviceManager, NoDeviceError, manager
from netcl_lite.core.stream import NonFiniteError
from netcl_lite.core.tensor import Tensor


def test_default_device_is_a_cpu_or_gpu_with_context_and_queue(device):
    assert device.kind in ("cpu", "gpu")
    assert isinstance(device.context, cl.Context)
    assert isinstance(device.queue, cl.CommandQueue)
    assert device.name
    assert manager.default() is device  # created once, then reused


def test_cpu_request_gets_an_opencl_cpu_device_once():
    """Asking for "cpu" yields a device whose OpenCL type is CPU, its queue on that device, reused."""
    dev = manager.default("cpu")
    assert dev.kind == "cpu"
    assert dev.context.devices[0].type & cl.device_type.CPU
    assert dev.queue.device == dev.context.devices[0]
    assert manager.default("cpu") is dev


@pytest.mark.parametrize("kind", ["tpu", "", "CPU"])
def test_unknown_kind_is_rejected(kind):
    with pytest.raises(ValueError, match="kind must be one of"):
        manager.default(kind)


def test_kind_must_be_a_string():
    with pytest.raises(TypeError, match="kind"):
        manager.default(1)


def test_environment_variable_sets_what_auto_means(monkeypatch):
    monkeypatch.setenv("NETCL_LITE_DEVICE", "cpu")
    assert DeviceManager().default().kind == "cpu"
    monkeypatch.setenv("NETCL_LITE_DEVICE", "quantum")
    with pytest.raises(ValueError, match="NETCL_LITE_DEVICE"):
        DeviceManager().default()


def test_missing_gpu_says_what_is_missing(monkeypatch):
    cpu_only = [d for d in device_mod._all_devices() if d.type & cl.device_type.CPU]
    monkeypatch.setattr(device_mod, "_all_devices", lambda: cpu_only)
    with pytest.raises(NoDeviceError, match="no OpenCL GPU device"):
        DeviceManager().default("gpu")


def test_no_platform_says_how_to_install_pocl(monkeypatch):
    def no_platforms():
        raise cl.LogicError("clGetPlatformIDs failed: PLATFORM_NOT_FOUND_KHR")

    monkeypatch.setattr(cl, "get_platforms", no_platforms)
    with pytest.raises(NoDeviceError, match=r"pip install 'pyopencl\[pocl\]'"):
        DeviceManager().default("cpu")


PINNING_PROBE = """
import json, os
{before}
import numpy as np
import netcl_lite as nl
dev = nl.device("cpu")
a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64) / 4096
ok = bool(np.allclose(nl.ops.matmul(a, a), a.astype(np.float64) @ a, rtol=1e-5, atol=1e-5))
allowed, batch, main = [], [], []
for tid in os.listdir("/proc/self/task"):
    with open(f"/proc/self/task/{{tid}}/status") as f:
        allowed += [line.split(":", 1)[1].strip() for line in f if line.startswith("Cpus_allowed_list")]
    batch.append(os.sched_getscheduler(int(tid)) == os.SCHED_BATCH)
    main.append(int(tid) == os.getpid())
print(json.dumps({{"var": os.environ.get("POCL_AFFINITY"), "ok": ok, "allowed": allowed, "batch": batch,
                  "main": main, "units": dev.cl_device.max_compute_units}}))
"""


def probe_pinning(before: str = "", **env) -> dict:
    """Start a fresh process (PoCL reads POCL_AFFINITY once, when it starts its threads), run a
    product on the CPU device and report each thread's allowed CPUs and whether it is SCHED_BATCH."""
    environ = {k: v for k, v in os.environ.items() if k != "POCL_AFFINITY"} | env
    out = subprocess.run([sys.executable, "-c", PINNING_PROBE.format(before=before)], check=False, env=environ,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads thread affinities from /proc")
@pytest.mark.slow
def test_pocl_workers_are_pinned_and_batched_only_where_every_cpu_is_allowed():
    cpus = os.cpu_count() or 1
    everywhere = os.sched_getaffinity(0) == set(range(cpus))
    free = probe_pinning()
    assert free["ok"]
    if everywhere:
        assert free["var"] == "1"
        assert {str(i) for i in range(free["units"])} <= set(free["allowed"]), free   # worker i on CPU i
        # each pinned worker yields to the host thread on wake-up; the host thread keeps its policy
        assert not any(b for b, m in zip(free["batch"], free["main"]) if m), free
        if cpus > 1:                     # on one CPU every thread reads as pinned
            pinned = [a.isdigit() and not m for a, m in zip(free["allowed"], free["main"])]
            assert sum(pinned) >= free["units"] and free["batch"] == pinned, free
    else:
        assert free["var"] is None and not any(free["batch"]), free
    # the caller's choice stands: no worker is pinned
    chosen = probe_pinning(POCL_AFFINITY="0")
    assert chosen["ok"] and chosen["var"] == "0" and not any(chosen["batch"]), chosen
    if len(os.sched_getaffinity(0)) > 1:                  # one allowed CPU would read as pinned
        assert not any(a.isdigit() for a in chosen["allowed"]), chosen
        # a process confined to one CPU must not pin workers to CPUs it may not use
        confined = probe_pinning(before=f"os.sched_setaffinity(0, {{{max(os.sched_getaffinity(0))}}})")
        assert confined["ok"] and confined["var"] is None, confined


@pytest.mark.parametrize("name", device_mod.WORKER_COUNT_VARS)
@pytest.mark.parametrize("value,pinned", [("4", True), ("0", True), ("", True), (" 2 ", True), ("5", False),
                                          ("64", False), ("-1", False), ("+3", False), ("two", False),
                                          ("3x", False), ("\u0663", False)])
def test_workers_are_pinned_only_when_every_count_set_fits_the_cpus(monkeypatch, name, value, pinned):
    """On a machine of four CPUs, all allowed: a worker-count variable above four, or one PoCL's
    ``atoi`` may read otherwise than Python, leaves POCL_AFFINITY unset (PoCL would pin a worker to
    a CPU that does not exist and abort); counts that fit keep the pinning."""
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("pinning is asked for only where the process's CPUs can be read")
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(device_mod, "_pinned_by_us", False)
    for other in device_mod.WORKER_COUNT_VARS:
        monkeypatch.delenv(other, raising=False)
    monkeypatch.delenv(device_mod.AFFINITY_VAR, raising=False)
    monkeypatch.setenv(name, value)
    assert device_mod.pin_pocl_workers() is pinned
    assert os.environ.get(device_mod.AFFINITY_VAR) == ("1" if pinned else None)
    monkeypatch.delenv(device_mod.AFFINITY_VAR, raising=False)
    monkeypatch.setenv("POCL_PTHREAD_MIN_THREADS", "9")          # any one count that does not fit is enough
    assert device_mod.pin_pocl_workers() is False


def test_tensor_round_trip_and_float32(queue):
    host = np.arange(12, dtype=np.float64).reshape(3, 4)
    t = Tensor.from_host(queue, host)
    assert t.shape == (3, 4) and t.dtype == np.float32
    np.testing.assert_array_equal(t.numpy(), host.astype(np.float32))
    assert Tensor.from_host(queue, np.array([1, 2], np.int64), dtype=np.int32).numpy().dtype == np.int32
    assert Tensor.zeros(queue, (2, 0)).numpy().shape == (2, 0)
    np.testing.assert_array_equal(Tensor.zeros(queue, 5).numpy(), np.zeros(5, np.float32))
    assert t.reshape(4, 3).numpy().shape == (4, 3)


def test_an_upload_to_a_host_memory_device_is_its_own_buffer_and_queues_nothing(queue, monkeypatch):
    """On a device that works in host memory, from_host makes the buffer over a private copy
    (USE_HOST_PTR) instead of queueing a write, which PoCL's CPU driver makes wait for the whole
    queue: the values arrive, the caller's array may change at once, nothing is enqueued."""
    from netcl_lite.core.tensor import shares_host_memory
    if not shares_host_memory(queue):
        pytest.skip("a GPU's buffers are the driver's: the upload is a queued copy")
    import pyopencl as cl
    queued = []
    monkeypatch.setattr(cl, "enqueue_copy", lambda *a, **k: queued.append(a))
    source = np.arange(10, dtype=np.int64)
    t = Tensor.from_host(queue, source, dtype=np.int32)
    source[:] = -1
    assert not queued and t.memory.host is not None and t.memory.host.ctypes.data % 128 == 0
    monkeypatch.undo()
    np.testing.assert_array_equal(t.numpy(), np.arange(10, dtype=np.int32))
    x = Tensor.from_host(queue, np.array([1.0, 2.0]))
    np.testing.assert_array_equal(nl.ops.scale(x, 3.0).numpy(), np.array([3.0, 6.0], np.float32))   # a kernel reads it


def _mapping_flags(address: int) -> set[str]:
    """The VmFlags of the mapping of this process that holds ``address`` (Linux)."""
    with open("/proc/self/smaps") as f:
        blocks = re.split(r"\n(?=[0-9a-f]+-[0-9a-f]+ )", f.read())
    for block in blocks:
        lo, hi = (int(x, 16) for x in block.split(None, 1)[0].split("-"))
        if lo <= address < hi:
            return set(re.search(r"VmFlags:(.*)", block).group(1).split())
    raise AssertionError(f"no mapping holds {address:#x}")


needs_proc = pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="reads Linux's /proc/self/smaps")


@needs_proc
def test_huge_page_blocks_are_advised_private_staggered_and_writable():
    from netcl_lite.core.tensor import huge_page_block
    blocks = [huge_page_block(n) for n in (4 << 20, 4 << 20, (6 << 20) + 12)]
    offsets = []
    for block, n in zip(blocks, (4 << 20, 4 << 20, (6 << 20) + 12)):
        assert block.dtype == np.uint8 and block.shape == (n,) and block.flags.writeable
        address = block.ctypes.data
        offset = address % (2 << 20)             # past the 2 MiB boundary below it
        assert offset % 4096 == 128 and offset < 128 + 32 * 4096, hex(address)
        offsets.append(offset)
        flags = _mapping_flags(address)
        assert "hg" in flags, flags              # MADV_HUGEPAGE
        assert "sh" not in flags, flags          # private: THP leaves shared (shmem) memory alone
        block[:] = 7
        assert int(block[-1]) == 7 and int(block.sum()) == 7 * n
    assert len(set(offsets)) == 3                 # successive blocks start in different L2 sets
    for bad in (0, -1, 2.5, True, "4"):
        with pytest.raises(ValueError, match="nbytes must be a positive int"):
            huge_page_block(bad)


@needs_proc
def test_large_tensors_live_in_huge_page_blocks_on_a_host_memory_device(queue):
    from netcl_lite.core.tensor import HUGE_PAGE_MIN_BYTES, shares_host_memory
    big = Tensor.empty(queue, (HUGE_PAGE_MIN_BYTES // 4,))
    small = Tensor.empty(queue, (HUGE_PAGE_MIN_BYTES // 4 - 1,))
    if not shares_host_memory(queue):            # a GPU keeps the driver's own allocation
        assert big.buffer.hostbuf is None
        return
    assert small.buffer.hostbuf is None
    assert "hg" in _mapping_flags(big.buffer.hostbuf.ctypes.data)
    # A product whose A, B and C are all such blocks, through the pool and back, is right.
    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal((1024, 1024)).astype(np.float32) for _ in range(2))
    ref = a.astype(np.float64) @ b.astype(np.float64)
    for _ in range(2):                           # the second round gets pooled buffers
        ta, tb = Tensor.from_host(queue, a), Tensor.from_host(queue, b)
        assert ta.buffer.hostbuf is not None and tb.buffer.hostbuf is not None
        c = nl.ops.matmul(ta, tb)
        assert c.buffer.hostbuf is not None
        # float32 sums of K = 1024 products: |error| <= K u (|A| @ |B|), u = 2^-24 (worst case)
        bound = 1024 * 2.0**-24 * (np.abs(a).astype(np.float64) @ np.abs(b))
        assert np.all(np.abs(c.numpy() - ref) <= bound)
        del ta, tb, c


def test_kernels_read_and_write_subnormal_floats_as_zero(queue):
    """Every kernel is built with -cl-denorms-are-zero: on a CPU a multiply-add meeting a
    subnormal takes a microcode assist (benchmarks/results/tried.md, "Subnormal floats"), so
    they are flushed. OpenCL lets a device flush or not; PoCL's CPU driver does when asked."""
    tiny = np.finfo(np.float32).tiny                      # 2^-126, the smallest normal float32
    x = np.array([tiny / 4, -tiny / 8, tiny, 1.0], np.float32)
    assert x[0] != 0 and x[0] < tiny                      # a subnormal on the host
    got = nl.ops.mul(x, np.ones(4, np.float32))
    a = np.full((8, 8), tiny / 2, np.float32)             # each product's inputs subnormal
    prod = nl.ops.matmul(a, np.ones((8, 8), np.float32))  # unflushed: 4 * tiny, a normal float
    if queue.device.type & cl.device_type.CPU:
        np.testing.assert_array_equal(got, [0.0, 0.0, tiny, 1.0])
        np.testing.assert_array_equal(prod, np.zeros((8, 8), np.float32))
        with pytest.raises(NonFiniteError, match="div produced inf or NaN"):    # 1e-5 / 0, reported
            nl.ops.div(np.array([1e-5], np.float32), x[:1])
    else:
        assert got[2] == tiny and got[3] == 1.0 and set(np.unique(prod)) <= {0.0, np.float32(4 * tiny)}


@pytest.mark.parametrize("bad", [np.array([1 + 2j]), np.array(["a"]), np.array([object()])])
def test_tensor_refuses_non_real_data(queue, bad):
    with pytest.raises(TypeError, match="real numbers"):
        Tensor.from_host(queue, bad)


def test_tensor_argument_errors(queue):
    with pytest.raises(TypeError, match="queue must be"):
        Tensor.from_host("not a queue", [1.0])
    with pytest.raises(TypeError, match="dtype must be float32 or int32"):
        Tensor.from_host(queue, [1.0], dtype=np.float64)
    with pytest.raises(ValueError, match="non-negative ints"):
        Tensor.empty(queue, (2, -1))
    with pytest.raises(TypeError, match="integer input"):
        Tensor.from_host(queue, [1.5], dtype=np.int32)
    with pytest.raises(ValueError, match="cannot reshape"):
        Tensor.empty(queue, (2, 3)).reshape(4, 2)


def test_every_kernel_file_builds_and_each_kernel_is_reused(device):
    sources = sorted(p.name for p in kernels.kernel_dir().glob("*.cl"))
    assert sources, "no kernel sources found"
    for name in sources:
        for kname in kernels.kernel_names(name):
            first = kernels.get_kernel(device.context, name, kname)
            assert kernels.get_kernel(device.context, name, kname) is first
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # RepeatedKernelRetrieval would be an error here
        kernels.get_kernel(device.context, "softmax.cl", "masked_softmax_rows")


def test_vector_lanes_are_what_the_kernel_compiler_targets(device, queue):
    """16 lanes only where the compiler itself targets AVX-512: a kernel run on the device reports
    its own ``__AVX512F__`` (PoCL on AMD Zen 4 compiles for AVX2, znver3, while the device reports
    a preferred float width of 16)."""
    program = cl.Program(device.context, """
        __kernel void isa(__global int *out) {
        #if defined(__AVX512F__)
            out[0] = 16;
        #else
            out[0] = 8;
        #endif
        }""").build()
    out = np.zeros(1, np.int32)
    buf = cl.Buffer(device.context, cl.mem_flags.WRITE_ONLY, 4)
    program.isa(queue, (1,), None, buf)
    cl.enqueue_copy(queue, out, buf)
    cpu = bool(device.cl_device.type & cl.device_type.CPU)
    assert kernels.vector_lanes(device.cl_device) == (int(out[0]) if cpu else 8)
    assert kernels.compiles_avx512(device.cl_device) == (out[0] == 16)


def test_no_kernel_hands_a_512_bit_vector_to_a_builtin():
    """vload16/vstore16 are calls into PoCL's builtin library; where the compiler targets AVX2 but
    PoCL links its AVX-512 library (AMD Zen 4), a 16-float vector crosses such a call under two
    ABIs (it crashed rope's backward). The kernels read and write 16 floats through pointers."""
    for path in sorted(kernels.kernel_dir().glob("*.cl")) + [kernels.kernel_dir() / "common.h"]:
        code = re.sub(r"//[^\n]*", "", path.read_text())
        assert not re.search(r"\bv(load|store)(a_half)?16\b", code), f"{path.name} calls a 16-wide vload/vstore"


def test_unknown_kernel_name_lists_the_real_ones(device):
    with pytest.raises(kernels.KernelBuildError, match="masked_softmax_rows"):
        kernels.get_kernel(device.context, "softmax.cl", "no_such_kernel")


def test_compile_error_carries_the_build_log(device, tmp_path, monkeypatch):
    (tmp_path / "broken.cl").write_text("__kernel void broken(__global float *x) { x[0] = undeclared_name; }\n")
    monkeypatch.setattr(kernels, "kernel_dir", lambda: tmp_path)
    with pytest.raises(kernels.KernelBuildError, match="undeclared_name"):
        kernels.get_program(device.context, "broken.cl")


def test_a_kernel_is_built_from_the_same_text_and_options_wherever_it_is_installed(device, tmp_path, monkeypatch):
    """The build options hold no path (ours or PyOpenCL's include folder) and the includes are written
    into the source, so two installs of the same sources hand the driver the same program: PoCL's
    cache of built programs, keyed by source and options, serves a reader's fresh install."""
    seen = []
    real_build = kernels._build

    def record(context, source, options):
        seen.append((source, list(options)))
        return real_build(context, source, options)

    monkeypatch.setattr(kernels, "_build", record)
    for folder in ("one", "two"):
        copy = tmp_path / folder / "kernels"
        shutil.copytree(kernels.kernel_dir(), copy)
        monkeypatch.setattr(kernels, "kernel_dir", lambda copy=copy: copy)
        monkeypatch.setattr(kernels, "_programs", {})
        program = kernels.get_program(device.context, "softmax.cl")
    (first, first_options), (second, second_options) = seen
    assert first == second and first_options == second_options
    assert "#include" not in first and "common.h" in first
    assert not any(str(tmp_path) in o or o == "-I" for o in first_options), first_options
    if device.cl_device.platform.name == kernels._ICD_CACHED:       # nor does PoCL get PyOpenCL's include
        built_with = program.get_build_info(device.cl_device, cl.program_build_info.OPTIONS).split()
        assert "-I" not in built_with and not any("pyopencl" in o for o in built_with), built_with


def test_an_included_file_is_written_in_and_errors_name_its_file_and_line(device, tmp_path, monkeypatch):
    (tmp_path / "helper.h").write_text("// helper\nfloat twice(float x) { return 2 * x; }\n"
                                       "float broken(float x) { return x + undeclared_in_helper; }\n")
    (tmp_path / "broken.cl").write_text('// a kernel\n#include "helper.h"\n'
                                        "__kernel void k(__global float *x) { x[0] = twice(x[0]) + undeclared_in_kernel; }\n")
    monkeypatch.setattr(kernels, "kernel_dir", lambda: tmp_path)
    monkeypatch.setattr(kernels, "_programs", {})
    assert "float twice" in kernels.kernel_source("broken.cl")
    with pytest.raises(kernels.KernelBuildError) as err:
        kernels.get_program(device.context, "broken.cl")
    assert "helper.h:3:" in str(err.value) and "broken.cl:3:" in str(err.value), str(err.value)[-2000:]
    (tmp_path / "loop.cl").write_text('#include "loop.h"\n')
    (tmp_path / "loop.h").write_text('#include "loop.h"\n')
    with pytest.raises(kernels.KernelBuildError, match="includes itself"):
        kernels.kernel_source("loop.cl")
    (tmp_path / "lost.cl").write_text('#include "missing.h"\n')
    with pytest.raises(FileNotFoundError, match="'missing.h'.*included by lost.cl"):
        kernels.kernel_source("lost.cl")
    for bad in ("", None, 3):
        with pytest.raises(TypeError, match="filename must be a non-empty str"):
            kernels.kernel_source(bad)


def test_kernel_registry_matches_the_sources():
    """kernel_names() reads the __kernel declarations; each file's header lists the same names."""
    for path in sorted(kernels.kernel_dir().glob("*.cl")):
        names = kernels.kernel_names(path.name)
        assert names, f"{path.name} declares no kernel"
        lines = path.read_text().splitlines()
        header = "\n".join(line for line in lines[: next(i for i, l in enumerate(lines) if not l.startswith("//"))])
        for name in names:
            assert re.search(rf"\b{name}\b", header), f"{path.name}: kernel {name} missing from the header list"
