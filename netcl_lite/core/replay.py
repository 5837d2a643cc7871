"""Run a recorded stretch of ops again without their Python: :class:`Replay`.

A training step's forward, backward and clipping enqueue the same ~180 commands every time, with the
same shapes and, once its temporaries are placed, the same buffers; only the batch changes, and it
lives in buffers of its own. Run eagerly, each op also builds a tape node, checks shapes, allocates
its outputs and sets its kernel's arguments: host CPU that, on a machine whose PoCL workers want
every core, the workers lose. A :class:`Replay` takes the commands one eager run enqueued
(:meth:`Stream.record <netcl_lite.core.stream.Stream.record>`) and enqueues them again from a list:
each kernel launch has its own kernel object with its arguments set once, so a run is one
``clEnqueueNDRangeKernel`` per launch.

Buffers: the caller names the tensors the replay shares with the rest of the program
(``bound``: weights, optimizer moments, inputs), which it uses as they are. Every other buffer the
commands touch (temporaries, outputs, work buffers, constant tables) becomes the replay's own at
its first run, so no later allocation can hand one of them to someone else, and the memory the
replay holds stays the same from run to run. By then the recorded run has finished and released its
temporaries to the pool: a buffer found there is taken out of it as it is
(:meth:`DeviceMemory.claim_pooled <netcl_lite.core.tensor.DeviceMemory.claim_pooled>`), and one
still in use elsewhere (an output the caller holds, an op's kept table, a temporary some later op
took from the pool) gets a private copy. Both hold what the recorded commands left in them or
what came after (the commands keep every buffer they name alive): a constant table keeps its
values, and a temporary is written before it is read, as it was in the recorded run. The kernels
are the recorded run's, with the same arguments, in the same order: a replay computes what the
eager run would, bit for bit.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from .kernels import new_kernel
from .stream import OpRecord, Recording, stream_of
from .tensor import DeviceMemory, Tensor


class Replay:
    """The commands of ``recording`` (made on ``queue``), ready to enqueue again.

    ``bound``: tensors whose buffers the commands use as they are (shared state and inputs).
    ``outputs``: tensors of the recorded run that :meth:`run` hands back, as views of the
    replay's own buffers. Raises ``ValueError`` for a recording that was refused.
    """

    def __init__(self, queue: cl.CommandQueue, recording: Recording, bound=(), outputs=()):
        if not isinstance(recording, Recording):
            raise TypeError(f"recording must be a Recording (Stream.record()), got {type(recording).__name__}")
        if recording.refused is not None:
            raise ValueError(f"the recorded stretch cannot be replayed: {recording.refused}")
        self.queue, self.stream = queue, stream_of(queue)
        self._kept = {t.buffer.int_ptr for t in bound}
        self._kept.add(self.stream.status.int_ptr)
        self._own: dict[int, DeviceMemory] | None = None   # original buffer -> the replay's, from the first run
        # The recorded commands and ops as buffers, shapes and dtypes: a Tensor held here would keep
        # its memory out of the pool, which is where the first run takes the temporaries from.
        self._recorded = list(recording.commands)
        self._recorded_ops = [(r.name, {k: self._described(v) for k, v in r.operands.items()
                                        if isinstance(v, Tensor)}, r.bad_input) for r in recording.ops]
        self._outputs = [self._described(t) for t in outputs]
        self.commands: list[tuple] = []
        self.ops: list[OpRecord] = []
        self.outputs: tuple[Tensor, ...] = ()

    def _place(self) -> None:
        """Make every buffer the commands name the replay's own (see the module docstring) and set
        each kernel's arguments once. Runs at the first :meth:`run`, after the queue's sync."""
        queue, kept, own, copies = self.queue, self._kept, {}, []

        def place(arg):
            if not isinstance(arg, cl.Buffer) or arg.int_ptr in kept:
                return arg
            mem = own.get(arg.int_ptr)
            if mem is None:
                mem = DeviceMemory.claim_pooled(queue.context, arg)
                if mem is None:                            # in use elsewhere: a copy of it
                    mem = DeviceMemory(queue.context, arg.size, fresh=True)
                    copies.append((mem.buffer, arg))
                own[arg.int_ptr] = mem
            return mem.buffer

        for command in self._recorded:
            kind = command[0]
            if kind == "kernel":
                _, (filename, name, options), global_size, local_size, args, op = command
                kernel = new_kernel(queue.context, filename, name, options)
                kernel.set_args(*[place(a) for a in args])
                self.commands.append(("kernel", kernel, global_size, local_size, f"{filename}:{name}", op))
            elif kind == "fill":
                self.commands.append(("fill", place(command[1]), command[2]))
            elif kind == "copy":
                self.commands.append(("copy", place(command[1]), place(command[2]), command[3]))
            else:                                          # a write of a host array the ops made
                self.commands.append(("write", place(command[1]), command[2]))
        for described in [v for _, operands, _ in self._recorded_ops for v in operands.values()] + self._outputs:
            if not isinstance(described, Tensor):          # bound tensors are handed back as they are
                place(described[0])
        for target, source in copies:                      # as the recording left them
            cl.enqueue_copy(queue, target, source, byte_count=source.size)
        queue.finish()
        self._own = own

        def view(described):
            if isinstance(described, Tensor):
                return described
            buffer, shape, dtype = described
            return Tensor._of(queue, own[buffer.int_ptr], shape, dtype)

        self.ops = [OpRecord(name, {k: view(v) for k, v in operands.items()}, bad)
                    for name, operands, bad in self._recorded_ops]
        self.outputs = tuple(view(t) for t in self._outputs)
        self._recorded = self._recorded_ops = self._outputs = None

    def _described(self, t: Tensor):
        """A bound tensor as it is; any other as (buffer, shape, dtype), which does not hold its memory."""
        return t if t.buffer.int_ptr in self._kept else (t.buffer, t.shape, t.dtype)

    @property
    def nbytes(self) -> int:
        """Device bytes of the replay's own buffers (taken over and copied; 0 before the first run)."""
        return sum(m.nbytes for m in (self._own or {}).values())

    def run(self) -> tuple[Tensor, ...]:
        """Enqueue the commands again; returns the outputs. Nothing is waited for: failures surface
        at the next sync, named by op, as the eager run's would."""
        stream, queue = self.stream, self.queue
        if self._own is None:
            stream.sync()                                  # the recorded run's temporaries back in the pool
            self._place()
        stream.restart(self.ops)                           # sequence numbers count from 0, as recorded
        profile = stream.profile
        enqueue = cl.enqueue_nd_range_kernel
        for command in self.commands:
            kind = command[0]
            if kind == "kernel":
                _, kernel, global_size, local_size, label, op = command
                event = enqueue(queue, kernel, global_size, local_size)
                if profile is not None:
                    profile.append((label, op, event))
            elif kind == "fill":
                cl.enqueue_fill_buffer(queue, command[1], np.zeros(1, np.float32), 0, command[2])
            elif kind == "copy":
                cl.enqueue_copy(queue, command[1], command[2], byte_count=command[3])
            else:
                cl.enqueue_copy(queue, command[1], command[2], is_blocking=False)
        return self.outputs

