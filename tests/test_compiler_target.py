"""PoCL's compile target: a CPU that PoCL 3.0's LLVM cannot name (it answers 'generic', which it
then refuses to compile for) gets the CPU of PoCL's builtin library for this host, and
NETCL_LITE_POCL_CPU picks another only among the CPUs this host can run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyopencl as cl
import pytest

from netcl_lite.core import compiler_target as ct
from netcl_lite.core import kernels

AVX512_HOST = frozenset({"sse2", "ssse3", "cx16", "sse4_1", "avx", "popcnt", "f16c", "avx2", "abm", "fma", "bmi1",
                         "bmi2", "movbe", "avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"})
AVX2_HOST = AVX512_HOST - {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}


@pytest.mark.parametrize("hstr, parts", [
    ("pthread-x86_64-unknown-linux-gnu-generic", ("pthread", "x86_64-unknown-linux-gnu", "generic")),
    ("pthread-x86_64-unknown-linux-gnu-skylake-avx512", ("pthread", "x86_64-unknown-linux-gnu", "skylake-avx512")),
    ("pthread-x86_64-linux-gnu-znver3", ("pthread", "x86_64-linux-gnu", "znver3")),
    ("basic-x86_64-redhat-linux-icelake-server", ("basic", "x86_64-redhat-linux", "icelake-server")),
    ("pthread-aarch64-unknown-linux-gnu-neoverse-n1", ("pthread", "aarch64-unknown-linux-gnu", "neoverse-n1")),
    ("pthread-x86_64-apple-darwin-haswell", ("pthread", "x86_64-apple-darwin", "haswell")),
    ("pthread", None),
])
def test_pocl_build_string_splits_into_driver_triple_and_cpu(hstr, parts):
    assert ct.parse_hstr(hstr) == parts


def test_allowed_cpus_follow_the_instruction_sets():
    assert ct.allowed_cpus(AVX512_HOST)[-1] == "skylake-avx512"
    assert ct.allowed_cpus(AVX2_HOST)[-1] == "haswell"
    # PoCL would pick its AVX-512 library on avx512f alone; the compiler's skylake-avx512 also uses
    # BW/DQ/VL, so a host with only F (Xeon Phi) is given haswell
    assert ct.allowed_cpus(AVX2_HOST | {"avx512f"})[-1] == "haswell"
    # the variants without AVX crash PoCL 3.0's compiler on flash_attention.cl: never allowed
    assert ct.allowed_cpus(frozenset({"sse2", "ssse3", "sse4_1", "cx16"})) == []
    assert ct.allowed_cpus(AVX2_HOST)[0] == "sandybridge"
    assert ct.allowed_cpus(frozenset()) == []
    assert set(ct.allowed_cpus(AVX512_HOST)) <= set(ct.variant_cpus())


def test_choose_cpu_keeps_a_name_pocl_knows_and_replaces_generic():
    assert ct.choose_cpu("znver3", "", AVX512_HOST) is None
    assert ct.choose_cpu("generic", "", AVX512_HOST) == "skylake-avx512"
    assert ct.choose_cpu("generic", "", AVX2_HOST) == "haswell"
    assert ct.choose_cpu("znver3", "skylake-avx512", AVX512_HOST) == "skylake-avx512"
    assert ct.choose_cpu("haswell", "haswell", AVX2_HOST) is None      # already PoCL's


def test_choose_cpu_refuses_what_the_host_cannot_run():
    with pytest.raises(ValueError, match=r"NETCL_LITE_POCL_CPU='skylake-avx512'.*'haswell'"):
        ct.choose_cpu("generic", "skylake-avx512", AVX2_HOST)
    with pytest.raises(ValueError, match="NETCL_LITE_POCL_CPU='cortex-a53'"):
        ct.choose_cpu("generic", "cortex-a53", AVX512_HOST)
    with pytest.raises(ct.CompilerTargetError, match="NETCL_LITE_POCL_CPU"):
        ct.choose_cpu("generic", "", frozenset())


def test_the_device_compiles_for_a_cpu_it_can_build_for(device):
    own = ct.pocl_cpu_name(device.cl_device)
    if own is None:                                    # not PoCL's CPU driver: nothing is changed
        assert device.compiler_cpu is None and ct.build_option(device.cl_device) == ()
        return
    wanted = os.environ.get(ct.ENV_VAR, "").strip()
    if wanted:
        assert device.compiler_cpu == wanted
    elif own == "generic":
        assert device.compiler_cpu == ct.allowed_cpus(ct.host_flags())[-1]
    else:
        assert device.compiler_cpu == own
    # a target this library set is part of every build's options (PoCL's cache does not key on it)
    changed = device.compiler_cpu != own
    assert bool(ct.build_option(device.cl_device)) == changed
    program = kernels.get_program(device.context, "softmax.cl")
    built_with = program.get_build_info(device.cl_device, cl.program_build_info.OPTIONS)
    assert all(o in built_with for o in ct.build_option(device.cl_device))


_CHILD = """
import json, numpy as np
import netcl_lite as nl
from netcl_lite.core import kernels
from netcl_lite import reference
dev = nl.device("cpu")
rng = np.random.default_rng(0)
a, b = rng.standard_normal((37, 70), np.float32), rng.standard_normal((70, 29), np.float32)
err = float(np.abs(nl.ops.matmul(a, b) - reference.matmul(a, b)).max())
print(json.dumps({"cpu": dev.compiler_cpu, "lanes": kernels.vector_lanes(dev.cl_device), "err": err}))
"""


def _run_child(value: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, **{ct.ENV_VAR: value})
    return subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, timeout=300)


def _pocl_x86(device) -> bool:
    return ct.pocl_cpu_name(device.cl_device) is not None and "x86_64" in device.cl_device.version \
        and sys.platform.startswith("linux")


def test_env_var_picks_an_older_target_and_the_kernels_still_agree(device):
    if not _pocl_x86(device):
        pytest.skip("NETCL_LITE_POCL_CPU applies to PoCL's x86-64 CPU driver only")
    allowed = ct.allowed_cpus(ct.host_flags())
    assert "haswell" in allowed, f"an x86-64 host with AVX2 is assumed here; allowed: {allowed}"
    proc = _run_child("haswell")
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["cpu"] == "haswell" and got["lanes"] == 8
    # 70-term float32 sums of N(0,1) products: ~sqrt(70)·2⁻²⁴·|terms| ≪ 1e-4
    assert got["err"] < 1e-4


@pytest.mark.parametrize("cpu", ["athlon64", "core2", "penryn"])
def test_choose_cpu_refuses_the_targets_whose_builds_crash(cpu):
    with pytest.raises(ValueError, match=rf"NETCL_LITE_POCL_CPU='{cpu}' is refused: .*without AVX"):
        ct.choose_cpu("znver1", cpu, AVX2_HOST)
    with pytest.raises(ct.CompilerTargetError, match="lacks AVX"):
        ct.choose_cpu("generic", "", frozenset({"sse2", "ssse3", "sse4_1", "cx16"}))


@pytest.mark.slow
def test_the_oldest_allowed_target_builds_and_passes_every_kernel_family(device, tmp_path):
    """The probe behind the allowed list: every ops family, forward against float64 and backward,
    compiled for the oldest CPU allowed here (the riskiest target)."""
    if not _pocl_x86(device):
        pytest.skip("NETCL_LITE_POCL_CPU applies to PoCL's x86-64 CPU driver only")
    oldest = ct.allowed_cpus(ct.host_flags())[0]
    env = dict(os.environ, **{ct.ENV_VAR: oldest})
    program = Path(__file__).resolve().parent / "oclgrind" / "ops_families.py"
    proc = subprocess.run([sys.executable, str(program), "native", str(tmp_path / "out.npz")], env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{oldest}: rc {proc.returncode}\n{proc.stdout[-2000:]}{proc.stderr[-3000:]}"
    assert "every forward within its reference's tolerance" in proc.stdout


def test_env_var_naming_a_cpu_the_host_cannot_run_is_refused(device):
    if not _pocl_x86(device):
        pytest.skip("NETCL_LITE_POCL_CPU applies to PoCL's x86-64 CPU driver only")
    proc = _run_child("cortex-a53")
    assert proc.returncode != 0
    assert "ValueError: NETCL_LITE_POCL_CPU='cortex-a53' is not a CPU PoCL can compile for" in proc.stderr


def test_a_context_made_without_the_device_manager_builds_the_kernels_too():
    """A reader's own PyOpenCL context on the same device: the loader retargets PoCL first."""
    proc = subprocess.run([sys.executable, "-c", """
import numpy as np, pyopencl as cl
from netcl_lite.core import kernels
dev = [d for p in cl.get_platforms() for d in p.get_devices() if d.type & cl.device_type.CPU][0]
ctx = cl.Context([dev])
print(kernels.get_kernel(ctx, "softmax.cl", "masked_softmax_rows").function_name)
"""], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().endswith("masked_softmax_rows")
