"""The kernels stay inside OpenCL C 1.2 with no fp64 and no 64-bit atomics, as Apple's OpenCL requires.

A scan of ``kernels/*.cl`` and ``kernels/*.h`` (comments and strings left out) for double precision,
the 64-bit atomics extensions, atomic functions applied to 64-bit integers, and what only OpenCL C
2.0 or later has (C11 atomics, the generic address space, work-group and sub-group collectives,
pipes, device-side enqueue, program-scope global variables). The Oclgrind layer
(tests/test_oclgrind.py) builds the same kernels with ``-cl-std=CL1.2``; this scan also names what
a compiler might accept anyway as an extension.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "kernels").glob("*.cl")) + sorted((ROOT / "kernels").glob("*.h"))

_COMMENT_OR_STRING = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', re.S)

#: (what is wrong, a pattern that finds it)
FORBIDDEN = [
    ("double precision (fp64)", r"\bdouble(?:2|3|4|8|16)?\b|\bcl_khr_fp64\b|\bcl_APPLE_fp64_basic_ops\b"),
    ("a 64-bit atomics extension", r"\bcl_khr_int64_(?:base|extended)_atomics\b"),
    ("an atom_* function (the atomics extensions' names, 64-bit included)", r"\batom_\w+\s*\("),
    ("C11 atomics (OpenCL C 2.0)",
     r"\batomic_(?:int|uint|long|ulong|float|double|flag|intptr_t|uintptr_t|size_t|ptrdiff_t)\b"
     r"|\batomic_(?:load|store|exchange|compare_exchange_\w+|fetch_\w+|init|flag_\w+|work_item_fence)\w*\s*\("
     r"|\bmemory_(?:order|scope)\w*"),
    ("the generic address space (OpenCL C 2.0)", r"\b__generic\b|\bgeneric\b|\bto_(?:global|local|private)\s*\(|\bget_fence\s*\("),
    ("work-group collectives (OpenCL C 2.0)", r"\bwork_group_(?:reduce|scan|broadcast|all|any)\w*\s*\("),
    ("sub-groups (OpenCL C 2.0 and the sub-group extensions)", r"\b(?:get_)?sub_group\w*\s*\(|\bget_(?:max_sub_group_size|num_sub_groups)\b"),
    ("pipes (OpenCL C 2.0)", r"\bpipe\b|\b(?:read|write|reserve_read|reserve_write|commit_read|commit_write)_pipe\b"),
    ("device-side enqueue (OpenCL C 2.0)",
     r"\b(?:enqueue_kernel|enqueue_marker|get_default_queue|ndrange_[123]D|ndrange_t|clk_event_t|queue_t"
     r"|is_valid_event|retain_event|release_event|create_user_event|capture_event_profiling_info)\b"),
    ("work-item functions added in OpenCL C 2.0", r"\bget_(?:enqueued_local_size|global_linear_id|local_linear_id)\s*\("),
    ("a program-scope global variable (OpenCL C 2.0)", r"^(?:__global|global)\s+[^(;{]*?\w+\s*(?:=[^;]*)?;"),
]
#: a pointer to a 64-bit type in global or local memory: atomics on what it points to need the 64-bit extensions
_WIDE_POINTER = re.compile(r"\b(?:__global|global|__local|local)\s+(?:volatile\s+)?(?:const\s+)?"
                           r"(?:long|ulong|size_t|ptrdiff_t|intptr_t|uintptr_t|double)\s*\*\s*(?:(?:restrict|const)\s+)*(\w+)")
_ATOMIC_CALL = re.compile(r"\bato(?:m|mic)_\w+\s*\(\s*([^,)]*)")


def _code(text: str) -> str:
    """``text`` with comments and string literals blanked (line numbers kept)."""
    return _COMMENT_OR_STRING.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def problems(text: str, name: str = "source") -> list[str]:
    """Every place in the OpenCL C ``text`` that leaves OpenCL C 1.2 without fp64 or 64-bit atomics."""
    code = _code(text)
    line = lambda pos: code.count("\n", 0, pos) + 1   # noqa: E731
    found = [f"{name}:{line(m.start())}: {what}: {m.group(0).strip()!r}"
             for what, pattern in FORBIDDEN for m in re.finditer(pattern, code, re.M)]
    wide = set(_WIDE_POINTER.findall(code))
    for m in _ATOMIC_CALL.finditer(code):
        names = set(re.findall(r"\b[A-Za-z_]\w*\b", m.group(1)))
        if names & wide:
            found.append(f"{name}:{line(m.start())}: an atomic on a 64-bit integer: {m.group(0).strip()!r}")
    return found


def test_the_scan_finds_each_thing_it_looks_for():
    """Each pattern finds its feature; OpenCL 1.2 code (32-bit atomics, long arithmetic) passes."""
    clean = """
    // double in a comment, atom_add("in a string") and work_group_reduce_add( are not code
    __kernel void k(__global uint *table, __global float *x, const long n, __global long *offsets) {
        const long i = (long)get_global_id(0);
        if (atomic_cmpxchg(&table[i], 0u, 1u) == 0u) atomic_inc(&table[n]);
        x[i] = (float)offsets[i] * 0.5f;
    }
    __constant float HALF = 0.5f;
    """
    assert problems(clean) == []
    bad = {
        "double precision": "float f(double x) { return (float)x; }",
        "fp64": "#pragma OPENCL EXTENSION cl_khr_fp64 : enable",
        "64-bit atomics extension": "#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable",
        "atom_": "void f(__global int *c) { atom_inc(c); }",
        "C11 atomics": "void f(__global atomic_int *c) { atomic_fetch_add(c, 1); }",
        "generic": "void f(__generic float *p) { }",
        "collectives": "void f(float x) { float s = work_group_reduce_add(x); }",
        "sub-groups": "void f() { uint s = get_sub_group_size(); }",
        "pipes": "__kernel void f(pipe int p) { }",
        "enqueue": "void f() { queue_t q = get_default_queue(); }",
        "2.0 work-item functions": "void f() { size_t g = get_global_linear_id(); }",
        "program-scope global": "__global int counter = 0;",
        "64-bit integer atomic": "__kernel void f(__global ulong *total) { atomic_add(&total[0], 1); }",
    }
    for what, code in bad.items():
        assert problems(code), f"the scan missed {what}: {code}"


def test_kernels_stay_within_opencl12_without_fp64_or_64bit_atomics():
    assert len(SOURCES) >= 10, f"only {len(SOURCES)} kernel sources found under kernels/"
    found = [p for source in SOURCES
             for p in problems(source.read_text(encoding="utf-8"), source.relative_to(ROOT).as_posix())]
    assert not found, "kernels outside OpenCL C 1.2 (no fp64, no 64-bit atomics):\n" + "\n".join(found)
