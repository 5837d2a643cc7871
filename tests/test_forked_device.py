"""A child forked after the device was made is refused at once, and clearly; the parent goes on.

PoCL runs commands on worker threads that a fork leaves in the parent, so a child that waited for
the parent's device (or for a new one: the driver is started once per process) would wait for ever.
Each case runs in a fresh Python process, which forks; the parent reports what the child did, or
that it was still running after 30 s.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from cli_model import environment

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX's")

#: the child's report goes through a pipe; the parent waits at most 30 s for the child to end
_PARENT_WAITS = textwrap.dedent("""
    def run_child(body):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            try:
                said = body()
            except BaseException as exc:
                said = f"raised {type(exc).__name__}: {exc}"
            os.write(write, said.encode()[:4000])
            os._exit(0)
        os.close(write)
        for _ in range(300):
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.1)
        else:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            return "HUNG"
        return os.read(read, 4000).decode()
""")


def _run(script: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", "import os, sys, time\n" + _PARENT_WAITS + textwrap.dedent(script)],
                          capture_output=True, text=True, timeout=300, env=environment())
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()


def test_a_tensor_op_in_a_child_forked_after_the_device_ran_is_refused_and_the_parent_goes_on():
    said = _run("""
        import numpy as np
        import netcl_lite as nl

        queue = nl.device().queue
        a = nl.Tensor.from_host(queue, np.arange(6.0))
        print(os.getpid())
        print(nl.ops.add(a, a).numpy().tolist())

        def timed(step):
            def body():
                start = time.monotonic()
                try:
                    step()
                except RuntimeError as exc:
                    return f"{time.monotonic() - start:.3f} {exc}"
                return "ran"
            return body

        print(run_child(timed(lambda: nl.ops.add(a, a))))                    # an op on the parent's tensor
        print(run_child(timed(lambda: a.numpy())))                           # a read of it
        print(run_child(timed(lambda: nl.Tensor.from_host(queue, [1.0]))))  # a new tensor on its queue
        print(run_child(timed(lambda: nl.device())))                         # the device itself
        print(nl.ops.add(a, nl.ops.add(a, a)).numpy().tolist())              # the parent, after the forks
    """)
    parent, before, *children, after = said
    assert before == str([2.0 * i for i in range(6)])
    assert after == str([3.0 * i for i in range(6)]), "the parent's device no longer works after a fork"
    for child in children:
        assert child not in ("HUNG", "ran"), f"a forked child used the parent's device: {child}"
        seconds, message = child.split(" ", 1)
        assert float(seconds) < 1.0, child
        assert f"made in process {parent}" in message and "forked child" in message, message
        assert '"spawn"' in message, message


def test_the_device_in_a_child_of_multiprocessing_fork_is_refused():
    said = _run("""
        import multiprocessing
        import numpy as np
        import netcl_lite as nl

        def use(queue_out):
            try:
                queue_out.put(str(nl.device().queue))
            except RuntimeError as exc:
                queue_out.put(f"refused: {exc}")

        nl.synchronize()
        out = multiprocessing.get_context("fork").SimpleQueue()
        child = multiprocessing.get_context("fork").Process(target=use, args=(out,))
        child.start()
        child.join(30)
        if child.is_alive():
            child.kill()
            print("HUNG")
        else:
            print(out.get())
    """)
    assert said[0].startswith("refused: the OpenCL device was made in process"), said


def test_a_child_forked_before_the_device_was_made_makes_its_own():
    said = _run("""
        import numpy as np
        import netcl_lite as nl

        def body():
            queue = nl.device().queue
            a = nl.Tensor.from_host(queue, np.arange(4.0))
            return str(nl.ops.add(a, a).numpy().tolist())

        print(run_child(body))
        print(body())                     # and the parent, which made none before the fork
    """)
    assert said == [str([0.0, 2.0, 4.0, 6.0])] * 2, said
