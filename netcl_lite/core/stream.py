"""What a command queue has in flight, and the one place its errors surface.

Ops enqueue their kernels and return at once, so the queue runs ahead of
Python (a ``finish()`` after each launch would cost far more than the launch). Three duties follow, and :class:`Stream` carries them:

* **Buffers stay alive until their kernels have run.** PyOpenCL's
  ``Kernel.set_args`` keeps no reference to its buffers, and a buffer freed
  while a kernel that uses it is still queued crashes PoCL; every launch's
  arguments are held here until the kernel is known to have run: at the next
  :meth:`Stream.sync`, or earlier when the held operands pass a bound
  (:data:`PENDING_BYTES`) and the oldest of them are waited for.
* **Errors are detected on the device.** Each op call gets a sequence number
  (:meth:`Stream.begin`); a kernel that sees a non-finite result, or an id out
  of range, lowers a status word to that number with ``atomic_min``, so the
  first op at fault wins. Nothing is read back per op.
* **:meth:`Stream.sync`** waits for the queue, reads the status word and, if
  an op failed, raises an error that names it. It runs whenever a value is
  copied to the host (``Tensor.numpy()``, an op given NumPy arrays). ``backward``
  checks the forward's ops without draining the queue (:meth:`Stream.mark`,
  :meth:`Stream.check`): its own kernels are enqueued behind a read of the status
  word, and it raises before touching any ``.grad`` if that read shows a failure.

A non-finite result is diagnosed at that point, off the fast path: when one of
the op's own inputs was already non-finite, the error names that input (as
refusing a bad input up front would); otherwise the op overflowed float32 from
finite inputs. Not thread-safe: one host thread per queue.

A stretch of ops can also be **recorded** (:meth:`Stream.record`): every command they enqueue
through the stream (:meth:`Stream.launch`, :meth:`Stream.fill`, :meth:`Stream.copy`,
:meth:`Stream.write`; a command enqueued past the stream is not seen) is kept with its arguments, so that :class:`~netcl_lite.core.replay.Replay`
can enqueue the same commands again without the ops' Python: the stretch must therefore enqueue the
same commands with the same arguments every time (what changes from run to run lives in buffers
the replay is told to use as they are). A read-back or a prepared launch inside the stretch makes
it unrecordable (:attr:`Recording.refused`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyopencl as cl

from ..checks import nonnegative_int
from . import forking
from .kernels import get_kernel

INT_MAX = 2**31 - 1
#: op calls allowed between two syncs before one is forced (bounds what is kept alive)
MAX_PENDING = 4096
#: device bytes the queued ops may hold alive (their operands: temporaries that would otherwise be
#: recycled) before the next op waits for the oldest of them first (:meth:`Stream._bound`), as a GPU
#: driver's queue depth bounds how far the host runs ahead. Without it a loop that never reads a
#: value back kept ~0.5 GiB alive (100 training steps of a D = 128 block). Change it with
#: :func:`set_pending_limit`.
PENDING_BYTES = 64 << 20
#: floats one work-item of ``check_finite`` scans
CHECK_CHUNK = 2048
#: status word slots
NONFINITE, BAD_INPUT = 0, 1


class NonFiniteError(ValueError):
    """An op produced inf or NaN: from finite inputs (overflow) or from an input that already held one."""


class BadInputError(ValueError):
    """A value the device checked (token ids, class ids) was out of range."""


@dataclass
class OpRecord:
    """One op call since the last sync: its name, its operands (for diagnosing a failure), and
    the message to give when the device reports a bad input (e.g. ids out of range)."""

    name: str
    operands: dict = field(default_factory=dict)
    bad_input: str | Callable[[], str] = ""


class Recording:
    """The commands a stretch of ops enqueued on one stream (:meth:`Stream.record`), in order.

    ``commands``: ``("kernel", (filename, name, options), global size, local size, args, label)``,
    ``("fill", buffer, nbytes)``, ``("copy", destination, source, nbytes)`` or ``("write", buffer,
    host array)``. ``ops``: the stretch's op records (for naming a failure). ``refused``: why the
    stretch cannot be replayed, or None."""

    __slots__ = ("commands", "ops", "refused")

    def __init__(self):
        self.commands: list[tuple] = []
        self.ops: list[OpRecord] = []
        self.refused: str | None = None

    def refuse(self, why: str) -> None:
        if self.refused is None:
            self.refused = why


class _Window:
    """Ops queued one after another whose operands are released together: what their launches
    keep alive, the device memory their operands hold (each buffer counted once), and, once
    closed, the mark (:meth:`Stream.mark`) queued behind them."""

    __slots__ = ("first", "alive", "held", "bytes", "mark")

    def __init__(self, first: int):
        self.first, self.alive, self.held, self.bytes, self.mark = first, [], set(), 0, None


class Stream:
    """The in-flight state of one command queue (see the module docstring)."""

    def __init__(self, queue: cl.CommandQueue):
        self.queue = queue
        self._status_host = np.full(2, INT_MAX, np.int32)
        self.status = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                                hostbuf=self._status_host)
        self._ops: list[OpRecord] = []
        self._open = _Window(0)                  # the ops queued since the last window closed
        self._closed: deque[_Window] = deque()   # closed windows, oldest first, not yet released
        self._held_bytes = 0                     # what the pending ops' operands hold, all windows together
        #: the most bytes the pending ops' operands have held alive at once, a count that the stream
        #: only raises (a caller measuring a stretch of work sets it to 0 first). The bound is checked
        #: as an op opens, so with :data:`PENDING_BYTES` at N it stays within N plus one op's operands.
        self.peak_pending_bytes = 0
        self._kernels: dict[tuple, cl.Kernel] = {}   # this queue's context only: a shorter key than get_kernel's
        self.profile: list | None = None       # (kernel, event) per launch while a profiler listens
        self.recording: Recording | None = None   # set inside :meth:`record`

    # -- recording ------------------------------------------------------------------------------
    def begin(self, name: str, operands: dict | None = None, bad_input: str | Callable[[], str] = "") -> np.int32:
        """Open an op call and return its sequence number (what its kernels report failures with)."""
        if len(self._ops) >= MAX_PENDING:
            self.sync()
        elif (self._held_bytes > PENDING_BYTES or self._open.bytes * 2 > PENDING_BYTES) and self.recording is None:
            self._bound()
        return self._open_op(name, operands, bad_input)

    def begin_all(self, calls) -> list[np.int32]:
        """:meth:`begin` for several op calls that one launch serves, each named on its own
        (``calls``: (name, operands) pairs): their sequence numbers, all valid together, since the
        bound is kept once, before any of them is recorded."""
        calls = list(calls)
        if len(self._ops) + len(calls) > MAX_PENDING:
            self.sync()
        elif (self._held_bytes > PENDING_BYTES or self._open.bytes * 2 > PENDING_BYTES) and self.recording is None:
            self._bound()
        return [self._open_op(name, operands, "") for name, operands in calls]

    def _open_op(self, name, operands, bad_input) -> np.int32:
        if operands:
            window = self._open
            held = window.held
            for value in operands.values():      # each buffer counted once per window
                memory = getattr(value, "memory", None)
                if memory is not None and id(memory) not in held:
                    held.add(id(memory))
                    window.bytes += memory.nbytes
                    self._held_bytes += memory.nbytes
            if self._held_bytes > self.peak_pending_bytes:
                self.peak_pending_bytes = self._held_bytes
        self._ops.append(OpRecord(name, operands or {}, bad_input))
        return np.int32(len(self._ops) - 1)

    def _bound(self) -> None:
        """Keep what the queued ops hold within :data:`PENDING_BYTES` without draining the queue.

        The ops are held in windows: one closes (a read of the status word is queued behind it)
        once it holds half the bound, and while the windows together hold more than the bound,
        the oldest closed one is waited for, checked and released. The device keeps the newer
        windows' work queued meanwhile; a sync instead leaves it idle until the host queues the
        next kernel, and the next kernel then starts on sleeping workers."""
        if self._open.bytes and self._open.bytes * 2 >= PENDING_BYTES:
            self._open.mark = self.mark()
            self._closed.append(self._open)
            self._open = _Window(len(self._ops))
        while self._held_bytes > PENDING_BYTES and self._closed:
            window = self._closed.popleft()
            self.check(window.mark)              # raises (a sync) if an op up to here failed
            end = self._closed[0].first if self._closed else self._open.first
            for record in self._ops[window.first:end]:
                record.operands = {}             # done and checked: nothing left to diagnose
            self._held_bytes -= window.bytes
        if self._held_bytes > PENDING_BYTES:     # the open window alone holds it all (bound 0)
            self.sync()

    def launch(self, filename: str, name: str, global_size, local_size, *args, options: tuple = ()) -> None:
        """Enqueue one kernel of ``kernels/<filename>`` and keep its arguments alive until the next sync."""
        key = (filename, name, options)
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = self._kernels[key] = get_kernel(self.queue.context, filename, name, options)
        event = kernel(self.queue, global_size, local_size, *args)
        self._open.alive.append(args)
        op = self._ops[-1].name if self._ops else ""
        if self.profile is not None:
            self.profile.append((f"{filename}:{name}", op, event))
        if self.recording is not None:
            self.recording.commands.append(("kernel", key, global_size, local_size, args, op))

    def enqueue(self, kernel: cl.Kernel, label: str, global_size, local_size, keep) -> None:
        """Enqueue ``kernel`` with the arguments already set on it (a launch prepared once, e.g.
        :class:`netcl_lite.ops.decode.LayerLaunch`); ``keep`` holds what it reads until the next sync."""
        if self.recording is not None:
            self.recording.refuse(f"{label}: a prepared launch (its arguments are not known here)")
        self._record(label, cl.enqueue_nd_range_kernel(self.queue, kernel, global_size, local_size), keep)

    def fill(self, buffer: cl.Buffer, nbytes: int) -> None:
        """Enqueue zeros into the first ``nbytes`` of ``buffer``."""
        cl.enqueue_fill_buffer(self.queue, buffer, np.zeros(1, np.float32), 0, nbytes)
        if self.recording is not None:
            self.recording.commands.append(("fill", buffer, nbytes))

    def copy(self, destination: cl.Buffer, source: cl.Buffer, nbytes: int) -> None:
        """Enqueue a copy of ``nbytes`` from ``source`` to ``destination`` (both kept until the next sync)."""
        cl.enqueue_copy(self.queue, destination, source, byte_count=nbytes)
        self._open.alive.append((destination, source))
        if self.recording is not None:
            self.recording.commands.append(("copy", destination, source, nbytes))

    def write(self, buffer: cl.Buffer, host: np.ndarray) -> None:
        """Enqueue a copy of the host array ``host`` (which nobody may change afterwards) into ``buffer``."""
        cl.enqueue_copy(self.queue, buffer, host, is_blocking=False)
        self._open.alive.append((buffer, host))
        if self.recording is not None:
            self.recording.commands.append(("write", buffer, host))

    def record(self) -> _Recorder:
        """``with stream.record() as rec:`` collects the commands the ops inside enqueue into ``rec``
        (a :class:`Recording`). The queue is synced first, so the ops' sequence numbers count from 0;
        the pending bound is not applied inside (a release would have to wait for the device, and a
        recorded stretch holds its buffers anyway), and a read-back refuses the recording."""
        return _Recorder(self)

    def _record(self, label: str, event: cl.Event, keep) -> None:
        self._open.alive.append(keep)
        if self.profile is not None:
            self.profile.append((label, self._ops[-1].name if self._ops else "", event))

    def keep(self, *objects) -> None:
        """Hold ``objects`` (buffers a copy or kernel still reads) until the next sync."""
        self._open.alive.append(objects)

    def check_finite(self, buffer: cl.Buffer, n: int, seq) -> None:
        """Report op ``seq`` if any of the ``n`` floats in ``buffer`` is inf or NaN (one pass on the device)."""
        if n:
            items = -(-n // CHECK_CHUNK)
            self.launch("nonfinite.cl", "check_finite", (-(-items // 8) * 8,), (8,),
                        buffer, np.int32(n), np.int32(CHECK_CHUNK), self.status, np.int32(seq))

    # -- checking part of the queue without waiting for the rest ---------------------------------
    def mark(self) -> tuple[cl.Event, np.ndarray]:
        """Enqueue a read of the status word behind every kernel queued so far, without waiting.

        Pass the result to :meth:`check` later: it raises if an op enqueued before the mark
        failed, while what was enqueued after the mark keeps the device busy (a sync drains the
        queue, and the next kernel then starts on sleeping workers; benchmarks/results/tried.md,
        "`backward()` checks the forward's status behind the queue")."""
        host = np.empty(2, np.int32)
        return cl.enqueue_copy(self.queue, host, self.status, is_blocking=False), host

    def check(self, mark: tuple[cl.Event, np.ndarray]) -> None:
        """Wait for ``mark`` (from :meth:`mark`) only, and raise as :meth:`sync` does if an op
        enqueued before it reported a failure (that op, or an earlier one, is named)."""
        forking.check()                       # in a forked child the wait would never end
        event, host = mark
        event.wait()
        if (host != INT_MAX).any():
            self.sync()                       # the failure is still in the status word: raises

    def restart(self, ops) -> None:
        """Sync, then take ``ops`` (:class:`OpRecord` s) as the op calls since: a replay's kernels
        report failures under the sequence numbers their recording gave them, counted from 0."""
        self.sync()
        self._ops = list(ops)

    # -- the one sync point ---------------------------------------------------------------------
    def sync(self) -> None:
        """Wait for every queued kernel, release what they used, and raise if one reported a failure."""
        forking.check()                       # in a forked child the wait would never end
        if self.recording is not None:
            self.recording.refuse("a read-back inside the recorded stretch")
        cl.enqueue_copy(self.queue, self._status_host, self.status)    # blocking: in-order queue, so all done
        ops, self._ops = self._ops, []
        self._open, self._closed, self._held_bytes = _Window(0), deque(), 0
        nonfinite, bad = (int(s) for s in self._status_host)
        if nonfinite == INT_MAX and bad == INT_MAX:
            return
        self._status_host[:] = INT_MAX
        cl.enqueue_copy(self.queue, self.status, self._status_host)
        if bad <= nonfinite:                  # the earlier failure caused the later one
            what = ops[bad].bad_input
            raise BadInputError(f"{ops[bad].name}: {what() if callable(what) else what}")
        raise _diagnose(ops[nonfinite], nonfinite, len(ops))


class _Recorder:
    """The context manager :meth:`Stream.record` returns."""

    def __init__(self, stream: Stream):
        self.stream = stream

    def __enter__(self) -> Recording:
        if self.stream.recording is not None:
            raise RuntimeError("this stream is recording already; recordings do not nest")
        self.stream.sync()
        self.stream.recording = self.recording = Recording()
        return self.recording

    def __exit__(self, *exc):
        self.stream.recording = None
        self.recording.ops = list(self.stream._ops)
        if exc[0] is not None:
            self.recording.refuse(f"the recorded stretch raised {exc[0].__name__}")
        return False


def _diagnose(op: OpRecord, seq: int, n_ops: int) -> NonFiniteError:
    for name, value in op.operands.items():
        host = value.numpy() if hasattr(value, "numpy") and not isinstance(value, np.ndarray) else value
        host = np.asarray(host)
        if host.dtype.kind == "f" and not np.isfinite(host).all():
            where = np.argwhere(~np.isfinite(host))[:3].tolist()
            return NonFiniteError(
                f"{op.name}: {name} has non-finite values (first at indices {where}); pass finite numbers "
                "(use a boolean mask, not -inf, to exclude entries)"
            )
    return NonFiniteError(
        f"{op.name} produced inf or NaN from finite inputs (op {seq + 1} of {n_ops} since the last sync): "
        f"a result beyond float32's range (±{float(np.finfo(np.float32).max):.3g}); rescale its inputs"
    )


class profile_kernels:
    """Time every kernel launched on ``queue`` inside a ``with`` block (OpenCL profiling events).

    ``.table()`` lists (kernel, op, launches, total ms) by total time, largest first. The
    queue must have been created with profiling enabled (:class:`~netcl_lite.core.device.DeviceManager`
    does so). Waiting for each event's timestamps happens at the end, not per launch.
    """

    def __init__(self, queue: cl.CommandQueue):
        self.stream = stream_of(queue)

    def __enter__(self):
        self.stream.sync()
        self.stream.profile = []
        return self

    def __exit__(self, *exc):
        self.stream.sync()
        records, self.stream.profile = self.stream.profile, None
        totals: dict[tuple[str, str], list[float]] = {}
        for kernel, op, event in records:
            ms = (event.profile.end - event.profile.start) * 1e-6
            totals.setdefault((kernel, op), []).append(ms)
        self.rows = sorted(((k, op, len(v), sum(v)) for (k, op), v in totals.items()), key=lambda r: -r[3])
        return False

    def table(self) -> list[tuple[str, str, int, float]]:
        return self.rows


_streams: dict[int, Stream] = {}


def stream_of(queue: cl.CommandQueue) -> Stream:
    """The one :class:`Stream` of ``queue``; every op asks for it, so here a forked child's use of the
    parent's device is refused (:func:`netcl_lite.core.forking.check`: one read of a variable)."""
    if forking.forked_from is not None:
        forking.check()
    stream = _streams.get(queue.int_ptr)
    if stream is None or stream.queue is not queue:
        stream = _streams[queue.int_ptr] = Stream(queue)
    return stream


def set_pending_limit(nbytes: int) -> int:
    """Set how many bytes of device memory queued work may hold alive before an op waits for the
    oldest of it (default :data:`PENDING_BYTES`, 64 MiB); returns the previous limit. A larger limit
    lets the host run further ahead at the cost of memory; 0 makes every op wait for the one before."""
    global PENDING_BYTES
    nbytes = nonnegative_int("nbytes", nbytes, "bytes; NumPy integers too")
    previous, PENDING_BYTES = PENDING_BYTES, nbytes
    return previous


def sync(queue: cl.CommandQueue) -> None:
    """Wait for ``queue`` and raise any failure its kernels reported (see :meth:`Stream.sync`)."""
    stream_of(queue).sync()
